/* cachepin: the NRI agent's HTTP listener (nri_http.h). */
#define _GNU_SOURCE
#include "nri_http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* libmicrohttpd and what it pulls in (GnuTLS, nettle, p11-kit...) would cost every
   hook run several milliseconds of dynamic linking (3414 relocations against 597 without,
   LD_DEBUG=statistics) for a listener only `cachepin nri --metrics-listen` opens: loaded
   with dlopen() then, before the sandbox, as systemd.c loads libsystemd.  Its header
   still gives each pointer its type. */
#define MHD_LIBRARY "libmicrohttpd.so.12"

#define MHD_FNS(X)                                                                                            \
  X (MHD_start_daemon)                                                                                        \
  X (MHD_stop_daemon)                                                                                         \
  X (MHD_get_daemon_info)                                                                                     \
  X (MHD_run)                                                                                                 \
  X (MHD_get_timeout)                                                                                         \
  X (MHD_create_response_from_buffer)                                                                         \
  X (MHD_add_response_header)                                                                                 \
  X (MHD_queue_response)                                                                                      \
  X (MHD_destroy_response)

static struct
{
#define MHD_FIELD(name) __typeof__ (name) *name;
  MHD_FNS (MHD_FIELD)
#undef MHD_FIELD
} libmhd;

static int
load_mhd (cp_error_t *err)
{
  static bool loaded;
  if (loaded)
    return 0;
  void *lib = dlopen (MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return cp_fail_runtime (err, "--metrics-listen: cannot load %s (Debian's libmicrohttpd12): %s", MHD_LIBRARY,
                            dlerror ());
  const char *missing = NULL;
#define MHD_LOAD(name)                                                                                        \
  if (missing == NULL && (libmhd.name = (__typeof__ (name) *) dlsym (lib, #name)) == NULL)                      \
    missing = #name;
  MHD_FNS (MHD_LOAD)
#undef MHD_LOAD
  if (missing)
    {
      dlclose (lib);
      return cp_fail_runtime (err, "--metrics-listen: %s has no %s", MHD_LIBRARY, missing);
    }
  loaded = true;
  return 0;
}

struct cp_nri_http
{
  struct MHD_Daemon *mhd;
  int listen_fd;
  unsigned port;
  char *path;
  struct cp_nri_http_handlers h;
};

/* ---- the address ------------------------------------------------------------------ */

/* "ADDR:PORT" or "[ADDR6]:PORT" into *SA; errors name --metrics-listen. */
static int
parse_listen (const char *arg, struct sockaddr_storage *sa, socklen_t *len, cp_error_t *err)
{
  const char *colon = strrchr (arg, ':');
  if (colon == NULL || colon == arg)
    return cp_fail_input (err, "--metrics-listen `%.64s`: not ADDR:PORT (127.0.0.1:9464, [::1]:9464)", arg);
  const char *port_s = colon + 1;
  size_t n = strlen (port_s);
  if (n == 0 || n > 5 || strspn (port_s, "0123456789") != n || atol (port_s) > 65535)
    return cp_fail_input (err, "--metrics-listen `%.64s`: the port is not a number from 0 to 65535", arg);
  in_port_t port = htons ((in_port_t) atol (port_s));
  char host[64];
  size_t hl = (size_t) (colon - arg);
  bool v6 = arg[0] == '[';
  if (v6 && (hl < 2 || arg[hl - 1] != ']'))
    return cp_fail_input (err, "--metrics-listen `%.64s`: an IPv6 address goes in brackets ([::1]:9464)", arg);
  if (v6)
    arg++, hl -= 2;
  if (hl >= sizeof host)
    return cp_fail_input (err, "--metrics-listen `%.64s`: not an IP address", arg);
  memcpy (host, arg, hl);
  host[hl] = '\0';
  memset (sa, 0, sizeof *sa);
  struct sockaddr_in *in4 = (struct sockaddr_in *) sa;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) sa;
  if (!v6 && inet_pton (AF_INET, host, &in4->sin_addr) == 1)
    {
      in4->sin_family = AF_INET;
      in4->sin_port = port;
      *len = sizeof *in4;
      return 0;
    }
  if (v6 && inet_pton (AF_INET6, host, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      in6->sin6_port = port;
      *len = sizeof *in6;
      return 0;
    }
  return cp_fail_input (err, "--metrics-listen `%.64s`: `%s` is not an IP%s address", arg, host, v6 ? "v6" : "v4");
}

/* The listening socket, bound (as root, before the sandbox) and non-blocking. */
static int
bind_listen (const char *arg, unsigned *port, cp_error_t *err)
{
  struct sockaddr_storage sa;
  socklen_t len;
  if (parse_listen (arg, &sa, &len, err) < 0)
    return -1;
  cleanup_close int fd = socket (sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return cp_fail_errno (err, errno, "--metrics-listen %s: socket", arg);
  int one = 1;
  /* A restarted agent binds again while the last one's connections linger. */
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (sa.ss_family == AF_INET6)
    setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind (fd, (struct sockaddr *) &sa, len) < 0)
    return cp_fail_errno (err, errno, "--metrics-listen %s: bind", arg);
  if (listen (fd, 16) < 0)
    return cp_fail_errno (err, errno, "--metrics-listen %s: listen", arg);
  len = sizeof sa;
  if (getsockname (fd, (struct sockaddr *) &sa, &len) < 0)
    return cp_fail_errno (err, errno, "--metrics-listen %s: getsockname", arg);
  *port = ntohs (sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &sa)->sin6_port
                                          : ((struct sockaddr_in *) &sa)->sin_port);
  int r = fd;
  fd = -1;
  return r;
}

/* ---- the answers ------------------------------------------------------------------ */

/* BODY (taken: freed by libmicrohttpd) answered with STATUS. */
static enum MHD_Result
answer (struct MHD_Connection *conn, unsigned status, const char *type, char *body)
{
  struct MHD_Response *r = libmhd.MHD_create_response_from_buffer (strlen (body), body, MHD_RESPMEM_MUST_FREE);
  if (r == NULL)
    {
      free (body);
      return MHD_NO;
    }
  libmhd.MHD_add_response_header (r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  enum MHD_Result q = libmhd.MHD_queue_response (conn, status, r);
  libmhd.MHD_destroy_response (r);
  return q;
}

#define TEXT "text/plain; charset=utf-8"

/* A probe: 200 "ok", or 503 and why not. */
static enum MHD_Result
probe (struct MHD_Connection *conn, char *why)
{
  if (why == NULL)
    return answer (conn, MHD_HTTP_OK, TEXT, cp_xstrdup ("ok\n"));
  char *body = cp_xasprintf ("%s\n", why);
  free (why);
  return answer (conn, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, body);
}

static enum MHD_Result
on_request (void *cls, struct MHD_Connection *conn, const char *url, const char *method, const char *version,
            const char *upload, size_t *upload_size, void **req_cls)
{
  (void) version, (void) upload, (void) req_cls;
  struct cp_nri_http *http = cls;
  /* A body is not read (a GET has none): any that comes is dropped unread. */
  if (*upload_size)
    {
      *upload_size = 0;
      return MHD_YES;
    }
  if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 && strcmp (method, MHD_HTTP_METHOD_HEAD) != 0)
    return answer (conn, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, cp_xstrdup ("only GET and HEAD\n"));
  if (strcmp (url, http->path) == 0)
    return answer (conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", http->h.metrics (http->h.ctx));
  if (strcmp (url, CP_NRI_HTTP_READY_PATH) == 0)
    return probe (conn, http->h.ready (http->h.ctx));
  if (strcmp (url, CP_NRI_HTTP_LIVE_PATH) == 0)
    return probe (conn, http->h.live (http->h.ctx));
  return answer (conn, MHD_HTTP_NOT_FOUND, TEXT,
                 cp_xasprintf ("not found: %s, %s and %s are served\n", http->path, CP_NRI_HTTP_READY_PATH,
                               CP_NRI_HTTP_LIVE_PATH));
}

static void
mhd_log (void *cls, const char *fmt, va_list ap)
{
  (void) cls;
  char line[512];
  vsnprintf (line, sizeof line, fmt, ap);
  line[strcspn (line, "\n")] = '\0';
  cp_log (CP_LOG_DEBUG, "nri: metrics listener: %s", line);
}

/* ---- the listener ----------------------------------------------------------------- */

static int
check_path (const char *path, cp_error_t *err)
{
  if (path[0] != '/' || strlen (path) > 255 || strpbrk (path, " ?#\t\r\n"))
    return cp_fail_input (err, "--metrics-path `%.64s`: not a path (`/` then up to 254 characters, no space, "
                               "`?` or `#`)", path);
  if (strcmp (path, CP_NRI_HTTP_READY_PATH) == 0 || strcmp (path, CP_NRI_HTTP_LIVE_PATH) == 0)
    return cp_fail_input (err, "--metrics-path `%s`: the probes' path", path);
  return 0;
}

int
cp_nri_http_check (const char *listen, const char *path, cp_error_t *err)
{
  struct sockaddr_storage sa;
  socklen_t len;
  if (parse_listen (listen, &sa, &len, err) < 0)
    return -1;
  return path ? check_path (path, err) : 0;
}

int
cp_nri_http_open (const char *listen, const char *path, const struct cp_nri_http_handlers *h,
                  struct cp_nri_http **out, cp_error_t *err)
{
  if (path == NULL)
    path = CP_NRI_HTTP_DEFAULT_PATH;
  if (check_path (path, err) < 0 || load_mhd (err) < 0)
    return -1;
  unsigned port = 0;
  int fd = bind_listen (listen, &port, err);
  if (fd < 0)
    return -1;
  struct cp_nri_http *http = cp_xcalloc (1, sizeof *http);
  *http = (struct cp_nri_http) { .listen_fd = fd, .port = port, .path = cp_xstrdup (path), .h = *h };
  /* External epoll: no thread, no signal; connections limited in number, time and
     memory; an idle or half-sent one dropped at its timeout (cp_nri_http_run()). */
  http->mhd = libmhd.MHD_start_daemon (MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, http,
                                       MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first: it logs the others */
                                       MHD_OPTION_LISTEN_SOCKET, fd,
                                       MHD_OPTION_CONNECTION_LIMIT, (unsigned) CP_NRI_HTTP_MAX_CONNECTIONS,
                                       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) CP_NRI_HTTP_TIMEOUT_S,
                                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 32768,
                                       MHD_OPTION_END);
  if (http->mhd == NULL)
    {
      close (fd);
      free (http->path);
      free (http);
      return cp_fail_runtime (err, "--metrics-listen %s: libmicrohttpd did not start", listen);
    }
  *out = http;
  return 0;
}

int
cp_nri_http_fd (const struct cp_nri_http *http)
{
  const union MHD_DaemonInfo *i = libmhd.MHD_get_daemon_info (http->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  return i ? i->epoll_fd : -1;
}

int
cp_nri_http_listen_fd (const struct cp_nri_http *http)
{
  return http->listen_fd;
}

unsigned
cp_nri_http_port (const struct cp_nri_http *http)
{
  return http->port;
}

/* Runs of libmicrohttpd at one wake-up while it says work is pending (a timeout of
   0): bounded, so that a flood of connections still leaves the loop. */
#define CP_NRI_HTTP_RUNS 8

void
cp_nri_http_run (struct cp_nri_http *http)
{
  for (int i = 0; i < CP_NRI_HTTP_RUNS; i++)
    {
      libmhd.MHD_run (http->mhd);
      MHD_UNSIGNED_LONG_LONG ms;
      if (libmhd.MHD_get_timeout (http->mhd, &ms) != MHD_YES || ms > 0)
        break;
    }
}

void
cp_nri_http_close (struct cp_nri_http *http)
{
  if (http == NULL)
    return;
  libmhd.MHD_stop_daemon (http->mhd);
  close (http->listen_fd);
  free (http->path);
  free (http);
}

void
cp_nri_http_closep (struct cp_nri_http **http)
{
  cp_nri_http_close (*http);
}
