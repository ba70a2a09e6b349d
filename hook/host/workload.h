/* cachepin: a timed communicating workload on chosen CPUs (`cachepin measure`).
 *
 * A ring of threads, each pinned to one CPU (sched_setaffinity), hands a token
 * round: the holder updates LINES shared cache lines, then passes the token on,
 * which is the pattern of a cycle-based simulator's threads (Verilator) exchanging
 * their signals every step.  Every hand-off moves the token's line and the shared
 * lines from the last holder's cache to the next one's, so its cost is what a
 * placement changes: a transfer inside one L3 or across L3s.  A ring of two with
 * no shared line is a cache-line ping-pong (the latency table).
 *
 * Nothing here knows what a placement is: the caller names the CPUs. */
#ifndef CP_WORKLOAD_H
#define CP_WORKLOAD_H

#include <hwloc.h>

#include "error.h"

/* Shared cache lines a holder may update per hand-off, besides the token's. */
#define CP_WORKLOAD_MAX_LINES 16u
/* Threads in one ring. */
#define CP_WORKLOAD_MAX_THREADS 256u

struct cp_workload_result
{
  unsigned long long hops; /* hand-offs completed in the timed window */
  long long elapsed_ns;    /* the timed window: from the first hand-off to the stop */
};

/* Run the ring on CPUS[0..N-1] (thread i on CPUS[i], the token going 0, 1, ...,
 * N-1, 0, ...), each holder updating LINES shared lines, for about DURATION_NS.
 * Thread start and pinning happen before the timed window opens (every thread
 * pinned and waiting).  N == 1 is one thread handing the token to itself: the
 * loop's own cost, with no transfer.  A CPU this process may not use fails
 * (errno EINVAL from sched_setaffinity), naming the CPU. */
int cp_workload_ring (const unsigned *cpus, unsigned n, unsigned lines, long long duration_ns,
                      struct cp_workload_result *out, cp_error_t *err);

/* The cost of one clock_gettime(CLOCK_MONOTONIC) on this thread, in ns (the mean
 * of many calls): what each timing adds. */
double cp_workload_clock_cost_ns (void);

/* The CPUs this process may run on (sched_getaffinity) into CPUS. */
int cp_workload_allowed (hwloc_bitmap_t cpus, cp_error_t *err);

#endif
