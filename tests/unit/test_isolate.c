/* The host keeps CPUs of its own (policy/isolate.c) on synthetic topologies.
 *
 *   TWO  = "package:2 numa:1 l3cache:2 core:4 pu:2(indexes=core)": 16 cores, core i =
 *          {i, i+16}; NUMA node 0 = cores 0-7 = CPUs 0-7,16-23, node 1 = cores 8-15 =
 *          CPUs 8-15,24-31 (checked against the model below, not assumed).
 *   ONE  = "numa:2 core:1 pu:2": each node a single core, {0,1} and {2,3}.
 *   SOLO = "numa:2 core:1 pu:1": each node a single core of a single CPU.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "isolate.h"
#include "util.h"

#define TWO "package:2 numa:1 l3cache:2 core:4 pu:2(indexes=core)"
#define ONE "numa:2 core:1 pu:2"
#define SOLO "numa:2 core:1 pu:1"

#define REFUSED(cpus, node)                                                                                  \
  "cachepin.io/isolate: CPUs " cpus " would leave NUMA node " node " no core outside isolated partitions " \
  "(the host keeps one core per node)"

/* cp_isolate_check() with cpulist literals (ALREADY NULL: nothing isolated yet):
   NULL when it passes, else its message, whose kind must be unsatisfiable. */
static char *
check (const struct cp_topo *topo, const char *already, const char *cpus)
{
  cleanup_bitmap hwloc_bitmap_t a = already ? tu_set (already) : NULL;
  cleanup_bitmap hwloc_bitmap_t c = tu_set (cpus);
  cp_error_t err = NULL;
  int r = cp_isolate_check (topo, a, c, &err);
  if (r == 0)
    {
      assert_null (err);
      return NULL;
    }
  assert_int_equal (r, -1);
  assert_int_equal (err->kind, CP_ERR_UNSATISFIABLE);
  char *msg = cp_xstrdup (cp_error_message (err));
  cp_error_free (&err);
  return msg;
}

#define expect_ok(topo, already, cpus) expect_ (topo, already, cpus, NULL, __LINE__)
#define expect_refused(topo, already, cpus, msg) expect_ (topo, already, cpus, msg, __LINE__)
static void
expect_ (const struct cp_topo *topo, const char *already, const char *cpus, const char *want, int line)
{
  cleanup_free char *got = check (topo, already, cpus);
  if (want == NULL && got != NULL)
    fail_msg ("line %d: isolating %s beside %s refused: %s", line, cpus, already ? already : "nothing", got);
  if (want != NULL && (got == NULL || strcmp (got, want) != 0))
    fail_msg ("line %d: isolating %s beside %s: got `%s`, want `%s`", line, cpus, already ? already : "nothing",
              got ? got : "(passed)", want);
}

/* TWO's model is what the comment above says. */
static void
assert_two (const struct cp_topo *topo)
{
  assert_int_equal (topo->n_nodes, 2);
  assert_int_equal (topo->n_cores, 16);
  tu_assert_set (topo->nodes_info[0].cpus, "0-7,16-23");
  tu_assert_set (topo->nodes_info[1].cpus, "8-15,24-31");
  tu_assert_set (topo->cores[7].pus, "7,23");
}

/* A node may give all its cores but one; the last one is refused. */
static void
test_last_core (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  expect_ok (topo, NULL, "0-6,16-22");
  expect_ok (topo, NULL, "1-7,17-23");
  expect_ok (topo, NULL, "0");
  expect_refused (topo, NULL, "0-7,16-23", REFUSED ("0-7,16-23", "0"));
  expect_refused (topo, NULL, "8-15,24-31", REFUSED ("8-15,24-31", "1"));
  /* Both nodes in one request, each keeping a core: fine; node 1 keeping none is
     named even though node 0 is fine. */
  expect_ok (topo, NULL, "0-6,16-22,9-15,25-31");
  expect_refused (topo, NULL, "0-6,16-22,8-15,24-31", REFUSED ("0-6,8-22,24-31", "1"));
}

/* The partitions already there count: the union is what the host loses. */
static void
test_already_isolated (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  expect_ok (topo, "0-5,16-21", "7,23");
  expect_refused (topo, "0-6,16-22", "7,23", REFUSED ("7,23", "0"));
  expect_refused (topo, "0-3,16-19", "4-7,20-23", REFUSED ("4-7,20-23", "0"));
  /* Another node's partitions do not count against this one. */
  expect_ok (topo, "8-15,24-31", "0-6,16-22");
  /* A node this request does not touch is not judged, even one already without a
     core of its own (a topology changed under live entries): this partition
     changes nothing there. */
  expect_ok (topo, "0-7,16-23", "8,24");
  /* Nothing isolated yet: the same as NULL. */
  expect_ok (topo, "", "0-6,16-22");
  expect_refused (topo, "", "0-7,16-23", REFUSED ("0-7,16-23", "0"));
}

/* A core counts only whole: one hardware thread of it outside is no core kept. */
static void
test_whole_core (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  /* The PE0 of every core (smt=pe0 placements): no core is whole outside. */
  expect_refused (topo, NULL, "0-7", REFUSED ("0-7", "0"));
  /* Core 7 keeps CPU 23 only. */
  expect_refused (topo, NULL, "0-7,16-22", REFUSED ("0-7,16-22", "0"));
  expect_refused (topo, "0-6,16-22", "23", REFUSED ("23", "0"));
  /* Core 7 whole: fine. */
  expect_ok (topo, NULL, "0-6,16-22");
  expect_ok (topo, NULL, "0-6");
}

/* A node with a single core keeps it: nothing on it can be isolated, not even
   half of it. */
static void
test_one_core_node (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *one = tu_topo (ONE);
  assert_int_equal (one->n_nodes, 2);
  tu_assert_set (one->nodes_info[0].cpus, "0-1");
  tu_assert_set (one->nodes_info[1].cpus, "2-3");
  expect_refused (one, NULL, "0", REFUSED ("0", "0"));
  expect_refused (one, NULL, "1", REFUSED ("1", "0"));
  expect_refused (one, NULL, "0-1", REFUSED ("0-1", "0"));
  expect_refused (one, NULL, "3", REFUSED ("3", "1"));
  cleanup_topo struct cp_topo *solo = tu_topo (SOLO);
  tu_assert_set (solo->nodes_info[1].cpus, "1");
  expect_refused (solo, NULL, "1", REFUSED ("1", "1"));
  expect_refused (solo, NULL, "0-1", REFUSED ("0-1", "0"));
}

/* Reserved CPUs are never handed out, so never isolated, and a reserved core is
   one the host keeps: the engine's placement within the allowed CPUs minus
   `reserved` may take the rest of the node.  Without the reservation, the whole
   node is refused. */
static void
test_reserved (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  cleanup_bitmap hwloc_bitmap_t reserved = tu_set ("0,16");
  cleanup_bitmap hwloc_bitmap_t node0 = cp_bitmap_dup (topo->nodes_info[0].cpus);
  cleanup_bitmap hwloc_bitmap_t allowed = cp_bitmap_dup (topo->allowed);
  hwloc_bitmap_andnot (allowed, allowed, reserved);
  cleanup_free char *allowed_s = cp_cpulist_format (allowed);
  unsigned rest = (unsigned) hwloc_bitmap_weight (node0) - (unsigned) hwloc_bitmap_weight (reserved);

  struct cp_request req = tu_req (rest, CP_LEVEL_NUMA, CP_SMT_ANY, CP_MODE_EXCLUSIVE, true);
  cleanup_plan struct cp_plan *plan = tu_place (topo, allowed_s, NULL, &req);
  assert_false (hwloc_bitmap_intersects (plan->cpus, reserved));
  tu_assert_set (plan->cpus, "1-7,17-23");
  cp_error_t err = NULL;
  assert_int_equal (cp_isolate_check (topo, NULL, plan->cpus, &err), 0);

  /* The same node without the reservation: all of it, refused. */
  req.cpus = (unsigned) hwloc_bitmap_weight (node0);
  cleanup_plan struct cp_plan *whole = tu_place (topo, NULL, NULL, &req);
  assert_true (hwloc_bitmap_isequal (whole->cpus, node0));
  assert_int_equal (cp_isolate_check (topo, NULL, whole->cpus, &err), -1);
  assert_string_equal (cp_error_message (err), REFUSED ("0-7,16-23", "0"));
  cp_error_free (&err);
}

/* Nothing asked: nothing refused, even on a single core. */
static void
test_empty (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *solo = tu_topo (SOLO);
  expect_ok (solo, NULL, "");
  expect_ok (solo, "0", "");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_last_core),     cmocka_unit_test (test_already_isolated),
    cmocka_unit_test (test_whole_core),    cmocka_unit_test (test_one_core_node),
    cmocka_unit_test (test_reserved),      cmocka_unit_test (test_empty),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
