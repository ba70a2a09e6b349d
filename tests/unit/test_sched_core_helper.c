/* The core-scheduling helper (hook/host/sched_core_helper.c), for real: forked,
 * filtered, asked.  It answers what the prctl answers when this process asks it
 * directly (on a kernel without CONFIG_SCHED_CORE, this host's and Debian's, both
 * say EINVAL: no cookie is made here, none is claimed); it keeps no descriptor but
 * its socket and no capability but CAP_SYS_PTRACE, runs under seccomp with
 * no_new_privs, and exits when the socket closes. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

static pid_t
sleeper (void)
{
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL); /* not left behind by a failed assertion */
      pause ();
      _exit (0);
    }
  return child;
}

static void
reap (pid_t child)
{
  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
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
  pid_t child = sleeper ();
  cp_error_t direct = NULL;
  int want = cp_sched_core_create (child, &direct);
  pid_t other = sleeper (); /* a second process: the first may have a cookie now */
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
  reap (child);
  reap (other);
  cp_sched_core_helper_stop (&h);
  assert_int_equal (h.fd, -1);
}

static char *
status_field (pid_t pid, const char *key)
{
  char path[64], line[256];
  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  FILE *f = fopen (path, "re");
  assert_non_null (f);
  char *value = NULL;
  while (value == NULL && fgets (line, sizeof line, f))
    if (strncmp (line, key, strlen (key)) == 0 && line[strlen (key)] == ':')
      {
        value = cp_xstrdup (line + strlen (key) + 1 + strspn (line + strlen (key) + 1, " \t"));
        value[strcspn (value, "\n")] = '\0';
      }
  fclose (f);
  assert_non_null (value);
  return value;
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
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/fd", (int) h.pid);
  DIR *d = opendir (path);
  assert_non_null (d);
  int above_stdio = 0;
  for (struct dirent *e; (e = readdir (d));)
    if (e->d_name[0] != '.' && atoi (e->d_name) > 2)
      above_stdio++;
  closedir (d);
  assert_int_equal (above_stdio, 1);
  cleanup_free char *seccomp = status_field (h.pid, "Seccomp");
  /* Loaded (2, a filter) except in a sanitizer build, which builds it only. */
  assert_string_equal (seccomp, CP_SANDBOX_SANITIZER_BUILD ? "0" : "2");
  cleanup_free char *nnp = status_field (h.pid, "NoNewPrivs");
  assert_string_equal (nnp, "1");
  /* Of our capabilities it keeps CAP_SYS_PTRACE (19) alone, if we have it. */
  cleanup_free char *ours = status_field (getpid (), "CapEff");
  unsigned long long ptrace = strtoull (ours, NULL, 16) & (1ULL << 19);
  cleanup_free char *eff = status_field (h.pid, "CapEff");
  cleanup_free char *bnd = status_field (h.pid, "CapBnd");
  assert_int_equal (strtoull (eff, NULL, 16), ptrace);
  if (ptrace)
    assert_int_equal (strtoull (bnd, NULL, 16), ptrace);
  /* The socket's end: it exits, status 0. */
  pid_t pid = h.pid;
  close (h.fd);
  int st;
  assert_int_equal (waitpid (pid, &st, 0), pid);
  assert_true (WIFEXITED (st));
  assert_int_equal (WEXITSTATUS (st), 0);
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
