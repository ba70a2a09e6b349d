/* hook/host/proc.c's pure parsers: the parent pid in /proc/<pid>/stat (a comm may hold
 * anything, `)` and spaces included) and the initial user namespace's uid_map;
 * and the descendant walk on this process's own children. */
#define _GNU_SOURCE
#include "testutil.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "util.h"

static void
test_parse_ppid (void **state)
{
  (void) state;
  static const struct
  {
    const char *stat;
    int ppid; /* -1: refused */
  } cases[] = {
    { "42 (sleep) S 7 42 42 0 -1", 7 },
    { "42 (a) b) c) R 1234 1 1", 1234 },
    { "42 (x y) Z 0 0", 0 },
    { "42 (sleep) S", -1 },
    { "42 (sleep) S x 1", -1 },
    { "42 (sleep) S 99999999999 1", -1 },
    { "42 sleep S 7", -1 },
    { "42 (sleep)S 7 1", -1 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      pid_t ppid = -5;
      cp_error_t err = NULL;
      int r = cp_proc_parse_ppid (cases[i].stat, strlen (cases[i].stat), &ppid, &err);
      if (cases[i].ppid < 0)
        {
          if (r == 0)
            fail_msg ("'%s': parsed as %d", cases[i].stat, (int) ppid);
          assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
          cp_error_free (&err);
        }
      else if (r < 0 || ppid != cases[i].ppid)
        fail_msg ("'%s': got %d (%s), want %d", cases[i].stat, (int) ppid, err ? cp_error_message (err) : "",
                  cases[i].ppid);
    }
}

static void
test_uid_map (void **state)
{
  (void) state;
  assert_true (cp_proc_uid_map_is_initial ("         0          0 4294967295\n"));
  assert_false (cp_proc_uid_map_is_initial ("         0       1000          1\n"));
  assert_false (cp_proc_uid_map_is_initial ("0 0 4294967295\n1 2 3\n"));
  assert_false (cp_proc_uid_map_is_initial ("0 100000 65536\n"));
  assert_false (cp_proc_uid_map_is_initial (""));
}

static void
test_descends_from (void **state)
{
  (void) state;
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      setpgid (0, 0); /* one kill takes both, and no orphan holds ctest's pipe */
      pid_t grandchild = fork ();
      if (grandchild == 0)
        {
          pause ();
          _exit (0);
        }
      pause ();
      _exit (0);
    }
  usleep (200000);
  cp_error_t err = NULL;
  assert_int_equal (cp_proc_descends_from (child, getpid (), &err), 1);
  assert_int_equal (cp_proc_descends_from (child, child, &err), 1);
  assert_int_equal (cp_proc_descends_from (getpid (), child, &err), 0);
  assert_int_equal (cp_proc_descends_from (1, child, &err), 0);
  kill (-child, SIGKILL);
  waitpid (child, NULL, 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_parse_ppid),
    cmocka_unit_test (test_uid_map),
    cmocka_unit_test (test_descends_from),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
