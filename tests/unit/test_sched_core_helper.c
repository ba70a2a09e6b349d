/* The core-scheduling helper (hook/host/sched_core_helper.c), for real: forked,
 * filtered, asked.  It answers what the prctl answers when this process asks it
 * directly (on a kernel without CONFIG_SCHED_CORE, this host's and Debian's, both
 * say EINVAL: no cookie is made here, none is claimed); it keeps no descriptor but
 * its socket and no capability but CAP_SYS_PTRACE, runs under seccomp with
 * no_new_privs, and exits when the socket closes. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox.h"
#include "sched.h"
#include "sched_core_helper.h"
#include "util.h"

/* The helper loads its seccomp filter (not in a sanitizer build), which under
   valgrind applies to valgrind's own system calls: the helper dies at its first
   one (the connection resets), so there is nothing of the helper to check. */
static void
skip_under_valgrind (void)
{
  if (tu_under_valgrind () && !CP_SANDBOX_SANITIZER_BUILD)
    {
      print_message ("skipped: under valgrind, which implements no seccomp() (the helper's filter kills it)\n");
      tu_skip ();
    }
}

/* The helper's answer for a process is the prctl's own, errno and all. */
static void
test_answers_as_prctl (void **state)
{
  (void) state;
  skip_under_valgrind ();
  struct cp_sched_core_helper h;
  cp_error_t err = NULL;
  assert_int_equal (cp_sched_core_helper_start (&h, &err), 0);
  pid_t child = tu_sleeper ();
  cp_error_t direct = NULL;
  int want = cp_sched_core_create (child, &direct);
  pid_t other = tu_sleeper (); /* a second process: the first may have a cookie now */
  cp_error_t via = NULL;
  int got = cp_sched_core_helper_create (&h, other, &via);
  assert_int_equal (got, want);
  if (want < 0)
    {
      assert_int_equal (cp_error_errno (via), cp_error_errno (direct));
      tu_assert_contains (cp_error_message (via), "core scheduling: create a cookie for pid");
    }
  cp_error_free (&via);
  cp_error_free (&direct);
  /* Not a process: refused by the helper (pid 0 would be itself). */
  assert_int_equal (cp_sched_core_helper_create (&h, 0, &via), -1);
  assert_int_equal (cp_error_errno (via), ESRCH);
  cp_error_free (&via);
  tu_reap (child);
  tu_reap (other);
  cp_sched_core_helper_stop (&h);
  assert_int_equal (h.fd, -1);
}

/* What the helper holds: its socket and stdio, no other descriptor of ours (a pipe
   opened without O_CLOEXEC before it was forked is not there); a seccomp filter
   and no_new_privs. */
static void
test_confined (void **state)
{
  (void) state;
  skip_under_valgrind ();
  int leak[2];
  assert_int_equal (pipe (leak), 0);
  struct cp_sched_core_helper h;
  cp_error_t err = NULL;
  assert_int_equal (cp_sched_core_helper_start (&h, &err), 0);
  assert_int_equal (cp_sched_core_helper_create (&h, 0, &err), -1); /* one round trip: it is set up */
  cp_error_free (&err);
  assert_int_equal (tu_fds_above_stdio (h.pid), 1);
  /* Of our capabilities it keeps CAP_SYS_PTRACE alone, if we have it. */
  tu_assert_helper_confined (h.pid, CAP_SYS_PTRACE);
  tu_assert_helper_exits (&h.fd, &h.pid);
  close (leak[0]);
  close (leak[1]);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_answers_as_prctl),
    cmocka_unit_test (test_confined),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
