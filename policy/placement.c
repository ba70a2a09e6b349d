#define _GNU_SOURCE
#include "placement.h"
#include "bitmap.h"
#include "util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Per-request view of the machine: what is allowed and free, each core's PE0
   among the allowed CPUs, and the order cores are taken in. */
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
  unsigned *order;          /* core positions: fastest kind first, then topology order */
  unsigned *cap;            /* per domain of `level`: CPUs this request could get there */
  unsigned *pe0_cap;        /* per domain: cores free as a whole (PE0s on offer) */
  bool *in_set;             /* per domain: scratch membership for fill() */
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
}

static const struct cp_topo *sort_topo;

static int
cmp_core_order (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  int kx = sort_topo->cores[x].kind, ky = sort_topo->cores[y].kind;
  if (kx != ky)
    return ky - kx;
  return (x > y) - (x < y);
}

static void
view_init (struct view *v, const struct cp_topo *topo, hwloc_const_bitmap_t allowed,
           const struct cp_usage *usage, const struct cp_request *req)
{
  memset (v, 0, sizeof *v);
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
      v->order[c] = c;
    }
  /* qsort is not stable, but the comparison ends on the position, so the
     order is total and deterministic. */
  sort_topo = topo;
  qsort (v->order, topo->n_cores, sizeof *v->order, cmp_core_order);

  unsigned nd = topo->n_domains[v->level];
  v->cap = cp_xcalloc (nd, sizeof *v->cap);
  v->pe0_cap = cp_xcalloc (nd, sizeof *v->pe0_cap);
  v->in_set = cp_xcalloc (nd, sizeof *v->in_set);
}

/* ---- filling ---------------------------------------------------------------- */

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

static void
hold_core (const struct view *v, unsigned c, hwloc_bitmap_t held)
{
  int pu;
  hwloc_bitmap_foreach_begin (pu, v->topo->cores[c].pus)
    if (hwloc_bitmap_isset (v->allowed, (unsigned) pu))
      hwloc_bitmap_set (held, (unsigned) pu);
  hwloc_bitmap_foreach_end ();
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
  unsigned *cand = cp_xcalloc (topo->n_cores, sizeof *cand);
  unsigned *threads = cp_xcalloc (topo->n_cores, sizeof *threads);
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
    {
      free (cand);
      free (threads);
      return 0;
    }
  /* reach bit (i, s): candidates i.. can make exactly s threads */
  size_t row = (size_t) need + 1;
  unsigned char *reach = cp_xcalloc (((m + 1) * row + 7) / 8, 1);
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
  free (reach);
  free (cand);
  free (threads);
  return got;
}

/* Fill CPUS (and HELD) with up to NEED CPUs from the domains marked in v->in_set,
   following the smt option.  Returns how many were taken. */
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

static void
mark_only (struct view *v, const unsigned *doms, size_t n)
{
  memset (v->in_set, 0, v->topo->n_domains[v->level] * sizeof *v->in_set);
  for (size_t i = 0; i < n; i++)
    v->in_set[doms[i]] = true;
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

/* Capacity of each align-level domain for this request. */
static void
compute_capacity (struct view *v)
{
  unsigned nd = v->topo->n_domains[v->level];
  hwloc_bitmap_t cpus = cp_bitmap_new (), held = cp_bitmap_new ();
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
  hwloc_bitmap_free (cpus);
  hwloc_bitmap_free (held);
}

/* ---- choosing domains ---------------------------------------------------------- */

/* Does NEED fit in domain D alone?  Under smt=cores the count must also come out
   exact, which only a trial fill can tell. */
static bool
fits_alone (struct view *v, unsigned d, unsigned need)
{
  if (v->cap[d] < need)
    return false;
  if (v->req->mode == CP_MODE_SHARED || v->req->smt != CP_SMT_CORES)
    return true;
  hwloc_bitmap_t cpus = cp_bitmap_new (), held = cp_bitmap_new ();
  mark_only (v, &d, 1);
  bool ok = fill (v, need, cpus, held) == need;
  hwloc_bitmap_free (cpus);
  hwloc_bitmap_free (held);
  return ok;
}

/* Load of a domain for shared mode, as a fraction: CPUs held there plus the
   CPUs of shared placements that overlap it, over its allowed CPUs. */
static void
domain_load (const struct view *v, unsigned d, unsigned long *num, unsigned long *den)
{
  const struct cp_domain *dom = &v->topo->domains[v->level][d];
  hwloc_bitmap_t tmp = cp_bitmap_new ();
  hwloc_bitmap_and (tmp, dom->cpus, v->held);
  unsigned long load = (unsigned long) hwloc_bitmap_weight (tmp);
  for (size_t i = 0; v->usage && i < v->usage->n_shared; i++)
    {
      hwloc_bitmap_and (tmp, dom->cpus, v->usage->shared[i]);
      hwloc_bitmap_and (tmp, tmp, v->allowed);
      load += (unsigned long) hwloc_bitmap_weight (tmp);
    }
  hwloc_bitmap_and (tmp, dom->cpus, v->allowed);
  *num = load;
  *den = (unsigned long) hwloc_bitmap_weight (tmp);
  hwloc_bitmap_free (tmp);
}

/* Pick the single domain for NEED, or -1.
 *
 * Exclusive: best fit, the domain left with the fewest free CPUs after this
 * request, so that large empty domains stay whole for large requests later.
 * Under pe0-first a domain where the request fits on PE0s alone beats one
 * where it would need siblings.  Shared: the least loaded domain.  Ties go to
 * the lowest index. */
static int
choose_single (struct view *v, unsigned need)
{
  int best = -1;
  unsigned long best_key[2] = { 0, 0 };
  unsigned long best_num = 0, best_den = 1;
  for (unsigned d = 0; d < v->topo->n_domains[v->level]; d++)
    {
      if (!fits_alone (v, d, need))
        continue;
      if (v->req->mode == CP_MODE_SHARED)
        {
          unsigned long num, den;
          domain_load (v, d, &num, &den);
          if (best < 0 || num * best_den < best_num * den)
            {
              best = (int) d;
              best_num = num;
              best_den = den;
            }
          continue;
        }
      unsigned long key[2];
      key[0] = v->req->smt == CP_SMT_PE0_FIRST && v->pe0_cap[d] < need;
      key[1] = v->cap[d] - need;
      if (best < 0 || key[0] < best_key[0] || (key[0] == best_key[0] && key[1] < best_key[1]))
        {
          best = (int) d;
          best_key[0] = key[0];
          best_key[1] = key[1];
        }
    }
  return best;
}

struct spill
{
  enum cp_level group_level;
  unsigned group;
  unsigned *doms;
  size_t n;
  unsigned long leftover;
};

static const struct view *sort_view;

static int
cmp_cap_desc (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  if (sort_view->cap[x] != sort_view->cap[y])
    return sort_view->cap[x] < sort_view->cap[y] ? 1 : -1;
  return (x > y) - (x < y);
}

/* The fewest align-level domains inside group G (a domain of GROUP_LEVEL) that
 * hold NEED: the largest first (whole free domains come first that way), then
 * for the remainder the smallest domain that still holds it.  Under smt=cores
 * the capacities may add up without an exact count of whole cores among them
 * (cores of 2 threads for 3 CPUs); then the next domains are added until one
 * exists.  Returns false when the group cannot hold NEED at all. */
static bool
plan_group (struct view *v, enum cp_level group_level, unsigned g, unsigned need, struct spill *out)
{
  const struct cp_domain *group = &v->topo->domains[group_level][g];
  unsigned nd = v->topo->n_domains[v->level];
  unsigned *members = cp_xcalloc (nd, sizeof *members);
  size_t n = 0;
  unsigned long total = 0;
  for (unsigned d = 0; d < nd; d++)
    if (v->cap[d] > 0 && hwloc_bitmap_isincluded (v->topo->domains[v->level][d].cpus, group->cpus))
      {
        members[n++] = d;
        total += v->cap[d];
      }
  if (total < need)
    {
      free (members);
      return false;
    }
  sort_view = v;
  qsort (members, n, sizeof *members, cmp_cap_desc);

  size_t k = 0;
  unsigned long got = 0;
  while (got + v->cap[members[k]] < need)
    got += v->cap[members[k++]];
  /* members[0..k-1] are taken whole; the remainder NEED-GOT goes to the smallest
     of the rest that holds it, the lowest index among equals (members is sorted
     by capacity descending, then index), so it stays next to the others. */
  size_t last = k;
  for (size_t i = k + 1; i < n; i++)
    if (v->cap[members[i]] >= need - got && v->cap[members[i]] < v->cap[members[last]])
      last = i;
  unsigned tmp = members[k];
  members[k] = members[last];
  members[last] = tmp;

  if (v->req->mode == CP_MODE_EXCLUSIVE && v->req->smt == CP_SMT_CORES)
    {
      /* Adding domains only adds cores, so "exact with members[0..j]" is monotone
         in j: the whole group first, then a binary search for the fewest. */
      hwloc_bitmap_t cpus = cp_bitmap_new (), held = cp_bitmap_new ();
      size_t lo = k, hi = n - 1;
      mark_only (v, members, n);
      bool ok = fill (v, need, cpus, held) == need;
      while (ok && lo < hi)
        {
          size_t mid = lo + (hi - lo) / 2;
          mark_only (v, members, mid + 1);
          if (fill (v, need, cpus, held) == need)
            hi = mid;
          else
            lo = mid + 1;
        }
      hwloc_bitmap_free (cpus);
      hwloc_bitmap_free (held);
      if (!ok)
        {
          free (members);
          return false;
        }
      k = lo;
    }

  out->group_level = group_level;
  out->group = g;
  out->doms = members;
  out->n = k + 1;
  out->leftover = total - need;
  return true;
}

static int
group_size (const struct view *v, const struct spill *s)
{
  return hwloc_bitmap_weight (v->topo->domains[s->group_level][s->group].cpus);
}

/* Is A a better spill than B?  Fewer domains; then the tighter group (a NUMA
   node inside a package, a package; where a NUMA node spans packages the
   package is tighter, so it is size that decides, not the level's name); then
   the fullest group; then topology order. */
static bool
spill_better (const struct view *v, const struct spill *a, const struct spill *b)
{
  if (a->n != b->n)
    return a->n < b->n;
  int sa = group_size (v, a), sb = group_size (v, b);
  if (sa != sb)
    return sa < sb;
  if (a->group_level != b->group_level)
    return a->group_level < b->group_level;
  return a->leftover < b->leftover;
}

/* Spill over: the fewest domains, inside the tightest group that holds them. */
static bool
choose_spill (struct view *v, unsigned need, struct spill *best)
{
  bool found = false;
  for (int gl = (int) v->level + 1; gl < CP_LEVEL_COUNT; gl++)
    {
      if (v->level == CP_LEVEL_L2 && gl == CP_LEVEL_LLC && v->topo->llc_depth == 2)
        continue; /* the LLC is the L2 there: nothing to group */
      for (unsigned g = 0; g < v->topo->n_domains[gl]; g++)
        {
          struct spill s = { 0 };
          if (!plan_group (v, (enum cp_level) gl, g, need, &s))
            continue;
          bool better = !found || spill_better (v, &s, best);
          if (better)
            {
              if (found)
                free (best->doms);
              *best = s;
              found = true;
            }
          else
            free (s.doms);
        }
    }
  return found;
}

/* ---- the plan ---------------------------------------------------------------- */

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

static void
record_domains (const struct view *v, struct cp_plan *plan, unsigned *doms, size_t n)
{
  qsort (doms, n, sizeof *doms, cmp_unsigned);
  plan->domains = cp_xcalloc (n, sizeof *plan->domains);
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_domain *dom = &v->topo->domains[v->level][doms[i]];
      hwloc_bitmap_t part = cp_bitmap_new ();
      hwloc_bitmap_and (part, dom->cpus, plan->cpus);
      if (hwloc_bitmap_iszero (part))
        {
          hwloc_bitmap_free (part);
          continue;
        }
      struct cp_plan_domain *pd = &plan->domains[plan->n_domains++];
      pd->level = v->level;
      pd->index = dom->index;
      pd->cpus = part;
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
      snprintf (buf, len, "one PE0 thread on each of %u cores, their siblings held idle", pe0s);
      break;
    case CP_SMT_CORES:
      snprintf (buf, len, "whole cores");
      break;
    default:
      snprintf (buf, len, "%u PE0 threads, %u other threads", pe0s, total - pe0s);
      break;
    }
  return buf;
}

static int
unsatisfiable (cp_error_t *err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

static int
unsatisfiable (cp_error_t *err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  cleanup_free char *msg = NULL;
  if (vasprintf (&msg, fmt, ap) < 0)
    abort ();
  va_end (ap);
  return cp_error_set (err, CP_ERR_UNSATISFIABLE, 0, "%s", msg);
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
    return cp_fail_input (err, "smt=cores takes whole cores, of %s threads here: %u CPUs is not a multiple of %u", text,
                          need, g);
  return cp_fail_input (err, "smt=cores takes whole cores, of %s threads here: no set of them has exactly %u CPUs",
                        text, need);
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
    return cp_fail_unsatisfiable (err, "cpus: %u is more than the %u allowed CPUs", v->req->cpus, allowed);
  if (v->req->mode == CP_MODE_EXCLUSIVE && v->req->smt == CP_SMT_CORES)
    return check_core_widths (v, v->req->cpus, err);
  return 0;
}

int
cp_place (const struct cp_topo *topo, hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t allowed_mems,
          const struct cp_usage *usage, const struct cp_request *req, struct cp_plan **out, cp_error_t *err)
{
  struct view v;
  view_init (&v, topo, allowed, usage, req);
  int ret = validate (&v, err);
  if (ret < 0)
    {
      view_clear (&v);
      return ret;
    }
  compute_capacity (&v);

  const char *label = cp_topo_level_label (topo, v.level);
  bool shared = req->mode == CP_MODE_SHARED;
  unsigned need = req->cpus ? req->cpus : 1;
  unsigned *doms = NULL;
  size_t n_doms = 0;
  char why[256];

  int single = choose_single (&v, need);
  if (single >= 0)
    {
      doms = cp_xcalloc (1, sizeof *doms);
      doms[0] = (unsigned) single;
      n_doms = 1;
      if (shared)
        snprintf (why, sizeof why, "the least loaded %s with room for %u", label, need);
      else
        snprintf (why, sizeof why, "best fit: %u of its %u usable CPUs free before", need, v.cap[single]);
    }
  else
    {
      unsigned big = largest_domain (&v);
      if (req->strict || v.level == CP_LEVEL_MACHINE)
        {
          ret = unsatisfiable (err, "cannot place %u CPUs (smt=%s) inside one %s: the most any has free is %u (%s#%u)%s",
                               need, cp_smt_name (req->smt), label, v.cap[big], label, big,
                               req->strict ? " and the request is strict" : "");
          view_clear (&v);
          return ret;
        }
      struct spill s = { 0 };
      if (!choose_spill (&v, need, &s))
        {
          unsigned long total = 0;
          for (unsigned d = 0; d < topo->n_domains[v.level]; d++)
            total += v.cap[d];
          if (total >= need) /* smt=cores: enough threads, but no exact set of whole cores */
            ret = unsatisfiable (err, "cannot place %u CPUs (smt=%s, mode=%s): no set of wholly free cores has exactly "
                                 "%u CPUs (%lu CPUs are free in whole cores)", need, cp_smt_name (req->smt),
                                 cp_mode_name (req->mode), need, total);
          else
            ret = unsatisfiable (err, "cannot place %u CPUs (smt=%s, mode=%s): only %lu usable CPUs are free", need,
                                 cp_smt_name (req->smt), cp_mode_name (req->mode), total);
          view_clear (&v);
          return ret;
        }
      doms = s.doms;
      n_doms = s.n;
      snprintf (why, sizeof why, "no single %s holds %u (most free: %u in %s#%u); fewest %ss within %s#%u", label,
                need, v.cap[big], label, big, label, cp_topo_level_label (topo, s.group_level), s.group);
    }

  cleanup_plan struct cp_plan *plan = plan_new (req->mode);
  if (shared)
    {
      hwloc_bitmap_t part = cp_bitmap_new ();
      for (size_t i = 0; i < n_doms; i++)
        {
          shared_cpus (&v, doms[i], part);
          hwloc_bitmap_or (plan->cpus, plan->cpus, part);
        }
      hwloc_bitmap_free (part);
    }
  else
    {
      mark_only (&v, doms, n_doms);
      unsigned got = fill (&v, need, plan->cpus, plan->held);
      if (got != need)
        {
          free (doms);
          ret = unsatisfiable (err, "cannot place %u CPUs with smt=%s: only %u whole cores' worth fit exactly", need,
                               cp_smt_name (req->smt), got);
          view_clear (&v);
          return ret;
        }
    }
  record_domains (&v, plan, doms, n_doms);
  free (doms);
  compute_mems (topo, allowed_mems, plan);

  char smt[128];
  cleanup_free char *where = NULL;
  if (plan->n_domains == 1)
    where = cp_xasprintf ("%s#%u", label, plan->domains[0].index);
  else
    where = cp_xasprintf ("%zu %ss", plan->n_domains, label);
  plan->reason = cp_xasprintf ("%s %u CPUs on %s (%s); %s", shared ? "shared:" : "exclusive:",
                               (unsigned) hwloc_bitmap_weight (plan->cpus), where, why,
                               smt_summary (&v, plan, smt, sizeof smt));
  view_clear (&v);
  *out = cp_steal_pointer (&plan);
  return 0;
}
