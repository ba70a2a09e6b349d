/* The placement engine (policy/placement.c) on synthetic topologies.
 *
 * Every expected plan below was worked out by hand from the topology description
 * and the rules in placement.h / docs: the comments give the reasoning.
 *
 *   AMD  = "package:2 l3cache:4 core:4 pu:2(indexes=core)": core i = {i, i+32},
 *          L3#j = cores 4j..4j+3 = CPUs 4j..4j+3 and 32+4j..32+4j+3, 8 L3s, 4 per package.
 *   ADJ  = "package:2 l3cache:2 core:4 pu:2": core i = {2i, 2i+1}, L3#j = CPUs 8j..8j+7,
 *          package p = CPUs 16p..16p+15, one NUMA node for the machine.
 *   NUMA = "package:2 numa:2 l3cache:2 core:2 pu:2": core i = {2i, 2i+1}, L3#m = 4m..4m+3,
 *          NUMA node k = CPUs 8k..8k+7, package p = 16p..16p+15.
 *   L2   = "package:1 l3cache:2 l2cache:2 core:2 pu:2": L3#j = 8j..8j+7, L2#k = 4k..4k+3.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "util.h"

#define AMD "package:2 l3cache:4 core:4 pu:2(indexes=core)"
#define ADJ "package:2 l3cache:2 core:4 pu:2"
#define NUMA "package:2 numa:2 l3cache:2 core:2 pu:2"
#define L2T "package:1 l3cache:2 l2cache:2 core:2 pu:2"

#define EXCL CP_MODE_EXCLUSIVE
#define SHARED CP_MODE_SHARED

/* "llc0=0-3 llc2=8-9": the plan's domains, level name, index and CPUs. */
static char *
domains_string (const struct cp_plan *p)
{
  char *s = cp_xstrdup ("");
  for (size_t i = 0; i < p->n_domains; i++)
    {
      char *cpus = cp_cpulist_format (p->domains[i].cpus);
      char *next = cp_xasprintf ("%s%s%s%u=%s", s, i ? " " : "", cp_align_name (p->domains[i].level),
                                 p->domains[i].index, cpus);
      free (cpus);
      free (s);
      s = next;
    }
  return s;
}

/* The plan is exactly CPUS / HELD / MEMS / DOMAINS, split when more than one
   domain; and the cheap consistency every plan must have. */
#define expect_plan(p, cpus, held, mems, domains) expect_plan_ (p, cpus, held, mems, domains, __FILE__, __LINE__)
static void
expect_plan_ (const struct cp_plan *p, const char *cpus, const char *held, const char *mems, const char *domains,
              const char *file, int line)
{
  tu_assert_set_ (p->cpus, cpus, file, line);
  tu_assert_set_ (p->held, held, file, line);
  tu_assert_set_ (p->mems, mems, file, line);
  char *d = domains_string (p);
  if (strcmp (d, domains) != 0)
    {
      print_error ("%s:%d: domains `%s`, expected `%s` (%s)\n", file, line, d, domains, p->reason);
      free (d);
      _fail (file, line);
    }
  free (d);
  assert_int_equal (p->split, p->n_domains > 1);
  assert_non_null (p->reason);
  assert_null (strchr (p->reason, '\n'));
  /* the domains' CPUs partition the plan's CPUs */
  hwloc_bitmap_t u = hwloc_bitmap_alloc ();
  for (size_t i = 0; i < p->n_domains; i++)
    {
      assert_false (hwloc_bitmap_iszero (p->domains[i].cpus));
      assert_false (hwloc_bitmap_intersects (u, p->domains[i].cpus));
      hwloc_bitmap_or (u, u, p->domains[i].cpus);
    }
  assert_true (hwloc_bitmap_isequal (u, p->cpus));
  hwloc_bitmap_free (u);
}

static struct cp_plan *
place (const struct cp_topo *t, const char *allowed, const char *held, unsigned cpus, enum cp_level align,
       enum cp_smt smt)
{
  struct cp_request r = tu_req (cpus, align, smt, EXCL, false);
  return tu_place (t, allowed, held, &r);
}

/* ---- smt=pe0 -------------------------------------------------------------------- */

static void
test_pe0 (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  /* Every L3 has 4 free cores; best fit ties go to L3#0.  One thread per core, the
     siblings (N+32) held idle. */
  struct cp_plan *p = place (amd, NULL, NULL, 3, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0-2", "0-2,32-34", "0", "llc0=0-2");
  assert_int_equal (p->mode, EXCL);
  tu_assert_contains (p->reason, "one PE0 thread on each of 3 cores");
  cp_plan_free (p);

  /* 4 = a whole L3's cores */
  p = place (amd, NULL, NULL, 4, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0-3", "0-3,32-35", "0", "llc0=0-3");
  cp_plan_free (p);

  /* A core with a held sibling is not free under pe0: with 33 (core 1's sibling)
     held, L3#0 has 3 free cores: 3 CPUs fit there exactly (best fit). */
  p = place (amd, NULL, "33", 3, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0,2-3", "0,2-3,32,34-35", "0", "llc0=0,2-3");
  cp_plan_free (p);

  /* PE0 moves to the sibling when the first thread is not allowed: allowed without
     0 and 1 gives core 0 -> 32 and core 1 -> 33.  The held set is the allowed
     threads of the cores (only the siblings there). */
  p = place (amd, "2-63", NULL, 4, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "2-3,32-33", "2-3,32-35", "0", "llc0=2-3,32-33");
  cp_plan_free (p);

  /* Adjacent numbering: PE0s are the even CPUs. */
  cleanup_topo struct cp_topo *adj = tu_topo (ADJ);
  p = place (adj, NULL, NULL, 4, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0,2,4,6", "0-7", "0", "llc0=0,2,4,6");
  cp_plan_free (p);
  /* 5 PE0s: no L3 has 5 cores -> two L3s of package 0, the whole L3#0 (4 cores)
     and the remainder 1 in L3#1. */
  p = place (adj, NULL, NULL, 5, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0,2,4,6,8", "0-9", "0", "llc0=0,2,4,6 llc1=8");
  cp_plan_free (p);
}

/* ---- smt=pe0-first ----------------------------------------------------------------- */

static void
test_pe0_first_tiers (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  /* PE0s of the 4 cores first (0-3), then siblings of those cores in core order. */
  struct cp_plan *p = place (amd, NULL, NULL, 6, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0-3,32-33", "0-3,32-33", "0", "llc0=0-3,32-33");
  tu_assert_contains (p->reason, "4 PE0 threads, 2 other threads");
  cp_plan_free (p);

  /* Held 1: L3#0 has cores 0,2,3 free and 33 as a leftover (7 free CPUs).
     5 CPUs: every L3 needs siblings (L3#0 has 3 PE0s, the others 4), so best fit
     decides: L3#0 leaves 2, the others 3.  PE0s 0,2,3, then siblings of the free
     cores 32,34; the leftover 33 is not needed. */
  p = place (amd, NULL, "1", 5, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0,2-3,32,34", "0,2-3,32,34", "0", "llc0=0,2-3,32,34");
  cp_plan_free (p);
  /* 7 CPUs: tiers PE0 (0,2,3), siblings (32,34,35), leftovers (33). */
  p = place (amd, NULL, "1", 7, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0,2-3,32-35", "0,2-3,32-35", "0", "llc0=0,2-3,32-35");
  cp_plan_free (p);
  /* 4 CPUs: L3#0 could hold them but only with a sibling; L3#1 fits them on PE0s. */
  p = place (amd, NULL, "1", 4, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "4-7", "4-7", "0", "llc1=4-7");
  cp_plan_free (p);
  /* 3 CPUs fit on L3#0's PE0s and leave it fuller than an empty L3. */
  p = place (amd, NULL, "1", 3, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0,2-3", "0,2-3", "0", "llc0=0,2-3");
  cp_plan_free (p);

  /* Spill under pe0-first: 20 CPUs on AMD: two whole L3s hold 16, so three L3s of
     package 0; PE0s of the 12 cores (0-11) first, then siblings in core order. */
  p = place (amd, NULL, NULL, 20, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0-11,32-39", "0-11,32-39", "0", "llc0=0-3,32-35 llc1=4-7,36-39 llc2=8-11");
  cp_plan_free (p);
}

/* ---- smt=cores ------------------------------------------------------------------------- */

static void
test_cores (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  struct cp_plan *p = place (amd, NULL, NULL, 4, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "0-1,32-33", "0-1,32-33", "0", "llc0=0-1,32-33");
  tu_assert_contains (p->reason, "whole cores");
  cp_plan_free (p);
  /* a core with a held thread is skipped: 32 held -> cores 1,2 */
  p = place (amd, NULL, "32", 4, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "1-2,33-34", "1-2,33-34", "0", "llc0=1-2,33-34");
  cp_plan_free (p);
  /* with core 0 half allowed, its one allowed thread is a whole core of 1:
     allowed 0-31,33-63 -> core 1 = {1}; 3 CPUs = core 0 {0,32} + core 1 {1} */
  p = place (amd, "0-32,34-63", NULL, 3, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "0-1,32", "0-1,32", "0", "llc0=0-1,32");
  cp_plan_free (p);

  /* An odd count on SMT2 cannot be whole cores, whatever is free: a malformed
     request for this machine, named as such (it was "only 64 usable CPUs are
     free", unsatisfiable). */
  struct cp_request r = tu_req (3, CP_LEVEL_LLC, CP_SMT_CORES, EXCL, false);
  char *msg = tu_place_fail (amd, NULL, NULL, &r, CP_ERR_INPUT);
  assert_string_equal (msg, "smt=cores takes whole cores, of 2 threads here: 3 CPUs is not a multiple of 2");
  free (msg);
  r.strict = true;
  r.cpus = 1;
  msg = tu_place_fail (amd, NULL, "0-31", &r, CP_ERR_INPUT);
  assert_string_equal (msg, "smt=cores takes whole cores, of 2 threads here: 1 CPU is not a multiple of 2");
  free (msg);
  /* SMT4 cut by the allowed set to cores of 2 and 4: a multiple of 2 is needed */
  cleanup_topo struct cp_topo *smt4 = tu_topo ("package:1 core:4 pu:4");
  r = tu_req (3, CP_LEVEL_LLC, CP_SMT_CORES, EXCL, false);
  msg = tu_place_fail (smt4, "0-1,4-15", NULL, &r, CP_ERR_INPUT);
  assert_string_equal (msg, "smt=cores takes whole cores, of 2 or 4 threads here: 3 CPUs is not a multiple of 2");
  free (msg);
  /* ... and where the widths' gcd divides the count but no set adds up to it:
     cores of 2, 2 and 3 threads make 2, 3, 4, 5, 7, never 6 */
  cleanup_topo struct cp_topo *smt3 = tu_topo ("package:1 core:3 pu:3");
  r.cpus = 6;
  msg = tu_place_fail (smt3, "0-1,3-4,6-8", NULL, &r, CP_ERR_INPUT);
  assert_string_equal (msg, "smt=cores takes whole cores, of 2 or 3 threads here: no set of them has exactly 6 CPUs");
  free (msg);
  r.cpus = 7;
  p = tu_place (smt3, "0-1,3-4,6-8", NULL, &r);
  expect_plan (p, "0-1,3-4,6-8", "0-1,3-4,6-8", "0", "llc0=0-1,3-4,6-8");
  cp_plan_free (p);
  /* A count some set of allowed cores could make, but the free ones cannot, is
     the host's capacity: unsatisfiable.  Cores of 1 (core 0 cut to {0}) and 2:
     1 CPU fits on core 0 alone, which someone holds. */
  r = tu_req (1, CP_LEVEL_LLC, CP_SMT_CORES, EXCL, false);
  msg = tu_place_fail (amd, "0-31,33-63", "0", &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "cannot place 1 CPU");
  free (msg);
  /* Cores of 1 and 2 allowed threads: 2 CPUs are the 2-thread core 1 {1,33}, not
     core 0's lone allowed thread 0 plus nothing (a greedy pass would stop at 1). */
  p = place (amd, "0-31,33-63", NULL, 2, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "1,33", "1,33", "0", "llc0=1,33");
  cp_plan_free (p);
  /* ... and on adjacent numbering with core 0 = {1} only: 4 = cores 1 and 2 */
  cleanup_topo struct cp_topo *adj = tu_topo (ADJ);
  p = place (adj, "1-31", NULL, 4, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "2-5", "2-5", "0", "llc0=2-5");
  cp_plan_free (p);
  /* 5 = core 0's 1 + cores 1 and 2 (the first exact set in core order) */
  p = place (adj, "1-31", NULL, 5, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "1-5", "1-5", "0", "llc0=1-5");
  cp_plan_free (p);
  /* Spilling whole cores must come out exact too.  L2T, 8 not allowed (core 4 =
     {9}), cores 1, 3, 5 held: L2#0 {0,1}, L2#1 {4,5}, L2#2 {9}, L2#3 {12,13}
     {14,15}.  No single L2 makes 3 from whole cores (L2#3 has 2+2); the fewest by
     capacity would be L2#3 alone, which cannot; L3#0's two L2s give only 2+2; L3#1's
     L2#2 + L2#3 give 1+2. */
  cleanup_topo struct cp_topo *l2t = tu_topo (L2T);
  p = place (l2t, "0-7,9-15", "2-3,6-7,10-11", 3, CP_LEVEL_L2, CP_SMT_CORES);
  expect_plan (p, "9,12-13", "9,12-13", "0", "l22=9 l23=12-13");
  cp_plan_free (p);
  /* whole cores spilling: 10 CPUs = 5 cores, L3#0 whole + 1 core of L3#1 */
  p = place (amd, NULL, NULL, 10, CP_LEVEL_LLC, CP_SMT_CORES);
  expect_plan (p, "0-4,32-36", "0-4,32-36", "0", "llc0=0-3,32-35 llc1=4,36");
  cp_plan_free (p);
}

/* ---- smt=any ----------------------------------------------------------------------- */

static void
test_any (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *adj = tu_topo (ADJ);
  struct cp_plan *p = place (adj, NULL, NULL, 3, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-2", "0-2", "0", "llc0=0-2");
  tu_assert_contains (p->reason, "2 PE0 threads, 1 other thread");
  tu_assert_contains (p->reason, "exclusive: 3 CPUs on");
  cp_plan_free (p);
  /* threads in core order, held ones skipped: 0 held -> 1,2,3 */
  p = place (adj, NULL, "0", 3, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "1-3", "1-3", "0", "llc0=1-3");
  cp_plan_free (p);
  /* a whole L3 */
  p = place (adj, NULL, NULL, 8, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-7", "0-7", "0", "llc0=0-7");
  cp_plan_free (p);
}

/* ---- align ---------------------------------------------------------------------------- */

static void
test_align_l2 (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (L2T);
  /* pe0-first 2: the first L2's two PE0s */
  struct cp_plan *p = place (t, NULL, NULL, 2, CP_LEVEL_L2, CP_SMT_PE0_FIRST);
  expect_plan (p, "0,2", "0,2", "0", "l20=0,2");
  cp_plan_free (p);
  /* 0 held: L2#0 would need a sibling, L2#1 fits on PE0s */
  p = place (t, NULL, "0", 2, CP_LEVEL_L2, CP_SMT_PE0_FIRST);
  expect_plan (p, "4,6", "4,6", "0", "l21=4,6");
  cp_plan_free (p);
  /* pe0 4: no L2 has 4 cores; the two L2s of L3#0 (a tighter group than the package) */
  p = place (t, NULL, NULL, 4, CP_LEVEL_L2, CP_SMT_PE0);
  expect_plan (p, "0,2,4,6", "0-7", "0", "l20=0,2 l21=4,6");
  assert_true (p->split);
  cp_plan_free (p);
  /* with L2#1 full, the two L2s that hold 4 PE0s in one L3 are in L3#1 */
  p = place (t, NULL, "4-7", 4, CP_LEVEL_L2, CP_SMT_PE0);
  expect_plan (p, "8,10,12,14", "8-15", "0", "l22=8,10 l23=12,14");
  cp_plan_free (p);
}

static void
test_align_numa (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (NUMA);
  /* 5 CPUs pe0-first: node 0 (4 cores): PE0s 0,2,4,6 + sibling 1 */
  struct cp_plan *p = place (t, NULL, NULL, 5, CP_LEVEL_NUMA, CP_SMT_PE0_FIRST);
  expect_plan (p, "0-2,4,6", "0-2,4,6", "0", "numa0=0-2,4,6");
  cp_plan_free (p);
  /* node 0 full: node 1, mems 1 */
  p = place (t, NULL, "0-7", 5, CP_LEVEL_NUMA, CP_SMT_PE0_FIRST);
  expect_plan (p, "8-10,12,14", "8-10,12,14", "1", "numa1=8-10,12,14");
  cp_plan_free (p);
  /* 12 any: no node holds it: nodes 0 and 1 (package 0), mems 0-1 */
  p = place (t, NULL, NULL, 12, CP_LEVEL_NUMA, CP_SMT_ANY);
  expect_plan (p, "0-11", "0-11", "0-1", "numa0=0-7 numa1=8-11");
  cp_plan_free (p);
}

static void
test_align_package_and_none (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  /* 10 PE0s: a package has 8 cores: both packages, remainder 2 in package 1 */
  struct cp_plan *p = place (t, NULL, NULL, 10, CP_LEVEL_PACKAGE, CP_SMT_PE0);
  expect_plan (p, "0,2,4,6,8,10,12,14,16,18", "0-19", "0", "package0=0,2,4,6,8,10,12,14 package1=16,18");
  cp_plan_free (p);
  /* 6 any with package 0 partly held: best fit is package 0 (10 free) */
  p = place (t, NULL, "0-5", 6, CP_LEVEL_PACKAGE, CP_SMT_ANY);
  expect_plan (p, "6-11", "6-11", "0", "package0=6-11");
  cp_plan_free (p);
  /* align=none: the machine as one domain */
  p = place (t, NULL, NULL, 10, CP_LEVEL_MACHINE, CP_SMT_PE0);
  expect_plan (p, "0,2,4,6,8,10,12,14,16,18", "0-19", "0", "none0=0,2,4,6,8,10,12,14,16,18");
  assert_false (p->split);
  cp_plan_free (p);
  /* there is nothing to spill to from the machine */
  struct cp_request r = tu_req (17, CP_LEVEL_MACHINE, CP_SMT_PE0, EXCL, false);
  char *msg = tu_place_fail (t, NULL, NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "17 CPUs");
  free (msg);
}

/* ---- best fit ---------------------------------------------------------------------------- */

static void
test_best_fit (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  /* L3#0 half used (0-3 held): 2 CPUs fit there and keep empty L3s whole. */
  struct cp_plan *p = place (t, NULL, "0-3", 2, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "4-5", "4-5", "0", "llc0=4-5");
  cp_plan_free (p);
  p = place (t, NULL, "0-3", 2, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "4,6", "4,6", "0", "llc0=4,6");
  cp_plan_free (p);
  /* 3 under pe0-first: L3#0 has 2 PE0s left, an empty L3 fits 3 on PE0s. */
  p = place (t, NULL, "0-3", 3, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "8,10,12", "8,10,12", "0", "llc1=8,10,12");
  cp_plan_free (p);
  /* ... but under any it is best fit alone: L3#0 (4 free) leaves 1. */
  p = place (t, NULL, "0-3", 3, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "4-6", "4-6", "0", "llc0=4-6");
  cp_plan_free (p);
  /* The tightest of several partial domains: L3#1 has 3 free, L3#2 has 5. */
  p = place (t, NULL, "0-7,8-12,16-18", 3, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "13-15", "13-15", "0", "llc1=13-15");
  cp_plan_free (p);
  /* too big for the partial ones: the first empty one */
  p = place (t, NULL, "0-7,8-12,16-18", 6, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "24-29", "24-29", "0", "llc3=24-29");
  cp_plan_free (p);
}

/* ---- spill ------------------------------------------------------------------------------ */

static void
test_spill (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  const char *pkg0 = "0-15,32-47";
  /* Package 0 only; L3#1 has core 4 held (6 free), L3#2 cores 8,9 (4 free), L3#3
     core 12 (6 free).  12 CPUs: L3#0 whole (8), remainder 4 in the smallest that
     holds it: L3#2. */
  struct cp_plan *p = place (amd, pkg0, "4,36,8-9,40-41,12,44", 12, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-3,10-11,32-35,42-43", "0-3,10-11,32-35,42-43", "0", "llc0=0-3,32-35 llc2=10-11,42-43");
  assert_true (p->split);
  cp_plan_free (p);
  /* Same without L3#2's load: the remainder 4 goes to the lowest-index of the
     smallest that hold it, L3#1 (6 free) rather than L3#3 (6 free). */
  p = place (amd, pkg0, "4,36,12,44", 12, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-3,5-6,32-35,37-38", "0-3,5-6,32-35,37-38", "0", "llc0=0-3,32-35 llc1=5-6,37-38");
  cp_plan_free (p);
  /* Whole free domains first: 16 = L3#0 and L3#2, both whole */
  p = place (amd, pkg0, "4,36,12,44", 16, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-3,8-11,32-35,40-43", "0-3,8-11,32-35,40-43", "0", "llc0=0-3,32-35 llc2=8-11,40-43");
  cp_plan_free (p);

  /* Tighter group: package before machine.  ADJ with L3#0 full: 12 CPUs fit in
     two L3s both in package 1 (16-27), or across packages in L3#1+L3#2 (8-19). */
  cleanup_topo struct cp_topo *adj = tu_topo (ADJ);
  p = place (adj, NULL, "0-7", 12, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "16-27", "16-27", "0", "llc2=16-23 llc3=24-27");
  cp_plan_free (p);

  /* NUMA node before package: 6 pe0-first on NUMA: two L3s of node 0 */
  cleanup_topo struct cp_topo *numa = tu_topo (NUMA);
  p = place (numa, NULL, NULL, 6, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "0-4,6", "0-4,6", "0", "llc0=0-3 llc1=4,6");
  cp_plan_free (p);
  /* node 0 has 2 free CPUs left (0-5 held): 6 go to node 1, not 2 + 4 across */
  p = place (numa, NULL, "0-5", 6, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "8-13", "8-13", "1", "llc2=8-11 llc3=12-13");
  cp_plan_free (p);

  /* Fewest domains wins over tightness: 3 L3s in one node is impossible (2 per
     node), so 10 CPUs on NUMA take 3 L3s inside package 0. */
  p = place (numa, NULL, NULL, 10, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "0-9", "0-9", "0-1", "llc0=0-3 llc1=4-7 llc2=8-9");
  cp_plan_free (p);
}

/* ---- refusals ------------------------------------------------------------------------- */

static void
test_strict (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  struct cp_request r = tu_req (10, CP_LEVEL_LLC, CP_SMT_ANY, EXCL, true);
  char *msg = tu_place_fail (t, NULL, NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "cannot place 10 CPUs");
  tu_assert_contains (msg, "inside one L3");
  tu_assert_contains (msg, "most any has free is 8");
  tu_assert_contains (msg, "strict");
  free (msg);
  /* strict, and it fits: fine */
  r.cpus = 8;
  struct cp_plan *p = tu_place (t, NULL, NULL, &r);
  expect_plan (p, "0-7", "0-7", "0", "llc0=0-7");
  cp_plan_free (p);
  /* strict where only a partial L3 is left */
  r.cpus = 3;
  msg = tu_place_fail (t, NULL, "0-5,8-13,16-21,24-29", &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "most any has free is 2");
  free (msg);
  /* strict on a host with too few free CPUs anywhere: the line names that limit,
     as the non-strict one does, not the L3 nor strictness */
  msg = tu_place_fail (t, NULL, "0-30", &r, CP_ERR_UNSATISFIABLE);
  assert_string_equal (msg, "cannot place 3 CPUs (smt=any, mode=exclusive): only 1 usable CPU is free");
  free (msg);
  r.strict = false;
  char *loose = tu_place_fail (t, NULL, "0-30", &r, CP_ERR_UNSATISFIABLE);
  assert_string_equal (loose, "cannot place 3 CPUs (smt=any, mode=exclusive): only 1 usable CPU is free");
  free (loose);
}

static void
test_input_errors (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  struct cp_request r = tu_req (0, CP_LEVEL_LLC, CP_SMT_ANY, EXCL, false);
  char *msg = tu_place_fail (t, NULL, NULL, &r, CP_ERR_INPUT);
  tu_assert_contains (msg, "cpus");
  tu_assert_contains (msg, "exclusive");
  free (msg);
  /* More than this host allows: a well-formed request the host cannot meet,
     unsatisfiable where cp_place makes the error (hook/engine/placer.c used to rewrite
     the kind after the fact). */
  r.cpus = 33;
  msg = tu_place_fail (t, NULL, NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "33 is more than the 32 CPUs allowed (CPUs 0-31)");
  free (msg);
  /* more than allowed, not than online */
  r.cpus = 5;
  msg = tu_place_fail (t, "0-3", NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "5 is more than the 4 CPUs allowed (CPUs 0-3)");
  free (msg);
  /* shared mode too */
  r.mode = SHARED;
  msg = tu_place_fail (t, "0-3", NULL, &r, CP_ERR_UNSATISFIABLE);
  free (msg);
  /* an allowed set with no online CPU */
  r.mode = EXCL;
  r.cpus = 1;
  msg = tu_place_fail (t, "40-41", NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "no allowed CPU");
  free (msg);
  /* within the allowed count but not free: unsatisfiable, with the free count */
  r.cpus = 8;
  msg = tu_place_fail (t, NULL, "0-27", &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "only 4 usable CPUs are free");
  free (msg);
  /* one: the singular, in the refusal and in the count */
  r.cpus = 2;
  msg = tu_place_fail (t, "0", NULL, &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "2 is more than the 1 CPU allowed (CPU 0)");
  free (msg);
  msg = tu_place_fail (t, "0-1", "1", &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "only 1 usable CPU is free");
  free (msg);
  /* pe0: 16 cores, 17 PE0s cannot be had */
  r = tu_req (17, CP_LEVEL_LLC, CP_SMT_PE0, EXCL, false);
  msg = tu_place_fail (t, NULL, NULL, &r, CP_ERR_UNSATISFIABLE);
  free (msg);
}

/* ---- shared mode --------------------------------------------------------------------------- */

static struct cp_plan *
place_shared (const struct cp_topo *t, const char *held, const char *const *shared, size_t n_shared, unsigned cpus,
              enum cp_smt smt)
{
  hwloc_bitmap_t h = held ? tu_set (held) : NULL;
  hwloc_bitmap_t sets[8];
  assert_true (n_shared <= 8);
  for (size_t i = 0; i < n_shared; i++)
    sets[i] = tu_set (shared[i]);
  struct cp_usage usage = { .held = h, .shared = (const hwloc_const_bitmap_t *) sets, .n_shared = n_shared };
  struct cp_request r = tu_req (cpus, CP_LEVEL_LLC, smt, SHARED, false);
  struct cp_plan *p = NULL;
  cp_error_t err = NULL;
  if (cp_place (t, NULL, NULL, &usage, &r, &p, &err) < 0)
    fail_msg ("shared placement: %s", cp_error_message (err));
  for (size_t i = 0; i < n_shared; i++)
    hwloc_bitmap_free (sets[i]);
  hwloc_bitmap_free (h);
  assert_int_equal (p->mode, SHARED);
  assert_true (hwloc_bitmap_iszero (p->held));
  return p;
}

static void
test_shared (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  /* nothing used: the whole first L3 */
  struct cp_plan *p = place_shared (t, NULL, NULL, 0, 0, CP_SMT_ANY);
  expect_plan (p, "0-7", "", "0", "llc0=0-7");
  tu_assert_contains (p->reason, "least loaded");
  cp_plan_free (p);
  /* held 0-1 (load 2/8 on L3#0), a shared container on all of L3#1 (8/8):
     L3#2 and L3#3 are empty; the lowest index wins */
  static const char *const s1[] = { "8-15" };
  p = place_shared (t, "0-1", s1, 1, 0, CP_SMT_ANY);
  expect_plan (p, "16-23", "", "0", "llc2=16-23");
  cp_plan_free (p);
  /* loads 2/8, 8/8, 2/8, 3/8: L3#0 and L3#2 tie; L3#0, its free CPUs only */
  static const char *const s2[] = { "8-15", "16-17", "24-26" };
  p = place_shared (t, "0-1", s2, 3, 0, CP_SMT_ANY);
  expect_plan (p, "2-7", "", "0", "llc0=2-7");
  cp_plan_free (p);
  /* two shared containers overlapping the same CPUs both count */
  static const char *const s3[] = { "0-3", "0-3", "8-12", "16-20", "24-28" };
  p = place_shared (t, NULL, s3, 5, 0, CP_SMT_ANY);
  expect_plan (p, "8-15", "", "0", "llc1=8-15"); /* 5/8 against 8/8 on L3#0 and 5/8 later */
  cp_plan_free (p);
  /* smt=pe0: the PE0s of the domain only (0 held: core 0 gives nothing) */
  p = place_shared (t, "0", NULL, 0, 0, CP_SMT_PE0);
  expect_plan (p, "8,10,12,14", "", "0", "llc1=8,10,12,14"); /* L3#0 has load 1/8, L3#1 0/8 */
  cp_plan_free (p);
  p = place_shared (t, "0,8,16,24", NULL, 0, 0, CP_SMT_PE0);
  expect_plan (p, "2,4,6", "", "0", "llc0=2,4,6");
  cp_plan_free (p);
  /* smt=cores: the whole free cores */
  p = place_shared (t, "1,8,16,24", NULL, 0, 0, CP_SMT_CORES);
  expect_plan (p, "2-7", "", "0", "llc0=2-7");
  cp_plan_free (p);
  /* cpus in shared mode: the least loaded domain with room for them */
  p = place_shared (t, "0-5", NULL, 0, 3, CP_SMT_ANY);
  expect_plan (p, "8-15", "", "0", "llc1=8-15");
  cp_plan_free (p);
  /* ... and more than a domain: whole domains, spilled like exclusive requests */
  p = place_shared (t, NULL, NULL, 0, 12, CP_SMT_ANY);
  expect_plan (p, "0-15", "", "0", "llc0=0-7 llc1=8-15");
  cp_plan_free (p);
}

/* ---- allowed, occupied, determinism, mems ------------------------------------------------- */

static void
test_allowed_and_occupied (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (ADJ);
  /* allowed 1-3,5,8-15: L3#0 offers PE0s 1 (core 0), 2, 5 (core 2), none on core 3;
     held are the cores' allowed threads (4 is not allowed) */
  struct cp_plan *p = place (t, "1-3,5,8-15", NULL, 3, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "1-2,5", "1-3,5", "0", "llc0=1-2,5");
  cp_plan_free (p);
  p = place (t, "1-3,5,8-15", NULL, 4, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "8,10,12,14", "8-15", "0", "llc1=8,10,12,14");
  cp_plan_free (p);
  /* held CPUs outside allowed do not matter; inside they are never chosen */
  p = place (t, "4-11", "0-3,5,9", 4, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "4,6-8", "4,6-8", "0", "llc0=4,6-7 llc1=8");
  cp_plan_free (p);
  /* every CPU but one held: that one */
  p = place (t, NULL, "0-12,14-31", 1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST);
  expect_plan (p, "13", "13", "0", "llc1=13");
  cp_plan_free (p);
  /* ... but not under pe0: 13's core has 12 held */
  struct cp_request r = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0, EXCL, false);
  char *msg = tu_place_fail (t, NULL, "0-12,14-31", &r, CP_ERR_UNSATISFIABLE);
  free (msg);
}

static void
test_determinism (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (AMD);
  static const enum cp_smt smts[] = { CP_SMT_PE0_FIRST, CP_SMT_PE0, CP_SMT_CORES, CP_SMT_ANY };
  for (size_t s = 0; s < CP_ARRAY_SIZE (smts); s++)
    for (unsigned cpus = 2; cpus <= 24; cpus += 2)
      {
        struct cp_plan *a = place (t, NULL, "5,40-43", cpus, CP_LEVEL_LLC, smts[s]);
        struct cp_plan *b = place (t, NULL, "5,40-43", cpus, CP_LEVEL_LLC, smts[s]);
        assert_true (hwloc_bitmap_isequal (a->cpus, b->cpus));
        assert_true (hwloc_bitmap_isequal (a->held, b->held));
        assert_true (hwloc_bitmap_isequal (a->mems, b->mems));
        assert_string_equal (a->reason, b->reason);
        char *da = domains_string (a), *db = domains_string (b);
        assert_string_equal (da, db);
        free (da);
        free (db);
        cp_plan_free (a);
        cp_plan_free (b);
      }
}

static void
test_mems (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo (NUMA);
  /* CPUs of nodes 1 and 2 -> mems 1-2 */
  struct cp_plan *p = place (t, "8-23", NULL, 16, CP_LEVEL_LLC, CP_SMT_ANY);
  tu_assert_set (p->mems, "1-2");
  cp_plan_free (p);
  /* the caller's allowed mems leave out the local node: the allowed mems instead */
  hwloc_bitmap_t mems = tu_set ("2-3");
  struct cp_request r = tu_req (2, CP_LEVEL_LLC, CP_SMT_ANY, EXCL, false);
  cp_error_t err = NULL;
  assert_int_equal (cp_place (t, NULL, mems, NULL, &r, &p, &err), 0);
  tu_assert_set (p->cpus, "0-1");
  tu_assert_set (p->mems, "2-3");
  cp_plan_free (p);
  /* local and allowed: only the allowed local one */
  hwloc_bitmap_free (mems);
  mems = tu_set ("1-3");
  r.cpus = 16;
  hwloc_bitmap_t allowed = tu_set ("0-15");
  assert_int_equal (cp_place (t, allowed, mems, NULL, &r, &p, &err), 0);
  tu_assert_set (p->mems, "1");
  cp_plan_free (p);
  hwloc_bitmap_free (allowed);
  hwloc_bitmap_free (mems);
}

/* A package without a NUMA node of its own (offline node 0): mems fall back to
   the allowed nodes. */
static void
test_captured_mems_fallback_offline_node (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/linux-offline-cpu0-node0.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  free (path);
  /* package 0 = even CPUs 4-20 (one thread per core, no node), node 1 = odd 5-19 */
  struct cp_plan *p = place (t, "4,6,8,10,12,14,16,18,20", NULL, 3, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "4,6,8", "4,6,8", "1", "llc0=4,6,8");
  cp_plan_free (p);
  /* best fit among the L3s: package 1's 8 CPUs leave fewer free than package 0's 9 */
  p = place (t, NULL, NULL, 3, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "5,7,9", "5,7,9", "1", "llc1=5,7,9");
  cp_plan_free (p);
  /* spanning both packages: node 1 is local to some of the CPUs */
  p = place (t, NULL, NULL, 12, CP_LEVEL_LLC, CP_SMT_ANY);
  tu_assert_set (p->mems, "1");
  assert_true (p->split);
  cp_plan_free (p);
  p = place (t, NULL, NULL, 3, CP_LEVEL_NUMA, CP_SMT_ANY);
  /* best fit: the 8-CPU node 1 domain over the 9-CPU fallback one */
  expect_plan (p, "5,7,9", "5,7,9", "1", "numa1=5,7,9");
  cp_plan_free (p);
}

/* Hybrid: the fastest cores first inside the chosen domain. */
static void
test_captured_hybrid_order (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/linux-nvidia-dgx-gb10.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  free (path);
  /* L3#0 = 0-9 (ties with L3#1, lowest index): 5-9 rank 2 before 0-4 rank 0 */
  struct cp_plan *p = place (t, NULL, NULL, 7, CP_LEVEL_LLC, CP_SMT_PE0);
  expect_plan (p, "0-1,5-9", "0-1,5-9", "0", "llc0=0-1,5-9");
  cp_plan_free (p);
  /* L3#1 = 10-19: 19 (rank 4), 15-18 (rank 3), then 10-14 (rank 1) */
  p = place (t, "10-19", NULL, 6, CP_LEVEL_LLC, CP_SMT_ANY);
  expect_plan (p, "10,15-19", "10,15-19", "0", "llc1=10,15-19");
  cp_plan_free (p);
}

/* smt=cores on a hybrid part: P-cores of 2 threads, E-cores of 1.  An odd count is
   well formed there (an E-core makes it up); with the E-cores held it is the host's
   capacity that fails, not the request. */
static void
test_captured_hybrid_cores (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/x86-Intel-RaptorLake-Corei7-1370P.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  free (path);
  /* P-cores {0,1} .. {10,11}, E-cores 12 .. 19 */
  struct cp_request r = tu_req (1, CP_LEVEL_LLC, CP_SMT_CORES, EXCL, false);
  struct cp_plan *p = tu_place (t, NULL, NULL, &r);
  assert_int_equal (hwloc_bitmap_weight (p->cpus), 1);
  assert_true (hwloc_bitmap_first (p->cpus) >= 12);
  cp_plan_free (p);
  r.cpus = 3;
  p = tu_place (t, NULL, NULL, &r);
  assert_int_equal (hwloc_bitmap_weight (p->cpus), 3);
  cp_plan_free (p);
  r.cpus = 1;
  char *msg = tu_place_fail (t, NULL, "12-19", &r, CP_ERR_UNSATISFIABLE);
  tu_assert_contains (msg, "cannot place 1 CPU (smt=cores");
  free (msg);
  /* the P-cores alone: 2 threads each, so an odd count is malformed there */
  msg = tu_place_fail (t, "0-11", NULL, &r, CP_ERR_INPUT);
  assert_string_equal (msg, "smt=cores takes whole cores, of 2 threads here: 1 CPU is not a multiple of 2");
  free (msg);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_pe0),
    cmocka_unit_test (test_pe0_first_tiers),
    cmocka_unit_test (test_cores),
    cmocka_unit_test (test_any),
    cmocka_unit_test (test_align_l2),
    cmocka_unit_test (test_align_numa),
    cmocka_unit_test (test_align_package_and_none),
    cmocka_unit_test (test_best_fit),
    cmocka_unit_test (test_spill),
    cmocka_unit_test (test_strict),
    cmocka_unit_test (test_input_errors),
    cmocka_unit_test (test_shared),
    cmocka_unit_test (test_allowed_and_occupied),
    cmocka_unit_test (test_determinism),
    cmocka_unit_test (test_mems),
    cmocka_unit_test (test_captured_mems_fallback_offline_node),
    cmocka_unit_test (test_captured_hybrid_order),
    cmocka_unit_test (test_captured_hybrid_cores),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
