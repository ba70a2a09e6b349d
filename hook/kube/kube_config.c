/* cachepin: where the API server is and how to authenticate to it (kube.h). */
#define _GNU_SOURCE
#include "kube.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void
cp_kube_config_clear (struct cp_kube_config *c)
{
  free (c->server);
  free (c->ca);
  free (c->token_file);
  *c = (struct cp_kube_config){ 0 };
}

/* A host as a URL takes it: an IPv6 address in brackets. */
static bool
host_ok (const char *h)
{
  if (*h == '\0' || strlen (h) > 253)
    return false;
  for (const char *p = h; *p; p++)
    if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') || *p == '.'
          || *p == '-' || *p == ':'))
      return false;
  return true;
}

static int
check_url (const char *what, const char *url, cp_error_t *err)
{
  if (strncmp (url, "https://", 8) != 0)
    return cp_fail_input (err, "%s: `%.64s`: https only (https://HOST[:PORT])", what, url);
  const char *h = url + 8;
  if (*h == '\0' || *h == '/')
    return cp_fail_input (err, "%s: `%.64s`: no host", what, url);
  for (const char *p = h; *p; p++)
    if ((unsigned char) *p <= ' ' || *p == '?' || *p == '#' || *p == '@' || *p == '\\' || (unsigned char) *p >= 0x7f)
      return cp_fail_input (err, "%s: `%.64s`: a URL of a host, a port and a path only", what, url);
  return 0;
}

int
cp_kube_config_resolve (const struct cp_kube_options *o, struct cp_kube_config *out, cp_error_t *err)
{
  struct cp_kube_config c = { 0 };
  if (o->api != NULL)
    {
      if (check_url ("--kube-api", o->api, err) < 0)
        return -1;
      size_t n = strlen (o->api);
      while (n > 8 && o->api[n - 1] == '/')
        n--;
      c.server = cp_xstrndup (o->api, n);
    }
  else
    {
      const char *host = getenv ("KUBERNETES_SERVICE_HOST"), *port = getenv ("KUBERNETES_SERVICE_PORT");
      if (host == NULL || *host == '\0')
        return cp_fail_input (err, "no API server: --kube-api URL, or run in a pod (KUBERNETES_SERVICE_HOST unset)");
      if (!host_ok (host))
        return cp_fail_input (err, "KUBERNETES_SERVICE_HOST: `%.64s`: not a host name or address", host);
      unsigned long p = 443;
      if (port != NULL && *port != '\0')
        {
          char *end;
          p = strtoul (port, &end, 10);
          if (*end != '\0' || port[0] < '0' || port[0] > '9' || p == 0 || p > 65535)
            return cp_fail_input (err, "KUBERNETES_SERVICE_PORT: `%.16s`: not a port", port);
        }
      c.server = strchr (host, ':') ? cp_xasprintf ("https://[%s]:%lu", host, p)
                                     : cp_xasprintf ("https://%s:%lu", host, p);
    }
  c.ca = cp_xstrdup (o->ca ? o->ca : CP_KUBE_SA_DIR "/ca.crt");
  c.token_file = cp_xstrdup (o->token_file ? o->token_file : CP_KUBE_SA_DIR "/token");
  *out = c;
  return 0;
}

char *
cp_kube_escape (const char *value)
{
  size_t n = strlen (value);
  char *out = cp_xmalloc0 (3 * n + 1), *q = out;
  for (const unsigned char *p = (const unsigned char *) value; *p; p++)
    if (('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') || *p == '-' || *p == '.'
        || *p == '_' || *p == '~')
      *q++ = (char) *p;
    else
      q += sprintf (q, "%%%02X", *p);
  *q = '\0';
  return out;
}

/* The authority of C's server (false: not an https URL): *HOST and *LEN its host,
   an IPv6 address without its brackets (*LEN 0 where the bracket is not closed),
   *PORT to *END what follows the host up to the path (":PORT", or nothing). */
static bool
server_authority (const struct cp_kube_config *c, const char **host, size_t *len, bool *v6, const char **port,
                  const char **end)
{
  if (c->server == NULL || strncmp (c->server, "https://", 8) != 0)
    return false;
  const char *h = c->server + 8;
  *end = h + strcspn (h, "/");
  *v6 = *h == '[';
  if (*v6)
    {
      const char *close = memchr (h, ']', (size_t) (*end - h));
      *host = h + 1;
      *len = close ? (size_t) (close - *host) : 0;
      *port = close ? close + 1 : *end;
    }
  else
    {
      const char *colon = memchr (h, ':', (size_t) (*end - h));
      *host = h;
      *port = colon ? colon : *end;
      *len = (size_t) (*port - h);
    }
  return true;
}

unsigned
cp_kube_config_port (const struct cp_kube_config *c)
{
  const char *host, *after, *end;
  size_t len;
  bool v6;
  if (!server_authority (c, &host, &len, &v6, &after, &end))
    return 0;
  const char *colon = memchr (after, ':', (size_t) (end - after));
  if (colon == NULL)
    return 443;
  unsigned port = 0;
  for (const char *p = colon + 1; p < end; p++)
    {
      if (*p < '0' || *p > '9' || (port = port * 10 + (unsigned) (*p - '0')) > 65535)
        return 0;
    }
  return colon + 1 < end ? port : 0;
}

bool
cp_kube_config_host_is_address (const struct cp_kube_config *c)
{
  const char *host, *after, *end;
  size_t len;
  bool v6;
  char text[INET6_ADDRSTRLEN];
  if (!server_authority (c, &host, &len, &v6, &after, &end) || len == 0 || len >= sizeof text)
    return false;
  memcpy (text, host, len);
  text[len] = '\0';
  unsigned char addr[16];
  return inet_pton (v6 ? AF_INET6 : AF_INET, text, addr) == 1;
}
