/* cachepin: requests to the API server through libcurl's multi interface (kube.h). */
#define _GNU_SOURCE
#define CURL_DISABLE_TYPECHECK /* the functions are called through pointers (below) */
#include "kube.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "io.h"
#include "kube_json.h"
#include "log.h"
#include "util.h"

/* libcurl and what it pulls in (OpenSSL, nghttp2, libssh2, LDAP...) would cost every
   hook run its dynamic linking for a client only `cachepin dra publish` and
   `cachepin nri --dra-node` use: loaded with dlopen() then, before any sandbox, as
   nri_http.c loads libmicrohttpd.  Its header still gives each pointer its type. */
#define CURL_LIBRARY "libcurl.so.4"

#define CURL_FNS(X)                                                                                           \
  X (curl_global_init)                                                                                        \
  X (curl_easy_init)                                                                                          \
  X (curl_easy_setopt)                                                                                        \
  X (curl_easy_getinfo)                                                                                       \
  X (curl_easy_cleanup)                                                                                       \
  X (curl_easy_strerror)                                                                                      \
  X (curl_multi_init)                                                                                         \
  X (curl_multi_add_handle)                                                                                   \
  X (curl_multi_remove_handle)                                                                                \
  X (curl_multi_perform)                                                                                      \
  X (curl_multi_poll)                                                                                         \
  X (curl_multi_info_read)                                                                                    \
  X (curl_multi_cleanup)                                                                                      \
  X (curl_slist_append)                                                                                       \
  X (curl_slist_free_all)                                                                                     \
  X (curl_multi_wait)

static struct
{
#define CURL_FIELD(name) __typeof__ (name) *name;
  CURL_FNS (CURL_FIELD)
#undef CURL_FIELD
} lc;

static int
load_curl (cp_error_t *err)
{
  static bool loaded;
  if (loaded)
    return 0;
  void *lib = dlopen (CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return cp_fail_runtime (err, "the Kubernetes API client: cannot load %s (Debian's libcurl4): %s", CURL_LIBRARY,
                            dlerror ());
  const char *missing = NULL;
#define CURL_LOAD(name)                                                                                       \
  if (missing == NULL && (lc.name = (__typeof__ (name) *) dlsym (lib, #name)) == NULL)                          \
    missing = #name;
  CURL_FNS (CURL_LOAD)
#undef CURL_LOAD
  if (missing)
    {
      dlclose (lib);
      return cp_fail_runtime (err, "the Kubernetes API client: %s has no %s", CURL_LIBRARY, missing);
    }
  if (lc.curl_global_init (CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return cp_fail_runtime (err, "the Kubernetes API client: curl_global_init failed");
  loaded = true;
  return 0;
}

struct cp_kube_client
{
  struct cp_kube_config cfg;
  CURLM *multi;
  char *token; /* never logged, never in an error */
  struct stat token_st;
  unsigned token_reads;
};

static void
token_forget (struct cp_kube_client *c)
{
  if (c->token)
    {
      explicit_bzero (c->token, strlen (c->token));
      free (c->token);
      c->token = NULL;
    }
}

/* The token file read again (FORCE) or when it changed: a projected token is a
   symlink into a ..data folder the kubelet swaps, so its target is what is
   compared (stat, not lstat).  Errors name the file, never its content. */
static int
token_load (struct cp_kube_client *c, bool force, cp_error_t *err)
{
  struct stat st;
  if (stat (c->cfg.token_file, &st) < 0)
    return cp_fail_errno (err, errno, "token file %s", c->cfg.token_file);
  if (!force && c->token && st.st_dev == c->token_st.st_dev && st.st_ino == c->token_st.st_ino
      && st.st_size == c->token_st.st_size && st.st_mtim.tv_sec == c->token_st.st_mtim.tv_sec
      && st.st_mtim.tv_nsec == c->token_st.st_mtim.tv_nsec)
    return 0;
  char *buf = NULL;
  size_t len = 0;
  if (cp_io_read_at (AT_FDCWD, c->cfg.token_file, 0, c->cfg.token_file, CP_KUBE_MAX_TOKEN,
                     CP_IO_INPUT | CP_IO_NO_NUL, &buf, &len, err) < 0)
    return cp_error_wrap (err, "token file");
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
    buf[--len] = '\0';
  bool ok = len > 0;
  for (size_t i = 0; i < len && ok; i++)
    ok = buf[i] > ' ' && buf[i] < 0x7f;
  if (!ok)
    {
      explicit_bzero (buf, len);
      free (buf);
      return cp_fail_input (err, "token file %s: %s", c->cfg.token_file,
                            len ? "not one token (a character outside printable ASCII)" : "empty");
    }
  token_forget (c);
  c->token = buf;
  c->token_st = st;
  c->token_reads++;
  return 0;
}

int
cp_kube_open (const struct cp_kube_config *config, struct cp_kube_client **out, cp_error_t *err)
{
  if (load_curl (err) < 0)
    return -1;
  struct cp_kube_client *c = cp_xmalloc0 (sizeof *c);
  c->cfg.server = cp_xstrdup (config->server);
  c->cfg.ca = cp_xstrdup (config->ca);
  c->cfg.token_file = cp_xstrdup (config->token_file);
  if (access (c->cfg.ca, R_OK) < 0)
    {
      int e = errno;
      cp_kube_close (c);
      return cp_fail_errno (err, e, "CA file %s", config->ca);
    }
  if (token_load (c, true, err) < 0)
    {
      cp_kube_close (c);
      return -1;
    }
  /* The multi handle (its wakeup socketpair) made at the first request: a client
     opened before a fork that closes what it inherits (the DRA publisher) would
     hold closed descriptors, reused by its connections. */
  *out = c;
  return 0;
}

int
cp_kube_open_options (const struct cp_kube_options *o, struct cp_kube_client **out, cp_error_t *err)
{
  struct cp_kube_config cfg = { 0 };
  if (cp_kube_config_resolve (o, &cfg, err) < 0)
    return -1;
  int r = cp_kube_open (&cfg, out, err);
  cp_kube_config_clear (&cfg);
  return r;
}

void
cp_kube_close (struct cp_kube_client *c)
{
  if (c->multi)
    lc.curl_multi_cleanup (c->multi);
  token_forget (c);
  cp_kube_config_clear (&c->cfg);
  free (c);
}

unsigned
cp_kube_token_reads (const struct cp_kube_client *c)
{
  return c->token_reads;
}

void
cp_kube_answer_clear (struct cp_kube_answer *a)
{
  free (a->body);
  *a = (struct cp_kube_answer){ 0 };
}

struct sink
{
  char *buf;
  size_t len;
  bool over;
};

static size_t
sink_write (char *p, size_t size, size_t n, void *user)
{
  struct sink *s = user;
  size_t add = size * n;
  if (s->len + add > CP_KUBE_MAX_ANSWER)
    {
      s->over = true;
      return 0; /* CURLE_WRITE_ERROR */
    }
  s->buf = cp_xrealloc (s->buf, s->len + add + 1);
  memcpy (s->buf + s->len, p, add);
  s->len += add;
  s->buf[s->len] = '\0';
  return add;
}

static void
slist_freep (struct curl_slist **l)
{
  if (*l)
    lc.curl_slist_free_all (*l);
}

/* One transfer, run to its end on the client's multi handle. */
static int
perform (struct cp_kube_client *c, const char *method, const char *path, const char *body,
         struct cp_kube_answer *ans, cp_error_t *err)
{
  cleanup_free char *url = cp_xasprintf ("%s%s", c->cfg.server, path);
  cleanup_free char *auth = cp_xasprintf ("Authorization: Bearer %s", c->token);
  __attribute__ ((cleanup (slist_freep))) struct curl_slist *hdr = NULL;
  hdr = lc.curl_slist_append (hdr, auth);
  hdr = lc.curl_slist_append (hdr, "Accept: application/json");
  if (body)
    hdr = lc.curl_slist_append (hdr, "Content-Type: application/json");
  explicit_bzero (auth, strlen (auth));
  if (hdr == NULL)
    cp_oom ();
  CURL *h = lc.curl_easy_init ();
  if (h == NULL)
    cp_oom ();
  char errbuf[CURL_ERROR_SIZE] = "";
  struct sink s = { 0 };
  lc.curl_easy_setopt (h, CURLOPT_URL, url);
  lc.curl_easy_setopt (h, CURLOPT_PROTOCOLS_STR, "https");
  lc.curl_easy_setopt (h, CURLOPT_REDIR_PROTOCOLS_STR, "https");
  lc.curl_easy_setopt (h, CURLOPT_FOLLOWLOCATION, 0L);
  lc.curl_easy_setopt (h, CURLOPT_CAINFO, c->cfg.ca);
  lc.curl_easy_setopt (h, CURLOPT_SSL_VERIFYPEER, 1L);
  lc.curl_easy_setopt (h, CURLOPT_SSL_VERIFYHOST, 2L);
  lc.curl_easy_setopt (h, CURLOPT_NOSIGNAL, 1L);
  lc.curl_easy_setopt (h, CURLOPT_TIMEOUT_MS, (long) CP_KUBE_TIMEOUT_MS);
  lc.curl_easy_setopt (h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  lc.curl_easy_setopt (h, CURLOPT_HTTPHEADER, hdr);
  lc.curl_easy_setopt (h, CURLOPT_CUSTOMREQUEST, method);
  lc.curl_easy_setopt (h, CURLOPT_ERRORBUFFER, errbuf);
  lc.curl_easy_setopt (h, CURLOPT_WRITEFUNCTION, sink_write);
  lc.curl_easy_setopt (h, CURLOPT_WRITEDATA, &s);
  lc.curl_easy_setopt (h, CURLOPT_USERAGENT, "cachepin");
  if (strcmp (method, "GET") == 0)
    lc.curl_easy_setopt (h, CURLOPT_HTTPGET, 1L);
  if (body)
    {
      lc.curl_easy_setopt (h, CURLOPT_POSTFIELDS, body);
      lc.curl_easy_setopt (h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) strlen (body));
    }
  if (c->multi == NULL && (c->multi = lc.curl_multi_init ()) == NULL)
    cp_oom ();
  lc.curl_multi_add_handle (c->multi, h);
  int running = 1;
  CURLcode result = CURLE_OK;
  while (running)
    {
      if (lc.curl_multi_perform (c->multi, &running) != CURLM_OK)
        {
          result = CURLE_FAILED_INIT;
          break;
        }
      if (running)
        lc.curl_multi_poll (c->multi, NULL, 0, 1000, NULL);
    }
  CURLMsg *m;
  int left;
  while ((m = lc.curl_multi_info_read (c->multi, &left)) != NULL)
    if (m->msg == CURLMSG_DONE && m->easy_handle == h)
      result = m->data.result;
  long status = 0;
  lc.curl_easy_getinfo (h, CURLINFO_RESPONSE_CODE, &status);
  lc.curl_multi_remove_handle (c->multi, h);
  lc.curl_easy_cleanup (h);
  /* The query is left out of messages: short, and nothing secret is in it either. */
  const char *q = strchr (path, '?');
  int plen = q ? (int) (q - path) : (int) strlen (path);
  if (s.over)
    {
      free (s.buf);
      return cp_fail_runtime (err, "%s %.*s: an answer of more than %u bytes", method, plen, path, CP_KUBE_MAX_ANSWER);
    }
  if (result != CURLE_OK)
    {
      free (s.buf);
      return cp_fail_runtime (err, "%s %s%.*s: %s", method, c->cfg.server, plen, path,
                              errbuf[0] ? errbuf : lc.curl_easy_strerror (result));
    }
  ans->status = status;
  ans->body = s.buf ? s.buf : cp_xstrdup ("");
  ans->len = s.len;
  return 0;
}

int
cp_kube_request (struct cp_kube_client *c, const char *method, const char *path, const char *body,
                 struct cp_kube_answer *ans, cp_error_t *err)
{
  *ans = (struct cp_kube_answer){ 0 };
  if (token_load (c, false, err) < 0)
    return -1;
  if (perform (c, method, path, body, ans, err) < 0)
    return -1;
  if (ans->status == 401)
    {
      /* A rotated token: read it again, whatever its file looks like, once. */
      cp_log (CP_LOG_DEBUG, "kube: %s %s: 401, the token file %s read again", method, path, c->cfg.token_file);
      if (token_load (c, true, err) < 0)
        return -1;
      cp_kube_answer_clear (ans);
      if (perform (c, method, path, body, ans, err) < 0)
        return -1;
    }
  return 0;
}

int
cp_kube_fail_answer (const char *what, const struct cp_kube_answer *a, cp_error_t *err)
{
  cleanup_free char *msg = cp_kube_json_status_message (a->body, a->len);
  enum cp_error_kind kind = (a->status == 400 || a->status == 401 || a->status == 403 || a->status == 422)
                                ? CP_ERR_INPUT
                                : CP_ERR_RUNTIME;
  if (a->status == 401)
    return cp_error_set (err, kind, 0, "%s: HTTP 401: the API server refused the token%s%s", what,
                         msg ? ": " : "", msg ? msg : "");
  return cp_error_set (err, kind, 0, "%s: HTTP %ld%s%s", what, a->status, msg ? ": " : "", msg ? msg : "");
}

/* ---- a watch ---------------------------------------------------------------------- */

struct cp_kube_watch
{
  CURLM *multi;
  CURL *easy;
  struct curl_slist *hdr;
  void (*line) (void *ctx, const char *l, size_t n);
  void *ctx;
  char *buf;
  size_t len;
  bool over;
  char errbuf[CURL_ERROR_SIZE];
};

static size_t
watch_write (char *p, size_t size, size_t n, void *user)
{
  struct cp_kube_watch *w = user;
  size_t add = size * n;
  w->buf = cp_xrealloc (w->buf, w->len + add + 1);
  memcpy (w->buf + w->len, p, add);
  w->len += add;
  size_t start = 0;
  for (size_t i = 0; i < w->len; i++)
    if (w->buf[i] == '\n')
      {
        if (i > start)
          w->line (w->ctx, w->buf + start, i - start);
        start = i + 1;
      }
  memmove (w->buf, w->buf + start, w->len - start);
  w->len -= start;
  if (w->len > CP_KUBE_MAX_EVENT)
    {
      w->over = true;
      return 0;
    }
  return add;
}

int
cp_kube_watch_start (struct cp_kube_client *c, const char *path, void (*line) (void *ctx, const char *l, size_t n),
                     void *ctx, struct cp_kube_watch **out, cp_error_t *err)
{
  if (token_load (c, false, err) < 0)
    return -1;
  struct cp_kube_watch *w = cp_xmalloc0 (sizeof *w);
  w->line = line;
  w->ctx = ctx;
  w->multi = lc.curl_multi_init ();
  w->easy = lc.curl_easy_init ();
  if (w->multi == NULL || w->easy == NULL)
    cp_oom ();
  cleanup_free char *url = cp_xasprintf ("%s%s", c->cfg.server, path);
  cleanup_free char *auth = cp_xasprintf ("Authorization: Bearer %s", c->token);
  w->hdr = lc.curl_slist_append (NULL, auth);
  w->hdr = lc.curl_slist_append (w->hdr, "Accept: application/json");
  explicit_bzero (auth, strlen (auth));
  CURL *h = w->easy;
  lc.curl_easy_setopt (h, CURLOPT_URL, url);
  lc.curl_easy_setopt (h, CURLOPT_PROTOCOLS_STR, "https");
  lc.curl_easy_setopt (h, CURLOPT_FOLLOWLOCATION, 0L);
  lc.curl_easy_setopt (h, CURLOPT_CAINFO, c->cfg.ca);
  lc.curl_easy_setopt (h, CURLOPT_NOSIGNAL, 1L);
  lc.curl_easy_setopt (h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  lc.curl_easy_setopt (h, CURLOPT_HTTPHEADER, w->hdr);
  lc.curl_easy_setopt (h, CURLOPT_ERRORBUFFER, w->errbuf);
  lc.curl_easy_setopt (h, CURLOPT_WRITEFUNCTION, watch_write);
  lc.curl_easy_setopt (h, CURLOPT_WRITEDATA, w);
  lc.curl_easy_setopt (h, CURLOPT_USERAGENT, "cachepin");
  lc.curl_easy_setopt (h, CURLOPT_FAILONERROR, 1L);
  lc.curl_multi_add_handle (w->multi, h);
  *out = w;
  return 0;
}

int
cp_kube_watch_wait (struct cp_kube_watch *w, int fd, int timeout_ms, cp_error_t *err)
{
  long long deadline = cp_monotonic_ms () + timeout_ms;
  for (;;)
    {
      int running = 0;
      lc.curl_multi_perform (w->multi, &running);
      if (!running)
        {
          CURLMsg *m;
          int left;
          CURLcode result = CURLE_OK;
          while ((m = lc.curl_multi_info_read (w->multi, &left)) != NULL)
            if (m->msg == CURLMSG_DONE)
              result = m->data.result;
          long status = 0;
          lc.curl_easy_getinfo (w->easy, CURLINFO_RESPONSE_CODE, &status);
          if (w->over)
            return cp_fail_runtime (err, "watch: an event of more than %u bytes", CP_KUBE_MAX_EVENT);
          if (result != CURLE_OK)
            return cp_fail_runtime (err, "watch: HTTP %ld: %s", status,
                                    w->errbuf[0] ? w->errbuf : lc.curl_easy_strerror (result));
          return cp_fail_runtime (err, "watch: ended by the server (HTTP %ld)", status);
        }
      long long left_ms = deadline - cp_monotonic_ms ();
      if (left_ms <= 0)
        return 0;
      struct curl_waitfd extra = { .fd = fd, .events = CURL_WAIT_POLLIN };
      int ready = 0;
      lc.curl_multi_wait (w->multi, fd >= 0 ? &extra : NULL, fd >= 0 ? 1 : 0, (int) (left_ms < 1000 ? left_ms : 1000),
                          &ready);
      if (fd >= 0 && (extra.revents & CURL_WAIT_POLLIN))
        return 1;
    }
}

void
cp_kube_watch_stop (struct cp_kube_watch *w)
{
  if (w == NULL)
    return;
  lc.curl_multi_remove_handle (w->multi, w->easy);
  lc.curl_easy_cleanup (w->easy);
  lc.curl_multi_cleanup (w->multi);
  lc.curl_slist_free_all (w->hdr);
  free (w->buf);
  free (w);
}

const struct cp_kube_config *
cp_kube_client_config (const struct cp_kube_client *c)
{
  return &c->cfg;
}
