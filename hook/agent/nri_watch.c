/* cachepin: how the NRI agent is watched (nri_watch.h). */
#define _GNU_SOURCE
#include "nri_watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon.h"
#include "dra_publisher.h"
#include "log.h"
#include "nri_kubelet.h"
#include "status.h"
#include "util.h"

static long long
ms_since (const struct timespec *t)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (now.tv_sec - t->tv_sec) * 1000LL + (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void
turned (struct cp_nri_watch *w)
{
  clock_gettime (CLOCK_MONOTONIC, &w->last_turn);
  /* systemd's advice (sd_watchdog_enabled(3)): notify at half the interval or
     more often; a third leaves room for a call that holds the loop. */
  if (w->notify && w->watchdog_usec && ms_since (&w->last_watchdog) >= (long long) (w->watchdog_usec / 3000))
    {
      cp_daemon_notify ("WATCHDOG=1");
      w->last_watchdog = w->last_turn;
    }
}

/* The tick: a turn, and the listener's timeouts. */
static void
tick (void *ctx, int fd)
{
  struct cp_nri_watch *w = ctx;
  uint64_t n;
  if (read (fd, &n, sizeof n) < 0 && errno != EAGAIN)
    cp_log (CP_LOG_DEBUG, "nri: tick: %s", strerror (errno));
  turned (w);
  if (w->http)
    cp_nri_http_run (w->http);
}

static void
http_ready (void *ctx, int fd)
{
  (void) fd;
  struct cp_nri_watch *w = ctx;
  cp_nri_http_run (w->http);
}

static char *
h_metrics (void *ctx)
{
  return cp_nri_watch_metrics (ctx);
}

static char *
h_ready (void *ctx)
{
  return cp_nri_watch_not_ready (ctx);
}

static char *
h_live (void *ctx)
{
  return cp_nri_watch_not_live (ctx);
}

static int
arm_tick (cp_error_t *err)
{
  int fd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "nri: timerfd");
  struct itimerspec its = {
    .it_interval = { .tv_sec = CP_NRI_WATCH_TICK_MS / 1000, .tv_nsec = (CP_NRI_WATCH_TICK_MS % 1000) * 1000000L },
  };
  its.it_value = its.it_interval;
  if (timerfd_settime (fd, 0, &its, NULL) < 0)
    {
      int e = errno;
      close (fd);
      return cp_fail_errno (err, e, "nri: timerfd_settime");
    }
  return fd;
}

int
cp_nri_watch_open (struct cp_nri_watch *w, const struct cp_hostconfig *hc, const struct cp_nri_watch_options *o,
                   const struct cp_nri_side *extra, size_t n_extra, cp_error_t *err)
{
  *w = (struct cp_nri_watch) { .hc = hc, .tick_fd = -1, .metrics = cp_metrics_agent_new () };
  clock_gettime (CLOCK_MONOTONIC, &w->last_turn);
  w->last_watchdog = w->last_turn;
  w->notify = cp_daemon_notify_init (&w->watchdog_usec);
  if (o->listen)
    {
      const struct cp_nri_http_handlers h = { .ctx = w, .metrics = h_metrics, .ready = h_ready, .live = h_live };
      if (cp_nri_http_open (o->listen, o->path, &h, &w->http, err) < 0)
        return -1;
      cp_log (CP_LOG_INFO, "nri: metrics on %s (port %u), path %s; probes %s and %s", o->listen,
              cp_nri_http_port (w->http), o->path ? o->path : CP_NRI_HTTP_DEFAULT_PATH, CP_NRI_HTTP_READY_PATH,
              CP_NRI_HTTP_LIVE_PATH);
    }
  if (w->http || w->watchdog_usec)
    {
      w->tick_fd = arm_tick (err);
      if (w->tick_fd < 0)
        return -1;
      w->side[w->n_side++] = (struct cp_nri_side) { .fd = w->tick_fd, .ready = tick, .ctx = w };
    }
  if (w->http)
    w->side[w->n_side++] = (struct cp_nri_side) { .fd = cp_nri_http_fd (w->http), .ready = http_ready, .ctx = w };
  for (size_t i = 0; i < n_extra && w->n_side < CP_NRI_WATCH_MAX_SIDES; i++)
    w->side[w->n_side++] = extra[i];
  return 0;
}

void
cp_nri_watch_close (struct cp_nri_watch *w)
{
  cp_nri_http_close (w->http);
  w->http = NULL;
  if (w->tick_fd >= 0)
    close (w->tick_fd);
  w->tick_fd = -1;
  cp_metrics_agent_free (w->metrics);
  w->metrics = NULL;
}

void
cp_nri_watch_fds (const struct cp_nri_watch *w, int *listen_fd, int *epoll_fd)
{
  *listen_fd = w->http ? cp_nri_http_listen_fd (w->http) : -1;
  *epoll_fd = w->http ? cp_nri_http_fd (w->http) : -1;
}

void
cp_nri_watch_registered (struct cp_nri_watch *w, bool registered)
{
  if (registered && w->ever_registered && !w->registered)
    cp_metrics_agent_reconnected (w->metrics);
  if (registered && !w->ever_registered && w->notify)
    cp_daemon_notify ("READY=1");
  if (registered)
    w->ever_registered = true;
  w->registered = registered;
  cp_metrics_agent_set_registered (w->metrics, registered);
}

void
cp_nri_watch_answered (struct cp_nri_watch *w, const char *method, long us)
{
  turned (w);
  for (unsigned c = 0; c < CP_METRICS_N_CALLS; c++)
    if (strcmp (method, cp_metrics_call_name (c)) == 0)
      cp_metrics_agent_observe (w->metrics, c, us < 0 ? 0 : (uint64_t) us * 1000);
}

char *
cp_nri_watch_not_ready (struct cp_nri_watch *w)
{
  if (!w->registered)
    return cp_xstrdup (w->ever_registered ? "not ready: the connection to the runtime ended; dialling it again"
                                          : "not ready: not registered with the runtime yet");
  cleanup_error cp_error_t e = NULL;
  if (cp_daemon_ledger_readable (w->hc, &e) < 0)
    return cp_xasprintf ("not ready: %s", cp_error_message (e));
  return NULL;
}

char *
cp_nri_watch_not_live (struct cp_nri_watch *w)
{
  long long ms = ms_since (&w->last_turn);
  if (ms > CP_NRI_WATCH_LIVE_S * 1000LL)
    return cp_xasprintf ("not live: the loop last turned %lld s ago (more than %d s)", ms / 1000,
                         CP_NRI_WATCH_LIVE_S);
  return NULL;
}

/* TEXT then MORE, both allocated and freed here. */
static char *
appended (char *text, char *more)
{
  char *both = cp_xasprintf ("%s%s", text, more);
  free (text);
  free (more);
  return both;
}

char *
cp_nri_watch_metrics (struct cp_nri_watch *w)
{
  json_object *status = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_status_gather_hc (w->hc, &status, &e) < 0)
    {
      cp_log (CP_LOG_WARNING, "nri: metrics: %s", cp_error_message (e));
      status = NULL;
    }
  char *text = cp_metrics_render (status, w->metrics);
  if (status)
    json_object_put (status);
  if (w->dra)
    text = appended (text, cp_dra_publisher_metrics (w->dra));
  if (w->kubelet)
    text = appended (text, cp_nri_kubelet_metrics (w->kubelet));
  return text;
}
