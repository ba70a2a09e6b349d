/* bench-placement: cachepin's placements against what a host would use
 * otherwise, on seeded churn traces over captured and synthetic topologies.
 *
 *   bench-placement [--events N] [--seed S] [--out DIR] [--placements FILE] TOPOLOGY_DIR...
 *
 * Every *.xml under each TOPOLOGY_DIR (recursively) and the synthetic topologies
 * below are loaded with cp_topo_load().  One trace per topology (arrivals and
 * departures, sizes from the distribution in gen_size()) is run through:
 *   cachepin        cp_place() with the default request (align=llc,
 *                   smt=pe0-first, mode=exclusive) on a detached ledger
 *                   (cp_ledger_parse/put/remove/usage), as the hook does;
 *   no-cpuset       every container may run on every CPU;
 *   first-fit       the lowest-numbered free CPUs;
 *   kubelet         the kubelet CPU manager's static policy;
 *   kubelet-uncore  the same with prefer-align-cpus-by-uncorecache.
 * The metrics are defined in docs/benchmarks.md; this file is their reference.
 * --placements FILE writes each of cachepin's decisions, one line each (topology,
 * container, CPUs asked, strict, then cpus, held and mems, or the refusal): two
 * builds that place alike write the same file (the "behaviour unchanged" check of
 * a refactoring, docs/benchmarks.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "baselines.h"
#include "cpulist.h"
#include "ledger.h"
#include "placement.h"
#include "topo.h"
#include "util.h"

static const struct
{
  const char *label, *desc;
} synthetic[] = {
  /* 2 sockets, AMD-style thread numbering (core 0 = CPUs 0 and 32) */
  { "syn-2p4l3c4t2-amdnum", "package:2 l3cache:4 core:4 pu:2(indexes=core)" },
  /* one socket, 8 CCD-like L3s, adjacent thread numbering */
  { "syn-1p8l3c8t2", "package:1 l3cache:8 core:8 pu:2" },
  /* no SMT, 2 NUMA nodes per socket, 3 L3s per node */
  { "syn-2p2n3l3c8-nosmt", "package:2 numa:2 l3cache:3 core:8 pu:1" },
};

enum policy
{
  P_CACHEPIN,
  P_NOCPUSET,
  P_FIRSTFIT,
  P_KUBELET,
  P_KUBELET_UNCORE,
  P_COUNT
};
static const char *const policy_name[P_COUNT] = { "cachepin", "no-cpuset", "first-fit", "kubelet",
                                                  "kubelet-uncore" };

#define STRICT_PERCENT 20

struct event
{
  bool arrive;
  unsigned id; /* container number, 0.. */
  unsigned n;  /* CPUs (arrivals) */
  bool strict;
};

struct trace
{
  struct event *ev;
  size_t n_ev;
  unsigned n_containers;
  unsigned sizes[64]; /* histogram of drawn size classes, for the report */
};

struct stats
{
  unsigned arrivals, placed, strict_total, strict_refused, capacity_refused;
  unsigned splits, avoidable_splits, smt_shared, avoidable_smt;
  unsigned long long sum_llc, sum_numa;
  long end_llc_max; /* -1: not applicable */
  double seconds;
};

/* ---- random numbers: splitmix64, seeded per topology ---------------------- */

static uint64_t
rng_next (uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static unsigned
rng_below (uint64_t *s, unsigned n)
{
  return (unsigned) (rng_next (s) % n);
}

static uint64_t
fnv1a (const char *s)
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
  return h;
}

/* ---- the trace ------------------------------------------------------------- */

static unsigned
max_llc (const struct bm_model *m)
{
  unsigned best = 0;
  for (unsigned d = 0; d < m->ndom[CP_LEVEL_LLC]; d++)
    if (m->dom_size[CP_LEVEL_LLC][d] > best)
      best = m->dom_size[CP_LEVEL_LLC][d];
  return best;
}

/* Sizes: weighted toward small containers; "big" is one and a half of the
 * largest LLC.  A size above half the machine's usable CPUs is drawn again. */
static const struct
{
  unsigned cpus; /* 0: big */
  unsigned weight;
} size_class[] = { { 1, 20 }, { 2, 20 }, { 3, 5 }, { 4, 18 }, { 6, 5 }, { 8, 14 },
                   { 16, 9 }, { 32, 5 }, { 0, 4 } };
#define N_SIZE_CLASSES (sizeof size_class / sizeof size_class[0])

static unsigned
gen_size (const struct bm_model *m, uint64_t *rng)
{
  unsigned total = 0, big = max_llc (m) + max_llc (m) / 2;
  for (size_t i = 0; i < N_SIZE_CLASSES; i++)
    total += size_class[i].weight;
  for (int tries = 0; tries < 100; tries++)
    {
      unsigned r = rng_below (rng, total);
      for (size_t i = 0; i < N_SIZE_CLASSES; i++)
        {
          if (r >= size_class[i].weight)
            {
              r -= size_class[i].weight;
              continue;
            }
          unsigned n = size_class[i].cpus ? size_class[i].cpus : big;
          if (n >= 1 && n <= m->n_usable / 2)
            return n;
          break;
        }
    }
  return 1;
}

/* Arrivals and departures keeping the requested CPUs (whether or not a policy
 * could place them) around 50 to 95% of the usable CPUs: arrivals are likelier
 * below half, departures likelier above 85%.  A departure is a uniformly chosen
 * live container. */
static void
gen_trace (const struct bm_model *m, size_t n_events, uint64_t seed, struct trace *t)
{
  uint64_t rng = seed;
  unsigned *live = cp_xcalloc (n_events, sizeof *live), *live_n = cp_xcalloc (n_events, sizeof *live_n);
  unsigned n_live = 0, demand = 0;
  memset (t, 0, sizeof *t);
  t->ev = cp_xcalloc (n_events, sizeof *t->ev);
  for (size_t i = 0; i < n_events; i++)
    {
      double util = (double) demand / m->n_usable;
      unsigned p_arrive = util < 0.5 ? 85 : util < 0.85 ? 55 : 15;
      struct event *e = &t->ev[t->n_ev++];
      if (n_live == 0 || rng_below (&rng, 100) < p_arrive)
        {
          e->arrive = true;
          e->id = t->n_containers++;
          e->n = gen_size (m, &rng);
          e->strict = rng_below (&rng, 100) < STRICT_PERCENT;
          live[n_live] = e->id;
          live_n[n_live++] = e->n;
          demand += e->n;
          if (e->n < 64)
            t->sizes[e->n]++;
        }
      else
        {
          unsigned k = rng_below (&rng, n_live);
          e->arrive = false;
          e->id = live[k];
          demand -= live_n[k];
          live[k] = live[n_live - 1];
          live_n[k] = live_n[--n_live];
        }
    }
  free (live);
  free (live_n);
}

/* ---- metrics --------------------------------------------------------------- */

/* What the machine looked like to a policy when a container arrived. */
struct before
{
  unsigned llc_free_max;   /* most free usable PUs in one LLC */
  unsigned min_llc_cores;  /* fewest LLCs whose wholly free cores hold n, one thread
                              each; UINT_MAX when the machine's do not */
};

static int
cmp_desc (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  return x < y ? 1 : x > y ? -1 : 0;
}

static void
observe_before (const struct bm_model *m, const int *owner, unsigned n, unsigned *scratch,
                struct before *b)
{
  unsigned nl = m->ndom[CP_LEVEL_LLC];
  unsigned *free_pu = scratch, *free_cores = scratch + nl;
  memset (scratch, 0, 2 * nl * sizeof *scratch);
  for (unsigned pu = 0; pu < m->npu; pu++)
    if (m->usable[pu] && owner[pu] < 0)
      free_pu[m->dom[CP_LEVEL_LLC][pu]]++;
  for (unsigned c = 0; c < m->ncores; c++)
    {
      if (m->core_size[c] == 0)
        continue;
      bool whole = true;
      for (unsigned pu = m->topo->cores[c].first_pu; pu < m->npu && whole; pu++)
        if ((unsigned) m->core[pu] == c && m->usable[pu] && owner[pu] >= 0)
          whole = false;
      if (whole)
        free_cores[m->topo->cores[c].domain[CP_LEVEL_LLC]]++;
    }
  b->llc_free_max = 0;
  for (unsigned d = 0; d < nl; d++)
    if (free_pu[d] > b->llc_free_max)
      b->llc_free_max = free_pu[d];
  qsort (free_cores, nl, sizeof *free_cores, cmp_desc);
  unsigned sum = 0;
  b->min_llc_cores = UINT_MAX;
  for (unsigned d = 0; d < nl; d++)
    if ((sum += free_cores[d]) >= n)
      {
        b->min_llc_cores = d + 1;
        break;
      }
}

/* Record a placed container: CPUS its cpuset, OWNER the other containers' PUs. */
static void
observe_placed (const struct bm_model *m, const int *owner, const bool *cpus, unsigned n,
                const struct before *b, unsigned *scratch, struct stats *st)
{
  unsigned nl = m->ndom[CP_LEVEL_LLC], nn = m->ndom[CP_LEVEL_NUMA];
  unsigned k_llc = 0, k_numa = 0;
  bool shared = false;
  memset (scratch, 0, (nl + nn) * sizeof *scratch);
  for (unsigned pu = 0; pu < m->npu; pu++)
    {
      if (!cpus[pu])
        continue;
      if (scratch[m->dom[CP_LEVEL_LLC][pu]]++ == 0)
        k_llc++;
      if (scratch[nl + m->dom[CP_LEVEL_NUMA][pu]]++ == 0)
        k_numa++;
      /* SMT-shared: another thread of this core is busy, with this container
         or another one. */
      hwloc_bitmap_t sib = m->topo->cores[m->core[pu]].pus;
      for (int q = hwloc_bitmap_first (sib); q >= 0 && !shared; q = hwloc_bitmap_next (sib, q))
        if ((unsigned) q != pu && (unsigned) q < m->npu && m->usable[q] && (cpus[q] || owner[q] >= 0))
          shared = true;
    }
  st->placed++;
  st->sum_llc += k_llc;
  st->sum_numa += k_numa;
  if (k_llc > 1)
    {
      st->splits++;
      if (b->llc_free_max >= n)
        st->avoidable_splits++;
    }
  if (shared)
    {
      st->smt_shared++;
      if (b->min_llc_cores <= k_llc)
        st->avoidable_smt++;
    }
}

static long
end_llc_max (const struct bm_model *m, const int *owner, unsigned *scratch)
{
  struct before b;
  observe_before (m, owner, 1, scratch, &b);
  return b.llc_free_max;
}

/* ---- running a trace ---------------------------------------------------------- */

struct runner
{
  const struct bm_model *m;
  int *owner;      /* [npu] container holding the PU, -1 free */
  bool *cpus;      /* [npu] the arriving container's cpuset */
  unsigned **held; /* [container] PUs it holds, terminated by UINT_MAX; NULL if not placed */
  unsigned *scratch;
};

static void
hold (struct runner *r, unsigned id, const bool *held)
{
  unsigned k = 0;
  for (unsigned pu = 0; pu < r->m->npu; pu++)
    k += held[pu];
  r->held[id] = cp_xcalloc (k + 1, sizeof **r->held);
  k = 0;
  for (unsigned pu = 0; pu < r->m->npu; pu++)
    if (held[pu])
      {
        r->held[id][k++] = pu;
        r->owner[pu] = (int) id;
      }
  r->held[id][k] = UINT_MAX;
}

static void
release (struct runner *r, unsigned id)
{
  if (r->held[id] == NULL)
    return;
  for (unsigned *p = r->held[id]; *p != UINT_MAX; p++)
    r->owner[*p] = -1;
  free (r->held[id]);
  r->held[id] = NULL;
}

static bool
is_split (const struct bm_model *m, const bool *cpus)
{
  int llc = -1;
  for (unsigned pu = 0; pu < m->npu; pu++)
    if (cpus[pu])
      {
        if (llc >= 0 && (unsigned) llc != m->dom[CP_LEVEL_LLC][pu])
          return true;
        llc = (int) m->dom[CP_LEVEL_LLC][pu];
      }
  return false;
}

static struct cp_ledger *
empty_ledger (void)
{
  static const char text[] = "{\"version\":1,\"entries\":[]}";
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_parse (text, sizeof text - 1, &l, &err) < 0)
    {
      fprintf (stderr, "bench-placement: empty ledger: %s\n", cp_error_message (err));
      exit (1);
    }
  return l;
}

/* The smt option of cachepin's requests: the default, pe0-first, unless
 * BENCH_CACHEPIN_SMT names another (a diagnostic, see docs/benchmarks.md). */
static enum cp_smt cachepin_smt = CP_SMT_PE0_FIRST;

/* --placements: where each decision is written, or NULL. */
static FILE *placements;

static void
log_placement (const struct bm_model *m, const struct event *e, const struct cp_plan *plan, cp_error_t err)
{
  if (placements == NULL)
    return;
  fprintf (placements, "%s\tc%u\t%u\t%s\t", m->topo->source, e->id, e->n, e->strict ? "strict" : "-");
  if (plan == NULL)
    {
      fprintf (placements, "refused: %s\n", cp_error_message (err));
      return;
    }
  char *cpus = cp_cpulist_format (plan->cpus), *held = cp_cpulist_format (plan->held);
  char *mems = cp_cpulist_format (plan->mems);
  fprintf (placements, "%s\t%s\t%s\n", cpus, held, mems);
  free (cpus);
  free (held);
  free (mems);
}

/* cachepin: the engine and the ledger, as the hook uses them.  0 placed, -1 refused. */
static int
place_cachepin (struct runner *r, struct cp_ledger *l, const struct event *e, bool *held)
{
  const struct bm_model *m = r->m;
  struct cp_ledger_usage u;
  struct cp_request req;
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  char id[32], cgroup[48];

  cp_request_init (&req);
  req.smt = cachepin_smt;
  req.cpus = e->n;
  req.strict = e->strict;
  cp_ledger_usage (l, NULL, &u);
  int rc = cp_place (m->topo, NULL, NULL, &u.usage, &req, &plan, &err);
  cp_ledger_usage_release (&u);
  if (rc < 0)
    {
      if (cp_error_kind (err) != CP_ERR_UNSATISFIABLE)
        {
          fprintf (stderr, "bench-placement: %s: %u CPUs: %s\n", m->topo->source, e->n, cp_error_message (err));
          exit (1);
        }
      log_placement (m, e, NULL, err);
      cp_error_free (&err);
      return -1;
    }
  log_placement (m, e, plan, NULL);
  snprintf (id, sizeof id, "c%u", e->id);
  snprintf (cgroup, sizeof cgroup, "/bench/c%u", e->id);
  struct cp_ledger_entry entry = {
    .id = id, .cgroup_mount = (char *) "/sys/fs/cgroup", .cgroup = cgroup, .pid = 0, .start_time = 0,
    .mode = CP_MODE_EXCLUSIVE, .cpus = plan->cpus, .held = plan->held, .mems = plan->mems,
    .placed_at = 1700000000,
  };
  if (cp_ledger_put (l, &entry, &err) < 0)
    {
      fprintf (stderr, "bench-placement: %s: ledger refused a plan: %s\n", m->topo->source,
               cp_error_message (err));
      exit (1);
    }
  memset (r->cpus, 0, m->npu * sizeof *r->cpus);
  memset (held, 0, m->npu * sizeof *held);
  for (unsigned pu = 0; pu < m->npu; pu++)
    {
      r->cpus[pu] = hwloc_bitmap_isset (plan->cpus, pu);
      held[pu] = hwloc_bitmap_isset (plan->held, pu);
      if (held[pu] && r->owner[pu] >= 0)
        {
          fprintf (stderr, "bench-placement: %s: CPU %u given twice\n", m->topo->source, pu);
          exit (1);
        }
    }
  cp_plan_free (plan);
  return 0;
}

static void
run (const struct bm_model *m, const struct trace *t, enum policy p, struct stats *st)
{
  struct runner r = { .m = m };
  struct cp_ledger *ledger = p == P_CACHEPIN ? empty_ledger () : NULL;
  bool *held = cp_xcalloc (m->npu, sizeof *held);
  unsigned demand = 0;
  unsigned *demand_of = cp_xcalloc (t->n_containers, sizeof *demand_of);
  struct timespec t0, t1;

  r.owner = cp_xcalloc (m->npu, sizeof *r.owner);
  r.cpus = cp_xcalloc (m->npu, sizeof *r.cpus);
  r.held = cp_xcalloc (t->n_containers, sizeof *r.held);
  r.scratch = cp_xcalloc (2 * (m->ndom[CP_LEVEL_LLC] + m->ndom[CP_LEVEL_NUMA]) + 2, sizeof *r.scratch);
  for (unsigned pu = 0; pu < m->npu; pu++)
    r.owner[pu] = -1;
  memset (st, 0, sizeof *st);
  clock_gettime (CLOCK_MONOTONIC, &t0);

  for (size_t i = 0; i < t->n_ev; i++)
    {
      const struct event *e = &t->ev[i];
      if (!e->arrive)
        {
          if (p == P_CACHEPIN && r.held[e->id] != NULL)
            {
              char id[32];
              snprintf (id, sizeof id, "c%u", e->id);
              cp_ledger_remove (ledger, id);
            }
          release (&r, e->id);
          demand -= demand_of[e->id];
          demand_of[e->id] = 0;
          continue;
        }
      st->arrivals++;
      st->strict_total += e->strict;
      if (p == P_NOCPUSET)
        {
          /* Every CPU, every LLC and node.  The scheduler is assumed to spread
             runnable threads over idle cores first: a container shares cores
             when the machine's demand exceeds its cores. */
          bool multi = m->ndom[CP_LEVEL_LLC] > 1;
          if (e->strict && multi)
            {
              st->strict_refused++;
              continue;
            }
          st->placed++;
          st->sum_llc += m->ndom[CP_LEVEL_LLC];
          st->sum_numa += m->ndom[CP_LEVEL_NUMA];
          if (multi)
            {
              st->splits++;
              if (e->n <= max_llc (m) && demand + e->n <= m->n_usable)
                st->avoidable_splits++;
            }
          if (demand + e->n > m->n_usable_cores)
            st->smt_shared++; /* never avoidable: the free cores were fewer than n */
          demand += e->n;
          demand_of[e->id] = e->n;
          continue;
        }

      struct before b;
      observe_before (m, r.owner, e->n, r.scratch, &b);
      int rc;
      switch (p)
        {
        case P_CACHEPIN:
          rc = place_cachepin (&r, ledger, e, held);
          break;
        case P_FIRSTFIT:
          rc = bm_first_fit (m, r.owner, e->n, r.cpus);
          break;
        case P_KUBELET:
        case P_KUBELET_UNCORE:
          rc = bm_kubelet_static (m, r.owner, e->n, p == P_KUBELET_UNCORE, r.cpus);
          break;
        default:
          abort ();
        }
      /* Baselines have no strict option: strict means refuse what they would split. */
      if (rc == 0 && p != P_CACHEPIN && e->strict && is_split (m, r.cpus))
        rc = -1;
      if (rc < 0)
        {
          if (e->strict)
            st->strict_refused++;
          else
            st->capacity_refused++;
          continue;
        }
      if (p != P_CACHEPIN)
        memcpy (held, r.cpus, m->npu * sizeof *held);
      observe_placed (m, r.owner, r.cpus, e->n, &b, r.scratch, st);
      hold (&r, e->id, held);
    }

  clock_gettime (CLOCK_MONOTONIC, &t1);
  st->seconds = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
  st->end_llc_max = p == P_NOCPUSET ? -1 : end_llc_max (m, r.owner, r.scratch);
  for (unsigned c = 0; c < t->n_containers; c++)
    free (r.held[c]);
  free (r.held);
  free (r.owner);
  free (r.cpus);
  free (r.scratch);
  free (held);
  free (demand_of);
  cp_ledger_close (ledger);
}

/* ---- topologies and output ---------------------------------------------------- */

static char **xml_files;
static size_t n_xml;

static int
collect (const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
  (void) sb;
  (void) ftw;
  size_t len = strlen (path);
  if (type == FTW_F && len > 4 && strcmp (path + len - 4, ".xml") == 0)
    {
      xml_files = realloc (xml_files, (n_xml + 1) * sizeof *xml_files);
      if (xml_files == NULL || (xml_files[n_xml++] = strdup (path)) == NULL)
        abort ();
    }
  return 0;
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* A row's label: the file name without .xml. */
static char *
label_of (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *s = strdup (slash ? slash + 1 : path);
  if (s == NULL)
    abort ();
  size_t len = strlen (s);
  if (len > 4 && strcmp (s + len - 4, ".xml") == 0)
    s[len - 4] = '\0';
  return s;
}

static double
pct (unsigned a, unsigned b)
{
  return b ? 100.0 * a / b : 0.0;
}

struct row
{
  char *label;
  unsigned pus, cores, llcs, numas;
  unsigned n_events, arrivals;
  struct stats st[P_COUNT];
};

static void
write_dat (const char *dir, const char *metric, const struct row *rows, size_t n_rows,
           double (*get) (const struct stats *))
{
  char *path;
  if (asprintf (&path, "%s/%s.dat", dir, metric) < 0)
    abort ();
  FILE *f = fopen (path, "w");
  if (f == NULL)
    {
      fprintf (stderr, "bench-placement: %s: %s\n", path, strerror (errno));
      exit (1);
    }
  fprintf (f, "topology");
  for (int p = 0; p < P_COUNT; p++)
    fprintf (f, " %s", policy_name[p]);
  fprintf (f, "\n");
  for (size_t i = 0; i < n_rows; i++)
    {
      fprintf (f, "%s", rows[i].label);
      for (int p = 0; p < P_COUNT; p++)
        {
          double v = get (&rows[i].st[p]);
          if (v < 0)
            fprintf (f, " NaN");
          else
            fprintf (f, " %.4f", v);
        }
      fprintf (f, "\n");
    }
  fclose (f);
  free (path);
}

static double get_avoid_split (const struct stats *s) { return pct (s->avoidable_splits, s->placed); }
static double get_avoid_smt (const struct stats *s) { return pct (s->avoidable_smt, s->placed); }
static double get_llc (const struct stats *s) { return s->placed ? (double) s->sum_llc / s->placed : 0; }
static double get_numa (const struct stats *s) { return s->placed ? (double) s->sum_numa / s->placed : 0; }
static double get_strict (const struct stats *s) { return pct (s->strict_refused, s->strict_total); }
static double get_end (const struct stats *s) { return (double) s->end_llc_max; }

static void
write_markdown (FILE *f, const struct row *rows, size_t n_rows, size_t n_events, uint64_t seed)
{
  fprintf (f, "# Placement benchmark results\n\n");
  fprintf (f, "Generated by `bench/placement.sh` (bench-placement --events %zu --seed %llu; "
              "cachepin requests: align=llc smt=%s mode=exclusive, %d%% strict). "
              "Definitions: docs/benchmarks.md.\n\n",
           n_events, (unsigned long long) seed, cp_smt_name (cachepin_smt), STRICT_PERCENT);
  fprintf (f, "Synthetic topologies (hwloc synthetic descriptions):");
  for (size_t k = 0; k < sizeof synthetic / sizeof synthetic[0]; k++)
    fprintf (f, " `%s` = `%s`%s", synthetic[k].label, synthetic[k].desc,
             k + 1 < sizeof synthetic / sizeof synthetic[0] ? ";" : ".\n\n");
  fprintf (f, "Columns: *avoid. splits* = containers spanning more than one LLC while one LLC had "
              "room for them at arrival; *splits* = all containers spanning more than one LLC; "
              "*avoid. SMT* = containers sharing a core (with themselves or another container) while "
              "wholly free cores in no more LLCs than they got could have given them one thread per core; "
              "*SMT-shared* = all containers sharing a core; percentages are of the placed containers. "
              "*strict refused* = strict requests refused / strict requests. *capacity refused* = "
              "non-strict requests refused. *1-LLC max at end* = the largest request one LLC could "
              "still take after the trace (free CPUs).\n\n");
  fprintf (f, "| topology | PUs / cores / LLCs / NUMA | policy | placed | avoid. splits | splits | "
              "avoid. SMT | SMT-shared | LLCs / ctr | NUMA / ctr | strict refused | capacity refused | "
              "1-LLC max at end | run (s) |\n");
  fprintf (f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < n_rows; i++)
    for (int p = 0; p < P_COUNT; p++)
      {
        const struct stats *s = &rows[i].st[p];
        char end[32], shape[64] = "";
        if (p == 0)
          snprintf (shape, sizeof shape, "%u / %u / %u / %u", rows[i].pus, rows[i].cores, rows[i].llcs,
                    rows[i].numas);
        if (s->end_llc_max < 0)
          snprintf (end, sizeof end, "n/a");
        else
          snprintf (end, sizeof end, "%ld", s->end_llc_max);
        fprintf (f,
                 "| %s | %s | %s | %u | %u (%.1f%%) | %u (%.1f%%) | %u (%.1f%%) | %u (%.1f%%) | %.2f | "
                 "%.2f | %u / %u | %u | %s | %.2f |\n",
                 p == 0 ? rows[i].label : "", shape, policy_name[p], s->placed, s->avoidable_splits,
                 pct (s->avoidable_splits, s->placed), s->splits, pct (s->splits, s->placed),
                 s->avoidable_smt, pct (s->avoidable_smt, s->placed), s->smt_shared,
                 pct (s->smt_shared, s->placed), get_llc (s), get_numa (s), s->strict_refused,
                 s->strict_total, s->capacity_refused, end, s->seconds);
      }
  /* The two comparisons of the targets, side by side. */
  fprintf (f, "\n## Split rate and strict requests met (topologies with more than one LLC)\n\n");
  fprintf (f, "split = placed on more than one LLC (%% of placed); strict met = strict requests placed "
              "(of about %u%% of the arrivals).\n\n| topology | LLCs |", STRICT_PERCENT);
  for (int p = 0; p < P_COUNT; p++)
    fprintf (f, " %s |", policy_name[p]);
  fprintf (f, "\n|---|---|");
  for (int p = 0; p < P_COUNT; p++)
    fprintf (f, "---|");
  fprintf (f, "\n");
  for (size_t i = 0; i < n_rows; i++)
    {
      if (rows[i].llcs < 2)
        continue;
      fprintf (f, "| %s | %u |", rows[i].label, rows[i].llcs);
      for (int p = 0; p < P_COUNT; p++)
        {
          const struct stats *s = &rows[i].st[p];
          fprintf (f, " %.1f%% / %u |", pct (s->splits, s->placed), s->strict_total - s->strict_refused);
        }
      fprintf (f, "\n");
    }
  /* The targets. */
  fprintf (f, "\n## Targets\n\n");
  fprintf (f, "Zero avoidable LLC splits and zero avoidable SMT sharing on every topology; on every "
              "topology with more than one LLC, a lower split rate (splits / placed) than every "
              "baseline and more strict requests met than every baseline.\n\n");
  fprintf (f, "| topology | LLCs | avoidable splits = 0 | avoidable SMT = 0 | fewer splits than every baseline | "
              "more strict met than every baseline |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < n_rows; i++)
    {
      const struct stats *c = &rows[i].st[P_CACHEPIN];
      bool multi = rows[i].llcs > 1;
      char fewer[256] = "", more[256] = "";
      bool ok_fewer = true, ok_more = true;
      for (int p = 1; p < P_COUNT && multi; p++)
        {
          const struct stats *b = &rows[i].st[p];
          double rc = pct (c->splits, c->placed), rb = pct (b->splits, b->placed);
          unsigned mc = c->strict_total - c->strict_refused, mb = b->strict_total - b->strict_refused;
          if (!(rc < rb))
            {
              ok_fewer = false;
              snprintf (fewer + strlen (fewer), sizeof fewer - strlen (fewer), " %s %.1f%% vs %.1f%%;",
                        policy_name[p], rb, rc);
            }
          if (!(mc > mb))
            {
              ok_more = false;
              snprintf (more + strlen (more), sizeof more - strlen (more), " %s %u vs %u;", policy_name[p],
                        mb, mc);
            }
        }
      fprintf (f, "| %s | %u | %s | %s | %s%s | %s%s |\n", rows[i].label, rows[i].llcs,
               c->avoidable_splits == 0 ? "yes" : "**no**", c->avoidable_smt == 0 ? "yes" : "**no**",
               !multi ? "n/a" : ok_fewer ? "yes" : "**no**:", multi ? fewer : "",
               !multi ? "n/a" : ok_more ? "yes" : "**no**:", multi ? more : "");
    }
}

static void
usage (void)
{
  fprintf (stderr, "usage: bench-placement [--events N] [--seed S] [--out DIR] [--placements FILE] TOPOLOGY_DIR...\n");
  exit (2);
}

int
main (int argc, char **argv)
{
  size_t n_events = 10000;
  uint64_t seed = 12;
  const char *out = "bench/results";
  int i = 1;
  for (; i < argc && strncmp (argv[i], "--", 2) == 0; i++)
    {
      if (i + 1 >= argc)
        usage ();
      if (strcmp (argv[i], "--events") == 0)
        n_events = strtoul (argv[++i], NULL, 10);
      else if (strcmp (argv[i], "--seed") == 0)
        seed = strtoull (argv[++i], NULL, 10);
      else if (strcmp (argv[i], "--out") == 0)
        out = argv[++i];
      else if (strcmp (argv[i], "--placements") == 0)
        {
          placements = fopen (argv[++i], "w");
          if (placements == NULL)
            {
              fprintf (stderr, "bench-placement: %s: %s\n", argv[i], strerror (errno));
              return 1;
            }
        }
      else
        usage ();
    }
  if (i >= argc || n_events == 0)
    usage ();
  const char *smt = getenv ("BENCH_CACHEPIN_SMT");
  cp_error_t smt_err = NULL;
  if (smt != NULL && cp_parse_smt (smt, &cachepin_smt, &smt_err) < 0)
    {
      fprintf (stderr, "bench-placement: BENCH_CACHEPIN_SMT: %s\n", cp_error_message (smt_err));
      return 2;
    }
  for (; i < argc; i++)
    if (nftw (argv[i], collect, 16, FTW_PHYS) != 0)
      {
        fprintf (stderr, "bench-placement: %s: %s\n", argv[i], strerror (errno));
        return 1;
      }
  qsort (xml_files, n_xml, sizeof *xml_files, cmp_str);

  size_t n_src = n_xml + sizeof synthetic / sizeof synthetic[0], n_rows = 0;
  struct row *rows = cp_xcalloc (n_src, sizeof *rows);
  char *datadir;
  if (asprintf (&datadir, "%s/data", out) < 0)
    abort ();
  mkdir (out, 0755);
  mkdir (datadir, 0755);

  for (size_t s = 0; s < n_src; s++)
    {
      const char *src = s < n_xml ? xml_files[s] : synthetic[s - n_xml].desc;
      struct cp_topo *topo = NULL;
      cp_error_t err = NULL;
      if (cp_topo_load (src, &topo, &err) < 0)
        {
          fprintf (stderr, "bench-placement: skipping %s: %s\n", src, cp_error_message (err));
          cp_error_free (&err);
          continue;
        }
      struct bm_model m;
      struct trace t;
      bm_model_init (&m, topo);
      struct row *row = &rows[n_rows++];
      row->label = s < n_xml ? label_of (src) : strdup (synthetic[s - n_xml].label);
      gen_trace (&m, n_events, seed ^ fnv1a (row->label), &t);
      row->pus = m.n_usable;
      row->cores = m.n_usable_cores;
      row->llcs = m.ndom[CP_LEVEL_LLC];
      row->numas = m.ndom[CP_LEVEL_NUMA];
      row->n_events = (unsigned) t.n_ev;
      for (int p = 0; p < P_COUNT; p++)
        run (&m, &t, p, &row->st[p]);
      row->arrivals = row->st[0].arrivals;
      fprintf (stderr, "%-48s %4u PUs %3u LLCs  %u events, %u arrivals: cachepin %.1fs\n", row->label,
               row->pus, row->llcs, row->n_events, row->arrivals, row->st[P_CACHEPIN].seconds);
      free (t.ev);
      bm_model_release (&m);
      cp_topo_free (topo);
    }

  write_dat (datadir, "avoidable_splits", rows, n_rows, get_avoid_split);
  write_dat (datadir, "avoidable_smt", rows, n_rows, get_avoid_smt);
  write_dat (datadir, "llcs_per_container", rows, n_rows, get_llc);
  write_dat (datadir, "numa_per_container", rows, n_rows, get_numa);
  write_dat (datadir, "strict_refused", rows, n_rows, get_strict);
  write_dat (datadir, "llc_max_at_end", rows, n_rows, get_end);

  char *md;
  if (asprintf (&md, "%s/placement.md", out) < 0)
    abort ();
  FILE *f = fopen (md, "w");
  if (f == NULL)
    {
      fprintf (stderr, "bench-placement: %s: %s\n", md, strerror (errno));
      return 1;
    }
  write_markdown (f, rows, n_rows, n_events, seed);
  fclose (f);
  if (placements != NULL && fclose (placements) != 0)
    {
      fprintf (stderr, "bench-placement: --placements: %s\n", strerror (errno));
      return 1;
    }
  fprintf (stderr, "wrote %s and %s/*.dat\n", md, datadir);
  return 0;
}
