/* The NRI agent (`cachepin nri`): one process that serves a runtime's NRI calls
 * through the engine, its state in one object (struct cp_nri_plugin, nri_plugin.h)
 * and its loop the protocol stub's (hook/nri/nri_stub.h), which other endpoints of
 * the same process join as side descriptors (nri_conn.h, struct cp_nri_side).
 *
 * Around the calls: one agent per runtime and state directory (daemon.h), the
 * ledger opened once before the sandbox (what only root's rights repair), the
 * sandbox once connected (front.h: no_new_privs, Landlock, a seccomp allowlist, no
 * capability; `sandbox: false` in the host config leaves it out), and after each
 * answered call a look at what the sandbox cannot repair, which ends the run to
 * be started again.  A sandbox that cannot be entered ends the run (exit 1):
 * containerd goes on without the plugin, as when it is not running. */
#define _GNU_SOURCE
#include "nri_agent.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "front.h"
#include "log.h"
#include "nri_plugin.h"
#include "nri_rpc.h"
#include "nri_stub.h"
#include "started.h"
#include "util.h"

#define CP_NRI_LOCK_TIMEOUT_MS 1000

static volatile sig_atomic_t stopping;

static void
on_stop (int sig)
{
  (void) sig;
  stopping = 1;
}

/* SIGTERM and SIGINT end the run at its next wait, a blocked write included (no
   SA_RESTART: poll returns, and the connection's cancel flag is this one).  They
   are blocked but in the loop's waits (nri_conn.h): one that came while a side's
   handler ran was lost before, the loop sleeping on until the runtime spoke. */
static void
catch_stop_signals (void)
{
  struct sigaction sa = { .sa_handler = on_stop };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  cp_nri_block_stop_signals ();
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
  cp_nri_watch_registered (&p->watch, true);
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
  struct cp_front_listener l = { .grpc_listen_fds = { -1, -1 }, .grpc_epoll_fd = -1, .cdi_dirfd = -1 };
  cp_nri_watch_fds (&p->watch, &l.listen_fd, &l.epoll_fd);
  if (p->kubelet.server)
    {
      cp_grpc_server_listen_fds (p->kubelet.server, l.grpc_listen_fds, 2);
      l.grpc_epoll_fd = cp_grpc_server_fd (p->kubelet.server);
      l.grpc_dirs[0] = p->kubelet.reg_dir;
      l.grpc_dirs[1] = p->kubelet.dra_dir;
      l.cdi_dirfd = p->kubelet.pub ? p->kubelet.cdi_dirfd : -1;
    }
  return cp_front_enter_plugin_sandbox (p->hc, &l, err);
}

/* After each answered call: an answer past the runtime's deadline said (it went on
   without it: what the answer placed is settled at the container's start), and what
   the sandbox cannot repair ends the plugin, to be started again. */
static int
answered (void *ctx, const char *method, long us, cp_error_t *err)
{
  struct cp_nri_plugin *p = ctx;
  cp_nri_watch_answered (&p->watch, method, us);
  if (us / 1000 >= p->request_timeout_ms)
    cp_log (CP_LOG_WARNING, "nri: %.64s answered after %ld ms, past the runtime's %ld ms: it went on without the "
                            "answer (a placement made stays pending until the container starts, then is settled "
                            "from what it runs on)",
            method, us / 1000, p->request_timeout_ms);
  cleanup_free char *trouble = cp_daemon_state_trouble (p->hc, &p->state);
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
  cp_nri_watch_registered (&p->watch, false);
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

int
cp_nri_agent_run (const struct cp_nri_agent_options *o, struct cp_hostconfig *hc, cp_error_t *err)
{
  /* Every answer well inside the runtime's request timeout (containerd's default
     2 s; past it, it goes on without the plugin's answer): the ledger's lock is
     waited for at most half of that (the host config's lock_timeout_ms is a hook's,
     5 s by default); a wait that times out leaves the container unplaced, or fails a
     strict one, as any host failure does. */
  if (hc->lock_timeout_ms > CP_NRI_LOCK_TIMEOUT_MS)
    hc->lock_timeout_ms = CP_NRI_LOCK_TIMEOUT_MS;
  /* A long-running process: the topology model, the ledger and the journal kept
     between calls while provably the files read, an entry found alive checked
     again only after the recheck window (daemon.h: a dead container's CPUs, or a
     drift, are seen up to CP_PLACER_RECHECK_SECONDS later than by the hook). */
  cp_daemon_keep_caches ();
  cp_front_journal_admissions (hc, CP_JOURNAL_NRI);
  /* The runtime this plugin serves, which its entries record (owner.h): the socket
     it dials; the pre-launched form's runtime is the one on the default socket
     unless --socket names another. */
  const char *runtime = o->socket ? o->socket : CP_NRI_DEFAULT_SOCKET;
  struct cp_nri_plugin plugin = {
    .hc = hc,
    .owner = { .origin = CP_ORIGIN_NRI, .runtime = runtime },
    .request_timeout_ms = 2000,
  };
  /* One plugin per runtime and state directory, for the whole run: before
     anything is served or forked. */
  cleanup_close int instance = cp_daemon_lock_instance (hc, "nri", runtime, err);
  if (instance < 0)
    return -1;
  int fd = cp_nri_prelaunched_fd (err);
  if (fd < 0 || cp_daemon_open_state (hc, &plugin.state, err) < 0)
    return -1;
  /* --dra-node: the publisher, forked first (it closes what it inherits) and before
     the sandbox; its outcomes read by the loop as one more side. */
  struct cp_nri_dra dra;
  struct cp_nri_side sides[CP_NRI_WATCH_MAX_SIDES];
  size_t n_sides = 0, n_dra = 0;
  for (size_t i = 0; i < o->n_side && n_sides < CP_NRI_WATCH_MAX_SIDES - 1; i++)
    sides[n_sides++] = o->side[i];
  if (cp_nri_dra_start (&dra, hc, &o->dra, &sides[n_sides], &n_dra, err) < 0)
    return -1;
  n_sides += n_dra;
  cp_started_core_sched_init (hc); /* before the sandbox: a prctl, and a fork */
  cp_started_isolate_init (hc);   /* before the sandbox: the cgroup mount, and a fork */
  /* The listener bound before the sandbox and before the runtime is dialled (its
     probes say "not ready" until the registration), after the helpers' forks: they
     hold no copy of its socket, which would keep the port bound past the plugin. */
  /* The kubelet plugin's sockets likewise: their server one more side. */
  int opened = o->kubelet.enabled ? cp_nri_kubelet_open (&plugin.kubelet, &o->kubelet, err) : 0;
  if (opened == 0 && plugin.kubelet.server && n_sides < CP_NRI_WATCH_MAX_SIDES)
    sides[n_sides++] = cp_nri_kubelet_side (&plugin.kubelet);
  if (opened < 0 || cp_nri_watch_open (&plugin.watch, hc, &o->watch, sides, n_sides, err) < 0)
    {
      if (opened == 0)
        cp_nri_watch_close (&plugin.watch);
      cp_nri_kubelet_close (&plugin.kubelet);
      cp_started_core_sched_stop ();
      cp_started_isolate_stop ();
      cp_nri_dra_stop (&dra);
      return -1;
    }
  if (n_dra)
    {
      if (plugin.kubelet.server)
        {
          cp_nri_kubelet_wire (&plugin.kubelet, hc, o->dra.node, &dra.pub);
          plugin.watch.kubelet = &plugin.kubelet;
        }
      plugin.watch.dra = &dra.pub;
      cp_nri_dra_attach (&dra, plugin.watch.side, plugin.watch.n_side);
    }
  catch_stop_signals ();
  struct cp_nri_stub stub = {
    .name = o->name,
    .idx = o->idx,
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
    .side = plugin.watch.side,
    .n_side = plugin.watch.n_side,
  };
  int r = cp_nri_stub_run (&stub, err);
  cp_started_core_sched_stop ();
  cp_started_isolate_stop ();
  cp_nri_kubelet_close (&plugin.kubelet);
  cp_nri_dra_stop (&dra);
  cp_nri_watch_close (&plugin.watch);
  return r;
}
