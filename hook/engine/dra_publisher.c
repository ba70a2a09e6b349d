/* cachepin: the DRA publisher process (dra_publisher.h). */
#define _GNU_SOURCE
#include "dra_publisher.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "dra.h"
#include "dra_publish.h"
#include "helper.h"
#include "json.h"
#include "log.h"
#include "util.h"

/* One round's outcome, child to front end. */
struct report
{
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

static void
send_report (int fd, bool ok, bool wrote, int64_t generation)
{
  struct report r = { .ok = ok, .wrote = wrote, .generation = generation, .when = wall_s () };
  if (send (fd, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EPIPE)
    _exit (0);
}

__attribute__ ((noreturn)) static void
child_run (int fd, const struct cp_hostconfig *hc, const char *node, struct cp_kube_client *kc)
{
  int64_t own = 0;
  long long last_round = 0, next_try = 0;
  long backoff = 0;
  bool failing = false, first = true;
  cleanup_free char *published = NULL;
  srandom ((unsigned) getpid () ^ (unsigned) time (NULL));
  for (;;)
    {
      if (!first)
        {
          struct pollfd pfd = { .fd = fd, .events = POLLIN };
          int n = poll (&pfd, 1, CP_DRA_PUBLISHER_CHECK_MS);
          if (n > 0)
            {
              char b[64];
              if (recv (fd, b, sizeof b, MSG_DONTWAIT) == 0 || (pfd.revents & (POLLHUP | POLLERR)))
                _exit (0); /* the front end is gone */
            }
        }
      first = false;
      long long now = cp_monotonic_ms ();
      if (failing && now < next_try)
        continue;
      cleanup_error cp_error_t e = NULL;
      cleanup_json json_object *slices = NULL;
      cleanup_free char *text = NULL;
      bool due = failing || published == NULL || now - last_round >= CP_DRA_PUBLISHER_PERIOD_MS;
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
    }
}

int
cp_dra_publisher_start (struct cp_dra_publisher *p, const struct cp_hostconfig *hc, const char *node,
                        const struct cp_kube_options *kube, cp_error_t *err)
{
  *p = (struct cp_dra_publisher){ .pid = 0, .fd = -1, .node = node };
  if (cp_dra_check_node_name ("--dra-node", node, err) < 0)
    return -1;
  struct cp_kube_config cfg = { 0 };
  if (cp_kube_config_resolve (kube, &cfg, err) < 0)
    return -1;
  struct cp_kube_client *kc = NULL;
  int r = cp_kube_open (&cfg, &kc, err);
  cp_kube_config_clear (&cfg);
  if (r < 0)
    return cp_error_wrap (err, "--dra-node %s", node);
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
      cleanup_error cp_error_t e = NULL;
      if (cp_caps_drop_all (&e) < 0)
        cp_log (CP_LOG_WARNING, "dra: the publisher keeps its capabilities: %s", cp_error_message (e));
      child_run (3, hc, node, kc);
    }
  cp_kube_close (kc);
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  p->pid = pid;
  p->fd = fd;
  cp_log (CP_LOG_INFO, "dra: publishing node %s's ResourceSlices (process %d)", node, (int) pid);
  return 0;
}

void
cp_dra_publisher_read (struct cp_dra_publisher *p)
{
  for (;;)
    {
      struct report r;
      /* read(2), not recv(2): the sandbox's allowlist has it (the socket is non-blocking). */
      ssize_t n = read (p->fd, &r, sizeof r);
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
          return;
        }
      if (n != (ssize_t) sizeof r)
        continue;
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
  if (p->pid > 0)
    kill (p->pid, SIGTERM);
  cp_helper_stop (&p->fd, &p->pid);
}
