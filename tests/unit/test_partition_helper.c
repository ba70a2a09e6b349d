/* The partition helper (hook/host/partition_helper.c): its rule as a function,
 * then the process for real on this host's cgroup2 mount (skipped where there is
 * none, and under valgrind, which implements no seccomp): it writes only the
 * partition files, takes CPUs only for the cgroup whose process it was shown,
 * checks that process itself, holds nothing but its socket and the mount, runs
 * with CAP_SYS_ADMIN alone in the hook's sandbox, and serves only its own mount. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "partition.h"
#include "partition_helper.h"
#include "sandbox.h"
#include "util.h"

/* The judgement of a write: allowed (EXPECTED NULL), or refused with EXPECTED in its text. */
static void
judged (const char *granted, const char *path, const char *file, const char *value, const char *current,
        const char *expected)
{
  cleanup_bitmap hwloc_bitmap_t cur = current ? tu_set (current) : NULL;
  cp_error_t err = NULL;
  int r = cp_partition_helper_judge (granted, path, file, value, cur, &err);
  if (expected == NULL && r < 0)
    fail_msg ("%s %s `%s`: refused: %s", path, file, value, cp_error_message (err));
  if (expected && r == 0)
    fail_msg ("%s %s `%s`: allowed, expected `%s`", path, file, value, expected);
  if (expected)
    tu_assert_contains (cp_error_message (err), expected);
  cp_error_free (&err);
}

/* CPUs are taken only for the granted cgroup and its ancestors; given back anywhere. */
static void
test_judge_exclusive (void **state)
{
  (void) state;
  const char *g = "/kubepods.slice/pod.slice/ctr.scope";
  judged (g, g, CP_PARTITION_EXCLUSIVE, "2-3", "", NULL);
  judged (g, "/kubepods.slice/pod.slice", CP_PARTITION_EXCLUSIVE, "1-3", "1", NULL);
  judged (g, "/kubepods.slice", CP_PARTITION_EXCLUSIVE, "2-3", "", NULL);
  /* A sibling, a child, a name the granted one only begins with, nothing granted. */
  judged (g, "/kubepods.slice/pod.slice/other.scope", CP_PARTITION_EXCLUSIVE, "2-3", "", "would take CPUs 2-3");
  judged (g, "/kubepods.slice/pod.slice/ctr.scope/sub", CP_PARTITION_EXCLUSIVE, "2", "", "no process of it");
  judged (g, "/kubepods.slice/pod.sl", CP_PARTITION_EXCLUSIVE, "2", "", "would take");
  judged (NULL, g, CP_PARTITION_EXCLUSIVE, "2", "", "would take");
  judged (NULL, "/system.slice", CP_PARTITION_EXCLUSIVE, "1-2", "1", "would take");
  /* Giving back: a subset of what it has, cleared, the same. */
  judged (NULL, "/system.slice", CP_PARTITION_EXCLUSIVE, "1", "1-2", NULL);
  judged (NULL, "/system.slice", CP_PARTITION_EXCLUSIVE, "\n", "1-2", NULL);
  judged (NULL, "/system.slice", CP_PARTITION_EXCLUSIVE, "1-2", "1-2", NULL);
  judged (NULL, "/system.slice", CP_PARTITION_EXCLUSIVE, "1-x", "1-2", "partition helper: cpuset.cpus.exclusive");
}

static void
test_judge_partition_and_files (void **state)
{
  (void) state;
  const char *g = "/a/b";
  judged (g, g, CP_PARTITION_FILE, "root", NULL, NULL);
  judged (NULL, "/x", CP_PARTITION_FILE, "member", NULL, NULL);
  judged (g, "/a", CP_PARTITION_FILE, "root", NULL, "only `member`, or `root` for the cgroup");
  judged (NULL, g, CP_PARTITION_FILE, "root", NULL, "refused");
  judged (g, g, CP_PARTITION_FILE, "isolated", NULL, "`isolated` into cpuset.cpus.partition of /a/b refused");
  /* Nothing but the two partition files, whatever is granted. */
  judged (g, g, "cpuset.cpus", "0-3", NULL, "cpuset.cpus is not a file it writes");
  judged (g, g, "cgroup.procs", "1", NULL, "not a file it writes");
  judged (g, g, "memory.max", "1", NULL, "not a file it writes");
  /* Only canonical paths below the root. */
  judged (g, "/", CP_PARTITION_FILE, "member", NULL, "is not a cgroup below the root");
  judged (g, "a/b", CP_PARTITION_FILE, "member", NULL, "not a cgroup");
  judged ("/a/b", "/a/b/..", CP_PARTITION_FILE, "root", NULL, "not a cgroup");
  judged ("/a/b", "/a//b", CP_PARTITION_FILE, "member", NULL, "not a cgroup");
  judged ("/a/b", "/a/b/", CP_PARTITION_FILE, "member", NULL, "not a cgroup");
  judged ("/a/b", "/a/./b", CP_PARTITION_FILE, "member", NULL, "not a cgroup");
}

/* ---- the process ------------------------------------------------------------------ */

static char mount[4096];
static char dir_a[4200], dir_b[4200]; /* two cgroups of ours under it */

/* This host's cgroup2 mount (the unified one of a hybrid layout, or the only one). */
static bool
find_cgroup2 (void)
{
  FILE *f = fopen ("/proc/self/mountinfo", "re");
  if (f == NULL)
    return false;
  char line[4096];
  bool found = false;
  while (!found && fgets (line, sizeof line, f))
    {
      char *sep = strstr (line, " - cgroup2 ");
      char mp[4096];
      if (sep && sscanf (line, "%*s %*s %*s %*s %4095s", mp) == 1)
        {
          snprintf (mount, sizeof mount, "%s", mp);
          found = true;
        }
    }
  fclose (f);
  return found;
}

static void
skip_unless_real (void)
{
  if (tu_under_valgrind () && !CP_SANDBOX_SANITIZER_BUILD)
    {
      print_message ("skipped: under valgrind, which implements no seccomp() (the helper's sandbox kills it)\n");
      tu_skip ();
    }
  if (geteuid () != 0 || !find_cgroup2 ())
    {
      print_message ("skipped: needs root and a cgroup2 mount\n");
      tu_skip ();
    }
}

static pid_t
sleeper_in (const char *dir)
{
  pid_t child = tu_sleeper ();
  char procs[4300], pid[32];
  snprintf (procs, sizeof procs, "%s/cgroup.procs", dir);
  snprintf (pid, sizeof pid, "%d\n", (int) child);
  tu_write_file (procs, pid, strlen (pid));
  return child;
}

static int
make_dirs (void **state)
{
  (void) state;
  if (!find_cgroup2 () || geteuid () != 0)
    return 0;
  snprintf (dir_a, sizeof dir_a, "%s/cachepin-test-helper-%d-a", mount, (int) getpid ());
  snprintf (dir_b, sizeof dir_b, "%s/cachepin-test-helper-%d-b", mount, (int) getpid ());
  if (mkdir (dir_a, 0755) < 0 || mkdir (dir_b, 0755) < 0)
    dir_a[0] = dir_b[0] = '\0';
  return 0;
}

static int
remove_dirs (void **state)
{
  (void) state;
  if (dir_a[0])
    rmdir (dir_a);
  if (dir_b[0])
    rmdir (dir_b);
  return 0;
}

static const char *
rel (const char *dir)
{
  return dir + strlen (mount);
}

static void
test_serves (void **state)
{
  (void) state;
  skip_unless_real ();
  if (dir_a[0] == '\0')
    {
      print_message ("skipped: no cgroup could be made under %s\n", mount);
      tu_skip ();
    }
  pid_t in_a = sleeper_in (dir_a);
  struct cp_partition_helper h;
  cp_error_t err = NULL;
  assert_int_equal (cp_partition_helper_start (&h, mount, &err), 0);
  /* Shown a process that is not in the cgroup: refused, by the helper's own read. */
  assert_int_equal (cp_partition_helper_grant (&h, in_a, rel (dir_b), &err), -1);
  tu_assert_contains (cp_error_message (err), "is not in cgroup");
  cp_error_free (&err);
  assert_int_equal (cp_partition_helper_grant (&h, 0, rel (dir_a), &err), -1);
  cp_error_free (&err);
  assert_int_equal (cp_partition_helper_grant (&h, in_a, "/..", &err), -1);
  cp_error_free (&err);
  assert_int_equal (cp_partition_helper_grant (&h, in_a, rel (dir_a), &err), 0);

  cp_partition_helper_use (&h);
  const struct cp_partition_tree tree = { .mount = mount, .mountfd = -1 };
  /* `root` for the sibling of the granted cgroup: the rule refuses, no errno. */
  assert_int_equal (cp_partition_write_state (&tree, rel (dir_b), CP_PARTITION_ROOT, &err), -1);
  tu_assert_contains (cp_error_message (err), "refused (only `member`");
  assert_int_equal (cp_error_errno (err), 0);
  cp_error_free (&err);
  /* A file it neither writes nor reads. */
  assert_int_equal (cp_partition_write_file (&tree, rel (dir_a), "cgroup.procs", "1", &err), -1);
  tu_assert_contains (cp_error_message (err), "cgroup.procs is not a file it writes");
  cp_error_free (&err);
  char *text = NULL;
  assert_int_equal (cp_partition_read_file (&tree, rel (dir_a), "cgroup.procs", &text, &err), -1);
  tu_assert_contains (cp_error_message (err), "not a file it reads");
  cp_error_free (&err);
  /* A partition file: read as the kernel has it (a hybrid layout's cgroup2 mount has no
     cpuset controller: the kernel's ENOENT, passed on with its errno). */
  struct stat st;
  char file[4400];
  snprintf (file, sizeof file, "%s/%s", dir_a, CP_PARTITION_FILE);
  int r = cp_partition_read_file (&tree, rel (dir_a), CP_PARTITION_FILE, &text, &err);
  if (stat (file, &st) == 0)
    assert_int_equal (r, 0);
  else
    {
      assert_int_equal (r, -1);
      assert_int_equal (cp_error_errno (err), ENOENT);
      tu_assert_contains (cp_error_message (err), "No such file or directory");
    }
  free (text);
  cp_error_free (&err);
  /* Another mount: not served. */
  const struct cp_partition_tree other = { .mount = "/sys/fs/cgroup/cpuset", .mountfd = -1 };
  struct cp_partition_state ps;
  assert_int_equal (cp_partition_read_state (&other, "/x", &ps, &err), -1);
  tu_assert_contains (cp_error_message (err), "is not the mount it serves");
  cp_error_free (&err);

  cp_partition_helper_stop (&h);
  assert_int_equal (h.fd, -1);
  tu_reap (in_a);
}

/* What the helper holds: its socket, the mount and stdio; no capability but
   CAP_SYS_ADMIN; the sandbox (seccomp, no_new_privs). */
static void
test_confined (void **state)
{
  (void) state;
  skip_unless_real ();
  int leak[2];
  assert_int_equal (pipe (leak), 0);
  struct cp_partition_helper h;
  cp_error_t err = NULL;
  assert_int_equal (cp_partition_helper_start (&h, mount, &err), 0);
  assert_int_equal (cp_partition_helper_grant (&h, 1, "/", &err), -1); /* one round trip: it is set up */
  tu_assert_contains (cp_error_message (err), "not a process in a cgroup below the root");
  cp_error_free (&err);
  assert_int_equal (tu_fds_above_stdio (h.pid), 2);
  /* Of our capabilities it keeps CAP_SYS_ADMIN alone, if we have it: the kernel's
     condition for a remote partition. */
  tu_assert_helper_confined (h.pid, CAP_SYS_ADMIN);
  tu_assert_helper_exits (&h.fd, &h.pid);
  cp_partition_helper_stop (&h);
  close (leak[0]);
  close (leak[1]);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_judge_exclusive),
    cmocka_unit_test (test_judge_partition_and_files),
    cmocka_unit_test (test_serves),
    cmocka_unit_test (test_confined),
  };
  return tu_exit (cmocka_run_group_tests (tests, make_dirs, remove_dirs));
}
