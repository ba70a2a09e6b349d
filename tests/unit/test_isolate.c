/* The host keeps CPUs of its own (policy/isolate.c) on synthetic topologies.
 *
 *   TWO  = "package:2 numa:1 l3cache:2 core:4 pu:2(indexes=core)": 16 cores, core i =
 *          {i, i+16}; NUMA node 0 = cores 0-7 = CPUs 0-7,16-23, node 1 = cores 8-15 =
 *          CPUs 8-15,24-31 (checked against the model below, not assumed).
 *   ONE  = "numa:2 core:1 pu:2": each node a single core, {0,1} and {2,3}.
 *   SOLO = "numa:2 core:1 pu:1": each node a single core of a single CPU.
 *   AMD  = "package:2 l3cache:4 core:4 pu:2(indexes=core)": one NUMA node, 32
 *          cores, core i = {i, i+32}.
 * The promise (isolate.h): an isolated partition never holds a CPU of a NUMA
 * node's first core (the core of its lowest allowed online CPU). */
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
#define AMD "package:2 l3cache:4 core:4 pu:2(indexes=core)"

#define REFUSED(cpus, cpu, node)                                                                \
  "cachepin.io/isolate: CPUs " cpus " include CPU " cpu ", in the first core of NUMA node " node \
  ", which the host keeps (never isolated)"

/* cp_isolate_check() with a cpulist literal: NULL when it passes, else its
   message, whose kind must be unsatisfiable. */
static char *
check (const struct cp_topo *topo, const char *cpus)
{
  cleanup_bitmap hwloc_bitmap_t c = tu_set (cpus);
  cp_error_t err = NULL;
  int r = cp_isolate_check (topo, c, &err);
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

#define expect_ok(topo, cpus) expect_ (topo, cpus, NULL, __LINE__)
#define expect_refused(topo, cpus, msg) expect_ (topo, cpus, msg, __LINE__)
static void
expect_ (const struct cp_topo *topo, const char *cpus, const char *want, int line)
{
  cleanup_free char *got = check (topo, cpus);
  if (want == NULL && got != NULL)
    fail_msg ("line %d: isolating %s refused: %s", line, cpus, got);
  if (want != NULL && (got == NULL || strcmp (got, want) != 0))
    fail_msg ("line %d: isolating %s: got `%s`, want `%s`", line, cpus, got ? got : "(passed)", want);
}

/* cp_isolate_kept() of TOPO is WANT. */
static void
assert_kept (const struct cp_topo *topo, const char *want)
{
  cleanup_bitmap hwloc_bitmap_t kept = cp_bitmap_new ();
  hwloc_bitmap_fill (kept); /* emptied first, as promised */
  cp_isolate_kept (topo, kept);
  tu_assert_set (kept, want);
}

/* TWO's model is what the comment above says. */
static void
assert_two (const struct cp_topo *topo)
{
  assert_int_equal (topo->n_nodes, 2);
  assert_int_equal (topo->n_cores, 16);
  tu_assert_set (topo->nodes_info[0].cpus, "0-7,16-23");
  tu_assert_set (topo->nodes_info[1].cpus, "8-15,24-31");
  tu_assert_set (topo->cores[0].pus, "0,16");
  tu_assert_set (topo->cores[8].pus, "8,24");
}

/* Each node's first core, both its threads, is kept; every other core of the node
   may be isolated, all of them at once. */
static void
test_first_core (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  assert_kept (topo, "0,8,16,24");
  expect_ok (topo, "1-7,17-23");
  expect_ok (topo, "9-15,25-31");
  expect_ok (topo, "1-7,9-15,17-23,25-31");
  expect_refused (topo, "0", REFUSED ("0", "0", "0"));
  expect_refused (topo, "0-7,16-23", REFUSED ("0-7,16-23", "0", "0"));
  expect_refused (topo, "8-15,24-31", REFUSED ("8-15,24-31", "8", "1"));
  /* Node 0 is fine, node 1's first core is named. */
  expect_refused (topo, "1-7,17-23,8", REFUSED ("1-8,17-23", "8", "1"));
}

/* A core counts whole: its second hardware thread is the host's as well. */
static void
test_whole_core (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (TWO);
  assert_two (topo);
  expect_refused (topo, "16", REFUSED ("16", "16", "0"));
  expect_refused (topo, "1-7,16-23", REFUSED ("1-7,16-23", "16", "0"));
  expect_refused (topo, "24", REFUSED ("24", "24", "1"));
  /* AMD-style numbering, one node: core 0 is {0,32}. */
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  assert_int_equal (amd->n_nodes, 1);
  assert_kept (amd, "0,32");
  expect_ok (amd, "1-31,33-63");
  expect_refused (amd, "32", REFUSED ("32", "32", "0"));
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
  assert_kept (one, "0-3");
  expect_refused (one, "1", REFUSED ("1", "1", "0"));
  expect_refused (one, "3", REFUSED ("3", "3", "1"));
  cleanup_topo struct cp_topo *solo = tu_topo (SOLO);
  tu_assert_set (solo->nodes_info[1].cpus, "1");
  assert_kept (solo, "0-1");
  expect_refused (solo, "1", REFUSED ("1", "1", "1"));
  expect_refused (solo, "0-1", REFUSED ("0-1", "0", "0"));
}

/* Reserved CPUs are never handed out, so never isolated.  The kept core does not
   move when the first core is reserved: the rule is the node's first core
   whatever the host config, so a node's reservation and the kept core may be the
   same core, and the placement within the allowed CPUs minus `reserved` may take
   every other core of the node. */
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
  tu_assert_set (plan->cpus, "1-7,17-23");
  cp_error_t err = NULL;
  assert_int_equal (cp_isolate_check (topo, plan->cpus, &err), 0);

  /* The same node without the reservation: all of it, refused. */
  req.cpus = (unsigned) hwloc_bitmap_weight (node0);
  cleanup_plan struct cp_plan *whole = tu_place (topo, NULL, NULL, &req);
  assert_true (hwloc_bitmap_isequal (whole->cpus, node0));
  assert_int_equal (cp_isolate_check (topo, whole->cpus, &err), -1);
  assert_string_equal (cp_error_message (err), REFUSED ("0-7,16-23", "0", "0"));
  cp_error_free (&err);
}

/* Nothing asked: nothing refused, even on a single core. */
static void
test_empty (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *solo = tu_topo (SOLO);
  expect_ok (solo, "");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_first_core),    cmocka_unit_test (test_whole_core),
    cmocka_unit_test (test_one_core_node), cmocka_unit_test (test_reserved),
    cmocka_unit_test (test_empty),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
