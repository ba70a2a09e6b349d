/* cachepin: the DRA publisher process (dra_publisher.h). */
#define _GNU_SOURCE
#include "dra_publisher.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "dra.h"
#include "dra_publish.h"
#include "helper.h"
#include "json.h"
#include "kube_json.h"
#include "log.h"
#include "sandbox.h"
#include "topocache.h"
#include "util.h"

#define MSG_REPORT CP_DRA_MSG_REPORT
#define MSG_FETCH CP_DRA_MSG_FETCH
#define MSG_CLAIM CP_DRA_MSG_CLAIM

/* One round's outcome, child to front end. */
struct report
{
  int32_t type;
  int32_t ok;
  int32_t wrote;
  int64_t generation;
  double when;
};

static double
wall_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The node's slices now, as one string (generation 1): what a change is judged on. */
static int
desired_now (const struct cp_hostconfig *hc, const char *node, json_object **slices, char **text, cp_error_t *err)
{
  cleanup_dra_model struct cp_dra_model *m = NULL;
  if (cp_dra_gather (hc, NULL, true, &m, NULL, err) < 0)
    return -1;
  if (cp_dra_slices_json (m, node, 1, slices, err) < 0)
    return -1;
  *text = cp_xstrdup (json_object_to_json_string_ext (*slices, JSON_C_TO_STRING_PLAIN));
  return 0;
}

struct fetch
{
  int32_t type;
  uint32_t id;
};

static void
send_report (int fd, bool ok, bool wrote, int64_t generation)
{
  struct report r = { .type = MSG_REPORT, .ok = ok, .wrote = wrote, .generation = generation, .when = wall_s () };
  if (send (fd, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EPIPE)
    _exit (0);
}

/* What the watch of the node's slices saw since the last look. */
struct seen
{
  bool changed; /* a slice added, changed or deleted (ours too: the round then writes nothing) */
};

static void
watch_line (void *ctx, const char *l, size_t n)
{
  struct seen *s = ctx;
  enum cp_kube_event type;
  json_object *obj = NULL;
  int code = 0;
  cleanup_error cp_error_t e = NULL;
  if (cp_kube_json_event (l, n, &type, &obj, &code, &e) < 0)
    {
      cp_log (CP_LOG_DEBUG, "dra: watch: %s", cp_error_message (e));
      s->changed = true; /* judged by a round */
      return;
    }
  json_object_put (obj);
  if (type == CP_KUBE_ERROR)
    cp_log (CP_LOG_DEBUG, "dra: watch: an error event (code %d%s): listed again", code,
            code == 410 ? ", Gone: its resourceVersion too old" : "");
  if (type != CP_KUBE_BOOKMARK)
    s->changed = true;
}

/* A watch of NODE's slices from the list's resourceVersion RV (bookmarks asked). */
static struct cp_kube_watch *
watch_from (struct cp_kube_client *kc, const char *node, const char *rv, struct seen *seen)
{
  cleanup_free char *sel = cp_xasprintf ("spec.nodeName=%s", node);
  cleanup_free char *esc = cp_kube_escape (sel);
  cleanup_free char *erv = cp_kube_escape (rv);
  cleanup_free char *path = cp_xasprintf ("%s?fieldSelector=%s&watch=1&allowWatchBookmarks=true&resourceVersion=%s",
                                          CP_DRA_SLICES_PATH, esc, erv);
  struct cp_kube_watch *w = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_kube_watch_start (kc, path, watch_line, seen, &w, &e) < 0)
    cp_log (CP_LOG_DEBUG, "dra: no watch of node %s's slices: %s", node, cp_error_message (e));
  return w;
}

/* Claim ID's answer sent in parts (a message of SOCK_SEQPACKET is bounded by the
   socket's buffer). */
static void
send_claim (int fd, uint32_t id, bool ok, const char *text, size_t len)
{
  size_t off = 0;
  do
    {
      size_t n = len - off < CP_DRA_PUBLISHER_PART ? len - off : CP_DRA_PUBLISHER_PART;
      struct cp_dra_claim_part h = { .type = MSG_CLAIM, .id = id, .ok = ok, .total = (uint32_t) len, .off = (uint32_t) off };
      struct iovec iov[2] = { { &h, sizeof h }, { (void *) (text + off), n } };
      struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
      if (sendmsg (fd, &mh, MSG_NOSIGNAL) < 0)
        {
          if (errno == EINTR)
            continue;
          _exit (0); /* the front end is gone */
        }
      off += n;
    }
  while (off < len);
}

/* A fetch request (MSG, N bytes) answered: the claim's JSON or the error. */
static void
fetch_claim (int fd, struct cp_kube_client *kc, const char *msg, size_t n)
{
  struct fetch f;
  if (n < sizeof f)
    return;
  memcpy (&f, msg, sizeof f);
  cleanup_free char *ref = cp_xasprintf ("%.*s", (int) (n - sizeof f), msg + sizeof f);
  char *slash = strchr (ref, '/');
  if (slash == NULL)
    return send_claim (fd, f.id, false, "a claim reference without NS/NAME", 33);
  *slash = '\0';
  cleanup_free char *ns = cp_kube_escape (ref);
  cleanup_free char *name = cp_kube_escape (slash + 1);
  cleanup_free char *path = cp_xasprintf ("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns, name);
  cleanup_free char *what = cp_xasprintf ("GET resourceclaim %s/%s", ref, slash + 1);
  struct cp_kube_answer a = { 0 };
  cleanup_error cp_error_t e = NULL;
  if (cp_kube_request (kc, "GET", path, NULL, &a, &e) == 0 && a.status == 200 && a.len > CP_DRA_PUBLISHER_MAX_CLAIM)
    cp_fail_input (&e, "%s: %zu bytes, over the cap of %u", what, a.len, CP_DRA_PUBLISHER_MAX_CLAIM);
  else if (e == NULL && a.status != 200)
    cp_kube_fail_answer (what, &a, &e);
  else if (e)
    cp_error_wrap (&e, "%s", what);
  if (e)
    {
      const char *m = cp_error_message (e);
      cp_log (CP_LOG_WARNING, "dra: %s", m);
      send_claim (fd, f.id, false, m, strlen (m));
    }
  else
    send_claim (fd, f.id, true, a.body, a.len);
  cp_kube_answer_clear (&a);
}

/* The requests that came, answered (never blocks on the socket). */
static void
serve_requests (int fd, struct cp_kube_client *kc)
{
  static char buf[CP_DRA_PUBLISHER_MAX_REQUEST];
  for (;;)
    {
      ssize_t n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0)
        _exit (0); /* the front end is gone */
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return;
      int32_t type;
      if ((size_t) n >= sizeof type && (memcpy (&type, buf, sizeof type), type == MSG_FETCH))
        fetch_claim (fd, kc, buf, (size_t) n);
    }
}

__attribute__ ((noreturn)) static void
child_run (int fd, const struct cp_hostconfig *hc, const char *node, struct cp_kube_client *kc)
{
  int64_t own = 0;
  long long last_round = 0, next_try = 0;
  long backoff = 0;
  bool failing = false, first = true;
  cleanup_free char *published = NULL;
  struct cp_kube_watch *watch = NULL;
  struct seen seen = { 0 };
  srandom ((unsigned) getpid () ^ (unsigned) time (NULL));
  long long last_check = 0;
  for (;;)
    {
      if (!first)
        {
          long long wait = last_check + CP_DRA_PUBLISHER_CHECK_MS - cp_monotonic_ms ();
          int ms = wait < 0 ? 0 : (int) wait;
          int n;
          struct pollfd pfd = { .fd = fd, .events = POLLIN };
          if (watch)
            {
              cleanup_error cp_error_t we = NULL;
              n = cp_kube_watch_wait (watch, fd, ms, &we);
              if (n < 0)
                {
                  cp_log (CP_LOG_DEBUG, "dra: %s: listed again", cp_error_message (we));
                  cp_kube_watch_stop (watch);
                  watch = NULL;
                  seen.changed = true;
                }
              if (n > 0)
                poll (&pfd, 1, 0);
            }
          else
            n = poll (&pfd, 1, ms);
          if (n > 0)
            {
              if (pfd.revents & (POLLHUP | POLLERR))
                _exit (0); /* the front end is gone */
              serve_requests (fd, kc);
            }
          if (!seen.changed && cp_monotonic_ms () - last_check < CP_DRA_PUBLISHER_CHECK_MS)
            continue; /* a request served between two checks */
        }
      first = false;
      long long now = cp_monotonic_ms ();
      last_check = now;
      if (failing && now < next_try)
        continue;
      cleanup_error cp_error_t e = NULL;
      cleanup_json json_object *slices = NULL;
      cleanup_free char *text = NULL;
      bool due = failing || published == NULL || seen.changed || now - last_round >= CP_DRA_PUBLISHER_PERIOD_MS;
      seen.changed = false;
      int r = desired_now (hc, node, &slices, &text, &e);
      if (r == 0 && !due && strcmp (text, published) == 0)
        continue;
      struct cp_dra_publish_result res = { 0 };
      if (r == 0)
        r = cp_dra_publish_round (kc, slices, node, own, &res, &e);
      last_round = now;
      if (r < 0)
        {
          backoff = backoff ? backoff * 2 : CP_DRA_PUBLISHER_BACKOFF_MIN_MS;
          if (backoff > CP_DRA_PUBLISHER_BACKOFF_MAX_MS)
            backoff = CP_DRA_PUBLISHER_BACKOFF_MAX_MS;
          long wait = backoff / 2 + random () % (backoff / 2 + 1); /* jitter: half to all of it */
          next_try = now + wait;
          failing = true;
          cp_log (CP_LOG_WARNING, "dra: publish node %s: %s (again in %.1f s)", node, cp_error_message (e),
                  wait / 1000.0);
          send_report (fd, false, false, own);
          continue;
        }
      bool wrote = !res.unchanged;
      if (res.generation > own)
        own = res.generation;
      if (wrote || failing)
        cp_log (CP_LOG_INFO, "dra: node %s published: generation %" PRId64 ", %u created, %u updated, %u deleted",
                node, res.generation, res.created, res.updated, res.deleted);
      failing = false;
      backoff = 0;
      free (published);
      published = cp_steal_pointer (&text);
      send_report (fd, true, wrote, res.generation);
      if (watch == NULL && res.resource_version[0])
        watch = watch_from (kc, node, res.resource_version, &seen);
    }
}

/* FILE's directory, allocated (NULL: none, or "/"). */
static char *
dir_of (const char *file)
{
  const char *slash = file ? strrchr (file, '/') : NULL;
  return slash && slash != file && file[0] == '/' ? cp_xasprintf ("%.*s", (int) (slash - file), file) : NULL;
}

/* The publisher's sandbox (sandbox.h, CP_SANDBOX_PUBLISHER): entered with libcurl
   loaded and the topology read once (hwloc's plugins loaded, the cache left to the
   front end: the publisher writes nothing on the node), so that the rounds only read. */
static int
enter_sandbox (const struct cp_hostconfig *hc, struct cp_kube_client *kc, cp_error_t *err)
{
  if (!hc->sandbox)
    return 0;
  cleanup_topo struct cp_topo *topo = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_topocache_load (hc, CP_TOPOCACHE_READ_ONLY, &topo, &e) < 0)
    cp_log (CP_LOG_DEBUG, "dra: the topology, read before the sandbox: %s", cp_error_message (e));
  const struct cp_kube_config *kcfg = cp_kube_client_config (kc);
  cleanup_free char *token_dir = dir_of (kcfg->token_file), *ca_dir = dir_of (kcfg->ca);
  /* The topology's source, read again when the cache is stale: an XML file's
     directory, a sysfs: root; the kernel features' root where a test moved it. */
  const char *topo_src = hc->topology && strncmp (hc->topology, "sysfs:", 6) == 0 ? hc->topology + 6 : NULL;
  cleanup_free char *topo_dir = hc->topology && hc->topology[0] == '/' ? dir_of (hc->topology) : NULL;
  const char *kroot = hc->kernel_root && strcmp (hc->kernel_root, "/") != 0 ? hc->kernel_root : NULL;
  struct cp_sandbox sb = {
    .profile = CP_SANDBOX_PUBLISHER,
    .state_dirfd = -1,
    .cgroup_mountfd = -1,
    .connect_port = cp_kube_config_port (kcfg),
  };
  const char *dirs[] = { "/proc", "/sys", hc->state_dir, token_dir, ca_dir, topo_src ? topo_src : topo_dir, kroot };
  size_t n = 0;
  for (size_t i = 0; i < CP_ARRAY_SIZE (dirs) && n < CP_SANDBOX_MAX_READ_DIRS; i++)
    if (dirs[i])
      sb.read_dirs[n++] = dirs[i];
  int abi = cp_sandbox_enter (&sb, err);
  if (abi < 0)
    return -1;
  cp_log (CP_LOG_DEBUG, "dra: the publisher sandboxed (Landlock ABI %d%s)", abi,
          abi >= 4 ? ", TCP connect to the API server's port only" : "");
  return 0;
}

int
cp_dra_publisher_start (struct cp_dra_publisher *p, const struct cp_hostconfig *hc, const char *node,
                        const struct cp_kube_options *kube, cp_error_t *err)
{
  *p = (struct cp_dra_publisher){ .pid = 0, .fd = -1, .node = node };
  if (cp_dra_check_node_name ("--dra-node", node, err) < 0)
    return -1;
  struct cp_kube_client *kc = NULL;
  if (cp_kube_open_options (kube, &kc, err) < 0)
    return cp_error_wrap (err, "--dra-node %s", node);
  const struct cp_kube_config *kcfg = cp_kube_client_config (kc);
  if (hc->sandbox && !cp_kube_config_host_is_address (kcfg))
    {
      /* Said now, once, rather than a failed round every backoff. */
      int r = cp_fail_input (err, "--kube-api %.128s: the publisher's sandbox resolves no host names: "
                                  "the API server's address (https://10.0.0.1:6443, https://[fd00::1]:6443)",
                             kcfg->server);
      cp_kube_close (kc);
      return r;
    }
  int fd;
  pid_t pid = cp_helper_fork ("the DRA publisher", &fd, err);
  if (pid < 0)
    {
      cp_kube_close (kc);
      return -1;
    }
  if (pid == 0)
    {
      /* Nothing of the front end's but the socket: the runtime's connection and
         the instance lock are its own (a copy here would outlive its close). */
      if (fd != 3 && dup2 (fd, 3) < 0)
        _exit (1);
      syscall (SYS_close_range, 4u, ~0u, 0u);
      closelog ();
      /* Its own connection to syslog, made now: the sandbox refuses a new socket
         of AF_UNIX (syslog(3) would connect at its first line). */
      openlog (NULL, LOG_PID | LOG_NDELAY, LOG_DAEMON);
      cleanup_error cp_error_t e = NULL;
      if (cp_caps_drop_all (&e) < 0)
        cp_log (CP_LOG_WARNING, "dra: the publisher keeps its capabilities: %s", cp_error_message (e));
      cleanup_error cp_error_t se = NULL;
      if (enter_sandbox (hc, kc, &se) < 0)
        {
          cp_log (CP_LOG_ERROR, "dra: the publisher's sandbox: %s", cp_error_message (se));
          _exit (1);
        }
      child_run (3, hc, node, kc);
    }
  cp_kube_close (kc);
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  p->pid = pid;
  p->fd = fd;
  cp_log (CP_LOG_INFO, "dra: publishing node %s's ResourceSlices (process %d)", node, (int) pid);
  return 0;
}

int
cp_dra_publisher_fetch (struct cp_dra_publisher *p, uint32_t id, const char *ns, const char *name, cp_error_t *err)
{
  if (p->fd < 0 || p->gone)
    return cp_fail_runtime (err, "the DRA publisher (the API client) does not run");
  struct fetch f = { .type = MSG_FETCH, .id = id };
  char msg[CP_DRA_PUBLISHER_MAX_REQUEST];
  int len = snprintf (msg + sizeof f, sizeof msg - sizeof f, "%s/%s", ns, name);
  if (len < 0 || (size_t) len >= sizeof msg - sizeof f)
    return cp_fail_input (err, "claim %.64s/%.64s: a reference too long", ns, name);
  memcpy (msg, &f, sizeof f);
  /* write(2): the sandbox's allowlist has it; one message (SOCK_SEQPACKET). */
  if (write (p->fd, msg, sizeof f + (size_t) len) < 0)
    return cp_fail_errno (err, errno, "asking the DRA publisher for claim %s/%s", ns, name);
  return 0;
}

/* Claim ID's answer refused (its bytes are the publisher's: one line logged), the
   part of it kept dropped, and an error given to P->claim instead. */
__attribute__ ((format (printf, 3, 4))) static void
refuse_claim (struct cp_dra_publisher *p, uint32_t id, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char why[256];
  vsnprintf (why, sizeof why, fmt, ap);
  va_end (ap);
  cp_log (CP_LOG_WARNING, "dra: the publisher of node %s sent %s: refused", p->node, why);
  if (p->part && p->part_id == id)
    {
      free (p->part);
      p->part = NULL;
      p->part_len = 0;
    }
  cleanup_free char *line = cp_xasprintf ("the DRA publisher sent %s", why);
  if (p->claim && id != 0)
    p->claim (p->claim_ctx, id, NULL, 0, line);
}

/* An error's LEN bytes as one line: a control character (NUL too) becomes a space. */
static void
one_line (char *s, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) s[i] < ' ' || s[i] == 0x7f)
      s[i] = ' ';
}

/* A part of a claim's answer (MSG, N bytes) kept; the whole given to P->claim. */
static void
claim_part (struct cp_dra_publisher *p, const char *msg, size_t n)
{
  struct cp_dra_claim_part h;
  if (n < sizeof h)
    {
      cp_log (CP_LOG_WARNING, "dra: the publisher of node %s sent a claim's part of %zu bytes, short of its "
              "header: refused", p->node, n);
      return;
    }
  memcpy (&h, msg, sizeof h);
  size_t len = n - sizeof h;
  uint32_t cap = h.ok ? CP_DRA_PUBLISHER_MAX_CLAIM : CP_DRA_PUBLISHER_PART;
  if (h.id == 0) /* 0 is every fetch's: the front end's own, when the publisher exits */
    return cp_log (CP_LOG_WARNING, "dra: the publisher of node %s sent an answer to fetch 0: refused", p->node);
  if (h.total > cap)
    return refuse_claim (p, h.id, "claim %" PRIu32 "'s %s of %" PRIu32 " bytes, over the cap of %" PRIu32,
                         h.id, h.ok ? "JSON" : "error", h.total, cap);
  if (h.off > h.total || len > h.total - h.off)
    return refuse_claim (p, h.id, "a part of claim %" PRIu32 " (bytes %" PRIu32 " to %zu) past its %" PRIu32
                         " bytes", h.id, h.off, (size_t) h.off + len, h.total);
  if (h.off != 0 && (p->part == NULL || h.id != p->part_id || h.off != p->part_len))
    return refuse_claim (p, h.id, "a part of claim %" PRIu32 " out of order (from byte %" PRIu32 ")", h.id, h.off);
  if (h.off == 0 && p->part != NULL)
    refuse_claim (p, p->part_id, "claim %" PRIu32 "'s answer cut short by another", p->part_id);
  if (h.off != 0 && (h.total != p->part_total || h.ok != p->part_ok))
    return refuse_claim (p, h.id, "a part of claim %" PRIu32 " unlike its first", h.id);
  if (h.off == 0)
    {
      p->part = cp_xmalloc0 ((size_t) h.total + 1);
      p->part_id = h.id;
      p->part_len = 0;
      p->part_total = h.total;
      p->part_ok = h.ok != 0;
    }
  memcpy (p->part + p->part_len, msg + sizeof h, len);
  p->part_len += len;
  if (p->part_len < h.total)
    return;
  if (!h.ok)
    {
      if (p->part_len == 0)
        return refuse_claim (p, h.id, "an empty error for claim %" PRIu32, h.id);
      one_line (p->part, p->part_len);
    }
  cleanup_free char *whole = cp_steal_pointer (&p->part);
  size_t whole_len = p->part_len;
  p->part_len = 0;
  if (p->claim)
    p->claim (p->claim_ctx, h.id, h.ok ? whole : NULL, whole_len, h.ok ? NULL : whole);
}

void
cp_dra_publisher_take (struct cp_dra_publisher *p, const char *msg, size_t n)
{
  int32_t type = 0;
  struct report r;
  if (n >= sizeof type)
    memcpy (&type, msg, sizeof type);
  if (type == MSG_CLAIM)
    return claim_part (p, msg, n);
  if (n != sizeof r || type != MSG_REPORT)
    return cp_log (CP_LOG_WARNING, "dra: the publisher of node %s sent a message of %zu bytes of type %" PRId32
                   ", none it sends: ignored", p->node, n, type);
  memcpy (&r, msg, sizeof r);
  p->rounds++;
  if (!r.ok)
    p->failures++;
  else
    {
      p->writes += r.wrote != 0;
      p->generation = r.generation;
      p->last_success_s = r.when;
    }
}

void
cp_dra_publisher_read (struct cp_dra_publisher *p)
{
  static char buf[CP_DRA_PUBLISHER_PART + 64];
  for (;;)
    {
      /* read(2), not recv(2): the sandbox's allowlist has it (the socket is non-blocking). */
      ssize_t n = read (p->fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return; /* EAGAIN: all read */
      if (n == 0)
        {
          if (!p->gone)
            cp_log (CP_LOG_ERROR, "dra: the publisher of node %s exited: its slices are no longer kept true "
                                  "(restart the agent)", p->node);
          p->gone = true;
          if (p->claim)
            p->claim (p->claim_ctx, 0, NULL, 0, "the DRA publisher (the API client) exited");
          return;
        }
      cp_dra_publisher_take (p, buf, (size_t) n);
    }
}

char *
cp_dra_publisher_metrics (const struct cp_dra_publisher *p)
{
  return cp_xasprintf (
    "# HELP cachepin_dra_publish_rounds_total Rounds of publishing the node's ResourceSlices, by outcome.\n"
    "# TYPE cachepin_dra_publish_rounds_total counter\n"
    "cachepin_dra_publish_rounds_total{outcome=\"ok\"} %" PRIu64 "\n"
    "cachepin_dra_publish_rounds_total{outcome=\"failed\"} %" PRIu64 "\n"
    "# HELP cachepin_dra_publish_writes_total Rounds that wrote the slices (a new pool generation).\n"
    "# TYPE cachepin_dra_publish_writes_total counter\n"
    "cachepin_dra_publish_writes_total %" PRIu64 "\n"
    "# HELP cachepin_dra_pool_generation The pool generation the last successful round left.\n"
    "# TYPE cachepin_dra_pool_generation gauge\n"
    "cachepin_dra_pool_generation %" PRId64 "\n"
    "# HELP cachepin_dra_publish_last_success_timestamp_seconds When a round last succeeded (0: never).\n"
    "# TYPE cachepin_dra_publish_last_success_timestamp_seconds gauge\n"
    "cachepin_dra_publish_last_success_timestamp_seconds %.3f\n"
    "# HELP cachepin_dra_publisher_up Whether the publisher process runs.\n"
    "# TYPE cachepin_dra_publisher_up gauge\n"
    "cachepin_dra_publisher_up %d\n",
    p->rounds - p->failures, p->failures, p->writes, p->generation, p->last_success_s, p->gone ? 0 : 1);
}

void
cp_dra_publisher_stop (struct cp_dra_publisher *p)
{
  free (p->part);
  p->part = NULL;
  if (p->pid > 0)
    kill (p->pid, SIGTERM);
  cp_helper_stop (&p->fd, &p->pid);
}
