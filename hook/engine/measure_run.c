/* cachepin: `cachepin measure`'s run (measure.h): the rounds, the L3-to-L3 table
 * and the workload's own overhead, on the host's ring (workload.h). */
#define _GNU_SOURCE
#include "measure.h"

#include <stdlib.h>

#include "util.h"
#include "workload.h"

/* The share of the time the table takes, and its bounds per pair of L3s. */
#define TABLE_SHARE 0.2
#define PAIR_MIN_S 0.001
#define PAIR_MAX_S 0.1

/* ns per hand-off of one run of the ring on CPUS; *HOPS grows by its hand-offs.
   A run that completed none (a thread never scheduled in the window) counts the
   whole window as one: a lower bound on the cost, never a division by zero. */
static int
sample (const unsigned *cpus, unsigned n, unsigned lines, double seconds, unsigned long long *hops, double *ns,
        cp_error_t *err)
{
  struct cp_workload_result w;
  if (cp_workload_ring (cpus, n, lines, (long long) (seconds * 1e9), &w, err) < 0)
    return -1;
  if (hops)
    *hops += w.hops;
  *ns = (double) w.elapsed_ns / (double) (w.hops ? w.hops : 1);
  return 0;
}

static int
rounds (const struct cp_measure_sets *s, const struct cp_measure_options *o, struct cp_measure_result *r,
        cp_error_t *err)
{
  bool compare = cp_measure_compares (s);
  double warm = r->run_seconds / 10 < 0.01 ? 0.01 : r->run_seconds / 10, ignored;
  /* Once each first, not counted: page faults, thread stacks, the clock ramping up. */
  if (sample (s->chosen, s->n, CP_MEASURE_LINES, warm, NULL, &ignored, err) < 0
      || (compare && sample (s->spread, s->n, CP_MEASURE_LINES, warm, NULL, &ignored, err) < 0))
    return -1;
  for (unsigned k = 0; k < o->rounds; k++)
    {
      if (sample (s->chosen, s->n, CP_MEASURE_LINES, r->run_seconds, &r->chosen_hops, &r->chosen_ns[k], err) < 0)
        return cp_error_wrap (err, "cachepin's choice");
      if (compare
          && sample (s->spread, s->n, CP_MEASURE_LINES, r->run_seconds, &r->spread_hops, &r->spread_ns[k], err) < 0)
        return cp_error_wrap (err, "the spread set");
    }
  cp_measure_stats_of (r->chosen_ns, o->rounds, &r->chosen);
  if (!compare)
    {
      r->verdict = s->n_l3 > 1 ? CP_MEASURE_SAME_L3S : CP_MEASURE_ONE_L3;
      return 0;
    }
  cp_measure_stats_of (r->spread_ns, o->rounds, &r->spread);
  r->verdict = cp_measure_judge (&r->chosen, &r->spread, &r->ratio);
  return 0;
}

/* A cache-line ping-pong (a ring of two, no other line) between one CPU of L3 I
   and one of L3 J; on the diagonal two CPUs of the same L3 (two cores' PE0s when
   it has two cores). */
static int
table (const struct cp_measure_sets *s, struct cp_measure_result *r, cp_error_t *err)
{
  unsigned n = s->n_l3;
  r->latency_ns = cp_xcalloc ((size_t) n * n, sizeof *r->latency_ns);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i; j < n; j++)
      {
        double *at = &r->latency_ns[i * n + j], *mirror = &r->latency_ns[j * n + i];
        unsigned pair[2] = { s->l3[i].order[0], i == j ? 0 : s->l3[j].order[0] };
        if (i == j && s->l3[i].n_order < 2)
          {
            *at = -1;
            continue;
          }
        if (i == j)
          pair[1] = s->l3[i].order[1];
        double hop;
        if (sample (pair, 2, 0, r->pair_seconds, NULL, &hop, err) < 0)
          return cp_error_wrap (err, "the round trip between CPUs %u and %u", pair[0], pair[1]);
        *at = *mirror = 2 * hop;
      }
  return 0;
}

int
cp_measure_run (const struct cp_measure_sets *s, const struct cp_measure_options *o, struct cp_measure_result *r,
                cp_error_t *err)
{
  *r = (struct cp_measure_result) { 0 };
  unsigned sets = cp_measure_compares (s) ? 2 : 1;
  unsigned pairs = s->n_l3 * (s->n_l3 + 1) / 2;
  r->run_seconds = o->seconds * (1 - TABLE_SHARE) / (sets * o->rounds);
  r->pair_seconds = o->seconds * TABLE_SHARE / pairs;
  r->pair_seconds = r->pair_seconds < PAIR_MIN_S ? PAIR_MIN_S : r->pair_seconds > PAIR_MAX_S ? PAIR_MAX_S
                                                                                              : r->pair_seconds;
  r->chosen_ns = cp_xcalloc (o->rounds, sizeof *r->chosen_ns);
  if (sets == 2)
    r->spread_ns = cp_xcalloc (o->rounds, sizeof *r->spread_ns);
  if (rounds (s, o, r, err) < 0 || table (s, r, err) < 0)
    return -1;
  /* What the figures include besides transfers: the clock, read once per 64
     hand-offs, and the loop and line updates, timed alone (one thread). */
  r->clock_ns = cp_workload_clock_cost_ns ();
  return sample (s->chosen, 1, CP_MEASURE_LINES, 0.02, NULL, &r->loop_ns, err);
}

void
cp_measure_result_clear (struct cp_measure_result *r)
{
  free (r->chosen_ns);
  free (r->spread_ns);
  free (r->latency_ns);
  *r = (struct cp_measure_result) { 0 };
}
