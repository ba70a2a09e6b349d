/* bench-cluster: what the Kubernetes scheduler's view of a node costs strict L3
 * requests, three views side by side on one seeded pod churn (issue 34, item 5).
 *
 *   bench-cluster [--nodes N] [--pods P] [--load F] [--strict F] [--seed S]
 *                 [--topologies DIR|none] [--out FILE] [--check]
 *
 * N nodes are drawn (seeded) from the captured topologies under DIR (every *.xml
 * with L3 caches and at least 32 usable CPUs), or from two synthetic ones without
 * them (EPYC-like and Intel-like).  P pods arrive (exponential gaps) and leave
 * (exponential lifetimes, mean 1) so that the CPUs asked average F of the cluster's;
 * a share of them (--strict) asks for its CPUs in one L3 (strict), the others
 * prefer one (align=llc, not strict).  Every pod runs through six schedulers, each
 * on its own copy of the cluster: three filters, each under kube-scheduler's two
 * NodeResourcesFit scoring strategies (LeastAllocated, the default, and
 * MostAllocated), on the CPUs the pods ask of each node:
 *   cpu    a node fits when its unrequested CPUs hold the pod (today);
 *   numa   and one of its NUMA zones has that many CPUs free, as NodeResourceTopology
 *          reports them and its scheduler plugin reads them (single-numa-node);
 *   l3     a strict pod asks a ResourceClaim of N `cpus` from one L3 device
 *          (policy/dra_model.h), allocated first fit over the node's devices in
 *          order, as the structured allocator does; capacity is the node's
 *          published one (usable CPUs less those held outside DRA, republished
 *          at once) less the claims it holds.  Non-strict pods ask no claim.
 * On the node, the engine's placement (cp_place(), what the hook and the NRI
 * plugin call) chooses the CPUs: align=llc, smt=pe0-first, exclusive; a claim's
 * pod inside its device's CPUs.  Counted after the warm-up (two mean lifetimes,
 * and at least the first tenth of the pods): strict pods that reached a node that could not hold them (the node
 * refuses them: they fail at creation), pods left pending (no node fits:
 * dropped, not retried), non-strict pods placed over more than one L3 (split),
 * and the cluster's CPUs held, averaged over time.  --check: exit 1 unless the
 * L3 scheduler sent no strict pod to a node that refused it (the promise of
 * publishing L3s: docs/dra.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bitmap.h"
#include "dra_model.h"
#include "placement.h"
#include "topo.h"
#include "util.h"

/* ------------------------------------------------------------------ input */

struct opts
{
  unsigned nodes, pods;
  double load, strict;
  uint64_t seed;
  const char *topologies; /* NULL: the synthetic ones */
  const char *out;
  bool check; /* exit 1 unless the L3 scheduler sent no strict pod to a node that refused it */
};

static const char *const synthetic[] = {
  /* EPYC-like: 2 sockets, one NUMA node each, 8 L3s of 8 two-thread cores */
  "package:2 numa:1 l3cache:8 core:8 pu:2(indexes=core)",
  /* Intel-like: 2 sockets, one L3 and two NUMA nodes (SNC2) each, 24 two-thread cores */
  "package:2 l3cache:1 numa:2 core:12 pu:2(indexes=core)",
};

static uint64_t
rng_next (uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull); /* splitmix64 */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double
rng_unit (uint64_t *s)
{
  return ((double) (rng_next (s) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

/* ------------------------------------------------------------------ the pods */

struct pod
{
  double arrive, leave;
  unsigned cpus;
  bool strict;
};

struct event
{
  double t;
  unsigned pod;
  bool arrival;
};

static int
cmp_event (const void *a, const void *b)
{
  const struct event *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->pod < y->pod ? -1 : x->pod > y->pod; /* never equal in practice */
}

/* Sizes: strict pods 2-8 CPUs (a cache-sensitive worker pool), the others 1-16. */
static unsigned
draw_size (uint64_t *s, bool strict)
{
  static const unsigned strict_sizes[] = { 2, 4, 4, 6, 8, 8 };
  static const unsigned other_sizes[] = { 1, 2, 2, 4, 4, 8, 8, 16 };
  if (strict)
    return strict_sizes[rng_next (s) % CP_ARRAY_SIZE (strict_sizes)];
  return other_sizes[rng_next (s) % CP_ARRAY_SIZE (other_sizes)];
}

static struct pod *
make_pods (const struct opts *o, unsigned cluster_cpus, struct event **events)
{
  uint64_t s = o->seed;
  struct pod *pods = cp_xcalloc (o->pods, sizeof *pods);
  /* mean size from the draws themselves: E[size] for the mix asked */
  double mean = o->strict * (2 + 4 + 4 + 6 + 8 + 8) / 6.0 + (1 - o->strict) * (1 + 2 + 2 + 4 + 4 + 8 + 8 + 16) / 8.0;
  double rate = o->load * cluster_cpus / mean; /* arrivals per unit of time, lifetimes of mean 1 */
  double t = 0;
  *events = cp_xcalloc (2 * (size_t) o->pods, sizeof **events);
  for (unsigned i = 0; i < o->pods; i++)
    {
      t += -log (rng_unit (&s)) / rate;
      pods[i].arrive = t;
      pods[i].leave = t - log (rng_unit (&s));
      pods[i].strict = rng_unit (&s) < o->strict;
      pods[i].cpus = draw_size (&s, pods[i].strict);
      (*events)[2 * i] = (struct event) { pods[i].arrive, i, true };
      (*events)[2 * i + 1] = (struct event) { pods[i].leave, i, false };
    }
  qsort (*events, 2 * (size_t) o->pods, sizeof **events, cmp_event);
  return pods;
}

/* ------------------------------------------------------------------ nodes */

struct node_kind
{
  char *name;
  struct cp_topo *topo;
  unsigned cpus;          /* allocatable: its allowed online CPUs */
};

static void
collect_xml (const char *dir, char ***out, size_t *n)
{
  DIR *d = opendir (dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)))
    {
      if (e->d_name[0] == '.')
        continue;
      char *path = cp_xasprintf ("%s/%s", dir, e->d_name);
      struct stat st;
      size_t len = strlen (e->d_name);
      if (stat (path, &st) == 0 && S_ISDIR (st.st_mode))
        collect_xml (path, out, n);
      else if (len > 4 && strcmp (e->d_name + len - 4, ".xml") == 0)
        {
          *out = cp_xrealloc (*out, (*n + 1) * sizeof **out);
          (*out)[(*n)++] = cp_xstrdup (path);
        }
      free (path);
    }
  closedir (d);
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static bool
add_kind (struct node_kind **kinds, size_t *n, const char *source, const char *name)
{
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  if (cp_topo_load (source, &topo, &err) < 0)
    {
      fprintf (stderr, "bench-cluster: %s: %s\n", source, cp_error_message (err));
      cp_error_free (&err);
      return false;
    }
  cleanup_bitmap hwloc_bitmap_t usable = cp_bitmap_dup (topo->allowed);
  hwloc_bitmap_and (usable, usable, topo->online);
  unsigned cpus = (unsigned) hwloc_bitmap_weight (usable);
  if (topo->llc_depth != 3 || cpus < 32)
    {
      cp_topo_free (topo);
      return false;
    }
  *kinds = cp_xrealloc (*kinds, (*n + 1) * sizeof **kinds);
  (*kinds)[(*n)++] = (struct node_kind) { cp_xstrdup (name), topo, cpus };
  return true;
}

static struct node_kind *
load_kinds (const char *dir, size_t *n)
{
  struct node_kind *kinds = NULL;
  *n = 0;
  if (dir)
    {
      char **files = NULL;
      size_t n_files = 0;
      collect_xml (dir, &files, &n_files);
      qsort (files, n_files, sizeof *files, cmp_str);
      for (size_t i = 0; i < n_files; i++)
        {
          add_kind (&kinds, n, files[i], files[i] + strlen (dir) + (dir[strlen (dir) - 1] != '/'));
          free (files[i]);
        }
      free (files);
    }
  if (*n == 0)
    for (size_t i = 0; i < CP_ARRAY_SIZE (synthetic); i++)
      add_kind (&kinds, n, synthetic[i], i == 0 ? "synthetic EPYC-like" : "synthetic Intel-like");
  return kinds;
}

/* ------------------------------------------------------------------ one scheduler */

enum filter
{
  F_CPU,
  F_NUMA,
  F_L3,
  F_COUNT
};
static const char *const filter_name[F_COUNT] = { "CPU count", "NUMA zones (NRT)", "L3 capacity (DRA)" };

enum scoring
{
  S_LEAST,
  S_MOST,
  S_COUNT
};
static const char *const scoring_name[S_COUNT] = { "LeastAllocated", "MostAllocated" };

struct node
{
  const struct node_kind *kind;
  hwloc_bitmap_t held;            /* what the node's ledger holds */
  hwloc_bitmap_t outside;         /* of it, what pods without a claim hold (l3 only) */
  unsigned requested;             /* the CPUs its pods ask (the scheduler's count) */
  struct cp_dra_model *published; /* its devices as published now (l3 only) */
  unsigned *consumed;             /* per domain index of the level: claims' CPUs (l3 only) */
};

struct placed
{
  int node;          /* -1: not running */
  int device;        /* the domain index of its claim's device, -1: none */
  hwloc_bitmap_t held;
};

struct result
{
  unsigned long strict, strict_failed, pods, pending, nonstrict_placed, split;
  double cpu_time, total_time; /* integral of held CPUs, and of cluster CPUs, over time */
  double seconds;
};

struct sim
{
  enum filter filter;
  enum scoring scoring;
  struct node *nodes;
  unsigned n_nodes;
  struct placed *placed;
  uint64_t rng;
  unsigned long held_now, cluster_cpus;
  struct result r;
};

static void
republish (struct node *n)
{
  cp_dra_model_free (n->published);
  struct cp_dra_inputs in = { .topo = n->kind->topo, .level = CP_LEVEL_LLC, .held = n->outside,
                              .isolate_allowed = true };
  cp_error_t err = NULL;
  if (cp_dra_model_build (&in, &n->published, &err) < 0)
    {
      fprintf (stderr, "bench-cluster: %s\n", cp_error_message (err));
      exit (1);
    }
}

/* The first device of N (in the published order) with COUNT CPUs free for a
   claim, or NULL: the structured allocator's first fit. */
static const struct cp_dra_device *
first_fit (const struct node *n, unsigned count)
{
  for (size_t i = 0; i < n->published->n_devices; i++)
    {
      const struct cp_dra_device *d = &n->published->devices[i];
      if (d->capacity >= n->consumed[d->index] + count)
        return d;
    }
  return NULL;
}

/* The most CPUs free in one NUMA zone of N, as the node reports them. */
static unsigned
numa_free (const struct node *n)
{
  const struct cp_topo *topo = n->kind->topo;
  unsigned best = 0;
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      cleanup_bitmap hwloc_bitmap_t f = cp_bitmap_dup (topo->nodes_info[i].cpus);
      hwloc_bitmap_and (f, f, topo->allowed);
      hwloc_bitmap_andnot (f, f, n->held);
      unsigned w = (unsigned) hwloc_bitmap_weight (f);
      if (w > best)
        best = w;
    }
  return best;
}

static bool
fits (const struct sim *s, const struct node *n, const struct pod *p)
{
  if (n->requested + p->cpus > n->kind->cpus)
    return false;
  switch (s->filter)
    {
    case F_NUMA:
      return numa_free (n) >= p->cpus;
    case F_L3:
      return !p->strict || first_fit (n, p->cpus) != NULL;
    case F_CPU:
    case F_COUNT:
    default:
      return true;
    }
}

/* NodeResourcesFit's score (0-100) of N for P, CPU alone. */
static long
score (const struct sim *s, const struct node *n, const struct pod *p)
{
  long cap = n->kind->cpus, req = n->requested + p->cpus;
  return s->scoring == S_LEAST ? (cap - req) * 100 / cap : req * 100 / cap;
}

/* The node P goes to, or -1: the best score among those that fit, ties broken
   at random (reservoir sampling, as kube-scheduler's selectHost). */
static int
pick (struct sim *s, const struct pod *p)
{
  int best = -1;
  long best_score = -1;
  unsigned ties = 0;
  for (unsigned i = 0; i < s->n_nodes; i++)
    {
      if (!fits (s, &s->nodes[i], p))
        continue;
      long sc = score (s, &s->nodes[i], p);
      if (sc > best_score)
        {
          best = (int) i, best_score = sc, ties = 1;
        }
      else if (sc == best_score && rng_next (&s->rng) % ++ties == 0)
        best = (int) i;
    }
  return best;
}

/* The engine on node N: P's CPUs within ALLOWED (NULL: the node's), or NULL when
   it refuses (strict, and no one L3 holds them). */
static struct cp_plan *
place (const struct node *n, const struct pod *p, hwloc_const_bitmap_t allowed)
{
  struct cp_request req;
  cp_request_init (&req);
  req.cpus = p->cpus;
  req.align = CP_LEVEL_LLC;
  req.strict = p->strict;
  struct cp_usage usage = { .held = n->held };
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  if (cp_place (n->kind->topo, allowed, NULL, &usage, &req, &plan, &err) < 0)
    {
      if (cp_error_kind (err) != CP_ERR_UNSATISFIABLE)
        {
          fprintf (stderr, "bench-cluster: %s: %s\n", n->kind->name, cp_error_message (err));
          exit (1);
        }
      cp_error_free (&err);
      return NULL;
    }
  return plan;
}

static void
arrive (struct sim *s, const struct pod *p, unsigned id, bool counted)
{
  int ni = pick (s, p);
  s->r.pods += counted;
  s->r.strict += counted && p->strict;
  if (ni < 0)
    {
      s->r.pending += counted;
      return;
    }
  struct node *n = &s->nodes[ni];
  const struct cp_dra_device *dev = s->filter == F_L3 && p->strict ? first_fit (n, p->cpus) : NULL;
  cleanup_plan struct cp_plan *plan = place (n, p, dev ? dev->cpus : NULL);
  if (plan == NULL)
    {
      s->r.strict_failed += counted; /* only strict requests are refused */
      return;
    }
  if (!p->strict)
    {
      s->r.nonstrict_placed += counted;
      s->r.split += counted && plan->split;
    }
  struct placed *pl = &s->placed[id];
  pl->node = ni;
  pl->device = dev ? (int) dev->index : -1;
  pl->held = cp_bitmap_dup (plan->held);
  hwloc_bitmap_or (n->held, n->held, plan->held);
  n->requested += p->cpus;
  s->held_now += (unsigned long) hwloc_bitmap_weight (plan->held);
  if (dev)
    n->consumed[dev->index] += p->cpus;
  else if (s->filter == F_L3)
    {
      hwloc_bitmap_or (n->outside, n->outside, plan->held);
      republish (n);
    }
}

static void
leave (struct sim *s, const struct pod *p, unsigned id)
{
  struct placed *pl = &s->placed[id];
  if (pl->node < 0)
    return;
  struct node *n = &s->nodes[pl->node];
  hwloc_bitmap_andnot (n->held, n->held, pl->held);
  n->requested -= p->cpus;
  s->held_now -= (unsigned long) hwloc_bitmap_weight (pl->held);
  if (pl->device >= 0)
    n->consumed[pl->device] -= p->cpus;
  else if (s->filter == F_L3)
    {
      hwloc_bitmap_andnot (n->outside, n->outside, pl->held);
      republish (n);
    }
  hwloc_bitmap_free (pl->held);
  pl->held = NULL;
  pl->node = -1;
}

/* The first pod counted: past two mean lifetimes (the cluster has filled) and
   the first tenth of the pods. */
static unsigned
warm_up (const struct opts *o, const struct pod *pods)
{
  unsigned w = o->pods / 10;
  while (w + 1 < o->pods && pods[w].arrive < 2.0)
    w++;
  return w;
}

static void
run_sim (struct sim *s, const struct opts *o, const struct pod *pods, const struct event *ev)
{
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  unsigned warm = warm_up (o, pods);
  /* CPUs held, integrated from the warm-up to the last arrival (not over the
     cluster draining after it) */
  double from = pods[warm].arrive, to = pods[o->pods - 1].arrive, last = 0;
  for (size_t i = 0; i < 2 * (size_t) o->pods; i++)
    {
      const struct pod *p = &pods[ev[i].pod];
      double a = last > from ? last : from, b = ev[i].t < to ? ev[i].t : to;
      if (b > a)
        {
          s->r.cpu_time += (double) s->held_now * (b - a);
          s->r.total_time += (double) s->cluster_cpus * (b - a);
        }
      last = ev[i].t;
      if (ev[i].arrival)
        arrive (s, p, ev[i].pod, ev[i].pod >= warm);
      else
        leave (s, p, ev[i].pod);
    }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  s->r.seconds = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static void
sim_init (struct sim *s, const struct opts *o, const struct node_kind *const *drawn, enum filter f, enum scoring sc)
{
  *s = (struct sim) { .filter = f, .scoring = sc, .n_nodes = o->nodes, .rng = o->seed ^ 0x5eed };
  s->nodes = cp_xcalloc (o->nodes, sizeof *s->nodes);
  s->placed = cp_xcalloc (o->pods, sizeof *s->placed);
  for (unsigned i = 0; i < o->pods; i++)
    s->placed[i].node = -1;
  for (unsigned i = 0; i < o->nodes; i++)
    {
      struct node *n = &s->nodes[i];
      n->kind = drawn[i];
      n->held = cp_bitmap_new ();
      n->outside = cp_bitmap_new ();
      n->consumed = cp_xcalloc (n->kind->topo->n_domains[CP_LEVEL_LLC], sizeof *n->consumed);
      s->cluster_cpus += n->kind->cpus;
      if (f == F_L3)
        republish (n);
    }
}

static void
sim_free (struct sim *s, const struct opts *o)
{
  for (unsigned i = 0; i < o->pods; i++)
    hwloc_bitmap_free (s->placed[i].held);
  for (unsigned i = 0; i < s->n_nodes; i++)
    {
      hwloc_bitmap_free (s->nodes[i].held);
      hwloc_bitmap_free (s->nodes[i].outside);
      free (s->nodes[i].consumed);
      cp_dra_model_free (s->nodes[i].published);
    }
  free (s->nodes);
  free (s->placed);
}

/* ------------------------------------------------------------------ report */

static double
pct (unsigned long a, unsigned long b)
{
  return b ? 100.0 * (double) a / (double) b : 0.0;
}

static void
report (FILE *f, const struct opts *o, const struct sim *sims, size_t n_sims)
{
  fprintf (f, "| scheduler | scoring | strict pods on a node that could not hold them | pods left pending | "
              "non-strict pods split | cluster CPUs held | run time |\n");
  fprintf (f, "|---|---|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n_sims; i++)
    {
      const struct result *r = &sims[i].r;
      fprintf (f, "| %s | %s | %lu of %lu (%.1f%%) | %lu of %lu (%.1f%%) | %lu of %lu (%.1f%%) | %.1f%% | %.2f s |\n",
               filter_name[sims[i].filter], scoring_name[sims[i].scoring], r->strict_failed, r->strict,
               pct (r->strict_failed, r->strict), r->pending, r->pods, pct (r->pending, r->pods), r->split,
               r->nonstrict_placed, pct (r->split, r->nonstrict_placed),
               r->total_time > 0 ? 100.0 * r->cpu_time / r->total_time : 0.0, r->seconds);
    }
  (void) o;
}

static void
usage (void)
{
  fprintf (stderr, "usage: bench-cluster [--nodes N] [--pods P] [--load F] [--strict F] [--seed S]\n"
                   "                     [--topologies DIR|none] [--out FILE] [--check]\n");
  exit (2);
}

static void
parse (int argc, char **argv, struct opts *o)
{
  *o = (struct opts) { .nodes = 16, .pods = 4000, .load = 0.85, .strict = 0.5, .seed = 34 };
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--check") == 0)
        {
          o->check = true;
          continue;
        }
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (v == NULL)
        usage ();
      i++;
      if (strcmp (a, "--nodes") == 0)
        o->nodes = (unsigned) strtoul (v, NULL, 10);
      else if (strcmp (a, "--pods") == 0)
        o->pods = (unsigned) strtoul (v, NULL, 10);
      else if (strcmp (a, "--load") == 0)
        o->load = strtod (v, NULL);
      else if (strcmp (a, "--strict") == 0)
        o->strict = strtod (v, NULL);
      else if (strcmp (a, "--seed") == 0)
        o->seed = strtoull (v, NULL, 10);
      else if (strcmp (a, "--topologies") == 0)
        o->topologies = strcmp (v, "none") == 0 ? NULL : v;
      else if (strcmp (a, "--out") == 0)
        o->out = v;
      else
        usage ();
    }
  if (o->nodes == 0 || o->pods < 10 || !(o->load > 0 && o->load < 4) || !(o->strict >= 0 && o->strict <= 1))
    usage ();
}

int
main (int argc, char **argv)
{
  struct opts o;
  parse (argc, argv, &o);
  struct stat st;
  if (o.topologies && (stat (o.topologies, &st) < 0 || !S_ISDIR (st.st_mode)))
    {
      printf ("SKIP: %s is not a folder: no captured topologies to draw nodes from\n", o.topologies);
      return 77;
    }
  size_t n_kinds = 0;
  struct node_kind *kinds = load_kinds (o.topologies, &n_kinds);
  if (n_kinds == 0)
    {
      fprintf (stderr, "bench-cluster: no topology to draw nodes from\n");
      return 1;
    }
  uint64_t s = o.seed ^ 0xc1u;
  const struct node_kind **drawn = cp_xcalloc (o.nodes, sizeof *drawn);
  unsigned cluster_cpus = 0;
  for (unsigned i = 0; i < o.nodes; i++)
    {
      drawn[i] = &kinds[rng_next (&s) % n_kinds];
      cluster_cpus += drawn[i]->cpus;
    }
  struct event *events = NULL;
  struct pod *pods = make_pods (&o, cluster_cpus, &events);
  struct sim sims[F_COUNT * S_COUNT];
  for (unsigned f = 0; f < F_COUNT; f++)
    for (unsigned sc = 0; sc < S_COUNT; sc++)
      {
        struct sim *sim = &sims[f * S_COUNT + sc];
        sim_init (sim, &o, drawn, f, sc);
        run_sim (sim, &o, pods, events);
      }

  FILE *out = stdout;
  if (o.out && (out = fopen (o.out, "w")) == NULL)
    {
      perror (o.out);
      return 1;
    }
  fprintf (out, "%u nodes (%u CPUs): ", o.nodes, cluster_cpus);
  const char *sep = "";
  for (size_t k = 0; k < n_kinds; k++)
    {
      unsigned count = 0;
      for (unsigned i = 0; i < o.nodes; i++)
        count += drawn[i] == &kinds[k];
      if (count)
        fprintf (out, "%s%u x %s (%u CPUs, %u L3s)", sep, count, kinds[k].name, kinds[k].cpus,
                 kinds[k].topo->n_domains[CP_LEVEL_LLC]);
      sep = count ? ", " : sep;
    }
  fprintf (out, ".\n%u pods, load %.2f, %.0f%% strict, seed %llu.\n\n", o.pods, o.load, 100 * o.strict,
           (unsigned long long) o.seed);
  report (out, &o, sims, CP_ARRAY_SIZE (sims));
  if (out != stdout)
    fclose (out);
  int ret = 0;
  for (size_t i = 0; i < CP_ARRAY_SIZE (sims); i++)
    if (o.check && sims[i].filter == F_L3 && sims[i].r.strict_failed > 0)
      {
        fprintf (stderr, "bench-cluster: %s under %s sent %lu strict pods to nodes that refused them (goal: 0)\n",
                 filter_name[F_L3], scoring_name[sims[i].scoring], sims[i].r.strict_failed);
        ret = 1;
      }
  for (size_t i = 0; i < CP_ARRAY_SIZE (sims); i++)
    sim_free (&sims[i], &o);
  for (size_t k = 0; k < n_kinds; k++)
    {
      free (kinds[k].name);
      cp_topo_free (kinds[k].topo);
    }
  free (kinds);
  free (drawn);
  free (pods);
  free (events);
  return ret;
}
