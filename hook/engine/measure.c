/* cachepin: what `cachepin measure` compares and how it judges (measure.h); the
 * run itself is measure_run.c. */
#define _GNU_SOURCE
#include "measure.h"

#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "placer.h"
#include "util.h"

/* ------------------------------------------------------------------ the sets */

/* SET's CPUs in the order a ring takes them: each core's PE0 (topology order),
   then the cores' other threads; the siblings come from the cores, never from
   CPU numbers (topo.h). */
static unsigned *
order_of (const struct cp_topo *topo, hwloc_const_bitmap_t set, unsigned *n_out, unsigned *cores_out)
{
  unsigned *order = cp_xcalloc ((size_t) hwloc_bitmap_weight (set) + 1, sizeof *order);
  unsigned n = 0;
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      int pe0 = cp_core_pe0 (&topo->cores[c], set);
      if (pe0 >= 0)
        order[n++] = (unsigned) pe0;
    }
  if (cores_out)
    *cores_out = n;
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      int pe0 = cp_core_pe0 (&topo->cores[c], set), cpu;
      hwloc_bitmap_foreach_begin (cpu, topo->cores[c].pus)
        if (cpu != pe0 && hwloc_bitmap_isset (set, (unsigned) cpu))
          order[n++] = (unsigned) cpu;
      hwloc_bitmap_foreach_end ();
    }
  *n_out = n;
  return order;
}

static void
collect_l3 (const struct cp_topo *topo, hwloc_const_bitmap_t usable, struct cp_measure_sets *s)
{
  unsigned count = topo->n_domains[CP_LEVEL_LLC];
  s->l3 = cp_xcalloc (count + 1, sizeof *s->l3);
  for (unsigned i = 0; i < count; i++)
    {
      const struct cp_domain *d = &topo->domains[CP_LEVEL_LLC][i];
      if (!hwloc_bitmap_intersects (d->cpus, usable))
        continue;
      struct cp_measure_l3 *l3 = &s->l3[s->n_l3++];
      l3->index = d->index;
      l3->cpus = cp_bitmap_new ();
      hwloc_bitmap_and (l3->cpus, d->cpus, usable);
      l3->order = order_of (topo, l3->cpus, &l3->n_order, &l3->n_cores);
    }
}

/* One L3's cores (its PE0s), capped, at least 2, at most what may be used. */
static unsigned
default_count (const struct cp_measure_sets *s, hwloc_const_bitmap_t usable)
{
  unsigned most = 0;
  for (unsigned i = 0; i < s->n_l3; i++)
    most = s->l3[i].n_cores > most ? s->l3[i].n_cores : most;
  unsigned n = most < 2 ? 2 : most > CP_MEASURE_DEFAULT_MAX ? CP_MEASURE_DEFAULT_MAX : most;
  unsigned usable_n = (unsigned) hwloc_bitmap_weight (usable);
  return n < usable_n ? n : usable_n;
}

/* Round robin over the L3s: the first CPU of each, then the second, ... */
static void
spread_set (struct cp_measure_sets *s)
{
  s->spread = cp_xcalloc (s->n, sizeof *s->spread);
  unsigned taken = 0, most = 0;
  for (unsigned i = 0; i < s->n_l3; i++)
    most = s->l3[i].n_order > most ? s->l3[i].n_order : most;
  for (unsigned round = 0; taken < s->n && round < most; round++) /* n <= the usable CPUs */
    for (unsigned i = 0; i < s->n_l3 && taken < s->n; i++)
      if (round < s->l3[i].n_order)
        s->spread[taken++] = s->l3[i].order[round];
}

static unsigned
l3s_spanned (const struct cp_measure_sets *s, const unsigned *cpus)
{
  unsigned spanned = 0;
  for (unsigned i = 0; i < s->n_l3; i++)
    for (unsigned j = 0; j < s->n; j++)
      if (hwloc_bitmap_isset (s->l3[i].cpus, cpus[j]))
        {
          spanned++;
          break;
        }
  return spanned;
}

static int
choose_in (struct cp_preview *pv, hwloc_const_bitmap_t allowed, struct cp_container_request *creq,
           struct cp_measure_sets *s, cp_error_t *err)
{
  /* What the host config keeps back is no more usable here than for a placement. */
  hwloc_bitmap_and (pv->cpus, pv->cpus, allowed);
  hwloc_bitmap_andnot (pv->cpus, pv->cpus, pv->kept_back);
  unsigned usable = (unsigned) hwloc_bitmap_weight (pv->cpus);
  cleanup_free char *list = cp_cpulist_format (pv->cpus);
  if (usable < 2)
    return cp_fail_unsatisfiable (err, "a ring needs 2 CPUs; this process may use %u here (%s)", usable,
                                  usable ? list : "none");
  if (creq->req.cpus > usable)
    return cp_fail_unsatisfiable (err, "--cpus %u: this process may use only %u CPUs here (%s)", creq->req.cpus,
                                  usable, list);
  collect_l3 (pv->topo, pv->cpus, s);
  s->level = cp_topo_level_label (pv->topo, CP_LEVEL_LLC);
  if (creq->req.cpus == 0)
    creq->req.cpus = default_count (s, pv->cpus);
  s->n = creq->req.cpus;
  struct cp_target target = { .id = "measure:" };
  cleanup_plan struct cp_plan *plan = NULL;
  if (cp_preview_place (pv, &target, creq, NULL, &plan, err) < 0)
    return cp_error_wrap (err, "the CPUs cachepin would choose");
  unsigned n_plan;
  s->chosen = order_of (pv->topo, plan->cpus, &n_plan, NULL);
  s->n = n_plan; /* shared mode may give a whole domain */
  s->reason = cp_xstrdup (plan->reason);
  spread_set (s);
  s->chosen_l3s = l3s_spanned (s, s->chosen);
  s->spread_l3s = l3s_spanned (s, s->spread);
  return 0;
}

int
cp_measure_choose (const struct cp_hostconfig *hc, struct cp_topo *topo, hwloc_const_bitmap_t allowed,
                   const struct cp_container_request *creq, struct cp_measure_sets *out, cp_error_t *err)
{
  *out = (struct cp_measure_sets) { 0 };
  if (creq->req.cpus == 1)
    {
      cp_topo_free (topo);
      return cp_fail_input (err, "--cpus: 1 is not a ring (2 or more)");
    }
  struct cp_container_request req = *creq;
  struct cp_target target = { .id = "measure:" };
  struct cp_preview pv;
  int r = cp_preview_open (hc, topo, false, &target, &req, &pv, err);
  if (r == 0)
    r = choose_in (&pv, allowed, &req, out, err);
  cp_preview_clear (&pv);
  if (r < 0)
    cp_measure_sets_clear (out);
  return r;
}

void
cp_measure_sets_clear (struct cp_measure_sets *s)
{
  for (unsigned i = 0; i < s->n_l3; i++)
    {
      hwloc_bitmap_free (s->l3[i].cpus);
      free (s->l3[i].order);
    }
  free (s->l3);
  free (s->chosen);
  free (s->spread);
  free (s->reason);
  *s = (struct cp_measure_sets) { 0 };
}

bool
cp_measure_compares (const struct cp_measure_sets *s)
{
  return s->chosen_l3s < s->spread_l3s;
}

/* ------------------------------------------------------------------ judging */

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The P-quantile of sorted V (R's type 7: linear between order statistics). */
static double
quantile (const double *v, size_t n, double p)
{
  double at = p * (double) (n - 1);
  size_t lo = (size_t) at;
  if (lo + 1 >= n)
    return v[n - 1];
  return v[lo] + (at - (double) lo) * (v[lo + 1] - v[lo]);
}

void
cp_measure_stats_of (const double *v, size_t n, struct cp_measure_stats *out)
{
  cleanup_free double *sorted = cp_xcalloc (n, sizeof *sorted);
  memcpy (sorted, v, n * sizeof *sorted);
  qsort (sorted, n, sizeof *sorted, compare_double);
  *out = (struct cp_measure_stats) {
    .median = quantile (sorted, n, 0.5),
    .q1 = quantile (sorted, n, 0.25),
    .q3 = quantile (sorted, n, 0.75),
    .min = sorted[0],
    .max = sorted[n - 1],
  };
}

const char *
cp_measure_verdict_name (enum cp_measure_verdict v)
{
  switch (v)
    {
    case CP_MEASURE_ONE_L3:
      return "one-l3";
    case CP_MEASURE_SAME_L3S:
      return "same-l3s";
    case CP_MEASURE_NOISY:
      return "noisy";
    case CP_MEASURE_CHOSEN_FASTER:
      return "chosen-faster";
    case CP_MEASURE_SPREAD_FASTER:
      return "spread-faster";
    default:
      return "?";
    }
}

enum cp_measure_verdict
cp_measure_judge (const struct cp_measure_stats *chosen, const struct cp_measure_stats *spread, double *ratio)
{
  *ratio = chosen->median > 0 ? spread->median / chosen->median : 0;
  /* A difference the runs' own spread could make is no difference: the middle
     halves must be apart. */
  if (chosen->q3 >= spread->q1 && spread->q3 >= chosen->q1)
    return CP_MEASURE_NOISY;
  return chosen->median < spread->median ? CP_MEASURE_CHOSEN_FASTER : CP_MEASURE_SPREAD_FASTER;
}
