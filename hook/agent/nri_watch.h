/* cachepin: how the NRI agent is watched: its own metrics (registered, reconnects,
 * the handling histograms: metrics.h), the HTTP listener that serves them with the
 * status families and the probes (nri_http.h), and the service manager's READY=1
 * and WATCHDOG=1 (daemon.h).
 *
 * What each signal means:
 *   ready  registered with the runtime (its Configure seen, the connection not
 *          ended since) and the ledger readable now: the plugin answers and what it
 *          answers from is there.  Not ready before the first registration and
 *          while the runtime is away (the plugin dials it again);
 *   live   the loop turned (a tick of its timer, or a call answered) within
 *          CP_NRI_WATCH_LIVE_S: a loop stuck in one call, or not polled at all,
 *          is not live.  Ready implies nothing about live, nor the other way.
 * A tick of CP_NRI_WATCH_TICK_MS wakes the loop when nothing else does: it
 * records the turn, sends WATCHDOG=1 (at a third of WatchdogSec=) and lets the
 * listener close the connections past their timeout. */
#ifndef CP_NRI_WATCH_H
#define CP_NRI_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "error.h"
#include "metrics.h"
#include "nri_conn.h"
#include "nri_http.h"

struct cp_hostconfig;
struct cp_dra_publisher;
struct cp_nri_kubelet;

#define CP_NRI_WATCH_TICK_MS 1000
#define CP_NRI_WATCH_LIVE_S 30

/* The loop's sides at most: the tick, the listener, and the caller's own. */
#define CP_NRI_WATCH_MAX_SIDES 8

struct cp_nri_watch
{
  const struct cp_hostconfig *hc;
  struct cp_metrics_agent *metrics;
  bool registered, ever_registered;
  struct timespec last_turn;       /* CLOCK_MONOTONIC */
  int tick_fd;                     /* a timerfd (-1: none) */
  struct cp_nri_http *http;        /* NULL: no listener */
  bool notify;                     /* the service manager listens */
  uint64_t watchdog_usec;          /* its WatchdogSec= (0: none) */
  struct timespec last_watchdog;
  struct cp_nri_side side[CP_NRI_WATCH_MAX_SIDES];
  size_t n_side;
  const struct cp_dra_publisher *dra; /* --dra-node's publisher (NULL: none): its metrics too */
  const struct cp_nri_kubelet *kubelet; /* --kubelet-plugin's (NULL: none): its metrics too */
};

/* What the command line asks of it. */
struct cp_nri_watch_options
{
  const char *listen; /* --metrics-listen ADDR:PORT (NULL: no listener) */
  const char *path;   /* --metrics-path (NULL: /metrics) */
};

/* Before the sandbox: the listener bound, the tick armed, libsystemd loaded where
   the manager listens; W's sides then the tick, the listener and EXTRA (N_EXTRA),
   for the loop.  < 0 (*ERR): the listener cannot be had (its option named). */
int cp_nri_watch_open (struct cp_nri_watch *w, const struct cp_hostconfig *hc, const struct cp_nri_watch_options *o,
                       const struct cp_nri_side *extra, size_t n_extra, cp_error_t *err);
void cp_nri_watch_close (struct cp_nri_watch *w);

/* The listener's socket and epoll set, for the sandbox (-1 both: no listener). */
void cp_nri_watch_fds (const struct cp_nri_watch *w, int *listen_fd, int *epoll_fd);

/* The runtime's Configure (registered), the connection's end (not). */
void cp_nri_watch_registered (struct cp_nri_watch *w, bool registered);

/* METHOD answered after US microseconds: timed when it is one of the histograms'. */
void cp_nri_watch_answered (struct cp_nri_watch *w, const char *method, long us);

/* The probes' answers (NULL: yes; else why not, the caller frees) and the
   exposition (the caller frees): what the listener serves. */
char *cp_nri_watch_not_ready (struct cp_nri_watch *w);
char *cp_nri_watch_not_live (struct cp_nri_watch *w);
char *cp_nri_watch_metrics (struct cp_nri_watch *w);

#endif
