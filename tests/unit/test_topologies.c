/* Data-driven placement checks on a few synthetic shapes and on every captured
 * topology (*.xml under $CACHEPIN_TOPOLOGIES, recursively: the test_captured_ case).
 *
 * For a grid of requests, occupancies and allowed sets, every plan is checked
 * against invariants computed INDEPENDENTLY of the engine: this file loads each XML
 * with hwloc itself and derives cores, LLCs, L2s, NUMA domains and nodes from
 * hwloc objects; it never reads struct cp_topo.
 *
 * Invariants (exclusive mode):
 *   - the count is right; cpus inside allowed and outside occupied;
 *   - held contains cpus, stays inside allowed and outside occupied; equals cpus
 *     except under smt=pe0, where it is the allowed threads of the cores used;
 *   - smt=pe0: one thread per core, the core's lowest allowed PU, on cores with no
 *     occupied thread; smt=cores: whole cores (all their allowed threads);
 *     smt=pe0-first: siblings only once every free PE0 of the used domains is taken,
 *     leftovers (threads of partly occupied cores) only once every free thread of
 *     the free cores there is taken;
 *   - one domain of the align level whenever one had room for the request (room
 *     computed here from hwloc and the occupancy, under that smt); otherwise the
 *     fewest domains that can hold it;
 *   - mems: the CPU-side NUMA nodes local to the cpus among the allowed nodes, or
 *     the allowed nodes when none is local;
 *   - failures only when justified: an input error only for more CPUs than allowed;
 *     "unsatisfiable" only when the machine (or, strict, every single domain) lacks
 *     the room.
 * Shared mode: the CPUs of one domain, the least loaded one, nothing held.
 * And sequences of placements that accumulate held CPUs until the machine is full. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cpulist.h"
#include "util.h"

/* ---- the independent model -------------------------------------------------------- */

struct sets
{
  hwloc_bitmap_t *s;
  unsigned n;
};

struct hw
{
  const char *name;
  hwloc_topology_t topo;
  hwloc_bitmap_t online;
  hwloc_bitmap_t allowed;      /* the XML's allowed CPUs (online part) */
  hwloc_bitmap_t nodes;        /* every NUMA node */
  hwloc_bitmap_t allowed_nodes;
  hwloc_bitmap_t *cores;       /* online PUs of each core */
  unsigned n_cores;
  int *core_of;                /* CPU -> core, -1 */
  unsigned pu_limit;
  struct sets level[CP_LEVEL_COUNT];
};

static void
sets_add (struct sets *l, hwloc_const_bitmap_t set)
{
  l->s = cp_xrealloc (l->s, (l->n + 1) * sizeof *l->s);
  l->s[l->n++] = hwloc_bitmap_dup (set);
}

static void
sets_free (struct sets *l)
{
  for (unsigned i = 0; i < l->n; i++)
    hwloc_bitmap_free (l->s[i]);
  free (l->s);
  l->s = NULL;
  l->n = 0;
}

static int
sets_find (const struct sets *l, unsigned cpu)
{
  for (unsigned i = 0; i < l->n; i++)
    if (hwloc_bitmap_isset (l->s[i], cpu))
      return (int) i;
  return -1;
}

static bool
is_gpu_memory (hwloc_obj_t o)
{
  return o->subtype && strcmp (o->subtype, "GPUMemory") == 0;
}

/* The online CPUs of every object of TYPE, duplicates dropped; they must not
   overlap partially (true of every capture; a new one that breaks it needs a
   look).  CPUs left uncovered are grouped by the sets of PARENT. */
static void
level_from_objects (struct hw *h, hwloc_obj_type_t type, const struct sets *parent, struct sets *out)
{
  hwloc_bitmap_t covered = hwloc_bitmap_alloc (), s = hwloc_bitmap_alloc ();
  if (type != HWLOC_OBJ_TYPE_MAX)
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type (h->topo, type, o));)
      {
        if (type == HWLOC_OBJ_NUMANODE && is_gpu_memory (o))
          continue;
        hwloc_bitmap_and (s, o->cpuset, h->online);
        if (hwloc_bitmap_iszero (s))
          continue;
        bool dup = false;
        for (unsigned i = 0; i < out->n; i++)
          if (hwloc_bitmap_isequal (out->s[i], s))
            dup = true;
          else if (hwloc_bitmap_intersects (out->s[i], s))
            fail_msg ("%s: two %s objects overlap partially", h->name, hwloc_obj_type_string (type));
        if (dup)
          continue;
        sets_add (out, s);
        hwloc_bitmap_or (covered, covered, s);
      }
  for (unsigned p = 0; parent && p < parent->n; p++)
    {
      hwloc_bitmap_andnot (s, parent->s[p], covered);
      if (!hwloc_bitmap_iszero (s))
        sets_add (out, s);
    }
  hwloc_bitmap_free (covered);
  hwloc_bitmap_free (s);
}

static void
add_core (struct hw *h, hwloc_const_bitmap_t pus)
{
  h->cores = cp_xrealloc (h->cores, (h->n_cores + 1) * sizeof *h->cores);
  h->cores[h->n_cores++] = hwloc_bitmap_dup (pus);
}

static void
hw_load (struct hw *h, const char *path, const char *name)
{
  memset (h, 0, sizeof *h);
  h->name = name;
  assert_int_equal (hwloc_topology_init (&h->topo), 0);
  hwloc_topology_set_flags (h->topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  /* a captured XML file, or an hwloc synthetic description (the shapes below) */
  struct stat st;
  if (stat (path, &st) == 0)
    assert_int_equal (hwloc_topology_set_xml (h->topo, path), 0);
  else
    assert_int_equal (hwloc_topology_set_synthetic (h->topo, path), 0);
  assert_int_equal (hwloc_topology_load (h->topo), 0);
  h->online = hwloc_bitmap_dup (hwloc_topology_get_topology_cpuset (h->topo));
  h->allowed = hwloc_bitmap_alloc ();
  hwloc_bitmap_and (h->allowed, hwloc_topology_get_allowed_cpuset (h->topo), h->online);
  h->nodes = hwloc_bitmap_dup (hwloc_topology_get_topology_nodeset (h->topo));
  h->allowed_nodes = hwloc_bitmap_alloc ();
  hwloc_bitmap_and (h->allowed_nodes, hwloc_topology_get_allowed_nodeset (h->topo), h->nodes);

  /* Cores: the PU children of each Core object; a PU without a Core is its own. */
  hwloc_bitmap_t pus = hwloc_bitmap_alloc ();
  for (hwloc_obj_t core = NULL; (core = hwloc_get_next_obj_by_type (h->topo, HWLOC_OBJ_CORE, core));)
    {
      hwloc_bitmap_zero (pus);
      for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_inside_cpuset_by_type (h->topo, core->cpuset,
                                                                                  HWLOC_OBJ_PU, pu));)
        if (hwloc_bitmap_isset (h->online, pu->os_index))
          hwloc_bitmap_set (pus, pu->os_index);
      if (!hwloc_bitmap_iszero (pus))
        add_core (h, pus);
    }
  for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type (h->topo, HWLOC_OBJ_PU, pu));)
    if (hwloc_get_ancestor_obj_by_type (h->topo, HWLOC_OBJ_CORE, pu) == NULL
        && hwloc_bitmap_isset (h->online, pu->os_index))
      {
        hwloc_bitmap_only (pus, pu->os_index);
        add_core (h, pus);
      }
  hwloc_bitmap_free (pus);
  h->pu_limit = (unsigned) hwloc_bitmap_last (h->online) + 1;
  h->core_of = cp_xcalloc (h->pu_limit, sizeof *h->core_of);
  for (unsigned i = 0; i < h->pu_limit; i++)
    h->core_of[i] = -1;
  for (unsigned c = 0; c < h->n_cores; c++)
    {
      int cpu;
      hwloc_bitmap_foreach_begin (cpu, h->cores[c])
        {
          if (h->core_of[cpu] != -1)
            fail_msg ("%s: CPU %d in two cores", name, cpu);
          h->core_of[cpu] = (int) c;
        }
      hwloc_bitmap_foreach_end ();
    }

  sets_add (&h->level[CP_LEVEL_MACHINE], h->online);
  level_from_objects (h, HWLOC_OBJ_PACKAGE, &h->level[CP_LEVEL_MACHINE], &h->level[CP_LEVEL_PACKAGE]);
  level_from_objects (h, HWLOC_OBJ_NUMANODE, &h->level[CP_LEVEL_PACKAGE], &h->level[CP_LEVEL_NUMA]);
  hwloc_obj_type_t llc = hwloc_get_nbobjs_by_type (h->topo, HWLOC_OBJ_L3CACHE) > 0   ? HWLOC_OBJ_L3CACHE
                         : hwloc_get_nbobjs_by_type (h->topo, HWLOC_OBJ_L2CACHE) > 0 ? HWLOC_OBJ_L2CACHE
                                                                                     : HWLOC_OBJ_TYPE_MAX;
  level_from_objects (h, llc, &h->level[CP_LEVEL_PACKAGE], &h->level[CP_LEVEL_LLC]);
  level_from_objects (h, hwloc_get_nbobjs_by_type (h->topo, HWLOC_OBJ_L2CACHE) > 0 ? HWLOC_OBJ_L2CACHE
                                                                                    : HWLOC_OBJ_TYPE_MAX,
                      &h->level[CP_LEVEL_LLC], &h->level[CP_LEVEL_L2]);
}

static void
hw_free (struct hw *h)
{
  for (unsigned c = 0; c < h->n_cores; c++)
    hwloc_bitmap_free (h->cores[c]);
  free (h->cores);
  free (h->core_of);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    sets_free (&h->level[l]);
  hwloc_bitmap_free (h->online);
  hwloc_bitmap_free (h->allowed);
  hwloc_bitmap_free (h->nodes);
  hwloc_bitmap_free (h->allowed_nodes);
  hwloc_topology_destroy (h->topo);
}

/* ---- room, computed here ------------------------------------------------------------- */

struct scene
{
  const struct hw *h;
  hwloc_bitmap_t allowed;  /* A */
  hwloc_bitmap_t occupied; /* O */
  hwloc_bitmap_t free;     /* A \ O */
};

static void
scene_init (struct scene *s, const struct hw *h, hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t occupied)
{
  s->h = h;
  s->allowed = hwloc_bitmap_dup (allowed);
  s->occupied = hwloc_bitmap_dup (occupied);
  s->free = hwloc_bitmap_alloc ();
  hwloc_bitmap_andnot (s->free, s->allowed, s->occupied);
}

static void
scene_clear (struct scene *s)
{
  hwloc_bitmap_free (s->allowed);
  hwloc_bitmap_free (s->occupied);
  hwloc_bitmap_free (s->free);
}

/* Lowest allowed PU of core C, or -1. */
static int
pe0_of (const struct scene *s, unsigned c)
{
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, s->h->cores[c])
    if (hwloc_bitmap_isset (s->allowed, (unsigned) cpu))
      return cpu;
  hwloc_bitmap_foreach_end ();
  return -1;
}

/* Allowed threads of core C. */
static unsigned
threads_of (const struct scene *s, unsigned c)
{
  unsigned n = 0;
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, s->h->cores[c])
    n += hwloc_bitmap_isset (s->allowed, (unsigned) cpu);
  hwloc_bitmap_foreach_end ();
  return n;
}

/* Has allowed threads and none of them is occupied. */
static bool
core_free (const struct scene *s, unsigned c)
{
  int cpu;
  bool any = false;
  hwloc_bitmap_foreach_begin (cpu, s->h->cores[c])
    if (hwloc_bitmap_isset (s->allowed, (unsigned) cpu))
      {
        if (hwloc_bitmap_isset (s->occupied, (unsigned) cpu))
          return false;
        any = true;
      }
  hwloc_bitmap_foreach_end ();
  return any;
}

static bool
core_inside (const struct scene *s, unsigned c, hwloc_const_bitmap_t dom)
{
  return hwloc_bitmap_isincluded (s->h->cores[c], dom);
}

/* Could any set of allowed cores, free or not, make exactly NEED threads?  When
   none could, smt=cores with NEED is malformed for this machine (an input error),
   not a matter of capacity.  (subset sum, one core at a time) */
static bool
cores_could_ever (const struct scene *s, unsigned need)
{
  bool *can = cp_xcalloc (need + 1, sizeof *can);
  can[0] = true;
  for (unsigned c = 0; c < s->h->n_cores; c++)
    {
      unsigned t = threads_of (s, c);
      for (unsigned v = need; v >= t && t > 0; v--)
        if (can[v - t])
          can[v] = true;
    }
  bool ok = can[need];
  free (can);
  return ok;
}

/* Can whole free cores of DOM make exactly NEED threads?  (subset sum) */
static bool
cores_exact (const struct scene *s, hwloc_const_bitmap_t dom, unsigned need)
{
  bool *can = cp_xcalloc (need + 1, sizeof *can);
  can[0] = true;
  for (unsigned c = 0; c < s->h->n_cores; c++)
    {
      if (!core_inside (s, c, dom) || !core_free (s, c))
        continue;
      unsigned t = threads_of (s, c);
      for (unsigned v = need; v >= t && t > 0; v--)
        if (can[v - t])
          can[v] = true;
    }
  bool ok = can[need];
  free (can);
  return ok;
}

/* CPUs this smt can get inside DOM. */
static unsigned
room (const struct scene *s, hwloc_const_bitmap_t dom, enum cp_smt smt)
{
  unsigned n = 0;
  switch (smt)
    {
    case CP_SMT_PE0:
      for (unsigned c = 0; c < s->h->n_cores; c++)
        n += core_inside (s, c, dom) && core_free (s, c);
      return n;
    case CP_SMT_CORES:
      for (unsigned c = 0; c < s->h->n_cores; c++)
        if (core_inside (s, c, dom) && core_free (s, c))
          n += threads_of (s, c);
      return n;
    case CP_SMT_PE0_FIRST:
    case CP_SMT_ANY:
    default:
      {
        hwloc_bitmap_t x = hwloc_bitmap_alloc ();
        hwloc_bitmap_and (x, dom, s->free);
        n = (unsigned) hwloc_bitmap_weight (x);
        hwloc_bitmap_free (x);
        return n;
      }
    }
}

static bool
fits (const struct scene *s, hwloc_const_bitmap_t dom, enum cp_smt smt, unsigned need)
{
  if (room (s, dom, smt) < need)
    return false;
  return smt != CP_SMT_CORES || cores_exact (s, dom, need);
}

static int
cmp_desc (const void *a, const void *b)
{
  unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
  return (x < y) - (x > y);
}

/* The fewest domains of LEVEL whose rooms add up to NEED (0: impossible). */
static unsigned
min_domains (const struct scene *s, enum cp_level level, enum cp_smt smt, unsigned need)
{
  const struct sets *l = &s->h->level[level];
  unsigned *caps = cp_xcalloc (l->n, sizeof *caps);
  for (unsigned i = 0; i < l->n; i++)
    caps[i] = room (s, l->s[i], smt);
  qsort (caps, l->n, sizeof *caps, cmp_desc);
  unsigned long got = 0;
  unsigned k = 0;
  while (k < l->n && got < need)
    got += caps[k++];
  free (caps);
  return got >= need ? k : 0;
}

/* ---- checking one request --------------------------------------------------------------- */

struct stats
{
  unsigned long cases, placed, refused;
  unsigned long spilled;
};

static char *
describe (const struct scene *s, const struct cp_request *r, const char *what)
{
  char *a = cp_cpulist_format (s->allowed), *o = cp_cpulist_format (s->occupied);
  char *d = cp_xasprintf ("%s: cpus=%u align=%s smt=%s mode=%s%s (%s; allowed %s; occupied %s)", s->h->name, r->cpus,
                          cp_align_name (r->align), cp_smt_name (r->smt), cp_mode_name (r->mode),
                          r->strict ? " strict" : "", what, a, o);
  free (a);
  free (o);
  return d;
}

#define check(cond, ...)                                                                         \
  do                                                                                             \
    {                                                                                            \
      if (!(cond))                                                                               \
        {                                                                                        \
          char *_d = describe (s, r, what);                                                      \
          char *_c = plan ? cp_cpulist_format (plan->cpus) : cp_xstrdup ("-");                   \
          print_error ("%s\n  plan cpus %s: %s\n  violated: ", _d, _c, plan ? plan->reason : ""); \
          print_error (__VA_ARGS__);                                                             \
          print_error ("\n");                                                                    \
          free (_d);                                                                             \
          free (_c);                                                                             \
          fail ();                                                                               \
        }                                                                                        \
    }                                                                                            \
  while (0)

/* How many sets of LEVEL the CPUs of SET touch. */
static unsigned
touched (const struct hw *h, enum cp_level level, hwloc_const_bitmap_t set)
{
  unsigned n = 0;
  for (unsigned i = 0; i < h->level[level].n; i++)
    n += hwloc_bitmap_intersects (h->level[level].s[i], set);
  return n;
}

static void
expected_mems (const struct hw *h, hwloc_const_bitmap_t cpus, hwloc_bitmap_t out)
{
  hwloc_bitmap_zero (out);
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type (h->topo, HWLOC_OBJ_NUMANODE, o));)
    if (!is_gpu_memory (o) && hwloc_bitmap_intersects (o->cpuset, cpus))
      hwloc_bitmap_set (out, o->os_index);
  hwloc_const_bitmap_t fallback = hwloc_bitmap_iszero (h->allowed_nodes) ? h->nodes : h->allowed_nodes;
  hwloc_bitmap_and (out, out, fallback);
  if (hwloc_bitmap_iszero (out))
    hwloc_bitmap_copy (out, fallback);
}

static void
check_exclusive_plan (const struct scene *s, const struct cp_request *r, const struct cp_plan *plan, const char *what)
{
  const struct hw *h = s->h;
  unsigned need = r->cpus;
  check ((unsigned) hwloc_bitmap_weight (plan->cpus) == need, "count %d", hwloc_bitmap_weight (plan->cpus));
  check (hwloc_bitmap_isincluded (plan->cpus, s->allowed), "cpus outside allowed");
  check (!hwloc_bitmap_intersects (plan->cpus, s->occupied), "cpus occupied");
  check (hwloc_bitmap_isincluded (plan->cpus, plan->held), "held does not contain cpus");
  check (hwloc_bitmap_isincluded (plan->held, s->allowed), "held outside allowed");
  check (!hwloc_bitmap_intersects (plan->held, s->occupied), "held overlaps occupied");

  hwloc_bitmap_t x = hwloc_bitmap_alloc ();
  bool *used = cp_xcalloc (h->n_cores, sizeof *used);
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, plan->cpus)
    {
      int c = h->core_of[cpu];
      check (c >= 0, "CPU %d is in no core", cpu);
      if (r->smt == CP_SMT_PE0)
        {
          check (!used[c], "two threads of core %d", c);
          check (cpu == pe0_of (s, (unsigned) c), "CPU %d is not its core's lowest allowed PU %d", cpu,
                 pe0_of (s, (unsigned) c));
          check (core_free (s, (unsigned) c), "core of CPU %d has an occupied thread", cpu);
        }
      if (r->smt == CP_SMT_CORES)
        {
          hwloc_bitmap_and (x, h->cores[c], s->allowed);
          check (hwloc_bitmap_isincluded (x, plan->cpus), "CPU %d without its whole core", cpu);
        }
      used[c] = true;
    }
  hwloc_bitmap_foreach_end ();

  /* held: cpus, or under pe0 the allowed threads of the cores used */
  hwloc_bitmap_zero (x);
  if (r->smt == CP_SMT_PE0)
    for (unsigned c = 0; c < h->n_cores; c++)
      if (used[c])
        hwloc_bitmap_or (x, x, h->cores[c]);
  hwloc_bitmap_or (x, x, plan->cpus);
  hwloc_bitmap_and (x, x, s->allowed);
  check (hwloc_bitmap_isequal (x, plan->held), "held is not what the smt option holds");

  /* Domains: one when one has room, else the fewest. */
  const struct sets *lv = &h->level[r->align];
  bool one_fits = false;
  for (unsigned d = 0; d < lv->n && !one_fits; d++)
    one_fits = fits (s, lv->s[d], r->smt, need);
  unsigned n_touched = touched (h, r->align, plan->cpus);
  if (r->strict)
    check (n_touched == 1, "strict request over %u %s domains", n_touched, cp_align_name (r->align));
  if (one_fits)
    {
      check (n_touched == 1, "%u %s domains although one had room", n_touched, cp_align_name (r->align));
      /* best fit: no domain that fits leaves less room over (under pe0-first,
         among those that fit on free cores' PE0s when one does) */
      int chosen = sets_find (lv, (unsigned) hwloc_bitmap_first (plan->cpus));
      bool pe0_only = false;
      if (r->smt == CP_SMT_PE0_FIRST)
        for (unsigned d = 0; d < lv->n; d++)
          pe0_only = pe0_only || room (s, lv->s[d], CP_SMT_PE0) >= need;
      if (pe0_only)
        check (room (s, lv->s[chosen], CP_SMT_PE0) >= need, "pe0-first needs siblings where PE0s would do");
      unsigned left = room (s, lv->s[chosen], r->smt) - need;
      for (unsigned d = 0; d < lv->n; d++)
        if (fits (s, lv->s[d], r->smt, need) && (!pe0_only || room (s, lv->s[d], CP_SMT_PE0) >= need))
          check (room (s, lv->s[d], r->smt) - need >= left, "not the best fit: %u left over, another leaves %u",
                 left, room (s, lv->s[d], r->smt) - need);
    }
  else if (r->smt != CP_SMT_CORES)
    {
      unsigned k = min_domains (s, r->align, r->smt, need);
      check (n_touched == k, "%u %s domains, the fewest that hold it are %u", n_touched, cp_align_name (r->align), k);
    }
  /* ... and the LLC in particular, whatever the align level below it */
  if (r->align <= CP_LEVEL_LLC)
    {
      bool llc_fits = false;
      for (unsigned d = 0; d < h->level[CP_LEVEL_LLC].n && !llc_fits; d++)
        llc_fits = fits (s, h->level[CP_LEVEL_LLC].s[d], r->smt, need);
      if (llc_fits && r->align == CP_LEVEL_LLC)
        check (touched (h, CP_LEVEL_LLC, plan->cpus) == 1, "several LLCs although one had room");
    }
  check (plan->n_domains == n_touched, "plan lists %zu domains, its CPUs touch %u", plan->n_domains, n_touched);
  check (plan->split == (n_touched > 1), "split flag");
  for (size_t i = 0; i < plan->n_domains; i++)
    {
      check (plan->domains[i].level == r->align, "domain level");
      int d = sets_find (lv, (unsigned) hwloc_bitmap_first (plan->domains[i].cpus));
      check (d >= 0 && hwloc_bitmap_isincluded (plan->domains[i].cpus, lv->s[d]), "domain %zu is not one domain", i);
    }

  /* pe0-first tiers, inside the domains used */
  if (r->smt == CP_SMT_PE0_FIRST)
    {
      hwloc_bitmap_t area = hwloc_bitmap_alloc (), pe0s = hwloc_bitmap_alloc (), tier2 = hwloc_bitmap_alloc ();
      for (unsigned d = 0; d < lv->n; d++)
        if (hwloc_bitmap_intersects (lv->s[d], plan->cpus))
          hwloc_bitmap_or (area, area, lv->s[d]);
      for (unsigned c = 0; c < h->n_cores; c++)
        if (core_inside (s, c, area) && core_free (s, c))
          {
            hwloc_bitmap_set (pe0s, (unsigned) pe0_of (s, c));
            hwloc_bitmap_or (tier2, tier2, h->cores[c]);
          }
      hwloc_bitmap_and (tier2, tier2, s->allowed);
      bool has_sibling = false, has_leftover = false;
      hwloc_bitmap_foreach_begin (cpu, plan->cpus)
        {
          if (!hwloc_bitmap_isset (tier2, (unsigned) cpu))
            has_leftover = true;
          else if (!hwloc_bitmap_isset (pe0s, (unsigned) cpu))
            has_sibling = true;
        }
      hwloc_bitmap_foreach_end ();
      if (has_sibling || has_leftover)
        check (hwloc_bitmap_isincluded (pe0s, plan->cpus), "a sibling taken before every free PE0");
      if (has_leftover)
        check (hwloc_bitmap_isincluded (tier2, plan->cpus), "a partly occupied core's thread before free cores'");
      hwloc_bitmap_free (area);
      hwloc_bitmap_free (pe0s);
      hwloc_bitmap_free (tier2);
    }

  expected_mems (h, plan->cpus, x);
  check (hwloc_bitmap_isequal (x, plan->mems), "mems");
  hwloc_bitmap_free (x);
  free (used);
}

/* Is a failure justified?  Returns the reason the request cannot be met, or NULL. */
static bool
failure_justified (const struct scene *s, const struct cp_request *r)
{
  const struct hw *h = s->h;
  unsigned need = r->cpus;
  if (r->strict || r->align == CP_LEVEL_MACHINE)
    {
      for (unsigned d = 0; d < h->level[r->align].n; d++)
        if (fits (s, h->level[r->align].s[d], r->smt, need))
          return false;
      return true;
    }
  return !fits (s, h->level[CP_LEVEL_MACHINE].s[0], r->smt, need);
}

/* Run one exclusive request; check it; return the plan (NULL when refused). */
static struct cp_plan *
run_exclusive (const struct scene *s, const struct cp_topo *topo, const struct cp_request *r, const char *what,
               struct stats *st)
{
  struct cp_usage usage = { .held = s->occupied };
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  st->cases++;
  int ret = cp_place (topo, s->allowed, NULL, &usage, r, &plan, &err);
  if (ret < 0)
    {
      st->refused++;
      unsigned n_allowed = (unsigned) hwloc_bitmap_weight (s->allowed);
      check (plan == NULL, "a plan with an error");
      check (strchr (cp_error_message (err), '\n') == NULL, "multi-line message");
      /* input: malformed for this machine (no cpus, or smt=cores with a count no
         set of whole allowed cores has); unsatisfiable: well formed, but more than
         the host allows or has free */
      bool malformed = r->cpus == 0
                       || (r->smt == CP_SMT_CORES && r->cpus <= n_allowed && !cores_could_ever (s, r->cpus));
      if (err->kind == CP_ERR_INPUT)
        check (malformed, "input error for a well-formed request: %s", cp_error_message (err));
      else
        {
          check (err->kind == CP_ERR_UNSATISFIABLE, "error kind %d: %s", err->kind, cp_error_message (err));
          check (!malformed, "unsatisfiable instead of an input error");
          check (r->cpus > n_allowed || failure_justified (s, r), "refused although there is room: %s",
                 cp_error_message (err));
        }
      cp_error_free (&err);
      return NULL;
    }
  st->placed++;
  check (r->cpus <= (unsigned) hwloc_bitmap_weight (s->allowed), "placed more than allowed");
  check_exclusive_plan (s, r, plan, what);
  st->spilled += plan->split;
  return plan;
}

/* Shared mode, cpus unset: the CPUs of one domain, the least loaded one. */
static void
run_shared (const struct scene *s, const struct cp_topo *topo, enum cp_smt smt, enum cp_level align, const char *what,
            struct stats *st)
{
  struct cp_request req = tu_req (0, align, smt, CP_MODE_SHARED, false);
  const struct cp_request *r = &req;
  struct cp_usage usage = { .held = s->occupied };
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  st->cases++;
  const struct sets *lv = &s->h->level[align];
  /* eligible: room for one CPU under this smt */
  bool any = false;
  for (unsigned d = 0; d < lv->n; d++)
    any = any || room (s, lv->s[d], smt) > 0;
  if (cp_place (topo, s->allowed, NULL, &usage, r, &plan, &err) < 0)
    {
      st->refused++;
      check (!any, "shared placement refused with room: %s", cp_error_message (err));
      cp_error_free (&err);
      return;
    }
  st->placed++;
  check (hwloc_bitmap_iszero (plan->held), "shared holds CPUs");
  check (!hwloc_bitmap_iszero (plan->cpus), "shared: no CPUs");
  check (hwloc_bitmap_isincluded (plan->cpus, s->free), "shared cpus not free");
  check (touched (s->h, align, plan->cpus) == 1, "shared over several domains");
  int d = sets_find (lv, (unsigned) hwloc_bitmap_first (plan->cpus));
  /* the domain's CPUs for this smt, all of them */
  hwloc_bitmap_t want = hwloc_bitmap_alloc ();
  for (unsigned c = 0; c < s->h->n_cores; c++)
    {
      if (!core_inside (s, c, lv->s[d]))
        continue;
      if (smt == CP_SMT_PE0)
        {
          int p = pe0_of (s, c);
          if (p >= 0 && hwloc_bitmap_isset (s->free, (unsigned) p))
            hwloc_bitmap_set (want, (unsigned) p);
        }
      else if (smt == CP_SMT_CORES)
        {
          if (core_free (s, c))
            hwloc_bitmap_or (want, want, s->h->cores[c]);
        }
      else
        hwloc_bitmap_or (want, want, s->h->cores[c]);
    }
  hwloc_bitmap_and (want, want, s->free);
  check (hwloc_bitmap_isequal (want, plan->cpus), "shared: not the whole domain's CPUs for smt=%s", cp_smt_name (smt));
  /* least loaded: occupied over allowed, no eligible domain lower */
  hwloc_bitmap_t x = hwloc_bitmap_alloc ();
  unsigned long num[2], den[2];
  for (unsigned e = 0; e < lv->n; e++)
    {
      if (room (s, lv->s[e], smt) == 0)
        continue;
      hwloc_bitmap_and (x, lv->s[e], s->occupied);
      hwloc_bitmap_and (x, x, s->allowed);
      num[0] = (unsigned long) hwloc_bitmap_weight (x);
      hwloc_bitmap_and (x, lv->s[e], s->allowed);
      den[0] = (unsigned long) hwloc_bitmap_weight (x);
      hwloc_bitmap_and (x, lv->s[d], s->occupied);
      hwloc_bitmap_and (x, x, s->allowed);
      num[1] = (unsigned long) hwloc_bitmap_weight (x);
      hwloc_bitmap_and (x, lv->s[d], s->allowed);
      den[1] = (unsigned long) hwloc_bitmap_weight (x);
      check (num[1] * den[0] <= num[0] * den[1], "shared: domain with load %lu/%lu chosen over %lu/%lu", num[1],
             den[1], num[0], den[0]);
    }
  expected_mems (s->h, plan->cpus, x);
  check (hwloc_bitmap_isequal (x, plan->mems), "shared mems");
  hwloc_bitmap_free (x);
  hwloc_bitmap_free (want);
  cp_plan_free (plan);
}

/* ---- the grid --------------------------------------------------------------------------- */

static const enum cp_smt all_smt[] = { CP_SMT_PE0_FIRST, CP_SMT_PE0, CP_SMT_CORES, CP_SMT_ANY };
static const enum cp_level all_align[] = { CP_LEVEL_LLC, CP_LEVEL_L2, CP_LEVEL_NUMA, CP_LEVEL_MACHINE };

static unsigned
largest_llc (const struct hw *h, hwloc_const_bitmap_t allowed)
{
  unsigned best = 0;
  hwloc_bitmap_t x = hwloc_bitmap_alloc ();
  for (unsigned d = 0; d < h->level[CP_LEVEL_LLC].n; d++)
    {
      hwloc_bitmap_and (x, h->level[CP_LEVEL_LLC].s[d], allowed);
      unsigned w = (unsigned) hwloc_bitmap_weight (x);
      best = w > best ? w : best;
    }
  hwloc_bitmap_free (x);
  return best;
}

static void
run_grid (const struct hw *h, const struct cp_topo *topo, hwloc_const_bitmap_t allowed,
          hwloc_const_bitmap_t occupied, const char *what, struct stats *st)
{
  struct scene sc;
  scene_init (&sc, h, allowed, occupied);
  const struct scene *s = &sc;
  unsigned n_allowed = (unsigned) hwloc_bitmap_weight (allowed);
  unsigned llc = largest_llc (h, allowed);
  unsigned sizes[] = { 1, 2, 3, 4, 8, llc, llc + 1, n_allowed / 2, n_allowed, n_allowed + 1 };
  for (size_t i = 0; i < CP_ARRAY_SIZE (sizes); i++)
    {
      bool dup = sizes[i] == 0;
      for (size_t j = 0; j < i; j++)
        dup = dup || sizes[j] == sizes[i];
      if (dup)
        continue;
      for (size_t a = 0; a < CP_ARRAY_SIZE (all_align); a++)
        for (size_t m = 0; m < CP_ARRAY_SIZE (all_smt); m++)
          {
            struct cp_request req = tu_req (sizes[i], all_align[a], all_smt[m], CP_MODE_EXCLUSIVE, false);
            cp_plan_free (run_exclusive (s, topo, &req, what, st));
            if (all_align[a] == CP_LEVEL_LLC)
              {
                req.strict = true;
                cp_plan_free (run_exclusive (s, topo, &req, what, st));
              }
          }
    }
  for (size_t a = 0; a < CP_ARRAY_SIZE (all_align); a++)
    for (size_t m = 0; m < CP_ARRAY_SIZE (all_smt); m++)
      run_shared (s, topo, all_smt[m], all_align[a], what, st);
  scene_clear (&sc);
}

/* Place NEED again and again, holding what each plan holds, until refused; the
   refusal must be justified, and every plan must pass the checks on the way. */
static void
run_sequence (const struct hw *h, const struct cp_topo *topo, hwloc_const_bitmap_t allowed, unsigned need,
              enum cp_smt smt, enum cp_level align, struct stats *st)
{
  hwloc_bitmap_t occupied = hwloc_bitmap_alloc ();
  unsigned steps = 0, limit = (unsigned) hwloc_bitmap_weight (allowed) + 1;
  for (;;)
    {
      struct scene sc;
      scene_init (&sc, h, allowed, occupied);
      struct cp_request req = tu_req (need, align, smt, CP_MODE_EXCLUSIVE, false);
      char what[64];
      snprintf (what, sizeof what, "sequence step %u", steps);
      struct cp_plan *plan = run_exclusive (&sc, topo, &req, what, st);
      scene_clear (&sc);
      if (plan == NULL)
        break;
      hwloc_bitmap_or (occupied, occupied, plan->held);
      cp_plan_free (plan);
      assert_true (++steps <= limit);
    }
  hwloc_bitmap_free (occupied);
}

/* Every invariant above, on one topology: SOURCE (a file or a synthetic description)
   named NAME; its counts added to TOTAL. */
static void
check_topology (const char *source, const char *name, struct stats *total)
{
  struct hw h;
  hw_load (&h, source, name);
  cleanup_topo struct cp_topo *topo = tu_topo (source);
  tu_assert_full_load_model (topo, h.topo, name); /* hw_load() loads everything */
  struct stats st = { 0 };

  hwloc_bitmap_t none = hwloc_bitmap_alloc ();
  /* every 3rd core held */
  hwloc_bitmap_t third = hwloc_bitmap_alloc ();
  for (unsigned c = 0; c < h.n_cores; c += 3)
    hwloc_bitmap_or (third, third, h.cores[c]);
  /* allowed without the first thread of every 4th core (and so PE0s move), and
     on SMT-less machines without every 4th core */
  hwloc_bitmap_t cut = hwloc_bitmap_dup (h.allowed);
  for (unsigned c = 0; c < h.n_cores; c += 4)
    hwloc_bitmap_clr (cut, (unsigned) hwloc_bitmap_first (h.cores[c]));

  run_grid (&h, topo, h.allowed, none, "nothing occupied", &st);
  run_grid (&h, topo, h.allowed, third, "every 3rd core occupied", &st);
  run_grid (&h, topo, cut, third, "first thread of every 4th core not allowed, every 3rd core occupied", &st);
  unsigned llc = largest_llc (&h, h.allowed);
  for (size_t m = 0; m < CP_ARRAY_SIZE (all_smt); m++)
    {
      run_sequence (&h, topo, h.allowed, 3, all_smt[m], CP_LEVEL_LLC, &st);
      run_sequence (&h, topo, h.allowed, llc > 1 ? llc / 2 + 1 : 1, all_smt[m], CP_LEVEL_LLC, &st);
      run_sequence (&h, topo, cut, 2, all_smt[m], CP_LEVEL_NUMA, &st);
    }
  print_message ("%-55s %5lu cases: %5lu placed (%lu split), %5lu refused\n", name, st.cases, st.placed,
                 st.spilled, st.refused);
  total->cases += st.cases;
  total->placed += st.placed;
  total->refused += st.refused;
  total->spilled += st.spilled;
  hwloc_bitmap_free (none);
  hwloc_bitmap_free (third);
  hwloc_bitmap_free (cut);
  hw_free (&h);
}

/* The same checks on shapes every clone has (no ../shared): the numberings and
   levels the engine must not derive by arithmetic (docs/placement.md), as hwloc's
   synthetic descriptions. */
static void
test_synthetic_shapes (void **state)
{
  (void) state;
  static const char *const shapes[] = {
    /* EPYC-like: L3s of 4 cores, SMT2 numbered N and N+ncores */
    "package:2 l3cache:2 core:4 pu:2(indexes=core)",
    /* adjacent siblings, NUMA nodes inside a package, one L2 per two cores */
    "package:2 numa:2 l3cache:1 l2cache:2 core:2 pu:2",
    /* SMT4 in one L3 */
    "package:1 l3cache:1 core:4 pu:4",
    /* no SMT, no L3: the L2 is the last level */
    "package:2 l2cache:3 core:2 pu:1",
    /* no cache at all */
    "package:2 core:3 pu:2",
  };
  struct stats total = { 0 };
  for (size_t i = 0; i < CP_ARRAY_SIZE (shapes); i++)
    check_topology (shapes[i], shapes[i], &total);
  assert_true (total.placed > 0);
  assert_true (total.refused > 0);
}

static void
test_captured_every_topology (void **state)
{
  (void) state;
  const char *dir;
  size_t n_files;
  char **files = tu_captured_xml (&dir, &n_files);
  struct stats total = { 0 };
  clock_t start = clock ();
  for (size_t f = 0; f < n_files; f++)
    {
      check_topology (files[f], files[f] + strlen (dir) + 1, &total);
      free (files[f]);
    }
  free (files);
  print_message ("%zu topologies, %lu (topology, request) cases: %lu placed (%lu split), %lu refused, %.1f s CPU\n",
                 n_files, total.cases, total.placed, total.spilled, total.refused,
                 (double) (clock () - start) / CLOCKS_PER_SEC);
  assert_true (total.placed > 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_synthetic_shapes),
    cmocka_unit_test (test_captured_every_topology),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
