/* `cachepin nri`: the NRI plugin, a second front end on the hook's engine.
 *
 * The protocol is hook/nri/nri_stub.h's (connect, register, Configure, the one
 * method table, Shutdown, reconnecting, the pre-launched form); this file is the
 * front end: its options, its state in one object (struct cp_nri_plugin), the table
 * of what it serves (the events through the engine: nri_events.c, nri_resync.c),
 * and what it does around the calls: one plugin per runtime and state directory
 * (hook/state/instance.h), the ledger opened once before the sandbox (what only
 * root's rights repair), the sandbox once connected, and after each answered call
 * a look at what the sandbox cannot repair (state_trouble()).
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "instance.h"
#include "journal.h"
#include "ledger.h"
#include "log.h"
#include "nri_plugin.h"
#include "nri_rpc.h"
#include "nri_stub.h"
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
      if (cp_nri_check_name ("--name", arg, err) < 0)
        return -1;
      a->name = arg;
      return 1;
    case OPT_IDX:
      if (cp_nri_check_idx ("--idx", arg, err) < 0)
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
      if (cp_nri_check_name ("NRI_PLUGIN_NAME", name, err) < 0)
        return -1;
      a->name = name;
    }
  if (a->idx == NULL && idx && *idx)
    {
      if (cp_nri_check_idx ("NRI_PLUGIN_IDX", idx, err) < 0)
        return -1;
      a->idx = idx;
    }
  if (a->name == NULL)
    a->name = "cachepin";
  if (a->idx == NULL)
    a->idx = "50";
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

/* SIGTERM and SIGINT end the run at its next wait, a blocked write included (no
   SA_RESTART: poll returns, and the connection's cancel flag is this one). */
static void
catch_stop_signals (void)
{
  struct sigaction sa = { .sa_handler = on_stop };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
}

/* ---- the methods it serves ---------------------------------------------------------- */

#define EV(name) NRI__PKG__API__V1ALPHA1__EVENT__##name

#define ADAPT(fn, type, handler)                                                                                  \
  static int fn (void *ctx, const ProtobufCMessage *m, struct cp_nri_call *call, cp_error_t *err)                 \
  {                                                                                                               \
    return handler (ctx, (const type *) m, call, err);                                                            \
  }

ADAPT (m_synchronize, Nri__Pkg__Api__V1alpha1__SynchronizeRequest, cp_nri_synchronize)
ADAPT (m_create, Nri__Pkg__Api__V1alpha1__CreateContainerRequest, cp_nri_create_container)
ADAPT (m_update, Nri__Pkg__Api__V1alpha1__UpdateContainerRequest, cp_nri_update_container)
ADAPT (m_stop, Nri__Pkg__Api__V1alpha1__StopContainerRequest, cp_nri_stop_container)
ADAPT (m_state, Nri__Pkg__Api__V1alpha1__StateChangeEvent, cp_nri_state_change)

/* v0.12's methods of their own for what v0.8 delivers as StateChange: the same
   handling, answered with the method's (empty) response. */
#define EVENT_METHOD(fn, type, event, resp_desc)                                                                   \
  static int fn (void *ctx, const ProtobufCMessage *m, struct cp_nri_call *call, cp_error_t *err)                 \
  {                                                                                                                \
    const type *req = (const type *) m;                                                                            \
    cp_nri_container_event (ctx, event, req->pod, req->container);                                                 \
    ProtobufCMessage resp = PROTOBUF_C_MESSAGE_INIT (resp_desc);                                                   \
    return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp, call->out, err);      \
  }

EVENT_METHOD (m_post_create, Nri__Pkg__Api__V1alpha1__PostCreateContainerRequest, EV (POST_CREATE_CONTAINER),
              &nri__pkg__api__v1alpha1__post_create_container_response__descriptor)
EVENT_METHOD (m_start, Nri__Pkg__Api__V1alpha1__StartContainerRequest, EV (START_CONTAINER),
              &nri__pkg__api__v1alpha1__start_container_response__descriptor)
EVENT_METHOD (m_remove, Nri__Pkg__Api__V1alpha1__RemoveContainerRequest, EV (REMOVE_CONTAINER),
              &nri__pkg__api__v1alpha1__remove_container_response__descriptor)

/* The Plugin service as cachepin serves it (Configure and Shutdown are the stub's):
   the one table the dispatch and the events subscribed to both come from.  A v0.12
   runtime calls the methods of their own (PostCreateContainer, StartContainer,
   RemoveContainer) and falls back to StateChange for good on one Unimplemented; a
   runtime before NRI v0.12 (containerd 1.7 to 2.2) knows only StateChange for them.  Every event
   here is one v0.8 knows (it refuses bits past its last). */
static const struct cp_nri_method methods[] = {
  { "Synchronize", &nri__pkg__api__v1alpha1__synchronize_request__descriptor, m_synchronize, 0 },
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

/* ---- around the calls --------------------------------------------------------------- */

/* Configure: the runtime's request timeout kept (the deadline of every answer); a
   plugin config the runtime passes (its plugin_config_path's file for us) is not
   read, and that is said: the host config (--config) is the one configuration, the
   same for every front end on the node. */
static void
configured (void *ctx, const Nri__Pkg__Api__V1alpha1__ConfigureRequest *req)
{
  struct cp_nri_plugin *p = ctx;
  cp_log (CP_LOG_INFO, "nri: configured by %.64s %.64s (registration timeout %lld ms, request timeout %lld ms)",
          req->runtime_name, req->runtime_version, (long long) req->registration_timeout,
          (long long) req->request_timeout);
  if (req->request_timeout > 0)
    p->request_timeout_ms = (long) req->request_timeout;
  if (req->request_timeout > 0 && req->request_timeout < 2 * CP_NRI_LOCK_TIMEOUT_MS)
    cp_log (CP_LOG_WARNING, "nri: the runtime's request timeout (%lld ms) leaves little room for the ledger's lock "
                            "wait (at most %d ms)", (long long) req->request_timeout, CP_NRI_LOCK_TIMEOUT_MS);
  if (req->config && req->config[0])
    cp_log (CP_LOG_WARNING, "nri: the runtime passed a plugin configuration (%zu bytes, from its plugin_config_path): "
                            "not read; cachepin's configuration is its host config, %s",
            strlen (req->config), p->hc->path ? p->hc->path : CP_HOSTCONFIG_DEFAULT_PATH);
}

/* Connected, before the first request: the sandbox for the rest, the redials
   included (a unix socket and connect() are in its profile). */
static int
connected (void *ctx, cp_error_t *err)
{
  struct cp_nri_plugin *p = ctx;
  return cp_cli_enter_plugin_sandbox (p->hc, err);
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

/* After each answered call: an answer past the runtime's deadline said (it went on
   without it: what the answer placed is settled at the container's start), and what
   the sandbox cannot repair ends the plugin, to be started again. */
static int
answered (void *ctx, const char *method, long us, cp_error_t *err)
{
  struct cp_nri_plugin *p = ctx;
  if (us / 1000 >= p->request_timeout_ms)
    cp_log (CP_LOG_WARNING, "nri: %.64s answered after %ld ms, past the runtime's %ld ms: it went on without the "
                            "answer (a placement made stays pending until the container starts, then is settled "
                            "from what it runs on)",
            method, us / 1000, p->request_timeout_ms);
  cleanup_free char *trouble = state_trouble (p);
  if (trouble)
    return cp_fail_runtime (err, "%s; exiting, to be started again (systemd's Restart=, the DaemonSet; "
                                 "containerd's next start for the pre-launched form), which repairs it before "
                                 "the sandbox",
                            trouble);
  return 0;
}

/* A connection ended: a split Synchronize is the connection's. */
static void
ended (void *ctx)
{
  struct cp_nri_plugin *p = ctx;
  cp_nri_sync_clear (&p->sync);
}

static void
stub_log (enum cp_nri_log_level level, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  static const enum cp_log_level levels[] = {
    [CP_NRI_LOG_ERROR] = CP_LOG_ERROR,
    [CP_NRI_LOG_WARNING] = CP_LOG_WARNING,
    [CP_NRI_LOG_INFO] = CP_LOG_INFO,
    [CP_NRI_LOG_DEBUG] = CP_LOG_DEBUG,
  };
  cp_log (levels[level], "%s", line);
}

/* The ledger opened once before the sandbox: what only root's rights repair (a
   ledger.json or ledger.lock that is a link, a directory, a FIFO: set aside) is
   repaired now; the state directory's identity kept (state_trouble()). */
static int
open_state (struct cp_nri_plugin *p, cp_error_t *err)
{
  struct stat st;
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (p->hc->state_dir, p->hc->lock_timeout_ms, &l, err) < 0)
    return -1;
  cp_ledger_close (l);
  if (stat (p->hc->state_dir, &st) < 0)
    return cp_fail_errno (err, errno, "state directory %s", p->hc->state_dir);
  p->state_dev = st.st_dev;
  p->state_ino = st.st_ino;
  return 0;
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
  int fd = cp_nri_prelaunched_fd (err);
  if (fd < 0 || open_state (&plugin, err) < 0)
    {
      cp_hostconfig_free (&hc);
      return -1;
    }
  cp_nri_core_sched_init (&hc); /* before the sandbox: a prctl, and a fork */
  cp_nri_isolate_init (&hc);    /* before the sandbox: the cgroup mount, and a fork */
  catch_stop_signals ();
  struct cp_nri_stub stub = {
    .name = a.name,
    .idx = a.idx,
    .socket = runtime,
    .prelaunched_fd = fd > 0 ? fd : -1,
    .methods = methods,
    .n_methods = CP_ARRAY_SIZE (methods),
    .ctx = &plugin,
    .stopping = &stopping,
    .configured = configured,
    .connected = connected,
    .answered = answered,
    .ended = ended,
    .log = stub_log,
  };
  r = cp_nri_stub_run (&stub, err);
  cp_nri_core_sched_stop ();
  cp_nri_isolate_stop ();
  cp_hostconfig_free (&hc);
  return r;
}
