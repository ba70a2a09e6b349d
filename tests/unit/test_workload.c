/* The timed ring of hook/host/workload.c on this host's CPUs: the token goes round
 * (every thread took part), the window is about the time asked, a ring of one is
 * the loop alone, and a CPU this process may not use fails naming it.  The
 * expectations come from what sched_getaffinity says this process may use. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "util.h"
#include "workload.h"

/* The first two CPUs this process may use (the second is the first when it has one). */
static void
two_cpus (unsigned cpus[2])
{
  cleanup_bitmap hwloc_bitmap_t allowed = cp_bitmap_new ();
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_workload_allowed (allowed, &err), 0);
  assert_false (hwloc_bitmap_iszero (allowed));
  int first = hwloc_bitmap_first (allowed), next = hwloc_bitmap_next (allowed, first);
  cpus[0] = (unsigned) first;
  cpus[1] = (unsigned) (next >= 0 ? next : first);
}

static void
test_ring_goes_round (void **state)
{
  (void) state;
  unsigned cpus[2];
  two_cpus (cpus);
  struct cp_workload_result w;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_workload_ring (cpus, 2, 4, 200 * 1000 * 1000, &w, &err), 0);
  /* Thread 0 stops the ring only on its turn or while waiting for it: at least one
     full round, and the window is at least what was asked (it ends at a check). */
  assert_true (w.hops >= 2);
  assert_true (w.elapsed_ns >= 200 * 1000 * 1000);
  assert_true (w.elapsed_ns < 5LL * 1000 * 1000 * 1000);
}

static void
test_ring_of_one (void **state)
{
  (void) state;
  unsigned cpus[2];
  two_cpus (cpus);
  struct cp_workload_result w;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_workload_ring (cpus, 1, 4, 10 * 1000 * 1000, &w, &err), 0);
  /* No transfer: many hand-offs, at most a few microseconds each even on a busy host. */
  assert_true (w.hops > 1000);
  assert_true (cp_workload_clock_cost_ns () > 0);
}

static void
test_ring_bad_cpu (void **state)
{
  (void) state;
  unsigned cpus[2];
  two_cpus (cpus);
  cpus[1] = 8191; /* Linux's largest CPU number: not online here */
  struct cp_workload_result w;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_workload_ring (cpus, 2, 0, 10 * 1000 * 1000, &w, &err), -1);
  assert_int_equal (cp_error_errno (err), EINVAL);
  tu_assert_contains (cp_error_message (err), "pin a thread to CPU 8191: sched_setaffinity");

  assert_int_equal (cp_workload_ring (cpus, 0, 0, 1000, &w, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_int_equal (cp_workload_ring (cpus, 1, CP_WORKLOAD_MAX_LINES + 1, 1000, &w, &err), -1);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_ring_goes_round),
    cmocka_unit_test (test_ring_of_one),
    cmocka_unit_test (test_ring_bad_cpu),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
