/* cachepin: an NRI plugin's side of the protocol (nri_stub.h).
 *
 * containerd/nri v0.8.0 to v0.12 pkg/stub/stub.go and pkg/adaptation/plugin.go, what a
 * Go plugin does: RegisterPlugin on connection 2 (the only call a plugin makes here),
 * the Plugin service on connection 1.  A runtime that times a call out closes the
 * connection (v0.8 and v0.12 alike): the dialled form then dials again; a request we
 * cannot read ends the run (one line), a method not in the table is answered
 * Unimplemented, as a Go server does. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "nri_rpc.h"
#include "nri_stub.h"
#include "util.h"

int32_t
cp_nri_events_of (const struct cp_nri_method *methods, size_t n)
{
  int32_t mask = 0;
  for (size_t i = 0; i < n; i++)
    if (methods[i].event > 0 && methods[i].event < 32)
      mask |= (int32_t) 1 << (methods[i].event - 1);
  return mask;
}

int
cp_nri_check_name (const char *what, const char *arg, cp_error_t *err)
{
  size_t len = strlen (arg);
  if (len == 0 || len > 64 || strspn (arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") != len)
    return cp_fail_input (err, "%s: 1 to 64 of the characters NRI allows (letters, digits, `_`, `.`, `+`, `-`)",
                          what);
  return 0;
}

int
cp_nri_check_idx (const char *what, const char *arg, cp_error_t *err)
{
  if (strlen (arg) != 2 || arg[0] < '0' || arg[0] > '9' || arg[1] < '0' || arg[1] > '9')
    return cp_fail_input (err, "%s `%.64s`: two digits (00 to 99)", what, arg);
  return 0;
}

int
cp_nri_prelaunched_fd (cp_error_t *err)
{
  const char *env = getenv ("NRI_PLUGIN_SOCKET");
  if (env == NULL || *env == '\0')
    return 0;
  char *end;
  errno = 0;
  long fd = strtol (env, &end, 10);
  struct stat st;
  if (errno || *end || end == env || fd < 3 || fd > 65535 || fstat ((int) fd, &st) < 0 || !S_ISSOCK (st.st_mode))
    return cp_fail_input (err, "NRI_PLUGIN_SOCKET `%.32s`: not a connected socket's descriptor", env);
  unsetenv ("NRI_PLUGIN_SOCKET");
  return (int) fd;
}

#define LOG(s, level, ...)                                                                                       \
  do                                                                                                             \
    {                                                                                                            \
      if ((s)->log)                                                                                              \
        (s)->log (level, __VA_ARGS__);                                                                           \
    }                                                                                                            \
  while (0)

static int
register_plugin (const struct cp_nri_stub *s, struct cp_nri_conn *c, struct cp_buf *out, cp_error_t *err)
{
  Nri__Pkg__Api__V1alpha1__RegisterPluginRequest req = NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
  req.plugin_name = (char *) s->name;
  req.plugin_idx = (char *) s->idx;
  uint32_t stream = c->next_stream;
  c->next_stream += 2;
  if (cp_rpc_request_encode (CP_MUX_CONN_RUNTIME, stream, CP_NRI_SERVICE_RUNTIME, "RegisterPlugin", &req.base, out,
                             err) < 0)
    return -1;
  return cp_nri_conn_send (c, out, err);
}

/* The answer to our RegisterPlugin (the only call we make). */
static int
registered (const struct cp_nri_stub *s, const struct cp_ttrpc_msg *m, bool again, cp_error_t *err)
{
  if (m->type != CP_TTRPC_RESPONSE)
    return cp_fail_input (err, "NRI: a ttrpc message of type %u on the runtime's connection", m->type);
  int32_t code;
  cleanup_free char *message = NULL;
  if (cp_rpc_response_decode (m->payload, m->len, &code, &message, err) < 0)
    return -1;
  if (code != CP_RPC_OK)
    return cp_fail_runtime (err, "NRI: the runtime refused to register plugin %s-%s: %s (code %d)", s->idx, s->name,
                            message ? message : "no reason given", code);
  if (again)
    LOG (s, CP_NRI_LOG_INFO, "nri: reconnected: registered again as plugin %s-%s", s->idx, s->name);
  else
    LOG (s, CP_NRI_LOG_INFO, "nri: registered as plugin %s-%s", s->idx, s->name);
  return 0;
}

/* Configure and Shutdown, the stub's own: the events come from the table. */
static int
builtin (const struct cp_nri_stub *s, const char *method, const ProtobufCMessage *msg, struct cp_nri_call *call,
         bool *stop, cp_error_t *err)
{
  if (strcmp (method, "Configure") == 0)
    {
      if (s->configured)
        s->configured (s->ctx, (const Nri__Pkg__Api__V1alpha1__ConfigureRequest *) msg);
      Nri__Pkg__Api__V1alpha1__ConfigureResponse resp = NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;
      resp.events = cp_nri_events_of (s->methods, s->n_methods);
      return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
    }
  LOG (s, CP_NRI_LOG_DEBUG, "nri: the runtime said Shutdown");
  *stop = true; /* the connection ends here: the runtime is going (stopped or restarting) */
  Nri__Pkg__Api__V1alpha1__Empty resp = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
  return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
}

static const struct
{
  const char *name;
  const ProtobufCMessageDescriptor *desc;
} builtins[] = {
  { "Configure", &nri__pkg__api__v1alpha1__configure_request__descriptor },
  { "Shutdown", &nri__pkg__api__v1alpha1__empty__descriptor },
};

/* The handler of METHOD: a built-in's descriptor (*FN NULL), or the table's. */
static const ProtobufCMessageDescriptor *
lookup (const struct cp_nri_stub *s, const char *method, const struct cp_nri_method **fn)
{
  *fn = NULL;
  for (size_t i = 0; i < CP_ARRAY_SIZE (builtins); i++)
    if (strcmp (method, builtins[i].name) == 0)
      return builtins[i].desc;
  for (size_t i = 0; i < s->n_methods; i++)
    if (strcmp (method, s->methods[i].name) == 0)
      {
        *fn = &s->methods[i];
        return s->methods[i].desc;
      }
  return NULL;
}

static long
us_since (const struct timespec *t0)
{
  struct timespec t1;
  clock_gettime (CLOCK_MONOTONIC, &t1);
  return (long) ((t1.tv_sec - t0->tv_sec) * 1000000 + (t1.tv_nsec - t0->tv_nsec) / 1000);
}

/* What was served, for the plugin's ANSWERED hook once the answer is out. */
struct served
{
  char method[65];
  long us;
};

/* A request of the runtime on connection 1, answered into OUT: 0, CP_NRI_CLOSE_AFTER,
   or < 0 (*ERR). */
static int
serve (const struct cp_nri_stub *s, const struct cp_ttrpc_msg *m, struct cp_buf *out, bool *stop,
       struct served *done, cp_error_t *err)
{
  if (m->type != CP_TTRPC_REQUEST)
    return cp_fail_input (err, "NRI: a ttrpc message of type %u on the plugin's connection", m->type);
  struct timespec t0;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  Ttrpc__Request *req = NULL;
  if (cp_rpc_request_decode (m->payload, m->len, &req, err) < 0)
    return -1;
  struct cp_nri_call call = { .stream = m->stream, .out = out };
  const struct cp_nri_method *fn = NULL;
  const ProtobufCMessageDescriptor *desc
      = strcmp (req->service, CP_NRI_SERVICE_PLUGIN) == 0 ? lookup (s, req->method, &fn) : NULL;
  int r;
  if (desc == NULL)
    {
      cleanup_free char *why = cp_xasprintf ("%.128s.%.64s: not served by cachepin", req->service, req->method);
      LOG (s, CP_NRI_LOG_DEBUG, "nri: %s", why);
      r = cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, m->stream, CP_RPC_UNIMPLEMENTED, why, NULL, out, err);
    }
  else
    {
      ProtobufCMessage *msg = NULL;
      if (cp_rpc_message_decode (desc, req->payload.data, req->payload.len, &msg, err) < 0)
        r = cp_error_wrap (err, "%s", req->method);
      else
        {
          r = fn ? fn->fn (s->ctx, msg, &call, err) : builtin (s, req->method, msg, &call, stop, err);
          protobuf_c_message_free_unpacked (msg, NULL);
        }
    }
  done->us = us_since (&t0);
  snprintf (done->method, sizeof done->method, "%s", req->method);
  LOG (s, CP_NRI_LOG_DEBUG, "nri: %.64s answered in %ld us", req->method, done->us);
  ttrpc__request__free_unpacked (req, NULL);
  return r;
}

/* How a connection ended. */
enum conn_end
{
  CONN_LOST,    /* the runtime went: it closed or reset the socket, or said Shutdown */
  CONN_STOPPED, /* SIGTERM or SIGINT */
  CONN_FAILED,  /* what a new connection would not cure (*ERR) */
};

/* The connection is gone when the socket itself fails (an errno: reset, broken
   pipe, a write that stalled); a frame or message we cannot read is ours to report,
   not a reason to dial again. */
static enum conn_end
lost_or_failed (const struct cp_nri_stub *s, const char *what, cp_error_t *err, char **why)
{
  if (cp_error_errno (*err) == 0)
    return CONN_FAILED;
  if (cp_error_errno (*err) == ECANCELED && *s->stopping)
    {
      cp_error_free (err);
      return CONN_STOPPED;
    }
  *why = cp_xasprintf ("%s: %s", what, cp_error_message (*err));
  cp_error_free (err);
  return CONN_LOST;
}

/* One received message handled: < 0 ends the connection (END set). */
static int
handle (const struct cp_nri_stub *s, struct cp_nri_conn *c, uint32_t conn, const struct cp_ttrpc_msg *m, bool again,
        struct cp_buf *out, enum conn_end *end, char **why, cp_error_t *err)
{
  if (conn == CP_MUX_CONN_RUNTIME)
    {
      if (registered (s, m, again, err) == 0)
        return 0;
      *end = CONN_FAILED;
      return -1;
    }
  bool stop = false;
  struct served done = { "", 0 };
  int r = serve (s, m, out, &stop, &done, err);
  if (r < 0)
    {
      *end = CONN_FAILED;
      return -1;
    }
  if (cp_nri_conn_send (c, out, err) < 0)
    {
      *end = lost_or_failed (s, "write", err, why);
      return -1;
    }
  if (s->answered && s->answered (s->ctx, done.method, done.us, err) < 0)
    {
      *end = CONN_FAILED;
      return -1;
    }
  if (stop || r == CP_NRI_CLOSE_AFTER)
    {
      *why = cp_xstrdup (stop ? "the runtime said Shutdown" : "the plugin closed it");
      *end = CONN_LOST;
      return -1;
    }
  return 0;
}

/* Serve C until it ends; *WHY (CONN_LOST) says how, for the one line said. */
static enum conn_end
run (const struct cp_nri_stub *s, struct cp_nri_conn *c, bool again, char **why, cp_error_t *err)
{
  struct cp_buf out = { 0 };
  enum conn_end end = CONN_LOST;
  if (register_plugin (s, c, &out, err) < 0)
    end = lost_or_failed (s, "registering", err, why);
  else
    for (;;)
      {
        if (*s->stopping)
          {
            end = CONN_STOPPED;
            break;
          }
        uint32_t conn;
        struct cp_ttrpc_msg m;
        int r = cp_nri_conn_recv (c, -1, &conn, &m, err);
        if (r == CP_NRI_INTERRUPTED || r == CP_NRI_TIMED_OUT)
          continue;
        if (r == 0)
          *why = cp_xstrdup ("the runtime closed it");
        if (r < 0)
          end = lost_or_failed (s, "read", err, why);
        if (r <= 0)
          break;
        int h = handle (s, c, conn, &m, again, &out, &end, why, err);
        cp_ttrpc_msg_clear (&m);
        if (h < 0)
          break;
      }
  if (s->ended)
    s->ended (s->ctx);
  cp_buf_free (&out);
  return end;
}

#define CP_NRI_BACKOFF_FIRST_MS 100
#define CP_NRI_BACKOFF_MAX_MS 5000

/* Dial S's socket again until it answers or a signal stops us: 0.1 s, doubling, at
   most 5 s between tries, for ever (the runtime may take long to come back, and
   nothing is placed without it anyway).  Each failed try at debug level only. */
static int
redial (const struct cp_nri_stub *s, struct cp_nri_conn *c)
{
  long wait_ms = CP_NRI_BACKOFF_FIRST_MS;
  while (!*s->stopping)
    {
      /* The other endpoints are served meanwhile; a signal cuts it short (checked
         below), and so does a failed poll (the next try comes sooner, no harm). */
      cleanup_error cp_error_t w = NULL;
      cp_nri_side_wait (s->side, s->n_side, -1, (int) wait_ms, &w);
      if (*s->stopping)
        break;
      cleanup_error cp_error_t e = NULL;
      if (cp_nri_conn_dial (s->socket, c, &e) == 0)
        return 0;
      LOG (s, CP_NRI_LOG_DEBUG, "nri: %s", cp_error_message (e));
      wait_ms = wait_ms * 2 > CP_NRI_BACKOFF_MAX_MS ? CP_NRI_BACKOFF_MAX_MS : wait_ms * 2;
    }
  return -1;
}

/* The first connection: the pre-launched form's descriptor, or S's socket dialled. */
static int
connect_first (const struct cp_nri_stub *s, struct cp_nri_conn *c, cp_error_t *err)
{
  if (s->prelaunched_fd >= 0)
    {
      cp_nri_conn_adopt (s->prelaunched_fd, c);
      LOG (s, CP_NRI_LOG_INFO, "nri: pre-launched, on descriptor %d", s->prelaunched_fd);
      return 0;
    }
  if (cp_nri_conn_dial (s->socket, c, err) < 0)
    return -1;
  LOG (s, CP_NRI_LOG_INFO, "nri: connected to %s", s->socket);
  return 0;
}

/* Connections, one after the other: when the runtime goes (a restart closes the
   socket; a restart may say Shutdown first, and a stop says it too: the two look
   alike from here, and a plugin that dialled has nobody to start it again, so both
   are followed by dialling again), the dialled form dials again and registers; the
   pre-launched form cannot (its descriptor is the runtime's), it ends and its
   runtime starts it again, which then resynchronizes. */
int
cp_nri_stub_run (const struct cp_nri_stub *s, cp_error_t *err)
{
  struct cp_nri_conn c = { .fd = -1, .cancel = s->stopping, .side = s->side, .n_side = s->n_side };
  if (connect_first (s, &c, err) < 0)
    return -1;
  if (s->connected && s->connected (s->ctx, err) < 0)
    {
      cp_nri_conn_close (&c);
      return -1;
    }
  for (bool again = false;; again = true)
    {
      cleanup_free char *why = NULL;
      enum conn_end end = run (s, &c, again, &why, err);
      cp_nri_conn_close (&c);
      if (end == CONN_STOPPED)
        LOG (s, CP_NRI_LOG_INFO, "nri: stopped by a signal");
      if (end != CONN_LOST)
        return end == CONN_FAILED ? -1 : 0;
      if (s->prelaunched_fd >= 0)
        {
          LOG (s, CP_NRI_LOG_INFO, "nri: the connection to the runtime ended (%s); exiting, the runtime starts the "
                                   "plugin again", why);
          return 0;
        }
      LOG (s, CP_NRI_LOG_INFO, "nri: the connection to the runtime ended (%s); dialling %s again", why, s->socket);
      if (redial (s, &c) < 0)
        {
          LOG (s, CP_NRI_LOG_INFO, "nri: stopped by a signal");
          return 0;
        }
    }
}
