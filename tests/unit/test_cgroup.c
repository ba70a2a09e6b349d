/* The cgroup module (hook/host/cgroup.c, cgroup_open.c, cgroup_parse.c).
 *
 * Two kinds of tests:
 *  - on texts of /proc/self/mountinfo and /proc/<pid>/cgroup for v1, v2, hybrid and
 *    odd layouts (cp_cgroup_locate_from_text, cp_cgroup_resolve_from_text);
 *  - on the REAL cgroupfs, as root: a temporary cgroup
 *    /sys/fs/cgroup/cpuset/cachepin-test-<pid>/child holding a forked process, and
 *    on the controller-less cgroup2 of a hybrid host (/sys/fs/cgroup/unified, which
 *    has hugetlb) a real v2 tree used through the same code with the hugetlb
 *    controller.  Layouts we cannot make on the host (a bind mount of a subtree, a
 *    mount over the cpuset mount, a symlink to a second mount, a mount inside a
 *    cgroup) are made in a private mount namespace of a forked child.
 * The real tests skip, saying why, where there is no v1 cpuset hierarchy or we
 * are not root.  Everything created is removed in the group teardown. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "cpulist.h"
#include "util.h"

#define V1_MOUNT "/sys/fs/cgroup/cpuset"
#define V2_MOUNT "/sys/fs/cgroup/unified"

static struct
{
  bool v1_ok;               /* the v1 fixture is there */
  bool v2_ok;               /* the v2 (hugetlb) fixture is there */
  const char *why_not;      /* why v1 tests skip */
  const char *why_not_v2;
  char name[64];            /* cachepin-test-<pid> */
  char rel[80];             /* /cachepin-test-<pid> */
  char base_v1[256];        /* V1_MOUNT/cachepin-test-<pid> */
  char base_v2[256];        /* V2_MOUNT/cachepin-test-<pid> */
  char tmp[256];            /* a scratch folder in /tmp */
  char parent_cpus[256];    /* what the v1 root allows, copied into our cgroups */
  char parent_mems[256];
  pid_t sleeper;            /* in base_v1/child and base_v2/a/b */
  pid_t extra[8];           /* more processes to kill at the end */
  unsigned n_extra;
  bool v2_root_hugetlb_was_on;
} G;

/* ---- test-side helpers: plain libc, independent of the code under test ---------- */

static int
write_file (const char *path, const char *value)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = write (fd, value, strlen (value));
  int e = n < 0 ? errno : 0;
  close (fd);
  return n < 0 ? -e : 0;
}

/* The file's first line, without its newline; "" when it cannot be read. */
static char *
read_line (const char *path)
{
  char buf[4096] = "";
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      ssize_t n = read (fd, buf, sizeof buf - 1);
      buf[n > 0 ? n : 0] = '\0';
      close (fd);
    }
  buf[strcspn (buf, "\n")] = '\0';
  return cp_xstrdup (buf);
}

static bool
is_fs (const char *path, long magic)
{
  struct statfs s;
  return statfs (path, &s) == 0 && (long) s.f_type == magic;
}

/* Remove a cgroup tree, deepest first (cgroupfs files go with their directory). */
static void
rm_tree (const char *path)
{
  DIR *d = opendir (path);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      if (e->d_type != DT_DIR || strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
        continue;
      char *sub = cp_xasprintf ("%s/%s", path, e->d_name);
      rm_tree (sub);
      free (sub);
    }
  closedir (d);
  if (rmdir (path) < 0 && errno != ENOENT)
    print_message ("cleanup: rmdir %s: %s\n", path, strerror (errno));
}

/* A v1 cpuset cgroup must have cpus and mems before it can hold a process. */
static int
mkdir_v1 (const char *path)
{
  if (mkdir (path, 0755) < 0 && errno != EEXIST)
    return -errno;
  char *c = cp_xasprintf ("%s/cpuset.cpus", path), *m = cp_xasprintf ("%s/cpuset.mems", path);
  int r = write_file (c, G.parent_cpus);
  if (r == 0)
    r = write_file (m, G.parent_mems);
  free (c);
  free (m);
  return r;
}

/* A process to put in cgroups.  It never outlives the test, even one that dies
 * before its teardown: PDEATHSIG, and a look at its parent every 50 ms in case
 * that was missed; and it holds none of the test's files, so a runner reading the
 * test's output never waits for it. */
static pid_t
spawn_sleeper (void)
{
  pid_t parent = getpid ();
  pid_t p = fork ();
  if (p == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      int null = open ("/dev/null", O_RDWR);
      if (null >= 0)
        {
          dup2 (null, 0);
          dup2 (null, 1);
          dup2 (null, 2);
        }
      close_range (3, ~0U, 0);
      while (getppid () == parent)
        usleep (50 * 1000);
      _exit (0);
    }
  return p;
}

static int
move_to (pid_t pid, const char *dir)
{
  char *procs = cp_xasprintf ("%s/cgroup.procs", dir);
  char num[32];
  snprintf (num, sizeof num, "%d", (int) pid);
  int r = write_file (procs, num);
  free (procs);
  return r;
}

/* A process that moves itself into DIR and exits; returned as an unreaped zombie. */
static void
track (pid_t p)
{
  assert_true (G.n_extra < CP_ARRAY_SIZE (G.extra));
  G.extra[G.n_extra++] = p;
}

/* Kill and reap P; teardown forgets it (its pid may be reused afterwards). */
static void
reap (pid_t p)
{
  kill (p, SIGKILL);
  waitpid (p, NULL, 0);
  for (unsigned i = 0; i < G.n_extra; i++)
    if (G.extra[i] == p)
      G.extra[i] = 0;
}

static pid_t
spawn_exited_in (const char *dir)
{
  char *procs = cp_xasprintf ("%s/cgroup.procs", dir);
  pid_t p = fork ();
  if (p == 0)
    _exit (write_file (procs, "0") == 0 ? 0 : 1);
  free (procs);
  track (p); /* reaped by the teardown if the test fails before it does */
  siginfo_t si;
  memset (&si, 0, sizeof si);
  waitid (P_PID, (id_t) p, &si, WEXITED | WNOWAIT);
  if (si.si_status != 0)
    fail_msg ("the child could not join %s", dir);
  return p;
}

static void
kill_stale_fixtures (const char *mount)
{
  DIR *d = opendir (mount);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      int pid;
      char tail;
      if (sscanf (e->d_name, "cachepin-test-%d%c", &pid, &tail) != 1)
        continue;
      if (kill (pid, 0) == 0 || errno != ESRCH)
        continue;
      char *p = cp_xasprintf ("%s/%s", mount, e->d_name);
      rm_tree (p);
      free (p);
    }
  closedir (d);
}

/* Scratch folders of runs that died before their teardown. */
static void
remove_stale_tmp (void)
{
  DIR *d = opendir ("/tmp");
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      int pid;
      if (sscanf (e->d_name, "cachepin-cgtest-%d-", &pid) != 1 || pid <= 0)
        continue;
      if (kill (pid, 0) == 0 || errno != ESRCH)
        continue;
      char *cmd = cp_xasprintf ("rm -rf '/tmp/%s'", e->d_name);
      if (system (cmd) != 0)
        print_message ("cleanup: %s failed\n", cmd);
      free (cmd);
    }
  closedir (d);
}

static hwloc_bitmap_t
xset (void)
{
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  assert_non_null (b);
  return b;
}

/* Check a failure: return value, kind, one line, NEEDLE in the message. */
#define expect_fail(r, err, kind, needle) expect_fail_ ((r), &(err), (kind), (needle), __FILE__, __LINE__)
static void
expect_fail_ (int r, cp_error_t *err, enum cp_error_kind kind, const char *needle, const char *file, int line)
{
  if (r >= 0)
    {
      print_error ("%s:%d: succeeded, expected a failure with `%s`\n", file, line, needle);
      _fail (file, line);
    }
  if (*err == NULL)
    {
      print_error ("%s:%d: failed without an error\n", file, line);
      _fail (file, line);
    }
  if (cp_error_kind (*err) != kind)
    {
      print_error ("%s:%d: error kind %d, expected %d: %s\n", file, line, (int) cp_error_kind (*err), (int) kind,
                   cp_error_message (*err));
      _fail (file, line);
    }
  const char *msg = cp_error_message (*err);
  if (strchr (msg, '\n'))
    {
      print_error ("%s:%d: message is more than one line: %s\n", file, line, msg);
      _fail (file, line);
    }
  tu_assert_contains_ (msg, needle, file, line);
  cp_error_free (err);
}

#define expect_ok(r, err) expect_ok_ ((r), &(err), __FILE__, __LINE__)
static void
expect_ok_ (int r, cp_error_t *err, const char *file, int line)
{
  if (r < 0)
    {
      print_error ("%s:%d: failed: %s\n", file, line, cp_error_message (*err));
      _fail (file, line);
    }
  if (*err)
    {
      print_error ("%s:%d: succeeded but left an error: %s\n", file, line, cp_error_message (*err));
      _fail (file, line);
    }
}

static void
need_v1 (void)
{
  if (!G.v1_ok)
    {
      print_message ("SKIP: %s\n", G.why_not);
      tu_skip ();
    }
}

static void
need_v2 (void)
{
  if (!G.v2_ok)
    {
      print_message ("SKIP: %s\n", G.why_not_v2);
      tu_skip ();
    }
}

static char *
child_path (const char *name)
{
  return cp_xasprintf ("%s/%s", G.rel, name);
}

/* ---- fixture ------------------------------------------------------------------------ */

/* Test runs on one host take turns (other build folders run this test too): they
 * share the unified root's cgroup.subtree_control. */
#define LOCK_FILE "/tmp/cachepin-cgtest.lock"
/* Holds the pid of a run that turned hugetlb on in the unified root and has not
 * turned it off yet; a later run finding that pid dead turns it off. */
#define HUGETLB_MARKER "/tmp/cachepin-cgtest-unified-hugetlb"
static int lock_fd = -1;

static bool
marker_left_by_dead_run (void)
{
  char *text = read_line (HUGETLB_MARKER);
  int pid = atoi (text);
  free (text);
  return pid > 0 && kill (pid, 0) < 0 && errno == ESRCH;
}

static int
group_setup (void **state)
{
  (void) state;
  lock_fd = open (LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0 || flock (lock_fd, LOCK_EX) < 0)
    return -1;
  snprintf (G.name, sizeof G.name, "cachepin-test-%d", (int) getpid ());
  snprintf (G.rel, sizeof G.rel, "/%s", G.name);
  snprintf (G.base_v1, sizeof G.base_v1, V1_MOUNT "/%s", G.name);
  snprintf (G.base_v2, sizeof G.base_v2, V2_MOUNT "/%s", G.name);
  remove_stale_tmp ();
  snprintf (G.tmp, sizeof G.tmp, "/tmp/cachepin-cgtest-%d-XXXXXX", (int) getpid ());
  if (mkdtemp (G.tmp) == NULL)
    return -1;

  if (geteuid () != 0)
    {
      G.why_not = G.why_not_v2 = "not root: the real-cgroupfs tests need root";
      return 0;
    }
  if (!is_fs (V1_MOUNT, CGROUP_SUPER_MAGIC))
    G.why_not = "no cgroup v1 cpuset hierarchy at " V1_MOUNT " (this test targets the hybrid host)";
  else
    {
      kill_stale_fixtures (V1_MOUNT);
      char *c = read_line (V1_MOUNT "/cpuset.effective_cpus"), *m = read_line (V1_MOUNT "/cpuset.effective_mems");
      snprintf (G.parent_cpus, sizeof G.parent_cpus, "%s", c);
      snprintf (G.parent_mems, sizeof G.parent_mems, "%s", m);
      free (c);
      free (m);
      char *child = cp_xasprintf ("%s/child", G.base_v1);
      G.sleeper = spawn_sleeper ();
      if (mkdir_v1 (G.base_v1) < 0 || mkdir_v1 (child) < 0 || move_to (G.sleeper, child) < 0)
        G.why_not = "could not set up the v1 fixture";
      else
        G.v1_ok = true;
      free (child);
    }

  char *controllers = read_line (V2_MOUNT "/cgroup.controllers");
  if (!is_fs (V2_MOUNT, CGROUP2_SUPER_MAGIC))
    G.why_not_v2 = "no cgroup2 at " V2_MOUNT;
  else if (strstr (controllers, "hugetlb") == NULL)
    G.why_not_v2 = "the cgroup2 at " V2_MOUNT " has no hugetlb controller to exercise";
  else if (G.sleeper == 0)
    G.why_not_v2 = "no v1 fixture";
  else
    {
      kill_stale_fixtures (V2_MOUNT);
      char *subtree = read_line (V2_MOUNT "/cgroup.subtree_control");
      G.v2_root_hugetlb_was_on = strstr (subtree, "hugetlb") != NULL && !marker_left_by_dead_run ();
      free (subtree);
      char *a = cp_xasprintf ("%s/a", G.base_v2), *b = cp_xasprintf ("%s/a/b", G.base_v2);
      if (mkdir (G.base_v2, 0755) < 0 || mkdir (a, 0755) < 0 || mkdir (b, 0755) < 0 || move_to (G.sleeper, b) < 0)
        G.why_not_v2 = "could not set up the v2 fixture";
      else
        G.v2_ok = true;
      free (a);
      free (b);
    }
  free (controllers);
  return 0;
}

static int
group_teardown (void **state)
{
  (void) state;
  if (G.sleeper > 0)
    reap (G.sleeper);
  for (unsigned i = 0; i < G.n_extra; i++)
    if (G.extra[i] > 0)
      reap (G.extra[i]);
  if (geteuid () == 0)
    {
      rm_tree (G.base_v1);
      rm_tree (G.base_v2);
      if (G.v2_ok && !G.v2_root_hugetlb_was_on)
        {
          char *subtree = read_line (V2_MOUNT "/cgroup.subtree_control");
          if (strstr (subtree, "hugetlb") && write_file (V2_MOUNT "/cgroup.subtree_control", "-hugetlb") < 0)
            print_message ("cleanup: could not turn hugetlb off again in " V2_MOUNT "/cgroup.subtree_control\n");
          else
            unlink (HUGETLB_MARKER);
          free (subtree);
        }
    }
  if (lock_fd >= 0)
    close (lock_fd);
  char *cmd = cp_xasprintf ("rm -rf '%s'", G.tmp);
  if (system (cmd) != 0)
    print_message ("cleanup: %s failed\n", cmd);
  free (cmd);
  return 0;
}

/* ---- texts ---------------------------------------------------------------------------- */

/* This host: v1 hierarchies, cpuset alone, controller-less cgroup2 at /sys/fs/cgroup/unified. */
static const char hybrid_mountinfo[] =
  "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
  "23 22 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
  "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
  "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
  "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
  "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
  "50 22 0:40 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n";

static const char hybrid_cgroup[] = "9:name=systemd:/system.slice/docker-abc.scope\n"
                                    "4:memory:/system.slice/docker-abc.scope\n"
                                    "3:cpuset:/system.slice/docker-abc.scope\n"
                                    "1:cpu:/system.slice/docker-abc.scope\n"
                                    "0::/system.slice/docker-abc.scope\n";

/* A pure v2 host (systemd): the unified hierarchy at /sys/fs/cgroup. */
static const char v2_mountinfo[]
    = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "23 22 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
      "27 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n"
      "50 22 0:40 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n";

static void
locate_ok (const char *mountinfo, const char *cgroup, int version, const char *mount, const char *root,
           const char *path)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_locate_from_text (mountinfo, cgroup, "cpuset", &w, &err), err);
  assert_int_equal (w.version, version);
  assert_string_equal (w.mount, mount);
  assert_string_equal (w.mount_root, root);
  assert_string_equal (w.path, path);
  cp_cgroup_where_clear (&w);
}

static void
locate_fails (const char *mountinfo, const char *cgroup, const char *needle)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  expect_fail (cp_cgroup_locate_from_text (mountinfo, cgroup, "cpuset", &w, &err), err, CP_ERR_RUNTIME, needle);
  assert_null (w.mount);
  assert_null (w.path);
}

static void
test_locate_hybrid_v1_v2 (void **state)
{
  (void) state;
  /* Hybrid: cpuset is on v1 even though the unified line and a cgroup2 mount exist. */
  locate_ok (hybrid_mountinfo, hybrid_cgroup, 1, "/sys/fs/cgroup/cpuset", "/", "/system.slice/docker-abc.scope");
  /* cgroupfs driver path, a kernel-provided root "/" (the caller refuses it, not this). */
  locate_ok (hybrid_mountinfo, "3:cpuset:/docker/0123abcd\n0::/\n", 1, "/sys/fs/cgroup/cpuset", "/",
             "/docker/0123abcd");
  locate_ok (hybrid_mountinfo, "3:cpuset:/\n0::/\n", 1, "/sys/fs/cgroup/cpuset", "/", "/");
  /* Pure v2: runc under systemd, crun's extra "container" level, no final newline. */
  locate_ok (v2_mountinfo, "0::/system.slice/runc-0123.scope\n", 2, "/sys/fs/cgroup", "/",
             "/system.slice/runc-0123.scope");
  locate_ok (v2_mountinfo, "0::/machine.slice/libpod-0123.scope/container", 2, "/sys/fs/cgroup", "/",
             "/machine.slice/libpod-0123.scope/container");
  /* Names with blanks and colons are paths like any other. */
  locate_ok (v2_mountinfo, "0::/a b/c:d\n", 2, "/sys/fs/cgroup", "/", "/a b/c:d");
  /* On this hybrid layout a controller of the unified hierarchy (hugetlb) resolves to v2. */
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_locate_from_text (hybrid_mountinfo, "3:cpuset:/x\n0::/y\n", "hugetlb", &w, &err), err);
  assert_int_equal (w.version, 2);
  assert_string_equal (w.mount, "/sys/fs/cgroup/unified");
  assert_string_equal (w.path, "/y");
  cp_cgroup_where_clear (&w);
}

static void
test_locate_v1_comounted (void **state)
{
  (void) state;
  static const char mi[] = "22 1 8:1 / / rw - ext4 /dev/vda rw\n"
                           "31 22 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                           "33 31 0:30 / /sys/fs/cgroup/cpuset_like rw - cgroup cgroup rw,cpuset_like\n"
                           "32 31 0:29 / /sys/fs/cgroup/cpu,cpuset rw - cgroup cgroup rw,cpu,cpuset,clone_children\n";
  locate_ok (mi, "5:cpu,cpuset:/kubepods/pod1/abc\n0::/\n", 1, "/sys/fs/cgroup/cpu,cpuset", "/",
             "/kubepods/pod1/abc");
  /* A controller list is split on commas: "cpuset_like" is not cpuset. */
  static const char only_like[] = "33 22 0:30 / /sys/fs/cgroup/x rw - cgroup cgroup rw,cpuset_like\n";
  locate_fails (only_like, "5:cpu,cpuset:/a\n", "not mounted");
  /* Escaped mount points are unescaped. */
  static const char esc[] = "34 22 0:31 / /mnt/with\\040space\\134x rw - cgroup cgroup rw,cpuset\n";
  locate_ok (esc, "3:cpuset:/a\n", 1, "/mnt/with space\\x", "/", "/a");
}

static void
test_locate_mount_roots (void **state)
{
  (void) state;
  /* Only a bind mount of a subtree: the path below it. */
  static const char bind_only[] = "63 22 0:31 /cp-bind /tmp/mnt rw - cgroup cgroup rw,cpuset\n";
  locate_ok (bind_only, "3:cpuset:/cp-bind/sub\n", 1, "/tmp/mnt", "/cp-bind", "/sub");
  locate_ok (bind_only, "3:cpuset:/cp-bind\n", 1, "/tmp/mnt", "/cp-bind", "/");
  /* "/cp-bind" is not a prefix of "/cp-binder". */
  locate_fails (bind_only, "3:cpuset:/cp-binder/x\n", "shows only");
  /* The full mount wins over the bind mount, whatever the order. */
  static const char both[] = "63 22 0:31 /cp-bind /tmp/mnt rw - cgroup cgroup rw,cpuset\n"
                             "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n";
  locate_ok (both, "3:cpuset:/cp-bind/sub\n", 1, "/sys/fs/cgroup/cpuset", "/", "/cp-bind/sub");
  /* Two full mounts: the first listed. */
  static const char two[] = "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
                            "70 22 0:31 / /mnt/again rw - cgroup none rw,cpuset\n";
  locate_ok (two, "3:cpuset:/a\n", 1, "/sys/fs/cgroup/cpuset", "/", "/a");
  /* A mount whose root is not a prefix of the path. */
  locate_fails ("63 22 0:31 /other /tmp/mnt rw - cgroup cgroup rw,cpuset\n", "3:cpuset:/a\n", "shows only `/other`");
  /* noprefix mounts name the files differently: refused. */
  locate_fails ("34 31 0:31 / /dev/cpuset rw - cgroup cgroup rw,cpuset,noprefix\n", "3:cpuset:/a\n", "noprefix");
}

static void
test_locate_refusals (void **state)
{
  (void) state;
  /* A removed v2 cgroup (the exact text seen for a zombie on this host). */
  locate_fails (v2_mountinfo, "0::/cp-z (deleted)\n", "has been removed");
  /* Outside our cgroup namespace. */
  locate_fails (v2_mountinfo, "0::/../../other/x\n", "outside our cgroup namespace");
  locate_fails (v2_mountinfo, "0::/a/../b\n", "`..` component");
  locate_fails (v2_mountinfo, "0::/a//b\n", "empty path component");
  locate_fails (v2_mountinfo, "0::relative\n", "not absolute");
  /* Two lines for one hierarchy: a cgroup name holding a newline could forge one. */
  locate_fails (v2_mountinfo, "0::/a\n0::/b\n", "two lines for the unified hierarchy");
  locate_fails (hybrid_mountinfo, "3:cpuset:/a\n3:cpuset:/b\n0::/\n", "two lines for the cpuset hierarchy");
  locate_fails (v2_mountinfo, "0::/a\nforged\n", "not `ID:CONTROLLERS:PATH`");
  locate_fails (v2_mountinfo, "x:cpuset:/a\n", "not `ID:CONTROLLERS:PATH`");
  locate_fails (v2_mountinfo, "", "lists neither");
  /* The hierarchy holding cpuset is not mounted. */
  locate_fails (v2_mountinfo, "3:cpuset:/a\n0::/a\n", "cgroup v1 hierarchy holding cpuset is not mounted");
  /* Malformed mountinfo. */
  locate_fails ("22 1 8:1 / /\n", "0::/a\n", "too few fields");
  locate_fails ("22 1 8:1 / / rw shared:1 ext4 /dev/vda rw\n", "0::/a\n", "no `-` separator");
  locate_fails ("22 1 8-1 / / rw - ext4 /dev/vda rw\n", "0::/a\n", "bad device");
  /* Too long a path. */
  char *longp = cp_xmalloc0 (CP_CGROUP_MAX_PATH + 16);
  strcpy (longp, "0::");
  for (size_t i = 3; i < CP_CGROUP_MAX_PATH + 8; i += 2)
    memcpy (longp + i, "/a", 2);
  locate_fails (v2_mountinfo, longp, "longer than");
  free (longp);
}

static void
resolve_ok (const char *mountinfo, const char *self, const char *path, int version, const char *mount,
            const char *expect)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_resolve_from_text (mountinfo, self, "cpuset", path, &w, &err), err);
  assert_int_equal (w.version, version);
  assert_string_equal (w.mount, mount);
  assert_string_equal (w.path, expect);
  cp_cgroup_where_clear (&w);
}

static void
resolve_fails (const char *mountinfo, const char *self, const char *path, enum cp_error_kind kind,
               const char *needle)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  expect_fail (cp_cgroup_resolve_from_text (mountinfo, self, "cpuset", path, &w, &err), err, kind, needle);
  assert_null (w.mount);
}

/* Fields the kernel never prints but a hostile or broken mountinfo can hold (found
 * by fuzz/fuzz_cgroup.c): an empty root or mount point field is not a prefix of
 * every path, and a mount point with a `..` component is not one to open. */
static void
test_locate_odd_mountinfo_fields (void **state)
{
  (void) state;
  /* Empty root (two blanks): before, it "showed" every cgroup, as if it were "/". */
  locate_fails ("27 23 0:26  /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/a\n",
                "no mount of the cgroup v2 hierarchy holding cpuset shows `/a`");
  /* A mount point that leaves itself. */
  locate_fails ("27 23 0:26 / /sys/fs/cgroup/../../etc rw - cgroup2 cgroup2 rw\n", "0::/a\n",
                "unusable mount point `/sys/fs/cgroup/../../etc`");
  locate_fails ("27 23 0:26 / /sys//fs rw - cgroup2 cgroup2 rw\n", "0::/a\n", "unusable mount point");
  /* An empty mount point field of another filesystem does not hold the user's path. */
  char *mi = cp_xasprintf ("%s40 1 0:50 /  rw - tmpfs tmpfs rw\n", hybrid_mountinfo);
  resolve_ok (mi, "3:cpuset:/\n0::/\n", "/batch/job1", 1, "/sys/fs/cgroup/cpuset", "/batch/job1");
  free (mi);
  /* The same empty mount point for the cpuset hierarchy itself. */
  resolve_fails ("34 31 0:31 /  rw - cgroup cgroup rw,cpuset\n", "3:cpuset:/\n", "/batch/job1", CP_ERR_RUNTIME,
                 "unusable mount point ``");
}

static void
test_resolve_text (void **state)
{
  (void) state;
  const char *hs = "3:cpuset:/\n0::/\n";
  resolve_ok (hybrid_mountinfo, hs, "/sys/fs/cgroup/cpuset/batch/job1", 1, "/sys/fs/cgroup/cpuset", "/batch/job1");
  resolve_ok (hybrid_mountinfo, hs, "/batch/job1", 1, "/sys/fs/cgroup/cpuset", "/batch/job1");
  resolve_ok (hybrid_mountinfo, hs, "batch/job1", 1, "/sys/fs/cgroup/cpuset", "/batch/job1");
  resolve_ok (hybrid_mountinfo, hs, "sys/fs/cgroup/cpuset", 1, "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/cpuset");
  resolve_fails (hybrid_mountinfo, hs, "/sys/fs/cgroup/memory/batch", CP_ERR_INPUT, "under the cgroup mount at /sys/fs/cgroup/memory");
  resolve_fails (hybrid_mountinfo, hs, "/sys/fs/cgroup/unified/batch", CP_ERR_INPUT, "under the cgroup2 mount");
  resolve_fails (hybrid_mountinfo, hs, "/sys/fs/cgroup/batch", CP_ERR_INPUT, "under the tmpfs mount at /sys/fs/cgroup");
  resolve_fails (hybrid_mountinfo, hs, "/proc/self", CP_ERR_INPUT, "outside the cgroup v1 hierarchy holding cpuset");
  resolve_fails (hybrid_mountinfo, hs, "/sys/fs/cgroup/cpuset", CP_ERR_INPUT, "is the root");
  resolve_fails (hybrid_mountinfo, hs, "/", CP_ERR_INPUT, "is the root");
  resolve_fails (hybrid_mountinfo, hs, "", CP_ERR_INPUT, "empty cgroup path");
  resolve_fails (hybrid_mountinfo, hs, "../x", CP_ERR_INPUT, "`..` component");
  resolve_fails (hybrid_mountinfo, hs, "/a/../b", CP_ERR_INPUT, "`..` component");
  resolve_fails (hybrid_mountinfo, hs, "/sys/fs/cgroup/cpuset/../memory/x", CP_ERR_INPUT, "`..` component");
  resolve_fails (hybrid_mountinfo, hs, "a/./b", CP_ERR_INPUT, "`.` component");
  resolve_fails (hybrid_mountinfo, hs, "a//b", CP_ERR_INPUT, "empty path component");
  resolve_fails (hybrid_mountinfo, hs, "a/b/", CP_ERR_INPUT, "empty path component");
  resolve_fails (hybrid_mountinfo, hs, "//a", CP_ERR_INPUT, "empty path component");

  const char *vs = "0::/user.slice\n";
  resolve_ok (v2_mountinfo, vs, "/sys/fs/cgroup/system.slice/x.scope", 2, "/sys/fs/cgroup", "/system.slice/x.scope");
  resolve_ok (v2_mountinfo, vs, "/system.slice/x.scope", 2, "/sys/fs/cgroup", "/system.slice/x.scope");
  resolve_ok (v2_mountinfo, vs, "system.slice/x.scope", 2, "/sys/fs/cgroup", "/system.slice/x.scope");
  resolve_fails (v2_mountinfo, vs, "/sys/fs/cgroup", CP_ERR_INPUT, "is the root");
  resolve_fails (v2_mountinfo, vs, "/sys/kernel", CP_ERR_INPUT, "under the sysfs mount at /sys");

  /* Only a mount of a subtree: relative paths must lie in it. */
  static const char bind_only[] = "22 1 8:1 / / rw - ext4 /dev/vda rw\n"
                                  "63 22 0:31 /jobs /srv/jobs rw - cgroup cgroup rw,cpuset\n";
  resolve_ok (bind_only, hs, "/jobs/a", 1, "/srv/jobs", "/a");
  resolve_ok (bind_only, hs, "/srv/jobs/a", 1, "/srv/jobs", "/a");
  resolve_fails (bind_only, hs, "/other/a", CP_ERR_RUNTIME, "shows only `/jobs`");
}

/* ---- the real cgroupfs: v1 ------------------------------------------------------------- */

static void
test_from_pid_v1 (void **state)
{
  (void) state;
  need_v1 ();
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &cg, &err), err);
  assert_int_equal (cg->version, 1);
  assert_string_equal (cg->mount, V1_MOUNT);
  char *want = child_path ("child");
  assert_string_equal (cg->path, want);
  free (want);
  /* dirfd is that directory. */
  struct stat a, b;
  char *full = cp_xasprintf ("%s/child", G.base_v1);
  assert_int_equal (fstat (cg->dirfd, &a), 0);
  assert_int_equal (stat (full, &b), 0);
  assert_true (S_ISDIR (a.st_mode));
  assert_true (a.st_ino == b.st_ino && a.st_dev == b.st_dev);
  assert_true ((fcntl (cg->dirfd, F_GETFD) & FD_CLOEXEC) != 0);
  assert_true ((fcntl (cg->dirfd, F_GETFL) & O_PATH) != 0);
  free (full);
  /* Enabling cpuset is a v2 matter. */
  expect_ok (cp_cgroup_enable_cpuset (cg, &err), err);
}

static void
test_from_pid_refusals (void **state)
{
  (void) state;
  need_v1 ();
  struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_fail (cp_cgroup_from_pid (0, &cg, &err), err, CP_ERR_INPUT, "invalid pid");
  expect_fail (cp_cgroup_from_pid (INT_MAX, &cg, &err), err, CP_ERR_RUNTIME, "/proc/2147483647/cgroup");
  /* A process that has exited shows the root on v1 (the kernel prints "/" for an
     exiting task on a v1 hierarchy): refused, not the root written. */
  char *child = cp_xasprintf ("%s/child", G.base_v1);
  pid_t z = spawn_exited_in (child);
  free (child);
  expect_fail (cp_cgroup_from_pid (z, &cg, &err), err, CP_ERR_RUNTIME, "is in the root cpuset cgroup");
  reap (z);
  assert_null (cg);
}

static void
test_parent_limits_v1 (void **state)
{
  (void) state;
  need_v1 ();
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &cg, &err), err);
  cleanup_bitmap hwloc_bitmap_t cpus = xset (), mems = xset ();
  expect_ok (cp_cgroup_parent_limits (cg, cpus, mems, &err), err);
  tu_assert_set (cpus, G.parent_cpus);
  tu_assert_set (mems, G.parent_mems);
  /* Either may be left out. */
  hwloc_bitmap_zero (cpus);
  expect_ok (cp_cgroup_parent_limits (cg, cpus, NULL, &err), err);
  tu_assert_set (cpus, G.parent_cpus);
}

static void
assert_child_cpuset (const struct cp_cgroup *cg, const char *cpus_want, const char *mems_want)
{
  cp_error_t err = NULL;
  cleanup_bitmap hwloc_bitmap_t cpus = xset (), mems = xset ();
  expect_ok (cp_cgroup_read_cpuset (cg, cpus, mems, &err), err);
  tu_assert_set (cpus, cpus_want);
  tu_assert_set (mems, mems_want);
  /* And the kernel's own files say the same. */
  char *p = cp_xasprintf ("%s/child/cpuset.cpus", G.base_v1);
  char *got = read_line (p);
  assert_string_equal (got, cpus_want);
  free (got);
  free (p);
}

static void
test_write_read_v1 (void **state)
{
  (void) state;
  need_v1 ();
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &cg, &err), err);
  cleanup_bitmap hwloc_bitmap_t all = tu_set (G.parent_cpus);
  cleanup_bitmap hwloc_bitmap_t mems = tu_set (G.parent_mems);
  if (hwloc_bitmap_weight (all) < 2)
    {
      print_message ("SKIP: the parent allows one CPU only (%s)\n", G.parent_cpus);
      tu_skip ();
    }
  /* The last allowed CPU alone ("1" on a 0-1 host), then all of them ("0-1"). */
  cleanup_bitmap hwloc_bitmap_t one = xset ();
  hwloc_bitmap_set (one, (unsigned) hwloc_bitmap_last (all));
  char *one_text = cp_cpulist_format (one);
  expect_ok (cp_cgroup_write_cpuset (cg, one, mems, &err), err);
  assert_child_cpuset (cg, one_text, G.parent_mems);
  expect_ok (cp_cgroup_write_cpuset (cg, all, NULL, &err), err); /* mems left as they are */
  assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);
  /* Again: the same value twice is fine (a retried hook). */
  expect_ok (cp_cgroup_write_cpuset (cg, all, mems, &err), err);
  assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);
  free (one_text);
}

static void
test_write_refusals_v1 (void **state)
{
  (void) state;
  need_v1 ();
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &cg, &err), err);
  cleanup_bitmap hwloc_bitmap_t all = tu_set (G.parent_cpus);
  cleanup_bitmap hwloc_bitmap_t mems = tu_set (G.parent_mems);
  expect_ok (cp_cgroup_write_cpuset (cg, all, mems, &err), err);

  /* A CPU beyond the parent's: refused with nothing written. */
  cleanup_bitmap hwloc_bitmap_t beyond = tu_set (G.parent_cpus);
  unsigned extra = (unsigned) hwloc_bitmap_last (all) + 1;
  hwloc_bitmap_zero (beyond);
  hwloc_bitmap_set (beyond, extra);
  char *needle = cp_xasprintf ("cpus %u is outside what the parent cgroup %s allows (`%s`)", extra, G.base_v1,
                               G.parent_cpus);
  expect_fail (cp_cgroup_write_cpuset (cg, beyond, mems, &err), err, CP_ERR_INPUT, needle);
  free (needle);
  assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);

  /* Good cpus but a node beyond the parent's: the cpus are not written either. */
  cleanup_bitmap hwloc_bitmap_t first = xset ();
  hwloc_bitmap_set (first, (unsigned) hwloc_bitmap_first (all));
  cleanup_bitmap hwloc_bitmap_t bad_mems = xset ();
  hwloc_bitmap_set (bad_mems, (unsigned) hwloc_bitmap_last (mems) + 1);
  expect_fail (cp_cgroup_write_cpuset (cg, first, bad_mems, &err), err, CP_ERR_INPUT, "mems");
  assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);

  /* Empty sets are never written (an empty v1 cpuset.mems is invalid anyway). */
  cleanup_bitmap hwloc_bitmap_t empty = xset ();
  expect_fail (cp_cgroup_write_cpuset (cg, empty, mems, &err), err, CP_ERR_INPUT, "empty cpuset.cpus");
  expect_fail (cp_cgroup_write_cpuset (cg, all, empty, &err), err, CP_ERR_INPUT, "empty cpuset.mems");
  expect_fail (cp_cgroup_write_cpuset (cg, NULL, mems, &err), err, CP_ERR_INPUT, "empty cpuset.cpus");
  assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);

  /* The parent narrowed to one CPU: the other one is now refused. */
  if (hwloc_bitmap_weight (all) >= 2)
    {
      cleanup_bitmap hwloc_bitmap_t last = xset ();
      hwloc_bitmap_set (last, (unsigned) hwloc_bitmap_last (all));
      char *last_text = cp_cpulist_format (last);
      expect_ok (cp_cgroup_write_cpuset (cg, last, NULL, &err), err);
      char *base_cpus = cp_xasprintf ("%s/cpuset.cpus", G.base_v1);
      assert_int_equal (write_file (base_cpus, last_text), 0);
      needle = cp_xasprintf ("cpus %d is outside what the parent cgroup %s allows (`%s`)", hwloc_bitmap_first (all),
                             G.base_v1, last_text);
      expect_fail (cp_cgroup_write_cpuset (cg, all, NULL, &err), err, CP_ERR_INPUT, needle);
      free (needle);
      assert_child_cpuset (cg, last_text, G.parent_mems);
      assert_int_equal (write_file (base_cpus, G.parent_cpus), 0);
      expect_ok (cp_cgroup_write_cpuset (cg, all, NULL, &err), err);
      assert_child_cpuset (cg, G.parent_cpus, G.parent_mems);
      free (base_cpus);
      free (last_text);
    }
}

/* The v1 quirk: a new cgroup starts with empty cpus and mems (no clone_children);
 * a write leaves mems alone when asked to, and fills them when given. */
static void
test_write_fresh_v1 (void **state)
{
  (void) state;
  need_v1 ();
  char *fresh = cp_xasprintf ("%s/fresh", G.base_v1);
  assert_int_equal (mkdir (fresh, 0755), 0);
  char *rel = child_path ("fresh");
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_path (rel, &cg, &err), err);
  cleanup_bitmap hwloc_bitmap_t cpus = xset (), mems = xset ();
  expect_ok (cp_cgroup_read_cpuset (cg, cpus, mems, &err), err);
  tu_assert_set (cpus, "");
  tu_assert_set (mems, "");
  cleanup_bitmap hwloc_bitmap_t all = tu_set (G.parent_cpus);
  cleanup_bitmap hwloc_bitmap_t nodes = tu_set (G.parent_mems);
  expect_ok (cp_cgroup_write_cpuset (cg, all, NULL, &err), err);
  expect_ok (cp_cgroup_read_cpuset (cg, cpus, mems, &err), err);
  tu_assert_set (cpus, G.parent_cpus);
  tu_assert_set (mems, "");
  expect_ok (cp_cgroup_write_cpuset (cg, all, nodes, &err), err);
  expect_ok (cp_cgroup_read_cpuset (cg, cpus, mems, &err), err);
  tu_assert_set (cpus, G.parent_cpus);
  tu_assert_set (mems, G.parent_mems);
  char *p = cp_xasprintf ("%s/cpuset.mems", fresh);
  char *got = read_line (p);
  assert_string_equal (got, G.parent_mems);
  free (got);
  free (p);
  free (rel);
  free (fresh);
}

static void
test_from_path_v1 (void **state)
{
  (void) state;
  need_v1 ();
  char *rel_child = child_path ("child");
  char *abs_child = cp_xasprintf ("%s/child", G.base_v1);
  const char *accepted[] = { abs_child, rel_child, rel_child + 1 };
  for (size_t i = 0; i < CP_ARRAY_SIZE (accepted); i++)
    {
      cleanup_cgroup struct cp_cgroup *cg = NULL;
      cp_error_t err = NULL;
      expect_ok (cp_cgroup_from_path (accepted[i], &cg, &err), err);
      assert_int_equal (cg->version, 1);
      assert_string_equal (cg->mount, V1_MOUNT);
      assert_string_equal (cg->path, rel_child);
      cleanup_bitmap hwloc_bitmap_t cpus = xset ();
      expect_ok (cp_cgroup_read_cpuset (cg, cpus, NULL, &err), err);
    }

  struct
  {
    char *path;
    const char *needle;
  } refused[] = {
    { cp_xstrdup ("../x"), "`..` component" },
    { cp_xstrdup ("/a/../b"), "`..` component" },
    { cp_xasprintf ("%s/../%s/child", G.rel, G.name), "`..` component" },
    { cp_xasprintf ("%s/./child", G.rel), "`.` component" },
    { cp_xasprintf ("%s//child", G.rel), "empty path component" },
    { cp_xasprintf ("%s/child/", G.rel), "empty path component" },
    { cp_xstrdup (""), "empty cgroup path" },
    /* a regular file, in both forms */
    { cp_xasprintf ("%s/child/cpuset.cpus", G.rel), "not a directory" },
    { cp_xasprintf ("%s/child/cpuset.cpus", G.base_v1), "not a directory" },
    /* other mounts: another v1 hierarchy, the v2 one, the tmpfs above, procfs */
    { cp_xasprintf ("/sys/fs/cgroup/memory/%s", G.name), "outside the cgroup v1 hierarchy holding cpuset" },
    { cp_xasprintf (V2_MOUNT "/%s", G.name), "under the cgroup2 mount" },
    { cp_xasprintf ("/sys/fs/cgroup/%s", G.name), "under the tmpfs mount at /sys/fs/cgroup" },
    { cp_xstrdup ("/proc/self"), "under the proc mount" },
    /* the root */
    { cp_xstrdup ("/"), "is the root" },
    { cp_xstrdup (V1_MOUNT), "is the root" },
    /* not there */
    { cp_xasprintf ("%s/no-such-child", G.rel), "No such file or directory" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (refused); i++)
    {
      struct cp_cgroup *cg = NULL;
      cp_error_t err = NULL;
      int r = cp_cgroup_from_path (refused[i].path, &cg, &err);
      if (r == 0)
        fail_msg ("`%s` accepted as %s %s", refused[i].path, cg->mount, cg->path);
      expect_fail (r, err, CP_ERR_INPUT, refused[i].needle);
      assert_null (cg);
      free (refused[i].path);
    }
  free (rel_child);
  free (abs_child);
}

static void
test_dir_exists (void **state)
{
  (void) state;
  need_v1 ();
  char *child = child_path ("child");
  assert_true (cp_cgroup_dir_exists (V1_MOUNT, child));
  assert_int_equal (cp_cgroup_dir_state (V1_MOUNT, child), 1);
  assert_true (cp_cgroup_dir_exists (V1_MOUNT, G.rel));
  char *nope = child_path ("nope");
  assert_false (cp_cgroup_dir_exists (V1_MOUNT, nope));
  assert_int_equal (cp_cgroup_dir_state (V1_MOUNT, nope), 0);
  char *file = child_path ("child/cpuset.cpus");
  assert_int_equal (cp_cgroup_dir_state (V1_MOUNT, file), 0);
  char *dotdot = cp_xasprintf ("%s/child/../child", G.rel);
  assert_false (cp_cgroup_dir_exists (V1_MOUNT, dotdot));
  assert_false (cp_cgroup_dir_exists (V1_MOUNT, "relative"));
  assert_int_equal (cp_cgroup_dir_state ("/nonexistent-mount", child), 0);
  /* Not a cgroup filesystem: cannot tell. */
  assert_int_equal (cp_cgroup_dir_state ("/tmp", "/x"), -1);
  assert_false (cp_cgroup_dir_exists ("/tmp", "/x"));
  /* A cgroup that goes away. */
  char *gone = cp_xasprintf ("%s/gone", G.base_v1);
  assert_int_equal (mkdir (gone, 0755), 0);
  char *gone_rel = child_path ("gone");
  assert_true (cp_cgroup_dir_exists (V1_MOUNT, gone_rel));
  assert_int_equal (rmdir (gone), 0);
  assert_false (cp_cgroup_dir_exists (V1_MOUNT, gone_rel));
  free (gone);
  free (gone_rel);
  free (child);
  free (nope);
  free (file);
  free (dotdot);
}

/* A cgroup name with a blank: ours reads it whole; libcgroup stops at the blank.
 * Also where libcgroup does serve (a plain name on this hybrid host) it must agree
 * with us: the reason we do not use it is documented in cgroup_parse.c. */
static void
test_blank_in_name_and_libcgroup (void **state)
{
  (void) state;
  need_v1 ();
  char *ab = cp_xasprintf ("%s/a b", G.base_v1);
  assert_int_equal (mkdir_v1 (ab), 0);
  pid_t p = spawn_sleeper ();
  track (p);
  assert_int_equal (move_to (p, ab), 0);
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_cgroup_from_pid (p, &cg, &err), err);
  char *want = child_path ("a b");
  assert_string_equal (cg->path, want);
  cleanup_bitmap hwloc_bitmap_t cpus = xset ();
  expect_ok (cp_cgroup_read_cpuset (cg, cpus, NULL, &err), err);
  tu_assert_set (cpus, G.parent_cpus);

  assert_int_equal (cgroup_init (), 0);
  char *mount = NULL, *lc_path = NULL;
  assert_int_equal (cgroup_get_subsys_mount_point ("cpuset", &mount), 0);
  assert_string_equal (mount, cg->mount);
  cleanup_cgroup struct cp_cgroup *plain = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &plain, &err), err);
  assert_int_equal (cgroup_get_current_controller_path (G.sleeper, "cpuset", &lc_path), 0);
  assert_string_equal (lc_path, plain->path);
  free (lc_path);
  lc_path = NULL;
  int r = cgroup_get_current_controller_path (p, "cpuset", &lc_path);
  print_message ("note: for `%s` libcgroup returns %d `%s`\n", want, r, lc_path ? lc_path : "(null)");
  free (lc_path);
  free (mount);
  free (want);
  free (ab);
}

/* ---- opening directories: both the openat2 and the openat walk ---------------------- */

static void
test_open_dir_both_ways (void **state)
{
  (void) state;
  char *d = cp_xasprintf ("%s/od", G.tmp);
  char *cmd = cp_xasprintf ("mkdir -p '%s/d/e' && touch '%s/f' && ln -s d '%s/l' && ln -s /etc '%s/abs'", d, d, d, d);
  assert_int_equal (system (cmd), 0);
  free (cmd);
  int root = open (d, O_PATH | O_DIRECTORY | O_CLOEXEC);
  assert_true (root >= 0);
  const unsigned modes[] = { 0, CP_CGROUP_OPEN_NO_OPENAT2, CP_CGROUP_OPEN_SAME_MOUNT,
                             CP_CGROUP_OPEN_SAME_MOUNT | CP_CGROUP_OPEN_NO_OPENAT2 };
  for (size_t i = 0; i < CP_ARRAY_SIZE (modes); i++)
    {
      unsigned m = modes[i];
      cp_error_t err = NULL;
      int fd = cp_cgroup_open_dir (root, d, "d/e", m, &err);
      expect_ok (fd, err);
      struct stat st;
      assert_int_equal (fstat (fd, &st), 0);
      assert_true (S_ISDIR (st.st_mode));
      close (fd);
      fd = cp_cgroup_open_dir (root, d, "", m, &err);
      expect_ok (fd, err);
      struct stat want;
      assert_int_equal (fstat (fd, &st), 0);
      assert_int_equal (stat (d, &want), 0);
      assert_true (st.st_ino == want.st_ino);
      close (fd);
      /* "/" itself (not the current directory). */
      fd = cp_cgroup_open_dir (AT_FDCWD, NULL, "/", m & ~(unsigned) CP_CGROUP_OPEN_SAME_MOUNT, &err);
      expect_ok (fd, err);
      assert_int_equal (fstat (fd, &st), 0);
      assert_int_equal (stat ("/", &want), 0);
      assert_true (st.st_ino == want.st_ino && st.st_dev == want.st_dev);
      close (fd);
      char *abs_e = cp_xasprintf ("%s/d/e", d);
      fd = cp_cgroup_open_dir (AT_FDCWD, NULL, abs_e, m & ~(unsigned) CP_CGROUP_OPEN_SAME_MOUNT, &err);
      expect_ok (fd, err);
      close (fd);
      free (abs_e);
      expect_fail (cp_cgroup_open_dir (root, d, "l", m, &err), err, CP_ERR_RUNTIME, "symlinks are not followed");
      expect_fail (cp_cgroup_open_dir (root, d, "l/e", m, &err), err, CP_ERR_RUNTIME, "symlinks are not followed");
      expect_fail (cp_cgroup_open_dir (root, d, "abs", m, &err), err, CP_ERR_RUNTIME, "symlinks are not followed");
      expect_fail (cp_cgroup_open_dir (root, d, "f", m, &err), err, CP_ERR_RUNTIME, "not a directory");
      expect_fail (cp_cgroup_open_dir (root, d, "missing", m, &err), err, CP_ERR_RUNTIME, "No such file");
      expect_fail (cp_cgroup_open_dir (root, d, "d/../d", m, &err), err, CP_ERR_RUNTIME, "`..` component");
      expect_fail (cp_cgroup_open_dir (root, d, "..", m, &err), err, CP_ERR_RUNTIME, "`..` component");
      expect_fail (cp_cgroup_open_dir (root, d, "d//e", m, &err), err, CP_ERR_RUNTIME, "empty path component");
      char *via_link = cp_xasprintf ("%s/l/e", d);
      expect_fail (cp_cgroup_open_dir (AT_FDCWD, NULL, via_link, m & ~(unsigned) CP_CGROUP_OPEN_SAME_MOUNT, &err),
                   err, CP_ERR_RUNTIME, "symlinks are not followed");
      free (via_link);
      /* Crossing a mount point: /tmp/... to / and /proc is another filesystem. */
      if (m & CP_CGROUP_OPEN_SAME_MOUNT)
        {
          int slash = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
          expect_fail (cp_cgroup_open_dir (slash, "/", "proc/self", m, &err), err, CP_ERR_RUNTIME,
                       "leaves the cgroup filesystem");
          close (slash);
        }
    }
  close (root);
  free (d);
}

/* ---- the real cgroupfs: v2, through the hugetlb controller of the unified hierarchy ---- */

static void
test_v2_real (void **state)
{
  (void) state;
  need_v2 ();
  cp_error_t err = NULL;
  /* cpuset is on v1 here... */
  cleanup_cgroup struct cp_cgroup *v1 = NULL;
  expect_ok (cp_cgroup_from_pid (G.sleeper, &v1, &err), err);
  assert_int_equal (v1->version, 1);
  /* ...and hugetlb on the unified hierarchy, where the same process is in a/b. */
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  expect_ok (cp_cgroup_from_pid_for (G.sleeper, "hugetlb", &cg, &err), err);
  assert_int_equal (cg->version, 2);
  assert_string_equal (cg->mount, V2_MOUNT);
  char *want = child_path ("a/b");
  assert_string_equal (cg->path, want);
  free (want);

  /* Enabling goes down from the root to the parent a, not into b.  The root is the
     host's: say that we are about to change it, for a run after us if we die. */
  if (!G.v2_root_hugetlb_was_on)
    {
      char pid[32];
      snprintf (pid, sizeof pid, "%d\n", (int) getpid ());
      int fd = open (HUGETLB_MARKER, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      assert_true (fd >= 0);
      assert_int_equal (write (fd, pid, strlen (pid)), (ssize_t) strlen (pid));
      close (fd);
    }
  expect_ok (cp_cgroup_enable_controller (cg, "hugetlb", &err), err);
  char *root_sc = read_line (V2_MOUNT "/cgroup.subtree_control");
  char *p = cp_xasprintf ("%s/cgroup.subtree_control", G.base_v2);
  char *base_sc = read_line (p);
  free (p);
  p = cp_xasprintf ("%s/a/cgroup.subtree_control", G.base_v2);
  char *a_sc = read_line (p);
  free (p);
  p = cp_xasprintf ("%s/a/b/cgroup.subtree_control", G.base_v2);
  char *b_sc = read_line (p);
  free (p);
  p = cp_xasprintf ("%s/a/b/cgroup.controllers", G.base_v2);
  char *b_ctl = read_line (p);
  free (p);
  tu_assert_contains (root_sc, "hugetlb");
  tu_assert_contains (base_sc, "hugetlb");
  tu_assert_contains (a_sc, "hugetlb");
  assert_string_equal (b_sc, "");
  tu_assert_contains (b_ctl, "hugetlb");
  free (root_sc);
  free (base_sc);
  free (a_sc);
  free (b_sc);
  free (b_ctl);
  expect_ok (cp_cgroup_enable_controller (cg, "hugetlb", &err), err); /* nothing left to do */

  /* cpuset is not available on this v2 hierarchy: clear errors, nothing written. */
  char *msg = cp_xasprintf ("cpuset is not in %s/cgroup.controllers", V2_MOUNT);
  expect_fail (cp_cgroup_enable_cpuset (cg, &err), err, CP_ERR_RUNTIME, msg);
  free (msg);
  cleanup_bitmap hwloc_bitmap_t cpus = xset (), mems = xset ();
  msg = cp_xasprintf ("open %s/a/b/cpuset.cpus.effective: No such file or directory", G.base_v2);
  expect_fail (cp_cgroup_read_cpuset (cg, cpus, mems, &err), err, CP_ERR_RUNTIME, msg);
  free (msg);
  msg = cp_xasprintf ("open %s/a/cpuset.cpus.effective: No such file or directory", G.base_v2);
  expect_fail (cp_cgroup_parent_limits (cg, cpus, mems, &err), err, CP_ERR_RUNTIME, msg);
  cleanup_bitmap hwloc_bitmap_t one = tu_set ("0");
  expect_fail (cp_cgroup_write_cpuset (cg, one, NULL, &err), err, CP_ERR_RUNTIME, msg);
  free (msg);
  root_sc = read_line (V2_MOUNT "/cgroup.subtree_control");
  assert_null (strstr (root_sc, "cpuset"));
  free (root_sc);

  /* A cgroup with a process of its own cannot enable controllers for its children:
     the error says so. */
  char *pq = cp_xasprintf ("%s/p/q", G.base_v2), *pdir = cp_xasprintf ("%s/p", G.base_v2);
  assert_int_equal (mkdir (pdir, 0755), 0);
  assert_int_equal (mkdir (pq, 0755), 0);
  pid_t inner = spawn_sleeper ();
  track (inner);
  assert_int_equal (move_to (inner, pdir), 0);
  struct stat st;
  assert_int_equal (stat (V2_MOUNT, &st), 0);
  char *qrel = child_path ("p/q");
  struct cp_cgroup_where w = { .version = 2, .mount = cp_xstrdup (V2_MOUNT), .mount_root = cp_xstrdup ("/"),
                               .path = qrel, .dev = st.st_dev };
  cleanup_cgroup struct cp_cgroup *q = NULL;
  expect_ok (cp_cgroup_open_where (&w, &q, &err), err);
  msg = cp_xasprintf ("write %s/cgroup.subtree_control (cgroup v2 enables a controller for the children only of a "
                      "cgroup without processes of its own): Device or resource busy",
                      pdir);
  expect_fail (cp_cgroup_enable_controller (q, "hugetlb", &err), err, CP_ERR_RUNTIME, msg);
  free (msg);
  /* The device number is checked. */
  w.dev = st.st_dev + 1;
  struct cp_cgroup *bad = NULL;
  expect_fail (cp_cgroup_open_where (&w, &bad, &err), err, CP_ERR_RUNTIME, "is not the cgroup v2 filesystem");
  w.dev = st.st_dev;
  w.version = 1; /* and the filesystem type */
  expect_fail (cp_cgroup_open_where (&w, &bad, &err), err, CP_ERR_RUNTIME, "is not the cgroup v1 filesystem");
  assert_null (bad);
  cp_cgroup_where_clear (&w);
  free (pq);
  free (pdir);

  /* A removed v2 cgroup: "(deleted)", refused. */
  char *z = cp_xasprintf ("%s/z", G.base_v2);
  assert_int_equal (mkdir (z, 0755), 0);
  pid_t zombie = spawn_exited_in (z);
  assert_int_equal (rmdir (z), 0);
  cleanup_cgroup struct cp_cgroup *dead = NULL;
  char *deleted = cp_xasprintf ("cgroup `%s/z (deleted)` has been removed", G.rel);
  expect_fail (cp_cgroup_from_pid_for (zombie, "hugetlb", &dead, &err), err, CP_ERR_RUNTIME, deleted);
  free (deleted);
  reap (zombie);
  free (z);
}

/* ---- private mount namespaces: layouts we cannot make on the host ------------------------ */

static int ns_failures;
#define NS_CHECK(cond, ...)                                                  \
  do                                                                         \
    {                                                                        \
      if (!(cond))                                                           \
        {                                                                    \
          fprintf (stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);        \
          fprintf (stderr, __VA_ARGS__);                                     \
          fprintf (stderr, "\n");                                            \
          ns_failures++;                                                     \
        }                                                                    \
    }                                                                        \
  while (0)

static const char *
msg_of (cp_error_t e)
{
  return cp_error_message (e);
}

/* Run FN in a forked child with a private mount namespace; 0: passed, 77: cannot. */
static int
in_private_mount_ns (void (*fn) (void))
{
  fflush (NULL);
  pid_t p = fork ();
  if (p == 0)
    {
      if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        _exit (77);
      ns_failures = 0;
      fn ();
      fflush (NULL);
      _exit (ns_failures ? 1 : 0);
    }
  int status = 0;
  waitpid (p, &status, 0);
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

static void
run_in_ns (void (*fn) (void))
{
  int r = in_private_mount_ns (fn);
  if (r == 77)
    {
      print_message ("SKIP: no private mount namespace here\n");
      tu_skip ();
    }
  assert_int_equal (r, 0);
}

static void
ns_bind_subtree (void)
{
  char *mnt = cp_xasprintf ("%s/bind", G.tmp);
  NS_CHECK (mount (G.base_v1, mnt, NULL, MS_BIND, NULL) == 0, "bind: %s", strerror (errno));
  cp_error_t err = NULL;
  struct cp_cgroup *cg = NULL;
  /* Both mounts: the one showing the whole hierarchy. */
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) == 0, "%s", msg_of (err));
  if (cg)
    NS_CHECK (strcmp (cg->mount, V1_MOUNT) == 0, "mount %s", cg->mount);
  cp_cgroup_free (cg);
  cg = NULL;
  /* Only the bind mount of cachepin-test-N: the cgroup is "/child" below it. */
  NS_CHECK (umount2 (V1_MOUNT, MNT_DETACH) == 0, "umount: %s", strerror (errno));
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) == 0, "%s", msg_of (err));
  if (cg)
    {
      NS_CHECK (strcmp (cg->mount, mnt) == 0, "mount %s", cg->mount);
      NS_CHECK (strcmp (cg->path, "/child") == 0, "path %s", cg->path);
      hwloc_bitmap_t cpus = hwloc_bitmap_alloc (), mems = hwloc_bitmap_alloc ();
      NS_CHECK (cp_cgroup_parent_limits (cg, cpus, mems, &err) == 0, "%s", msg_of (err));
      NS_CHECK (cp_cgroup_write_cpuset (cg, cpus, mems, &err) == 0, "%s", msg_of (err));
      NS_CHECK (cp_cgroup_read_cpuset (cg, cpus, NULL, &err) == 0, "%s", msg_of (err));
      char *got = cp_cpulist_format (cpus);
      NS_CHECK (strcmp (got, G.parent_cpus) == 0, "cpus %s", got);
      free (got);
      hwloc_bitmap_free (cpus);
      hwloc_bitmap_free (mems);
      NS_CHECK (cp_cgroup_dir_exists (cg->mount, cg->path), "dir_exists");
    }
  cp_cgroup_free (cg);
  cg = NULL;
  /* --cgroup in both forms goes through the bind mount too. */
  char *rel = cp_xasprintf ("%s/child", G.rel), *abs = cp_xasprintf ("%s/child", mnt);
  NS_CHECK (cp_cgroup_from_path (rel, &cg, &err) == 0, "%s", msg_of (err));
  if (cg)
    NS_CHECK (strcmp (cg->path, "/child") == 0 && strcmp (cg->mount, mnt) == 0, "%s %s", cg->mount, cg->path);
  cp_cgroup_free (cg);
  cg = NULL;
  NS_CHECK (cp_cgroup_from_path (abs, &cg, &err) == 0, "%s", msg_of (err));
  cp_cgroup_free (cg);
  cg = NULL;
  /* The mount's root itself is not a container's cgroup. */
  NS_CHECK (cp_cgroup_from_path (mnt, &cg, &err) < 0, "root accepted");
  cp_error_free (&err);
  free (rel);
  free (abs);
  free (mnt);
}

static void
ns_mounted_over (void)
{
  NS_CHECK (mount ("none", V1_MOUNT, "tmpfs", 0, "size=16k") == 0, "tmpfs: %s", strerror (errno));
  cp_error_t err = NULL;
  struct cp_cgroup *cg = NULL;
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) < 0, "accepted through a tmpfs");
  NS_CHECK (err && strstr (err->msg, "is not the cgroup v1 filesystem /proc/self/mountinfo lists there"), "%s",
            msg_of (err));
  cp_error_free (&err);
  cp_cgroup_free (cg);
}

static void
ns_symlink_and_second_mount (void)
{
  char *t = cp_xasprintf ("%s/t", G.tmp);
  NS_CHECK (mount ("none", t, "tmpfs", 0, "size=16k") == 0, "tmpfs: %s", strerror (errno));
  char *cg2 = cp_xasprintf ("%s/cg", t), *link = cp_xasprintf ("%s/link", t);
  NS_CHECK (mkdir (cg2, 0755) == 0, "mkdir");
  NS_CHECK (mount ("none", cg2, "cgroup", 0, "cpuset") == 0, "cgroup mount: %s", strerror (errno));
  NS_CHECK (symlink ("cg", link) == 0, "symlink");
  cp_error_t err = NULL;
  struct cp_cgroup *cg = NULL;
  /* The second mount of the cpuset hierarchy takes absolute paths too. */
  char *via_mount = cp_xasprintf ("%s%s/child", cg2, G.rel);
  NS_CHECK (cp_cgroup_from_path (via_mount, &cg, &err) == 0, "%s", msg_of (err));
  if (cg)
    NS_CHECK (strcmp (cg->mount, cg2) == 0, "mount %s", cg->mount);
  cp_cgroup_free (cg);
  cg = NULL;
  /* Through the symlink: refused. */
  char *via_link = cp_xasprintf ("%s%s/child", link, G.rel);
  NS_CHECK (cp_cgroup_from_path (via_link, &cg, &err) < 0, "accepted through a symlink");
  NS_CHECK (err && cp_error_kind (err) == CP_ERR_INPUT && strstr (err->msg, "under the tmpfs mount"), "%s",
            msg_of (err));
  cp_error_free (&err);
  /* A mount inside the cgroup tree is not crossed (openat2 RESOLVE_NO_XDEV). */
  char *child = cp_xasprintf ("%s/child", G.base_v1);
  NS_CHECK (mount ("none", child, "tmpfs", 0, "size=16k") == 0, "tmpfs on child: %s", strerror (errno));
  char *rel = cp_xasprintf ("%s/child", G.rel);
  NS_CHECK (cp_cgroup_from_path (rel, &cg, &err) < 0, "crossed into a mount");
  NS_CHECK (err && cp_error_kind (err) == CP_ERR_INPUT && strstr (err->msg, "leaves the cgroup filesystem"), "%s",
            msg_of (err));
  cp_error_free (&err);
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) < 0, "crossed into a mount");
  cp_error_free (&err);
  /* The walk without openat2 refuses it as well. */
  int mfd = open (V1_MOUNT, O_PATH | O_DIRECTORY | O_CLOEXEC);
  char *relc = cp_xasprintf ("%s/child", G.name);
  int fd = cp_cgroup_open_dir (mfd, V1_MOUNT, relc, CP_CGROUP_OPEN_SAME_MOUNT | CP_CGROUP_OPEN_NO_OPENAT2, &err);
  NS_CHECK (fd < 0 && err && cp_error_errno (err) == EXDEV, "%s", msg_of (err));
  cp_error_free (&err);
  close (mfd);
  free (relc);
  free (rel);
  free (child);
  free (via_link);
  free (via_mount);
  free (cg2);
  free (link);
  free (t);
}

static void
write_text (const char *path, const char *text, size_t len)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  NS_CHECK (fd >= 0 && write (fd, text, len) == (ssize_t) len, "%s: %s", path, strerror (errno));
  if (fd >= 0)
    close (fd);
}

/* Files shown in place of /proc/<pid>/cgroup and /proc/self/mountinfo: the size
 * bounds hold, exactly at the limit is fine, a NUL byte is refused. */
static void
ns_bounded_reads (void)
{
  char proc_cgroup[64];
  snprintf (proc_cgroup, sizeof proc_cgroup, "/proc/%d/cgroup", (int) G.sleeper);
  char *fake = cp_xasprintf ("%s/fake", G.tmp);
  cp_error_t err = NULL;
  struct cp_cgroup *cg = NULL;

  /* /proc/<pid>/cgroup of exactly CP_CGROUP_PROC_CGROUP_MAX bytes: padding lines of
     another hierarchy, then the real cpuset line. */
  char *last = cp_xasprintf ("3:cpuset:%s/child\n", G.rel);
  size_t size = CP_CGROUP_PROC_CGROUP_MAX, tail = strlen (last);
  char *text = cp_xmalloc0 (size + 2);
  size_t pos = 0;
  while (pos + tail < size)
    {
      size_t room = size - tail - pos;
      const char *pad = "7:blkio:/";
      size_t n = room < 64 ? room : 64;
      NS_CHECK (n >= strlen (pad) + 1, "padding arithmetic (%zu)", n);
      memset (text + pos, 'x', n);
      memcpy (text + pos, pad, strlen (pad));
      text[pos + n - 1] = '\n';
      pos += n;
    }
  memcpy (text + pos, last, tail);
  write_text (fake, text, size);
  NS_CHECK (mount (fake, proc_cgroup, NULL, MS_BIND, NULL) == 0, "bind: %s", strerror (errno));
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) == 0, "at the limit: %s", msg_of (err));
  cp_cgroup_free (cg);
  cg = NULL;
  NS_CHECK (umount (proc_cgroup) == 0, "umount: %s", strerror (errno));
  /* One byte more. */
  memmove (text + 1, text, size);
  text[0] = '7';
  text[1] = ':';
  write_text (fake, text, size + 1);
  NS_CHECK (mount (fake, proc_cgroup, NULL, MS_BIND, NULL) == 0, "bind: %s", strerror (errno));
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) < 0, "over the limit accepted");
  char *want = cp_xasprintf ("%s: larger than %d bytes", proc_cgroup, CP_CGROUP_PROC_CGROUP_MAX);
  NS_CHECK (err && strstr (err->msg, want), "%s", msg_of (err));
  free (want);
  cp_error_free (&err);
  NS_CHECK (umount (proc_cgroup) == 0, "umount: %s", strerror (errno));
  /* A NUL byte. */
  static const char with_nul[] = "3:cpuset:/a\0/b\n0::/\n";
  write_text (fake, with_nul, sizeof with_nul - 1);
  NS_CHECK (mount (fake, proc_cgroup, NULL, MS_BIND, NULL) == 0, "bind: %s", strerror (errno));
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) < 0, "NUL accepted");
  NS_CHECK (err && strstr (err->msg, "NUL byte at offset 11"), "%s", msg_of (err));
  cp_error_free (&err);
  NS_CHECK (umount (proc_cgroup) == 0, "umount: %s", strerror (errno));
  free (text);
  free (last);

  /* /proc/self/mountinfo over CP_CGROUP_MOUNTINFO_MAX. */
  size = (size_t) CP_CGROUP_MOUNTINFO_MAX + 1;
  text = cp_xmalloc0 (size);
  memset (text, '\n', size);
  write_text (fake, text, size);
  free (text);
  NS_CHECK (mount (fake, "/proc/self/mountinfo", NULL, MS_BIND, NULL) == 0, "bind: %s", strerror (errno));
  NS_CHECK (cp_cgroup_from_pid (G.sleeper, &cg, &err) < 0, "huge mountinfo accepted");
  want = cp_xasprintf ("/proc/self/mountinfo: larger than %d bytes", CP_CGROUP_MOUNTINFO_MAX);
  NS_CHECK (err && strstr (err->msg, want), "%s", msg_of (err));
  free (want);
  cp_error_free (&err);
  unlink (fake);
  free (fake);
}

static void
test_ns_bounded_reads (void **state)
{
  (void) state;
  need_v1 ();
  run_in_ns (ns_bounded_reads);
}

static void
test_ns_bind_subtree (void **state)
{
  (void) state;
  need_v1 ();
  char *mnt = cp_xasprintf ("%s/bind", G.tmp);
  assert_int_equal (mkdir (mnt, 0755), 0);
  free (mnt);
  run_in_ns (ns_bind_subtree);
}

static void
test_ns_mounted_over (void **state)
{
  (void) state;
  need_v1 ();
  run_in_ns (ns_mounted_over);
}

static void
test_ns_symlink_second_mount (void **state)
{
  (void) state;
  need_v1 ();
  char *t = cp_xasprintf ("%s/t", G.tmp);
  assert_int_equal (mkdir (t, 0755), 0);
  free (t);
  run_in_ns (ns_symlink_and_second_mount);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_locate_hybrid_v1_v2),
    cmocka_unit_test (test_locate_v1_comounted),
    cmocka_unit_test (test_locate_mount_roots),
    cmocka_unit_test (test_locate_refusals),
    cmocka_unit_test (test_locate_odd_mountinfo_fields),
    cmocka_unit_test (test_resolve_text),
    cmocka_unit_test (test_open_dir_both_ways),
    cmocka_unit_test (test_from_pid_v1),
    cmocka_unit_test (test_from_pid_refusals),
    cmocka_unit_test (test_parent_limits_v1),
    cmocka_unit_test (test_write_read_v1),
    cmocka_unit_test (test_write_refusals_v1),
    cmocka_unit_test (test_write_fresh_v1),
    cmocka_unit_test (test_from_path_v1),
    cmocka_unit_test (test_dir_exists),
    cmocka_unit_test (test_blank_in_name_and_libcgroup),
    cmocka_unit_test (test_v2_real),
    cmocka_unit_test (test_ns_bind_subtree),
    cmocka_unit_test (test_ns_mounted_over),
    cmocka_unit_test (test_ns_symlink_second_mount),
    cmocka_unit_test (test_ns_bounded_reads),
  };
  return tu_exit (cmocka_run_group_tests (tests, group_setup, group_teardown));
}
