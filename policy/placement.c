/* The placement engine: cp_place() is a pipeline of four named stages,
 *
 *   view_init + validate   what is allowed, free and held, per core and per domain;
 *                          refuse malformed or oversized requests
 *   choose_domains         which align-level domains: one (best fit / least loaded)
 *                          or the fewest inside the tightest group (spill)
 *   fill_plan              which CPUs inside them, following the smt option
 *   explain                the plan's one-line reason
 *
 * Every choice between candidates (cores, domains, groups) is made by one ordered
 * key, struct rank, compared by rank_cmp() alone; the keys are listed together
 * below ("the tie-break order") and in docs/placement.md. */
#define _GNU_SOURCE
#include "placement.h"
#include "bitmap.h"
#include "cpulist.h"
#include "text.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Counts in messages: "1 CPU", "2 CPUs". */
#define CPUS(n) cp_plural ((n), "CPU", "CPUs")
#define THREADS(n) cp_plural ((n), "thread", "threads")

/* ---- the tie-break order ------------------------------------------------------------ */

/* A candidate's key: fields compared in order, the smaller first.  Each field is a
 * fraction (NUM/DEN, DEN > 0) so shared mode's load compares exactly; the other
 * fields are whole numbers (DEN 1).  "Larger first" is written as a bound minus the
 * value.  Every key ends on a position, so no two candidates tie. */
#define RANK_FIELDS 5
struct rank
{
  unsigned long num[RANK_FIELDS];
  unsigned long den[RANK_FIELDS];
  unsigned n;
};

static void
rank_add (struct rank *r, unsigned long num, unsigned long den)
{
  r->num[r->n] = num;
  r->den[r->n] = den ? den : 1;
  r->n++;
}

static int
rank_cmp (const struct rank *a, const struct rank *b)
{
  for (unsigned i = 0; i < a->n && i < b->n; i++)
    {
      unsigned long x = a->num[i] * b->den[i], y = b->num[i] * a->den[i];
      if (x != y)
        return x < y ? -1 : 1;
    }
  return 0;
}

struct ranked
{
  struct rank rank;
  unsigned id;
};

static int
cmp_ranked (const void *a, const void *b)
{
  return rank_cmp (&((const struct ranked *) a)->rank, &((const struct ranked *) b)->rank);
}

/* The keys, one per kind of choice:
 *
 *   cores, in the order they are taken:   fastest CPU kind first, then topology order
 *   the one domain (exclusive):           under pe0-first, fits on PE0s of free cores
 *                                         first; then best fit (fewest usable CPUs
 *                                         left over); then lowest index
 *   the one domain (shared):              least loaded; then lowest index
 *   domains inside a spill group:         most capacity first; then lowest index
 *   the remainder's domain in a group:    least capacity that holds the remainder;
 *                                         then lowest index
 *   the spill group:                      fewest domains; then fewest CPUs (the
 *                                         tightest group); then smaller level; then
 *                                         fullest (least capacity left over); then
 *                                         lowest index */

static struct rank
rank_core (const struct cp_topo *topo, unsigned c)
{
  struct rank r = { .n = 0 };
  rank_add (&r, (unsigned long) ((long) INT_MAX - topo->cores[c].kind), 1);
  rank_add (&r, c, 1);
  return r;
}

static struct rank
rank_single_exclusive (bool pe0_short, unsigned long left_over, unsigned d)
{
  struct rank r = { .n = 0 };
  rank_add (&r, pe0_short, 1);
  rank_add (&r, left_over, 1);
  rank_add (&r, d, 1);
  return r;
}

static struct rank
rank_single_shared (unsigned long load, unsigned long usable, unsigned d)
{
  struct rank r = { .n = 0 };
  rank_add (&r, load, usable);
  rank_add (&r, d, 1);
  return r;
}

static struct rank
rank_group_member (unsigned cap, unsigned d)
{
  struct rank r = { .n = 0 };
  rank_add (&r, (unsigned long) UINT_MAX - cap, 1);
  rank_add (&r, d, 1);
  return r;
}

static struct rank
rank_remainder (unsigned cap, unsigned d)
{
  struct rank r = { .n = 0 };
  rank_add (&r, cap, 1);
  rank_add (&r, d, 1);
  return r;
}

static struct rank
rank_group (size_t n_domains, unsigned size, enum cp_level level, unsigned long left_over, unsigned g)
{
  struct rank r = { .n = 0 };
  rank_add (&r, n_domains, 1);
  rank_add (&r, size, 1);
  rank_add (&r, level, 1);
  rank_add (&r, left_over, 1);
  rank_add (&r, g, 1);
  return r;
}

/* ---- the view: one request's look at the machine --------------------------------------- */

/* What is allowed and free, each core's PE0 among the allowed CPUs, the order cores
   are taken in, and each align-level domain's capacity for this request. */
struct view
{
  const struct cp_topo *topo;
  const struct cp_request *req;
  const struct cp_usage *usage;
  enum cp_level level;      /* the align level */
  hwloc_bitmap_t allowed;   /* allowed and online */
  hwloc_bitmap_t held;      /* held by others, inside allowed */
  hwloc_bitmap_t free;      /* allowed minus held */
  int *pe0;                 /* per core: lowest allowed PU, -1 when none */
  bool *whole_free;         /* per core: has allowed PUs and none is held */
  unsigned *order;          /* core positions in the order they are taken (rank_core) */
  unsigned *cap;            /* per domain of `level`: CPUs this request could get there */
  unsigned *pe0_cap;        /* per domain: cores free as a whole (PE0s on offer) */
  bool *in_set;             /* per domain: the domains fill() may take from */
  unsigned *sharers;        /* per CPU (OS index, up to n_sharers): how many shared
                               placements have it; NULL until domain_load() needs it */
  unsigned n_sharers;
};

static void
view_clear (struct view *v)
{
  hwloc_bitmap_free (v->allowed);
  hwloc_bitmap_free (v->held);
  hwloc_bitmap_free (v->free);
  free (v->pe0);
  free (v->whole_free);
  free (v->order);
  free (v->cap);
  free (v->pe0_cap);
  free (v->in_set);
  free (v->sharers);
}
#define cleanup_view __attribute__ ((cleanup (view_clear)))

static void
order_cores (struct view *v)
{
  unsigned n = v->topo->n_cores;
  cleanup_free struct ranked *cores = cp_xcalloc (n, sizeof *cores);
  for (unsigned c = 0; c < n; c++)
    cores[c] = (struct ranked) { rank_core (v->topo, c), c };
  qsort (cores, n, sizeof *cores, cmp_ranked);
  for (unsigned i = 0; i < n; i++)
    v->order[i] = cores[i].id;
}

static void
view_init (struct view *v, const struct cp_topo *topo, hwloc_const_bitmap_t allowed, const struct cp_usage *usage,
           const struct cp_request *req)
{
  v->topo = topo;
  v->req = req;
  v->usage = usage;
  v->level = req->align;
  v->allowed = cp_bitmap_new ();
  hwloc_bitmap_and (v->allowed, allowed ? allowed : topo->allowed, topo->online);
  v->held = cp_bitmap_new ();
  if (usage && usage->held)
    hwloc_bitmap_and (v->held, usage->held, v->allowed);
  v->free = cp_bitmap_new ();
  hwloc_bitmap_andnot (v->free, v->allowed, v->held);

  v->pe0 = cp_xcalloc (topo->n_cores, sizeof *v->pe0);
  v->whole_free = cp_xcalloc (topo->n_cores, sizeof *v->whole_free);
  v->order = cp_xcalloc (topo->n_cores, sizeof *v->order);
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      const struct cp_core *core = &topo->cores[c];
      v->pe0[c] = cp_core_pe0 (core, v->allowed);
      /* Whole means no thread of the core is held by anyone, also outside our
         allowed set: a container in another parent cgroup running on the sibling
         would take the core out of single-thread mode all the same. */
      v->whole_free[c] = v->pe0[c] >= 0 && !(usage && usage->held && hwloc_bitmap_intersects (core->pus, usage->held));
    }
  order_cores (v);

  unsigned nd = topo->n_domains[v->level];
  v->cap = cp_xcalloc (nd, sizeof *v->cap);
  v->pe0_cap = cp_xcalloc (nd, sizeof *v->pe0_cap);
  v->in_set = cp_xcalloc (nd, sizeof *v->in_set);
}

static unsigned
allowed_threads (const struct view *v, unsigned c)
{
  unsigned threads = 0;
  int pu;
  hwloc_bitmap_foreach_begin (pu, v->topo->cores[c].pus)
    threads += hwloc_bitmap_isset (v->allowed, (unsigned) pu);
  hwloc_bitmap_foreach_end ();
  return threads;
}

/* ---- validating ------------------------------------------------------------------------ */

/* "2", "1 or 2", "2, 4 or 8": the widths W[0..N-1] for a message. */
static char *
widths_text (const unsigned *w, size_t n)
{
  char *text = cp_xasprintf ("%u", w[0]);
  for (size_t i = 1; i < n; i++)
    {
      char *next = cp_xasprintf ("%s%s%u", text, i + 1 == n ? " or " : ", ", w[i]);
      free (text);
      text = next;
    }
  return text;
}

/* smt=cores takes whole cores, so NEED must be a sum of the allowed thread counts
 * ("widths") of some set of cores, whatever is free: otherwise no host state could
 * ever meet the request and it is malformed for this machine (1 CPU on SMT2), an
 * input error.  Hybrid parts mix widths (P-cores of 2, E-cores of 1), and an allowed
 * set that cuts a core makes it narrower, so the test is a subset sum over all
 * allowed cores: the multiset of widths, few distinct ones, counted. */
static int
check_core_widths (const struct view *v, unsigned need, cp_error_t *err)
{
  const struct cp_topo *topo = v->topo;
  unsigned max_w = 0;
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      unsigned w = allowed_threads (v, c);
      max_w = w > max_w ? w : max_w;
    }
  cleanup_free unsigned *count = cp_xcalloc (max_w + 1, sizeof *count);
  for (unsigned c = 0; c < topo->n_cores; c++)
    count[allowed_threads (v, c)]++;
  cleanup_free unsigned *widths = cp_xcalloc (max_w + 1, sizeof *widths);
  size_t n_widths = 0;
  unsigned g = 0;
  cleanup_free bool *reach = cp_xcalloc ((size_t) need + 1, sizeof *reach);
  reach[0] = true;
  for (unsigned w = 1; w <= max_w; w++)
    {
      if (count[w] == 0)
        continue;
      widths[n_widths++] = w;
      for (unsigned a = w; a;)
        {
          unsigned r = g % a;
          g = a;
          a = r;
        }
      /* COUNT[W] cores of width W, as items of 1, 2, 4, ... cores (binary split) */
      for (unsigned left = count[w], k = 1; left > 0; k *= 2)
        {
          unsigned take = k < left ? k : left;
          left -= take;
          unsigned long item = (unsigned long) take * w;
          for (unsigned long s = need; s >= item && item > 0; s--)
            reach[s] = reach[s] || reach[s - item];
        }
    }
  if (n_widths == 0 || reach[need])
    return 0;
  cleanup_free char *text = widths_text (widths, n_widths);
  if (need % g != 0)
    return cp_fail_input (err, "smt=cores takes whole cores, of %s threads here: %u %s is not a multiple of %u", text,
                          need, CPUS (need), g);
  return cp_fail_input (err, "smt=cores takes whole cores, of %s threads here: no set of them has exactly %u %s",
                        text, need, CPUS (need));
}

char *
cp_place_too_many (const char *what, unsigned want, hwloc_const_bitmap_t limit, const char *by, const char *detail)
{
  unsigned n = (unsigned) hwloc_bitmap_weight (limit);
  cleanup_free char *list = cp_cpulist_format (limit);
  cleanup_free char *where = detail ? cp_xstrdup (detail) : *list ? cp_xasprintf ("%s %s", CPUS (n), list)
                                                                   : cp_xstrdup ("none");
  return cp_xasprintf ("%s: %u is more than the %u %s %s (%s)", what, want, n, CPUS (n), by, where);
}

/* Malformed requests are input errors; requests this host cannot meet, however
 * well formed (more CPUs than it allows), are unsatisfiable. */
static int
validate (const struct view *v, cp_error_t *err)
{
  unsigned allowed = (unsigned) hwloc_bitmap_weight (v->allowed);
  if (v->req->mode == CP_MODE_EXCLUSIVE && v->req->cpus == 0)
    return cp_fail_input (err, "cpus: a number from 1 to %u is required in exclusive mode", allowed);
  if (allowed == 0)
    return cp_fail_unsatisfiable (err, "no allowed CPU is online in this topology");
  if (v->req->cpus > allowed)
    {
      cleanup_free char *msg = cp_place_too_many ("cpus", v->req->cpus, v->allowed, "allowed", NULL);
      return cp_fail_unsatisfiable (err, "%s", msg);
    }
  if (v->req->mode == CP_MODE_EXCLUSIVE && v->req->smt == CP_SMT_CORES)
    return check_core_widths (v, v->req->cpus, err);
  return 0;
}

/* ---- filling: which CPUs inside the marked domains ------------------------------------- */

static void
mark_only (struct view *v, const unsigned *doms, size_t n)
{
  memset (v->in_set, 0, v->topo->n_domains[v->level] * sizeof *v->in_set);
  for (size_t i = 0; i < n; i++)
    v->in_set[doms[i]] = true;
}

static bool
core_in_set (const struct view *v, unsigned c)
{
  return v->in_set[v->topo->cores[c].domain[v->level]];
}

/* Take a core's allowed PUs, in order, into CPUS until NEED is reached; only
   PUs that are free and not taken yet. */
static unsigned
take_pus (const struct view *v, unsigned c, unsigned got, unsigned need, hwloc_bitmap_t cpus)
{
  int pu;
  hwloc_bitmap_foreach_begin (pu, v->topo->cores[c].pus)
    {
      if (got >= need)
        break;
      if (hwloc_bitmap_isset (v->free, (unsigned) pu) && !hwloc_bitmap_isset (cpus, (unsigned) pu))
        {
          hwloc_bitmap_set (cpus, (unsigned) pu);
          got++;
        }
    }
  hwloc_bitmap_foreach_end ();
  return got;
}

/* The core's allowed PUs into HELD (smt=pe0's idle siblings, smt=cores' whole cores). */
static void
hold_core (const struct view *v, unsigned c, hwloc_bitmap_t held)
{
  int pu;
  hwloc_bitmap_foreach_begin (pu, v->topo->cores[c].pus)
    if (hwloc_bitmap_isset (v->allowed, (unsigned) pu))
      hwloc_bitmap_set (held, (unsigned) pu);
  hwloc_bitmap_foreach_end ();
}

/* smt=cores when the greedy pass misses: cores with different numbers of allowed
   threads (hybrid parts, an allowed set that cuts cores) can defeat it, e.g. cores
   of 1 and 2 threads for 2 CPUs: it takes the 1 and cannot add the 2.  Take the
   first set of whole free cores, in core order, whose threads add up to NEED
   exactly (the greedy choice whenever that one works); returns NEED, or 0 with
   CPUS untouched when no such set exists. */
static unsigned
fill_cores_exact (const struct view *v, unsigned need, hwloc_bitmap_t cpus)
{
  const struct cp_topo *topo = v->topo;
  cleanup_free unsigned *cand = cp_xcalloc (topo->n_cores, sizeof *cand);
  cleanup_free unsigned *threads = cp_xcalloc (topo->n_cores, sizeof *threads);
  size_t m = 0;
  for (unsigned i = 0; i < topo->n_cores; i++)
    {
      unsigned c = v->order[i];
      if (!core_in_set (v, c) || !v->whole_free[c])
        continue;
      unsigned t = allowed_threads (v, c);
      if (t == 0 || t > need)
        continue;
      cand[m] = c;
      threads[m++] = t;
    }
  /* Cheap refusal first: sums of multiples of G are multiples of G (2 threads
     per core and an odd count). */
  unsigned g = 0;
  for (size_t i = 0; i < m; i++)
    for (unsigned a = threads[i]; a;)
      {
        unsigned r = g % a;
        g = a;
        a = r;
      }
  if (g == 0 || need % g != 0)
    return 0;
  /* reach bit (i, s): candidates i.. can make exactly s threads */
  size_t row = (size_t) need + 1;
  cleanup_free unsigned char *reach = cp_xcalloc (((m + 1) * row + 7) / 8, 1);
#define REACH(i, s) ((reach[((i) * row + (s)) / 8] >> (((i) * row + (s)) % 8)) & 1)
#define SET_REACH(i, s) (reach[((i) * row + (s)) / 8] |= (unsigned char) (1u << (((i) * row + (s)) % 8)))
  SET_REACH (m, 0);
  for (size_t i = m; i-- > 0;)
    for (size_t s = 0; s <= need; s++)
      if (REACH (i + 1, s) || (s >= threads[i] && REACH (i + 1, s - threads[i])))
        SET_REACH (i, s);
  unsigned got = 0;
  if (REACH (0, need))
    {
      hwloc_bitmap_zero (cpus);
      for (size_t i = 0; i < m && got < need; i++)
        if (threads[i] <= need - got && REACH (i + 1, need - got - threads[i]))
          got = take_pus (v, cand[i], got, need, cpus);
    }
#undef REACH
#undef SET_REACH
  return got;
}

/* Fill CPUS (and HELD) with up to NEED CPUs from the domains marked in v->in_set,
   following the smt option; cores in v->order.  Returns how many were taken.
   NEED = UINT_MAX measures a domain's capacity. */
static unsigned
fill (const struct view *v, unsigned need, hwloc_bitmap_t cpus, hwloc_bitmap_t held)
{
  const struct cp_topo *topo = v->topo;
  unsigned got = 0;
  hwloc_bitmap_zero (cpus);
  hwloc_bitmap_zero (held);

  switch (v->req->smt)
    {
    case CP_SMT_PE0:
      /* One PU per core; the core's other threads are held idle for nobody. */
      for (unsigned i = 0; i < topo->n_cores && got < need; i++)
        {
          unsigned c = v->order[i];
          if (!core_in_set (v, c) || !v->whole_free[c])
            continue;
          hwloc_bitmap_set (cpus, (unsigned) v->pe0[c]);
          hold_core (v, c, held);
          got++;
        }
      return got;

    case CP_SMT_CORES:
      /* Whole cores only, and exactly NEED CPUs: a core that would overshoot is
         passed over (on hybrid parts a smaller core may still fit). */
      for (unsigned i = 0; i < topo->n_cores && got < need; i++)
        {
          unsigned c = v->order[i];
          if (!core_in_set (v, c) || !v->whole_free[c])
            continue;
          if (allowed_threads (v, c) > need - got)
            continue;
          got = take_pus (v, c, got, need, cpus);
        }
      if (got < need && need != UINT_MAX)
        {
          unsigned exact = fill_cores_exact (v, need, cpus);
          if (exact == need)
            got = exact;
        }
      break;

    case CP_SMT_PE0_FIRST:
      /* PE0s of free cores, then siblings of the cores just taken, then anything. */
      for (unsigned i = 0; i < topo->n_cores && got < need; i++)
        {
          unsigned c = v->order[i];
          if (core_in_set (v, c) && v->whole_free[c])
            {
              hwloc_bitmap_set (cpus, (unsigned) v->pe0[c]);
              got++;
            }
        }
      for (unsigned i = 0; i < topo->n_cores && got < need; i++)
        {
          unsigned c = v->order[i];
          if (core_in_set (v, c) && v->whole_free[c])
            got = take_pus (v, c, got, need, cpus);
        }
      /* what is left in the domain, as for smt=any */
      __attribute__ ((fallthrough));
    case CP_SMT_ANY:
    default:
      for (unsigned i = 0; i < topo->n_cores && got < need; i++)
        {
          unsigned c = v->order[i];
          if (core_in_set (v, c))
            got = take_pus (v, c, got, need, cpus);
        }
      break;
    }
  hwloc_bitmap_or (held, held, cpus);
  return got;
}

/* Would fill() take exactly NEED from DOMS[0..N-1] alone? */
static bool
fills_exactly (struct view *v, const unsigned *doms, size_t n, unsigned need)
{
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t held = cp_bitmap_new ();
  mark_only (v, doms, n);
  return fill (v, need, cpus, held) == need;
}

/* The shared-mode CPUs of a domain: its free PUs; PE0s only under smt=pe0; the
   PUs of wholly free cores under smt=cores. */
static void
shared_cpus (const struct view *v, unsigned d, hwloc_bitmap_t out)
{
  const struct cp_domain *dom = &v->topo->domains[v->level][d];
  hwloc_bitmap_zero (out);
  for (unsigned i = 0; i < dom->n_cores; i++)
    {
      unsigned c = dom->cores[i];
      if (v->pe0[c] < 0)
        continue;
      switch (v->req->smt)
        {
        case CP_SMT_PE0:
          if (hwloc_bitmap_isset (v->free, (unsigned) v->pe0[c]))
            hwloc_bitmap_set (out, (unsigned) v->pe0[c]);
          break;
        case CP_SMT_CORES:
          if (v->whole_free[c])
            hold_core (v, c, out);
          break;
        case CP_SMT_PE0_FIRST:
        case CP_SMT_ANY:
        default:
          {
            int pu;
            hwloc_bitmap_foreach_begin (pu, v->topo->cores[c].pus)
              if (hwloc_bitmap_isset (v->free, (unsigned) pu))
                hwloc_bitmap_set (out, (unsigned) pu);
            hwloc_bitmap_foreach_end ();
          }
          break;
        }
    }
}

/* Capacity of each align-level domain for this request: what fill() (exclusive)
   or shared_cpus() (shared) would give there with no limit. */
static void
compute_capacity (struct view *v)
{
  unsigned nd = v->topo->n_domains[v->level];
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t held = cp_bitmap_new ();
  for (unsigned d = 0; d < nd; d++)
    {
      if (v->req->mode == CP_MODE_SHARED)
        {
          shared_cpus (v, d, cpus);
          v->cap[d] = (unsigned) hwloc_bitmap_weight (cpus);
        }
      else
        {
          mark_only (v, &d, 1);
          v->cap[d] = fill (v, UINT_MAX, cpus, held);
        }
      const struct cp_domain *dom = &v->topo->domains[v->level][d];
      for (unsigned i = 0; i < dom->n_cores; i++)
        v->pe0_cap[d] += v->whole_free[dom->cores[i]];
    }
}

/* ---- choosing domains ---------------------------------------------------------------- */

/* The outcome of choose_domains(): the align-level domains to fill. */
struct choice
{
  unsigned *doms;
  size_t n;
  bool spilled;              /* no single domain held the request */
  enum cp_level group_level; /* spilled: the group the domains were taken in */
  unsigned group;
  unsigned long left_over;   /* spilled: the group's capacity beyond the request */
};

static void
choice_clear (struct choice *c)
{
  free (c->doms);
}
#define cleanup_choice __attribute__ ((cleanup (choice_clear)))

/* Does NEED fit in domain D alone?  Under smt=cores the count must also come out
   exact, which only a trial fill can tell. */
static bool
fits_alone (struct view *v, unsigned d, unsigned need)
{
  if (v->cap[d] < need)
    return false;
  if (v->req->mode == CP_MODE_SHARED || v->req->smt != CP_SMT_CORES)
    return true;
  return fills_exactly (v, &d, 1, need);
}

/* How many of the shared placements have each allowed CPU, counted once per view:
   a domain's load is then a sum over its CPUs, not a pass over every placement
   (a node with a thousand shared containers asks it of every domain). */
static void
count_sharers (struct view *v)
{
  int last = hwloc_bitmap_last (v->allowed);
  v->n_sharers = last < 0 ? 0 : (unsigned) last + 1;
  v->sharers = cp_xcalloc (v->n_sharers + 1, sizeof *v->sharers);
  for (size_t i = 0; v->usage && i < v->usage->n_shared; i++)
    {
      int cpu;
      hwloc_bitmap_foreach_begin (cpu, v->usage->shared[i])
      {
        if ((unsigned) cpu >= v->n_sharers)
          break;
        v->sharers[cpu]++;
      }
      hwloc_bitmap_foreach_end ();
    }
}

/* Load of a domain for shared mode, as a fraction: CPUs held there plus the
   CPUs of shared placements that overlap it (each counted once per placement),
   over its allowed CPUs. */
static void
domain_load (struct view *v, unsigned d, unsigned long *num, unsigned long *den)
{
  const struct cp_domain *dom = &v->topo->domains[v->level][d];
  if (v->sharers == NULL)
    count_sharers (v);
  cleanup_bitmap hwloc_bitmap_t tmp = cp_bitmap_new ();
  hwloc_bitmap_and (tmp, dom->cpus, v->held);
  unsigned long load = (unsigned long) hwloc_bitmap_weight (tmp);
  hwloc_bitmap_and (tmp, dom->cpus, v->allowed);
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, tmp)
  {
    load += v->sharers[cpu]; /* within allowed: below n_sharers */
  }
  hwloc_bitmap_foreach_end ();
  *num = load;
  *den = (unsigned long) hwloc_bitmap_weight (tmp);
}

/* The single domain for NEED, or -1: the lowest-ranked domain that holds it alone
   (rank_single_exclusive: best fit; rank_single_shared: least loaded). */
static int
choose_single (struct view *v, unsigned need)
{
  int best = -1;
  struct rank best_rank = { .n = 0 };
  for (unsigned d = 0; d < v->topo->n_domains[v->level]; d++)
    {
      if (!fits_alone (v, d, need))
        continue;
      struct rank r;
      if (v->req->mode == CP_MODE_SHARED)
        {
          unsigned long num, den;
          domain_load (v, d, &num, &den);
          r = rank_single_shared (num, den, d);
        }
      else
        r = rank_single_exclusive (v->req->smt == CP_SMT_PE0_FIRST && v->pe0_cap[d] < need, v->cap[d] - need, d);
      if (best < 0 || rank_cmp (&r, &best_rank) < 0)
        {
          best = (int) d;
          best_rank = r;
        }
    }
  return best;
}

/* The fewest align-level domains inside group G (a domain of GROUP_LEVEL) that
 * hold NEED: the largest first (whole free domains come first that way), then
 * for the remainder the smallest domain that still holds it, so it stays next to
 * the others.  Under smt=cores the capacities may add up without an exact count of
 * whole cores among them (cores of 2 threads for 3 CPUs); then the next domains
 * are added until one exists.  Returns false when the group cannot hold NEED. */
static bool
plan_group (struct view *v, enum cp_level group_level, unsigned g, unsigned need, struct choice *out)
{
  const struct cp_domain *group = &v->topo->domains[group_level][g];
  unsigned nd = v->topo->n_domains[v->level];
  cleanup_free struct ranked *members = cp_xcalloc (nd, sizeof *members);
  size_t n = 0;
  unsigned long total = 0;
  for (unsigned d = 0; d < nd; d++)
    if (v->cap[d] > 0 && hwloc_bitmap_isincluded (v->topo->domains[v->level][d].cpus, group->cpus))
      {
        members[n++] = (struct ranked) { rank_group_member (v->cap[d], d), d };
        total += v->cap[d];
      }
  if (total < need)
    return false;
  qsort (members, n, sizeof *members, cmp_ranked);
  cleanup_free unsigned *doms = cp_xcalloc (n, sizeof *doms);
  for (size_t i = 0; i < n; i++)
    doms[i] = members[i].id;

  /* doms[0..k-1] are taken whole; the remainder NEED-GOT goes to the best-ranked
     (rank_remainder) of the rest that holds it, swapped into doms[k]. */
  size_t k = 0;
  unsigned long got = 0;
  while (got + v->cap[doms[k]] < need)
    got += v->cap[doms[k++]];
  size_t last = k;
  struct rank last_rank = rank_remainder (v->cap[doms[k]], doms[k]);
  for (size_t i = k + 1; i < n; i++)
    {
      struct rank r = rank_remainder (v->cap[doms[i]], doms[i]);
      if (v->cap[doms[i]] >= need - got && rank_cmp (&r, &last_rank) < 0)
        {
          last = i;
          last_rank = r;
        }
    }
  unsigned tmp = doms[k];
  doms[k] = doms[last];
  doms[last] = tmp;

  if (v->req->mode == CP_MODE_EXCLUSIVE && v->req->smt == CP_SMT_CORES)
    {
      /* Adding domains only adds cores, so "exact with doms[0..j]" is monotone
         in j: the whole group first, then a binary search for the fewest. */
      if (!fills_exactly (v, doms, n, need))
        return false;
      size_t lo = k, hi = n - 1;
      while (lo < hi)
        {
          size_t mid = lo + (hi - lo) / 2;
          if (fills_exactly (v, doms, mid + 1, need))
            hi = mid;
          else
            lo = mid + 1;
        }
      k = lo;
    }

  out->doms = cp_steal_pointer (&doms);
  out->n = k + 1;
  out->spilled = true;
  out->group_level = group_level;
  out->group = g;
  out->left_over = total - need;
  return true;
}

static struct rank
rank_spill (const struct view *v, const struct choice *s)
{
  unsigned size = (unsigned) hwloc_bitmap_weight (v->topo->domains[s->group_level][s->group].cpus);
  return rank_group (s->n, size, s->group_level, s->left_over, s->group);
}

/* Spill over: the best-ranked group (rank_group) among the domains of every
   larger level that holds NEED. */
static bool
choose_spill (struct view *v, unsigned need, struct choice *best)
{
  bool found = false;
  struct rank best_rank = { .n = 0 };
  for (int gl = (int) v->level + 1; gl < CP_LEVEL_COUNT; gl++)
    {
      if (v->level == CP_LEVEL_L2 && gl == CP_LEVEL_LLC && v->topo->llc_depth == 2)
        continue; /* the LLC is the L2 there: nothing to group */
      for (unsigned g = 0; g < v->topo->n_domains[gl]; g++)
        {
          cleanup_choice struct choice s = { 0 };
          if (!plan_group (v, (enum cp_level) gl, g, need, &s))
            continue;
          struct rank r = rank_spill (v, &s);
          if (found && rank_cmp (&r, &best_rank) >= 0)
            continue;
          choice_clear (best);
          *best = s;
          s.doms = NULL;
          best_rank = r;
          found = true;
        }
    }
  return found;
}

static unsigned
largest_domain (const struct view *v)
{
  unsigned best = 0;
  for (unsigned d = 1; d < v->topo->n_domains[v->level]; d++)
    if (v->cap[d] > v->cap[best])
      best = d;
  return best;
}

/* One domain when one holds NEED, else (not strict, not align=none) the fewest
   inside the tightest group; CP_ERR_UNSATISFIABLE when neither exists. */
static int
choose_domains (struct view *v, unsigned need, struct choice *out, cp_error_t *err)
{
  int single = choose_single (v, need);
  if (single >= 0)
    {
      out->doms = cp_xcalloc (1, sizeof *out->doms);
      out->doms[0] = (unsigned) single;
      out->n = 1;
      return 0;
    }

  const struct cp_request *req = v->req;
  const char *label = cp_topo_level_label (v->topo, v->level);
  unsigned long total = 0;
  for (unsigned d = 0; d < v->topo->n_domains[v->level]; d++)
    total += v->cap[d];
  /* Too few free CPUs anywhere: that is the limit, strict or not.  Blaming the one
     L3 (or strictness) would send the user after the wrong cause. */
  if (total < need)
    return cp_fail_unsatisfiable (err, "cannot place %u %s (smt=%s, mode=%s): only %lu usable %s free", need,
                                  CPUS (need), cp_smt_name (req->smt), cp_mode_name (req->mode), total,
                                  cp_plural (total, "CPU is", "CPUs are"));
  unsigned big = largest_domain (v);
  if (req->strict || v->level == CP_LEVEL_MACHINE)
    return cp_fail_unsatisfiable (err,
                                  "cannot place %u %s (smt=%s) inside one %s: the most any has free is %u (%s#%u)%s",
                                  need, CPUS (need), cp_smt_name (req->smt), label, v->cap[big], label, big,
                                  req->strict ? " and the request is strict" : "");
  if (choose_spill (v, need, out))
    return 0;
  /* smt=cores: enough threads, but no exact set of whole cores */
  return cp_fail_unsatisfiable (err,
                                "cannot place %u %s (smt=%s, mode=%s): no set of wholly free cores has exactly "
                                "%u %s (%lu %s free in whole cores)",
                                need, CPUS (need), cp_smt_name (req->smt), cp_mode_name (req->mode), need, CPUS (need),
                                total, cp_plural (total, "CPU is", "CPUs are"));
}

/* ---- the plan ------------------------------------------------------------------------- */

static struct cp_plan *
plan_new (enum cp_mode mode)
{
  struct cp_plan *p = cp_xmalloc0 (sizeof *p);
  p->mode = mode;
  p->cpus = cp_bitmap_new ();
  p->held = cp_bitmap_new ();
  p->mems = cp_bitmap_new ();
  return p;
}

void
cp_plan_free (struct cp_plan *plan)
{
  if (plan == NULL)
    return;
  hwloc_bitmap_free (plan->cpus);
  hwloc_bitmap_free (plan->held);
  hwloc_bitmap_free (plan->mems);
  for (size_t i = 0; i < plan->n_domains; i++)
    hwloc_bitmap_free (plan->domains[i].cpus);
  free (plan->domains);
  free (plan->reason);
  free (plan);
}

static int
cmp_unsigned (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  return (x > y) - (x < y);
}

/* The plan's domains, in index order, each with the plan's CPUs in it. */
static void
record_domains (const struct view *v, struct cp_plan *plan, unsigned *doms, size_t n)
{
  qsort (doms, n, sizeof *doms, cmp_unsigned);
  plan->domains = cp_xcalloc (n, sizeof *plan->domains);
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_domain *dom = &v->topo->domains[v->level][doms[i]];
      cleanup_bitmap hwloc_bitmap_t part = cp_bitmap_new ();
      hwloc_bitmap_and (part, dom->cpus, plan->cpus);
      if (hwloc_bitmap_iszero (part))
        continue;
      struct cp_plan_domain *pd = &plan->domains[plan->n_domains++];
      pd->level = v->level;
      pd->index = dom->index;
      pd->cpus = cp_steal_pointer (&part);
    }
  plan->split = plan->n_domains > 1;
}

/* NUMA nodes whose CPUs the plan uses; the allowed nodes when none is local
   (a package without a NUMA node of its own). */
static void
compute_mems (const struct cp_topo *topo, hwloc_const_bitmap_t allowed_mems, struct cp_plan *plan)
{
  hwloc_const_bitmap_t fallback = allowed_mems ? allowed_mems : topo->allowed_nodes;
  if (hwloc_bitmap_iszero (fallback))
    fallback = topo->nodes;
  hwloc_bitmap_zero (plan->mems);
  for (unsigned i = 0; i < topo->n_nodes; i++)
    if (topo->nodes_info[i].cpu_memory && hwloc_bitmap_intersects (topo->nodes_info[i].cpus, plan->cpus))
      hwloc_bitmap_set (plan->mems, topo->nodes_info[i].os_index);
  hwloc_bitmap_and (plan->mems, plan->mems, fallback);
  if (hwloc_bitmap_iszero (plan->mems))
    hwloc_bitmap_copy (plan->mems, fallback);
}

/* The CPUs (and held set) of the plan inside the chosen domains: shared mode takes
   each domain's shared CPUs whole; exclusive mode fills NEED in smt order across
   all of them (under pe0-first every PE0 before any sibling). */
static int
fill_plan (struct view *v, const struct choice *ch, unsigned need, struct cp_plan *plan, cp_error_t *err)
{
  if (v->req->mode == CP_MODE_SHARED)
    {
      cleanup_bitmap hwloc_bitmap_t part = cp_bitmap_new ();
      for (size_t i = 0; i < ch->n; i++)
        {
          shared_cpus (v, ch->doms[i], part);
          hwloc_bitmap_or (plan->cpus, plan->cpus, part);
        }
      return 0;
    }
  mark_only (v, ch->doms, ch->n);
  unsigned got = fill (v, need, plan->cpus, plan->held);
  if (got != need)
    return cp_fail_unsatisfiable (err, "cannot place %u %s with smt=%s: only %u whole %s worth fit exactly", need,
                                  CPUS (need), cp_smt_name (v->req->smt), got, cp_plural (got, "core's", "cores'"));
  return 0;
}

static const char *
smt_summary (const struct view *v, const struct cp_plan *plan, char *buf, size_t len)
{
  unsigned pe0s = 0, total = (unsigned) hwloc_bitmap_weight (plan->cpus);
  for (unsigned c = 0; c < v->topo->n_cores; c++)
    if (v->pe0[c] >= 0 && hwloc_bitmap_isset (plan->cpus, (unsigned) v->pe0[c]))
      pe0s++;
  switch (v->req->smt)
    {
    case CP_SMT_PE0:
      snprintf (buf, len, "one PE0 thread on each of %u %s, %s held idle", pe0s, cp_plural (pe0s, "core", "cores"),
                cp_plural (pe0s, "its siblings", "their siblings"));
      break;
    case CP_SMT_CORES:
      snprintf (buf, len, "whole cores");
      break;
    default:
      snprintf (buf, len, "%u PE0 %s, %u other %s", pe0s, THREADS (pe0s), total - pe0s, THREADS (total - pe0s));
      break;
    }
  return buf;
}

/* The plan's one-line reason: where, why there, how the threads were used. */
static char *
explain (const struct view *v, const struct choice *ch, const struct cp_plan *plan, unsigned need)
{
  const struct cp_topo *topo = v->topo;
  const char *label = cp_topo_level_label (topo, v->level);
  bool shared = v->req->mode == CP_MODE_SHARED;
  cleanup_free char *why = NULL;
  if (ch->spilled)
    {
      unsigned big = largest_domain (v);
      why = cp_xasprintf ("no single %s holds %u (most free: %u in %s#%u); fewest %ss within %s#%u", label, need,
                          v->cap[big], label, big, label, cp_topo_level_label (topo, ch->group_level), ch->group);
    }
  else if (shared)
    why = cp_xasprintf ("the least loaded %s with room for %u", label, need);
  else
    why = cp_xasprintf ("best fit: %u of its %u usable %s free before", need, v->cap[ch->doms[0]],
                        CPUS (v->cap[ch->doms[0]]));

  cleanup_free char *where = NULL;
  if (plan->n_domains == 1)
    where = cp_xasprintf ("%s#%u", label, plan->domains[0].index);
  else
    where = cp_xasprintf ("%zu %ss", plan->n_domains, label);
  char smt[128];
  unsigned n = (unsigned) hwloc_bitmap_weight (plan->cpus);
  return cp_xasprintf ("%s %u %s on %s (%s); %s", shared ? "shared:" : "exclusive:", n, CPUS (n), where, why,
                       smt_summary (v, plan, smt, sizeof smt));
}

int
cp_place (const struct cp_topo *topo, hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t allowed_mems,
          const struct cp_usage *usage, const struct cp_request *req, struct cp_plan **out, cp_error_t *err)
{
  cleanup_view struct view v = { 0 };
  view_init (&v, topo, allowed, usage, req);
  if (validate (&v, err) < 0)
    return -1;
  compute_capacity (&v);

  unsigned need = req->cpus ? req->cpus : 1;
  cleanup_choice struct choice ch = { 0 };
  if (choose_domains (&v, need, &ch, err) < 0)
    return -1;

  cleanup_plan struct cp_plan *plan = plan_new (req->mode);
  if (fill_plan (&v, &ch, need, plan, err) < 0)
    return -1;
  record_domains (&v, plan, ch.doms, ch.n);
  compute_mems (topo, allowed_mems, plan);
  plan->reason = explain (&v, &ch, plan, need);
  *out = cp_steal_pointer (&plan);
  return 0;
}
