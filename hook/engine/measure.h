/* cachepin: `cachepin measure`, the win of a placement measured on this host.
 *
 * Two sets of as many CPUs: the one cachepin would choose for the request (the
 * preview's placement, placer.h, on the empty machine: one L3, PE0 first) and one
 * spread across the L3s (one CPU per L3, round robin).  The same communicating
 * workload (host/workload.h: a ring of threads handing a token and updating shared
 * lines) runs on each in turn, A/B/A/B over K rounds, and the medians of its cost
 * per hand-off are compared, with their middle halves as the spread; an L3-to-L3
 * table of cache-line round trips says what a transfer costs between each pair.
 * What to choose and how to judge is here; the timed threads are the host's. */
#ifndef CP_MEASURE_H
#define CP_MEASURE_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "hostconfig.h"
#include "request.h"
#include "topo.h"

/* The "format" of `measure --json` (docs/benchmarks.md): raised when a key changes
   meaning or goes; new keys do not raise it. */
#define CP_MEASURE_FORMAT 1
/* Threads by default: one L3's cores, at most this (the README's 8 Verilator threads). */
#define CP_MEASURE_DEFAULT_MAX 8u
/* Shared lines each holder updates per hand-off, besides the token's. */
#define CP_MEASURE_LINES 4u
#define CP_MEASURE_DEFAULT_ROUNDS 7u
#define CP_MEASURE_DEFAULT_SECONDS 6.0

/* One L3 (the topology's LLC level) with CPUs this run may use. */
struct cp_measure_l3
{
  unsigned index;       /* position in topo->domains[CP_LEVEL_LLC] */
  hwloc_bitmap_t cpus;  /* its CPUs this run may use */
  unsigned *order;      /* those CPUs, each core's PE0 first, then the other threads */
  unsigned n_order;
  unsigned n_cores;     /* its cores with such a CPU: the first n_cores of order */
};

struct cp_measure_sets
{
  unsigned n;           /* threads in the ring */
  unsigned *chosen;     /* cachepin's choice, in ring order: PE0s first */
  unsigned *spread;     /* one CPU per L3 in turn */
  unsigned chosen_l3s;  /* how many L3s each set spans */
  unsigned spread_l3s;
  char *reason;         /* the plan's reason line */
  const char *level;    /* "L3", or what the LLC is here (cp_topo_level_label()) */
  struct cp_measure_l3 *l3; /* the L3s with usable CPUs, in topology order */
  unsigned n_l3;
};

/* The sets for CREQ (its req.cpus 0: the default, one L3's cores up to
   CP_MEASURE_DEFAULT_MAX, at least 2) within ALLOWED (the CPUs this process may use)
   and what HC allows, on TOPO (taken: freed here; NULL: the host's, as plan reads
   it).  Fewer than 2 usable CPUs, or --cpus 1, is an input error. */
int cp_measure_choose (const struct cp_hostconfig *hc, struct cp_topo *topo, hwloc_const_bitmap_t allowed,
                       const struct cp_container_request *creq, struct cp_measure_sets *out, cp_error_t *err);
void cp_measure_sets_clear (struct cp_measure_sets *s);

/* Whether the two sets differ in what is measured: the choice spans fewer L3s than
   the spread set.  When not, only the choice is run, and the verdict says why. */
bool cp_measure_compares (const struct cp_measure_sets *s);

/* A sample's median and quartiles (linear interpolation between order statistics). */
struct cp_measure_stats
{
  double median, q1, q3, min, max;
};
/* Of V[0..N-1] (N > 0; V is left as it was). */
void cp_measure_stats_of (const double *v, size_t n, struct cp_measure_stats *out);

enum cp_measure_verdict
{
  CP_MEASURE_ONE_L3,        /* nothing to compare: the usable CPUs are in one L3 */
  CP_MEASURE_SAME_L3S,      /* nothing to compare: the choice spans as many L3s as the
                               spread set (no L3 holds two of the usable CPUs) */
  CP_MEASURE_NOISY,         /* the middle halves overlap: too noisy to tell */
  CP_MEASURE_CHOSEN_FASTER, /* cachepin's choice hands off faster */
  CP_MEASURE_SPREAD_FASTER, /* the spread set does */
};
/* "one-l3", "same-l3s", "noisy", "chosen-faster", "spread-faster". */
const char *cp_measure_verdict_name (enum cp_measure_verdict v);

/* CHOSEN against SPREAD (ns per hand-off: lower is faster); *RATIO is spread's
   median over chosen's (> 1: the choice is faster), set whatever the verdict. */
enum cp_measure_verdict cp_measure_judge (const struct cp_measure_stats *chosen, const struct cp_measure_stats *spread,
                                          double *ratio);

struct cp_measure_options
{
  unsigned rounds;  /* K: runs of each set */
  double seconds;   /* the whole run, about: 4/5 for the rounds, 1/5 for the table */
};

struct cp_measure_result
{
  double run_seconds;                 /* one run of one set */
  double *chosen_ns, *spread_ns;      /* ns per hand-off, one per round (spread: NULL with one L3) */
  unsigned long long chosen_hops, spread_hops; /* over all rounds */
  struct cp_measure_stats chosen, spread;
  enum cp_measure_verdict verdict;
  double ratio;                       /* 0 with one L3 */
  double *latency_ns;                 /* n_l3 x n_l3, ns per round trip; < 0: no pair (an
                                         L3 with one usable CPU, on the diagonal) */
  double pair_seconds;                /* one round-trip run */
  double clock_ns;                    /* one clock_gettime() */
  double loop_ns;                     /* a hand-off with no transfer: one thread, its own token */
};

/* The rounds (A/B/A/B; each set warmed up once first, not counted), the table and
   the overhead, on S's CPUs. */
int cp_measure_run (const struct cp_measure_sets *s, const struct cp_measure_options *o, struct cp_measure_result *r,
                    cp_error_t *err);
void cp_measure_result_clear (struct cp_measure_result *r);

#endif
