/* `cachepin measure`'s choices and judgement (hook/engine/measure.c): the CPUs
 * cachepin would choose (one L3, PE0 first, the host config honoured: the preview's
 * placement), the spread set (one CPU per L3 in turn), the default count, the
 * refusals; the medians, quartiles and the verdict.  On hwloc synthetic topologies:
 * nothing here runs on the host's CPUs (test_workload.c does). */
#define _GNU_SOURCE
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"
#include "util.h"

/* cmocka 1.1 has no assert_near. */
#define assert_near(a, b, eps) assert_true (fabs ((double) (a) - (double) (b)) <= (eps))

/* 2 packages of 4 L3s of 4 two-thread cores; a core's threads N and N+32. */
#define EIGHT_L3 "package:2 l3cache:4 core:4 pu:2(indexes=core)"

/* The sets for CPUS (0: the default) within ALLOWED (NULL: every CPU), with
   RESERVED (NULL: none) kept back by the host config; fails the test on an error. */
static void
choose (const char *topology, unsigned cpus, const char *allowed, const char *reserved, struct cp_measure_sets *s)
{
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  if (reserved)
    hwloc_bitmap_list_sscanf (hc.reserved, reserved);
  struct cp_topo *topo = tu_topo (topology);
  cleanup_bitmap hwloc_bitmap_t usable = allowed ? tu_set (allowed) : cp_bitmap_dup (topo->online);
  struct cp_container_request creq = { .cpus_source = "--cpus" };
  cp_request_init (&creq.req);
  creq.req.cpus = cpus;
  cleanup_error cp_error_t err = NULL;
  int r = cp_measure_choose (&hc, topo, usable, &creq, s, &err);
  if (r < 0)
    fail_msg ("cp_measure_choose: %s", cp_error_message (err));
  cp_hostconfig_free (&hc);
}

/* "0,1,2,3": CPUS[0..N-1] in order, into a static buffer. */
static const char *
list (const unsigned *cpus, unsigned n)
{
  static char buf[512];
  buf[0] = '\0';
  for (unsigned i = 0; i < n; i++)
    snprintf (buf + strlen (buf), sizeof buf - strlen (buf), "%s%u", i ? "," : "", cpus[i]);
  return buf;
}

static void
test_default_one_l3_pe0 (void **state)
{
  (void) state;
  struct cp_measure_sets s;
  choose (EIGHT_L3, 0, NULL, NULL, &s);
  assert_int_equal (s.n, 4); /* one L3's cores */
  assert_string_equal (list (s.chosen, s.n), "0,1,2,3");
  assert_int_equal (s.chosen_l3s, 1);
  assert_string_equal (list (s.spread, s.n), "0,4,8,12");
  assert_int_equal (s.spread_l3s, 4);
  assert_int_equal (s.n_l3, 8);
  assert_string_equal (s.level, "L3");
  assert_string_equal (list (s.l3[0].order, s.l3[0].n_order), "0,1,2,3,32,33,34,35");
  assert_int_equal (s.l3[0].n_cores, 4);
  tu_assert_set (s.l3[7].cpus, "28-31,60-63");
  assert_true (cp_measure_compares (&s));
  cp_measure_sets_clear (&s);
}

/* More than an L3's cores: the siblings of the same L3 before another L3
   (pe0-first), and in the ring after every PE0; the spread set goes round the L3s
   once before taking any second CPU. */
static void
test_count_past_cores (void **state)
{
  (void) state;
  struct cp_measure_sets s;
  choose (EIGHT_L3, 6, NULL, NULL, &s);
  assert_string_equal (list (s.chosen, s.n), "0,1,2,3,32,33");
  assert_int_equal (s.chosen_l3s, 1);
  assert_string_equal (list (s.spread, s.n), "0,4,8,12,16,20");
  cp_measure_sets_clear (&s);

  choose (EIGHT_L3, 10, NULL, NULL, &s);
  assert_string_equal (list (s.spread, s.n), "0,4,8,12,16,20,24,28,1,5");
  assert_int_equal (s.spread_l3s, 8);
  assert_int_equal (s.chosen_l3s, 2); /* 8 per L3: cachepin's choice spills into a second */
  cp_measure_sets_clear (&s);
}

/* The choice is the engine's: what the host config keeps back is not chosen. */
static void
test_host_config_honoured (void **state)
{
  (void) state;
  struct cp_measure_sets s;
  choose (EIGHT_L3, 4, NULL, "0-3", &s);
  assert_int_equal (s.chosen_l3s, 1);
  for (unsigned i = 0; i < s.n; i++)
    assert_true (s.chosen[i] >= 4);
  /* L3#0 is left its cores' second threads. */
  assert_string_equal (list (s.spread, s.n), "32,4,8,12");
  cp_measure_sets_clear (&s);
}

/* The default: one L3's cores, at most 8, at least 2. */
static void
test_default_bounds (void **state)
{
  (void) state;
  struct cp_measure_sets s;
  choose ("package:1 l3cache:1 core:12 pu:1", 0, NULL, NULL, &s);
  assert_int_equal (s.n, 8);
  assert_false (cp_measure_compares (&s)); /* one L3 */
  cp_measure_sets_clear (&s);

  choose ("package:1 l3cache:4 core:1 pu:2", 0, NULL, NULL, &s);
  assert_int_equal (s.n, 2);
  assert_string_equal (list (s.chosen, s.n), "0,1"); /* one core's two threads, in one L3 */
  assert_string_equal (list (s.spread, s.n), "0,2");
  assert_true (cp_measure_compares (&s));
  cp_measure_sets_clear (&s);
}

/* The CPUs this process may use bound both sets, and the L3s listed. */
static void
test_allowed (void **state)
{
  (void) state;
  struct cp_measure_sets s;
  choose (EIGHT_L3, 0, "4-7,36-39", NULL, &s);
  assert_int_equal (s.n_l3, 1);
  assert_int_equal (s.l3[0].index, 1);
  assert_string_equal (list (s.chosen, s.n), "4,5,6,7");
  assert_false (cp_measure_compares (&s));
  cp_measure_sets_clear (&s);

  /* One CPU in each of two L3s: the choice cannot be one L3, nothing to compare. */
  choose (EIGHT_L3, 0, "0,4", NULL, &s);
  assert_int_equal (s.n_l3, 2);
  assert_int_equal (s.chosen_l3s, 2);
  assert_false (cp_measure_compares (&s));
  cp_measure_sets_clear (&s);
}

static void
test_refusals (void **state)
{
  (void) state;
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  struct cp_container_request creq = { .cpus_source = "--cpus" };
  cp_request_init (&creq.req);
  struct cp_measure_sets s;
  cleanup_error cp_error_t err = NULL;
  cleanup_bitmap hwloc_bitmap_t one = tu_set ("3");
  assert_int_equal (cp_measure_choose (&hc, tu_topo (EIGHT_L3), one, &creq, &s, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  assert_string_equal (cp_error_message (err), "a ring needs 2 CPUs; this process may use 1 here (3)");

  cleanup_bitmap hwloc_bitmap_t two = tu_set ("0-1");
  creq.req.cpus = 3;
  assert_int_equal (cp_measure_choose (&hc, tu_topo (EIGHT_L3), two, &creq, &s, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  assert_string_equal (cp_error_message (err), "--cpus 3: this process may use only 2 CPUs here (0-1)");

  creq.req.cpus = 1;
  assert_int_equal (cp_measure_choose (&hc, tu_topo (EIGHT_L3), two, &creq, &s, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_string_equal (cp_error_message (err), "--cpus: 1 is not a ring (2 or more)");
  cp_hostconfig_free (&hc);
}

static void
test_stats (void **state)
{
  (void) state;
  double odd[] = { 5, 1, 3, 2, 4 };
  struct cp_measure_stats st;
  cp_measure_stats_of (odd, 5, &st);
  assert_near (st.median, 3, 1e-9);
  assert_near (st.q1, 2, 1e-9);
  assert_near (st.q3, 4, 1e-9);
  assert_near (st.min, 1, 1e-9);
  assert_near (st.max, 5, 1e-9);
  assert_near (odd[0], 5, 0); /* the caller's order kept */

  double even[] = { 4, 1, 3, 2 };
  cp_measure_stats_of (even, 4, &st);
  assert_near (st.median, 2.5, 1e-9);
  assert_near (st.q1, 1.75, 1e-9);
  assert_near (st.q3, 3.25, 1e-9);

  double one[] = { 7 };
  cp_measure_stats_of (one, 1, &st);
  assert_near (st.median, 7, 0);
  assert_near (st.q1, 7, 0);
  assert_near (st.q3, 7, 0);
}

static void
test_judge (void **state)
{
  (void) state;
  double ratio;
  struct cp_measure_stats fast = { .median = 50, .q1 = 48, .q3 = 53 }, slow = { .median = 100, .q1 = 95, .q3 = 110 };
  assert_int_equal (cp_measure_judge (&fast, &slow, &ratio), CP_MEASURE_CHOSEN_FASTER);
  assert_near (ratio, 2, 1e-9);
  assert_int_equal (cp_measure_judge (&slow, &fast, &ratio), CP_MEASURE_SPREAD_FASTER);
  assert_near (ratio, 0.5, 1e-9);

  /* Medians apart, middle halves touching or overlapping: no claim. */
  struct cp_measure_stats wide = { .median = 80, .q1 = 53, .q3 = 120 };
  assert_int_equal (cp_measure_judge (&fast, &wide, &ratio), CP_MEASURE_NOISY);
  assert_near (ratio, 1.6, 1e-9);
  struct cp_measure_stats touching = { .median = 60, .q1 = 53, .q3 = 70 };
  assert_int_equal (cp_measure_judge (&fast, &touching, &ratio), CP_MEASURE_NOISY);
  assert_string_equal (cp_measure_verdict_name (CP_MEASURE_NOISY), "noisy");
  assert_string_equal (cp_measure_verdict_name (CP_MEASURE_ONE_L3), "one-l3");
  assert_string_equal (cp_measure_verdict_name (CP_MEASURE_SAME_L3S), "same-l3s");
  assert_string_equal (cp_measure_verdict_name (CP_MEASURE_CHOSEN_FASTER), "chosen-faster");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_default_one_l3_pe0), cmocka_unit_test (test_count_past_cores),
    cmocka_unit_test (test_host_config_honoured), cmocka_unit_test (test_default_bounds),
    cmocka_unit_test (test_allowed),           cmocka_unit_test (test_refusals),
    cmocka_unit_test (test_stats),             cmocka_unit_test (test_judge),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
