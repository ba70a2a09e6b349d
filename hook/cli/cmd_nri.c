/* `cachepin nri`: the NRI plugin, a second front end on the hook's engine.
 *
 * The protocol (containerd/nri v0.8.0 pkg/stub/stub.go, what a Go plugin does):
 * connect to the runtime's socket, multiplexed (hook/nri/nri_wire.h); call
 * Runtime.RegisterPlugin{name, idx} on connection 2; serve the Plugin service on
 * connection 1: Configure (answered with the events subscribed to), Synchronize
 * (the containers that exist: what is placed rebuilt from them and the ledger,
 * nri_resync.c), then the container events (nri_events.c), and Shutdown.  One
 * request at a time, answered before the next is read: a placement takes
 * milliseconds, the runtime's request timeout is 2 s.
 *
 * When the runtime goes (closes or resets the connection, says Shutdown: a
 * containerd restart), the dialled form dials again with a backoff and registers
 * again, and the new Synchronize catches up with what changed meanwhile
 * (serve_runtime()).
 *
 * The pre-launched form: a runtime that starts the plugin itself (containerd's
 * plugin_path, /opt/nri/plugins/NN-name, here a script that runs `cachepin nri`)
 * hands it a connected socket as fd NRI_PLUGIN_SOCKET, and its name and index as
 * NRI_PLUGIN_NAME and NRI_PLUGIN_IDX (nri pkg/adaptation/plugin.go); --name and
 * --idx still win over those, and --socket then names the runtime's socket (which
 * runtime this is: the plugin's entries and its instance lock record it) without
 * dialling it.
 *
 * One plugin per runtime and state directory (hook/state/instance.h): a second
 * one, started beside the first (a DaemonSet beside the unit, or beside the
 * pre-launched form), exits 1 with one line naming the first.
 *
 * The sandbox: once connected, before the first request, the plugin enters its
 * own profile (hook/host/sandbox.h, CP_SANDBOX_PLUGIN; cp_cli_enter_plugin_sandbox()):
 * no_new_privs, Landlock (the state directory read-write, /proc, /sys and the
 * kubelet state's directory read), a seccomp allowlist with what a request needs
 * (flock, unix sockets only, poll, sleeps) and the hook's killed list (execve,
 * ptrace, mount, bpf, ...).  `sandbox: false` in the host config leaves it out.
 * A sandbox that cannot be entered ends the plugin (exit 1): containerd goes on
 * without it, as when it is not running. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "instance.h"
#include "journal.h"
#include "ledger.h"
#include "log.h"
#include "nri_conn.h"
#include "nri_plugin.h"
#include "nri_rpc.h"
#include "recheck.h"
#include "topocache.h"
#include "util.h"

#define CP_NRI_LOCK_TIMEOUT_MS 1000

static const char nri_usage[] =
  "Usage: cachepin nri [--socket PATH] [--name NAME] [--idx NN] [--config PATH]\n"
  "Run as an NRI plugin of containerd or CRI-O: place the containers that ask (their pod's\n"
  "or their own cachepin.io/ annotations) as they are created, keep their cpusets through\n"
  "updates, release them when they stop; at each connection's Synchronize, catch up\n"
  "with what changed while it was away.  When the runtime goes (a restart), dial it\n"
  "again (every 0.1 s to 5 s); started by the runtime, exit 0 instead.  Runs until\n"
  "SIGTERM.\n\n"
  "  --socket PATH    the runtime's NRI socket (default " CP_NRI_DEFAULT_SOCKET "); started\n"
  "                   by the runtime, the descriptor NRI_PLUGIN_SOCKET names is used and\n"
  "                   PATH only says which runtime that is (one plugin per runtime)\n"
  "  --name NAME      the plugin's name (default NRI_PLUGIN_NAME, or cachepin)\n"
  "  --idx NN         its index, two digits: the order among plugins (default\n"
  "                   NRI_PLUGIN_IDX, or 50)\n"
  "  --config PATH    host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  -h, --help       this text\n";

enum
{
  OPT_SOCKET = 0x200,
  OPT_NAME,
  OPT_IDX,
};

struct nri_args
{
  struct cp_cli_common c;
  const char *socket; /* NULL: the default, or NRI_PLUGIN_SOCKET's fd */
  const char *name;   /* NULL: NRI_PLUGIN_NAME or "cachepin" */
  const char *idx;    /* NULL: NRI_PLUGIN_IDX or "50" */
};

/* What NRI takes for a plugin's name (pkg/api: letters, digits, `_.+-`), 1 to 64
   of them: it names the plugin in the runtime's log and its config file. */
static int
check_name (const char *what, const char *arg, cp_error_t *err)
{
  size_t len = strlen (arg);
  if (len == 0 || len > 64 || strspn (arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-") != len)
    return cp_fail_input (err, "%s: 1 to 64 of the characters NRI allows (letters, digits, `_`, `.`, `+`, `-`)",
                          what);
  return 0;
}

/* nri pkg/api/plugin.go CheckPluginIndex: exactly two digits. */
static int
check_idx (const char *what, const char *arg, cp_error_t *err)
{
  if (strlen (arg) != 2 || arg[0] < '0' || arg[0] > '9' || arg[1] < '0' || arg[1] > '9')
    return cp_fail_input (err, "%s `%.64s`: two digits (00 to 99)", what, arg);
  return 0;
}

static int
nri_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct nri_args *a = args;
  switch (opt)
    {
    case OPT_SOCKET:
      a->socket = arg;
      return 1;
    case OPT_NAME:
      if (check_name ("--name", arg, err) < 0)
        return -1;
      a->name = arg;
      return 1;
    case OPT_IDX:
      if (check_idx ("--idx", arg, err) < 0)
        return -1;
      a->idx = arg;
      return 1;
    default:
      return 0;
    }
}

/* The runtime's NRI_PLUGIN_NAME and NRI_PLUGIN_IDX where no option names them. */
static int
names_from_env (struct nri_args *a, cp_error_t *err)
{
  const char *name = getenv ("NRI_PLUGIN_NAME"), *idx = getenv ("NRI_PLUGIN_IDX");
  if (a->name == NULL && name && *name)
    {
      if (check_name ("NRI_PLUGIN_NAME", name, err) < 0)
        return -1;
      a->name = name;
    }
  if (a->idx == NULL && idx && *idx)
    {
      if (check_idx ("NRI_PLUGIN_IDX", idx, err) < 0)
        return -1;
      a->idx = idx;
    }
  if (a->name == NULL)
    a->name = "cachepin";
  if (a->idx == NULL)
    a->idx = "50";
  return 0;
}

/* The connection: the pre-launched form's fd (NRI_PLUGIN_SOCKET: a socket, 3 or
   above; --socket then only names the runtime's socket, which the plugin's entries
   and its instance lock record), else --socket's, else the default socket's. */
static int
connect_runtime (const struct nri_args *a, struct cp_nri_conn *c, bool *prelaunched, cp_error_t *err)
{
  *prelaunched = false;
  const char *env = getenv ("NRI_PLUGIN_SOCKET");
  if (env && *env)
    {
      char *end;
      errno = 0;
      long fd = strtol (env, &end, 10);
      struct stat st;
      if (errno || *end || end == env || fd < 3 || fd > 65535 || fstat ((int) fd, &st) < 0 || !S_ISSOCK (st.st_mode))
        return cp_fail_input (err, "NRI_PLUGIN_SOCKET `%.32s`: not a connected socket's descriptor", env);
      unsetenv ("NRI_PLUGIN_SOCKET"); /* not for what this process may start */
      cp_nri_conn_adopt ((int) fd, c);
      *prelaunched = true;
      cp_log (CP_LOG_INFO, "nri: pre-launched, on descriptor %ld", fd);
      return 0;
    }
  const char *path = a->socket ? a->socket : CP_NRI_DEFAULT_SOCKET;
  if (cp_nri_conn_dial (path, c, err) < 0)
    return -1;
  cp_log (CP_LOG_INFO, "nri: connected to %s", path);
  return 0;
}

static const struct option nri_options[] = {
  { "socket", required_argument, NULL, OPT_SOCKET },
  { "name", required_argument, NULL, OPT_NAME },
  { "idx", required_argument, NULL, OPT_IDX },
  CP_CONFIG_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec nri_spec = {
  .name = "nri",
  .usage = nri_usage,
  .shortopts = "+:h",
  .options = nri_options,
  .option = nri_option,
};

static volatile sig_atomic_t stopping;

static void
on_stop (int sig)
{
  (void) sig;
  stopping = 1;
}

/* SIGTERM and SIGINT end the loop at its next wait (no SA_RESTART: poll returns). */
static void
catch_stop_signals (void)
{
  struct sigaction sa = { .sa_handler = on_stop };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
}

static int
register_plugin (struct cp_nri_conn *c, const struct nri_args *a, struct cp_buf *out, cp_error_t *err)
{
  Nri__Pkg__Api__V1alpha1__RegisterPluginRequest req = NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
  req.plugin_name = (char *) a->name;
  req.plugin_idx = (char *) a->idx;
  uint32_t stream = c->next_stream;
  c->next_stream += 2;
  if (cp_rpc_request_encode (CP_MUX_CONN_RUNTIME, stream, CP_NRI_SERVICE_RUNTIME, "RegisterPlugin", &req.base, out,
                             err) < 0)
    return -1;
  return cp_nri_conn_send (c, out, err);
}

/* The answer to our RegisterPlugin (the only call we make). */
static int
registered (const struct cp_ttrpc_msg *m, const struct nri_args *a, bool again, cp_error_t *err)
{
  if (m->type != CP_TTRPC_RESPONSE)
    return cp_fail_input (err, "NRI: a ttrpc message of type %u on the runtime's connection", m->type);
  int32_t code;
  cleanup_free char *message = NULL;
  if (cp_rpc_response_decode (m->payload, m->len, &code, &message, err) < 0)
    return -1;
  if (code != CP_RPC_OK)
    return cp_fail_runtime (err, "NRI: the runtime refused to register plugin %s-%s: %s (code %d)", a->idx, a->name,
                            message ? message : "no reason given", code);
  if (again)
    cp_log (CP_LOG_INFO, "nri: reconnected: registered again as plugin %s-%s", a->idx, a->name);
  else
    cp_log (CP_LOG_INFO, "nri: registered as plugin %s-%s", a->idx, a->name);
  return 0;
}

static int32_t events_served (void);

/* Configure: the runtime's request timeout kept (the deadline of every answer); a
   plugin config the runtime passes (its plugin_config_path's file for us) is not
   read, and that is said: the host config (--config) is the one configuration, the
   same for every front end on the node. */
static int
configure (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__ConfigureRequest *req, struct cp_nri_call *call,
           cp_error_t *err)
{
  cp_log (CP_LOG_INFO, "nri: configured by %.64s %.64s (registration timeout %lld ms, request timeout %lld ms)",
          req->runtime_name, req->runtime_version, (long long) req->registration_timeout,
          (long long) req->request_timeout);
  if (req->request_timeout > 0)
    p->request_timeout_ms = (long) req->request_timeout;
  if (req->config && req->config[0])
    cp_log (CP_LOG_WARNING, "nri: the runtime passed a plugin configuration (%zu bytes, from its plugin_config_path): "
                            "not read; cachepin's configuration is its host config, %s",
            strlen (req->config), p->hc->path ? p->hc->path : CP_HOSTCONFIG_DEFAULT_PATH);
  if (req->request_timeout > 0 && req->request_timeout < 2 * CP_NRI_LOCK_TIMEOUT_MS)
    cp_log (CP_LOG_WARNING, "nri: the runtime's request timeout (%lld ms) leaves little room for the ledger's lock "
                            "wait (at most %d ms)", (long long) req->request_timeout, CP_NRI_LOCK_TIMEOUT_MS);
  Nri__Pkg__Api__V1alpha1__ConfigureResponse resp = NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;
  resp.events = events_served ();
  return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
}

#define EV(name) NRI__PKG__API__V1ALPHA1__EVENT__##name

/* One method of the Plugin service: its request message and its handler.  A
   handler returns 0, < 0 on ERR, or CP_NRI_SYNC_TOO_LONG: answered, then the
   connection closes. */
typedef int (*method_fn) (struct cp_nri_plugin *p, const ProtobufCMessage *req, struct cp_nri_call *call, bool *stop,
                          cp_error_t *err);

#define ADAPT(fn, type, call_expr)                                                                                \
  static int fn (struct cp_nri_plugin *p, const ProtobufCMessage *m, struct cp_nri_call *call, bool *stop,        \
                 cp_error_t *err)                                                                                 \
  {                                                                                                               \
    (void) stop;                                                                                                  \
    const type *req = (const type *) m;                                                                           \
    return call_expr;                                                                                             \
  }

ADAPT (m_configure, Nri__Pkg__Api__V1alpha1__ConfigureRequest, configure (p, req, call, err))
ADAPT (m_synchronize, Nri__Pkg__Api__V1alpha1__SynchronizeRequest, cp_nri_synchronize (p, req, call, err))
ADAPT (m_create, Nri__Pkg__Api__V1alpha1__CreateContainerRequest, cp_nri_create_container (p, req, call, err))
ADAPT (m_update, Nri__Pkg__Api__V1alpha1__UpdateContainerRequest, cp_nri_update_container (p, req, call, err))
ADAPT (m_stop, Nri__Pkg__Api__V1alpha1__StopContainerRequest, cp_nri_stop_container (p, req, call, err))
ADAPT (m_state, Nri__Pkg__Api__V1alpha1__StateChangeEvent, cp_nri_state_change (p, req, call, err))

/* v0.12's methods of their own for what v0.8 delivers as StateChange: the same
   handling, answered with the method's (empty) response. */
#define EVENT_METHOD(fn, type, event, resp_init)                                                                   \
  static int fn (struct cp_nri_plugin *p, const ProtobufCMessage *m, struct cp_nri_call *call, bool *stop,         \
                 cp_error_t *err)                                                                                  \
  {                                                                                                                \
    (void) stop;                                                                                                   \
    const type *req = (const type *) m;                                                                            \
    cp_nri_container_event (p, event, req->pod, req->container);                                                   \
    ProtobufCMessage resp = resp_init;                                                                             \
    return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp, call->out, err);      \
  }

EVENT_METHOD (m_post_create, Nri__Pkg__Api__V1alpha1__PostCreateContainerRequest, EV (POST_CREATE_CONTAINER),
              PROTOBUF_C_MESSAGE_INIT (&nri__pkg__api__v1alpha1__post_create_container_response__descriptor))
EVENT_METHOD (m_start, Nri__Pkg__Api__V1alpha1__StartContainerRequest, EV (START_CONTAINER),
              PROTOBUF_C_MESSAGE_INIT (&nri__pkg__api__v1alpha1__start_container_response__descriptor))
EVENT_METHOD (m_remove, Nri__Pkg__Api__V1alpha1__RemoveContainerRequest, EV (REMOVE_CONTAINER),
              PROTOBUF_C_MESSAGE_INIT (&nri__pkg__api__v1alpha1__remove_container_response__descriptor))

static int
m_shutdown (struct cp_nri_plugin *p, const ProtobufCMessage *m, struct cp_nri_call *call, bool *stop,
            cp_error_t *err)
{
  (void) p;
  (void) m;
  cp_log (CP_LOG_DEBUG, "nri: the runtime said Shutdown");
  *stop = true; /* the connection ends here: the runtime is going (stopped or restarting) */
  Nri__Pkg__Api__V1alpha1__Empty resp = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
  return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
}

/* The Plugin service as cachepin serves it: the one table the dispatch and the
   events subscribed to (Configure's mask) both come from.  EVENT: the container
   event a method handles, whose bit (1 << (event - 1), nri pkg/api/event.go) is
   subscribed to; 0 for the calls every plugin gets.  A v0.12 runtime calls the
   methods of their own (PostCreateContainer, StartContainer, RemoveContainer) and
   falls back to StateChange for good on one Unimplemented; a v0.8 runtime (containerd
   1.7 to 2.1) knows only StateChange for them.  Every bit here is one v0.8 knows (it
   refuses bits past its last event). */
static const struct method
{
  const char *name;
  const ProtobufCMessageDescriptor *desc;
  method_fn fn;
  int event;
} methods[] = {
  { "Configure", &nri__pkg__api__v1alpha1__configure_request__descriptor, m_configure, 0 },
  { "Synchronize", &nri__pkg__api__v1alpha1__synchronize_request__descriptor, m_synchronize, 0 },
  { "Shutdown", &nri__pkg__api__v1alpha1__empty__descriptor, m_shutdown, 0 },
  { "CreateContainer", &nri__pkg__api__v1alpha1__create_container_request__descriptor, m_create,
    EV (CREATE_CONTAINER) },
  { "PostCreateContainer", &nri__pkg__api__v1alpha1__post_create_container_request__descriptor, m_post_create,
    EV (POST_CREATE_CONTAINER) },
  { "StartContainer", &nri__pkg__api__v1alpha1__start_container_request__descriptor, m_start, EV (START_CONTAINER) },
  { "UpdateContainer", &nri__pkg__api__v1alpha1__update_container_request__descriptor, m_update,
    EV (UPDATE_CONTAINER) },
  { "StopContainer", &nri__pkg__api__v1alpha1__stop_container_request__descriptor, m_stop, EV (STOP_CONTAINER) },
  { "RemoveContainer", &nri__pkg__api__v1alpha1__remove_container_request__descriptor, m_remove,
    EV (REMOVE_CONTAINER) },
  { "StateChange", &nri__pkg__api__v1alpha1__state_change_event__descriptor, m_state, 0 },
};

static int32_t
events_served (void)
{
  int32_t mask = 0;
  for (size_t i = 0; i < CP_ARRAY_SIZE (methods); i++)
    if (methods[i].event)
      mask |= 1 << (methods[i].event - 1);
  return mask;
}

/* A request of the runtime on connection 1, answered into OUT.  A request we
   cannot read closes the connection (one line); a method we do not serve is
   answered Unimplemented, as a Go server does. */
static int
serve (struct cp_nri_plugin *p, const struct cp_ttrpc_msg *m, struct cp_buf *out, bool *stop, cp_error_t *err)
{
  if (m->type != CP_TTRPC_REQUEST)
    return cp_fail_input (err, "NRI: a ttrpc message of type %u on the plugin's connection", m->type);
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  Ttrpc__Request *req = NULL;
  if (cp_rpc_request_decode (m->payload, m->len, &req, err) < 0)
    return -1;
  struct cp_nri_call call = { .stream = m->stream, .out = out };
  int r = -2;
  for (size_t i = 0; i < CP_ARRAY_SIZE (methods) && r == -2; i++)
    {
      if (strcmp (req->service, CP_NRI_SERVICE_PLUGIN) != 0 || strcmp (req->method, methods[i].name) != 0)
        continue;
      ProtobufCMessage *msg = NULL;
      if (cp_rpc_message_decode (methods[i].desc, req->payload.data, req->payload.len, &msg, err) < 0)
        r = cp_error_wrap (err, "%s", req->method);
      else
        {
          r = methods[i].fn (p, msg, &call, stop, err);
          protobuf_c_message_free_unpacked (msg, NULL);
        }
    }
  if (r == -2)
    {
      cleanup_free char *why = cp_xasprintf ("%.128s.%.64s: not served by cachepin", req->service, req->method);
      cp_log (CP_LOG_DEBUG, "nri: %s", why);
      r = cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, m->stream, CP_RPC_UNIMPLEMENTED, why, NULL, out, err);
    }
  /* The runtime waits for the answer (2 s at most, then it goes on without us). */
  clock_gettime (CLOCK_MONOTONIC, &t1);
  long us = (long) ((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
  cp_log (CP_LOG_DEBUG, "nri: %.64s answered in %ld us", req->method, us);
  if (us / 1000 >= p->request_timeout_ms)
    cp_log (CP_LOG_WARNING, "nri: %.64s answered after %ld ms, past the runtime's %ld ms: it went on without the "
                            "answer (a placement made stays pending until the container starts, then is settled "
                            "from what it runs on)",
            req->method, us / 1000, p->request_timeout_ms);
  ttrpc__request__free_unpacked (req, NULL);
  return r;
}

/* How a connection ended. */
enum conn_end
{
  CONN_LOST,    /* the runtime went: it closed or reset the socket, or said Shutdown */
  CONN_STOPPED, /* SIGTERM or SIGINT */
  CONN_FAILED,  /* what a new connection would not cure (*ERR): a refused registration,
                   a message we cannot read */
};

/* The connection is gone when the socket itself fails (an errno: reset, broken
   pipe); a frame or message we cannot read is ours to report, not a reason to dial
   again. */
static enum conn_end
lost_or_failed (const char *what, cp_error_t *err, char **why)
{
  if (cp_error_errno (*err) == 0)
    return CONN_FAILED;
  *why = cp_xasprintf ("%s: %s", what, cp_error_message (*err));
  cp_error_free (err);
  return CONN_LOST;
}

/* What the sandboxed plugin cannot repair in its state directory, or NULL: the
   directory replaced since it started (Landlock reaches the one it started with),
   a ledger file that is not a regular file (setting it aside is a rename the
   sandbox refuses).  A plugin started again repairs both before its sandbox. */
static char *
state_trouble (const struct cp_nri_plugin *p)
{
  const char *dir = p->hc->state_dir;
  struct stat st;
  if (stat (dir, &st) < 0 || st.st_dev != p->state_dev || st.st_ino != p->state_ino)
    return cp_xasprintf ("the state directory %s was removed or replaced since the plugin started (its sandbox "
                         "reaches only the one it started with)", dir);
  static const char *const files[] = { CP_LEDGER_FILE, CP_LEDGER_LOCK_FILE };
  for (size_t i = 0; i < CP_ARRAY_SIZE (files); i++)
    {
      cleanup_free char *path = cp_xasprintf ("%s/%s", dir, files[i]);
      if (lstat (path, &st) == 0 && !S_ISREG (st.st_mode))
        return cp_xasprintf ("%s/%s is not a regular file (a link, a directory, a FIFO), which the sandboxed plugin "
                             "cannot set aside", dir, files[i]);
    }
  return NULL;
}

/* Serve C until it ends; *WHY (CONN_LOST) says how, for the one line said. */
static enum conn_end
run (const struct nri_args *a, struct cp_nri_plugin *p, struct cp_nri_conn *c, bool again, char **why,
     cp_error_t *err)
{
  struct cp_buf out = { 0 };
  enum conn_end end = CONN_LOST;
  bool stop = false;
  if (register_plugin (c, a, &out, err) < 0)
    end = lost_or_failed ("registering", err, why);
  else
    for (;;)
      {
        if (stopping)
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
          end = lost_or_failed ("read", err, why);
        if (r <= 0)
          break;
        int ret;
        bool too_long = false;
        if (conn == CP_MUX_CONN_RUNTIME)
          ret = registered (&m, a, again, err);
        else if ((ret = serve (p, &m, &out, &stop, err)) >= 0)
          {
            too_long = ret == CP_NRI_SYNC_TOO_LONG;
            if ((ret = cp_nri_conn_send (c, &out, err)) < 0)
              ret = -2;
          }
        cp_ttrpc_msg_clear (&m);
        cleanup_free char *trouble = ret == 0 ? state_trouble (p) : NULL;
        if (trouble)
          {
            cp_fail_runtime (err, "%s; exiting, to be started again (systemd's Restart=, the DaemonSet; "
                                  "containerd's next start for the pre-launched form), which repairs it before "
                                  "the sandbox",
                             trouble);
            end = CONN_FAILED;
            break;
          }
        if (ret == 0 && too_long)
          {
            *why = cp_xstrdup ("a Synchronize past its bounds");
            break;
          }
        if (ret == -2)
          end = lost_or_failed ("write", err, why);
        else if (ret < 0)
          end = CONN_FAILED;
        else if (stop)
          *why = cp_xstrdup ("the runtime said Shutdown");
        if (ret < 0 || stop)
          break;
      }
  cp_nri_sync_clear (&p->sync);
  cp_buf_free (&out);
  return end;
}

#define CP_NRI_BACKOFF_FIRST_MS 100
#define CP_NRI_BACKOFF_MAX_MS 5000

/* Dial A's socket again until it answers or a signal stops us: 0.1 s, doubling, at
   most 5 s between tries, for ever (the runtime may take long to come back, and
   nothing is placed without it anyway).  Each failed try at debug level only. */
static int
redial (const struct nri_args *a, struct cp_nri_conn *c)
{
  const char *path = a->socket ? a->socket : CP_NRI_DEFAULT_SOCKET;
  long wait_ms = CP_NRI_BACKOFF_FIRST_MS;
  while (!stopping)
    {
      struct timespec ts = { .tv_sec = wait_ms / 1000, .tv_nsec = (wait_ms % 1000) * 1000000 };
      nanosleep (&ts, NULL); /* a signal cuts it short: checked above */
      if (stopping)
        break;
      cleanup_error cp_error_t e = NULL;
      if (cp_nri_conn_dial (path, c, &e) == 0)
        return 0;
      cp_log (CP_LOG_DEBUG, "nri: %s", cp_error_message (e));
      wait_ms = wait_ms * 2 > CP_NRI_BACKOFF_MAX_MS ? CP_NRI_BACKOFF_MAX_MS : wait_ms * 2;
    }
  return -1;
}

/* Connections, one after the other: when the runtime goes (a containerd restart
   closes the socket; a restart may say Shutdown first, and a stop says it too:
   the two look alike from here, and a plugin that dialled has nobody to start it
   again, so both are followed by dialling again), the dialled form dials again and
   registers; the pre-launched form cannot (its descriptor is the runtime's), it
   exits 0 and its runtime starts it again, which then resynchronizes. */
static int
serve_runtime (const struct nri_args *a, struct cp_nri_plugin *p, cp_error_t *err)
{
  const struct cp_hostconfig *hc = p->hc;
  struct cp_nri_conn c = { .fd = -1 };
  bool prelaunched;
  if (connect_runtime (a, &c, &prelaunched, err) < 0)
    return -1;
  c.cancel = &stopping;
  /* Everything set up (config, socket, syslog): the sandbox for the rest, the
     redials included (a unix socket and connect() are in its profile). */
  if (cp_cli_enter_plugin_sandbox (hc, err) < 0)
    {
      cp_nri_conn_close (&c);
      return -1;
    }
  for (bool again = false;; again = true)
    {
      cleanup_free char *why = NULL;
      enum conn_end end = run (a, p, &c, again, &why, err);
      cp_nri_conn_close (&c);
      if (end == CONN_STOPPED)
        cp_log (CP_LOG_INFO, "nri: stopped by a signal");
      if (end != CONN_LOST)
        return end == CONN_FAILED ? -1 : 0;
      if (prelaunched)
        {
          cp_log (CP_LOG_INFO, "nri: the connection to the runtime ended (%s); exiting, the runtime starts the "
                               "plugin again", why);
          return 0;
        }
      cp_log (CP_LOG_INFO, "nri: the connection to the runtime ended (%s); dialling %s again", why,
              a->socket ? a->socket : CP_NRI_DEFAULT_SOCKET);
      if (redial (a, &c) < 0)
        {
          cp_log (CP_LOG_INFO, "nri: stopped by a signal");
          return 0;
        }
    }
}

int
cp_cmd_nri (int argc, char **argv, cp_error_t *err)
{
  struct nri_args a = { 0 };
  int r = cp_cli_begin (&nri_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  if (names_from_env (&a, err) < 0)
    return -1;
  cp_log_init ("cachepin", true);
  struct cp_hostconfig hc = { 0 };
  if (cp_cli_load_config (&a.c, &hc, err) < 0)
    return -1;
  /* Every answer well inside the runtime's request timeout (containerd's default
     2 s; past it, it goes on without the plugin's answer): the ledger's lock is
     waited for at most half of that (the host config's lock_timeout_ms is a hook's,
     5 s by default); a wait that times out leaves the container unplaced, or fails a
     strict one, as any host failure does. */
  if (hc.lock_timeout_ms > CP_NRI_LOCK_TIMEOUT_MS)
    hc.lock_timeout_ms = CP_NRI_LOCK_TIMEOUT_MS;
  /* A long-running process: the topology model stays in memory while its key
     holds, and an entry found alive is checked again only after the recheck
     window (recheck.h: a dead container's CPUs, or a drift, are seen up to
     CP_PLACER_RECHECK_SECONDS later than by the hook), and the parsed ledger is
     reused while ledger.json is provably the file it was read from or written
     as (ledger_store.h: checked under the lock, at every call); so are the
     journal's records (journal.h, the same identity check under its lock). */
  cp_topocache_keep (true);
  cp_placer_recheck_after (CP_PLACER_RECHECK_SECONDS, NULL);
  cp_ledger_cache_keep (true);
  cp_journal_cache_keep (true);
  cp_cli_journal_admissions (&hc, CP_JOURNAL_NRI);
  /* The runtime this plugin serves, which its entries record (owner.h): the socket
     it dials; the pre-launched form's runtime is the one on the default socket
     unless --socket names another. */
  const char *runtime = a.socket ? a.socket : CP_NRI_DEFAULT_SOCKET;
  struct cp_nri_plugin plugin = {
    .hc = &hc,
    .owner = { .origin = CP_ORIGIN_NRI, .runtime = runtime },
    .request_timeout_ms = 2000,
  };
  /* One plugin per runtime and state directory, for the whole run (instance.h):
     before anything is served or forked. */
  cleanup_close int instance = cp_instance_lock (hc.state_dir, "nri", runtime, err);
  if (instance < 0)
    {
      cp_hostconfig_free (&hc);
      return -1;
    }
  /* The ledger opened once before the sandbox: what only root's rights repair (a
     ledger.json or ledger.lock that is a link, a directory, a FIFO: set aside) is
     repaired now; the state directory's identity kept (state_trouble()). */
  struct stat st;
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (hc.state_dir, hc.lock_timeout_ms, &l, err) < 0 || stat (hc.state_dir, &st) < 0)
    {
      if (*err == NULL)
        cp_fail_errno (err, errno, "state directory %s", hc.state_dir);
      cp_ledger_close (l);
      cp_hostconfig_free (&hc);
      return -1;
    }
  cp_ledger_close (l);
  plugin.state_dev = st.st_dev;
  plugin.state_ino = st.st_ino;
  cp_nri_core_sched_init (&hc); /* before the sandbox: a prctl, and a fork */
  cp_nri_isolate_init (&hc);    /* before the sandbox: the cgroup mount, and a fork */
  catch_stop_signals ();
  r = serve_runtime (&a, &plugin, err);
  cp_nri_core_sched_stop ();
  cp_nri_isolate_stop ();
  cp_hostconfig_free (&hc);
  return r;
}
