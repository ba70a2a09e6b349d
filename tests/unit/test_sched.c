/* The scheduler feature probe (hook/host/sched.c) on fake trees in /tmp: every CAS
 * interface variant and state, the idempotent write, core scheduling's outcomes
 * and the boot option.  The real kernel's side is checked in the VM
 * (tests/vm/sched-tests.sh). */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched.h"
#include "util.h"

#define MOUNTINFO_DEBUGFS                                                                                            \
  "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"                                                                   \
  "31 22 0:11 / /sys/kernel/debug rw,relatime shared:12 - debugfs debugfs rw\n"
#define MOUNTINFO_NONE "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
#define FEATURES_PLAIN "PLACE_LAG RUN_TO_PARITY NO_NEXT_BUDDY TTWU_QUEUE\n"

/* ------------------------------------------------------------------ fake trees */

static char *
tree_new (void)
{
  char *root = cp_xstrdup ("/tmp/cp-sched-XXXXXX");
  assert_non_null (mkdtemp (root));
  /* Readable by the unprivileged child of the denial tests. */
  assert_int_equal (chmod (root, 0755), 0);
  return root;
}

static int
rm_entry (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

static void
tree_free (char **root)
{
  if (*root == NULL)
    return;
  nftw (*root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free (*root);
  *root = NULL;
}
#define cleanup_tree __attribute__ ((cleanup (tree_free)))

/* mkdir -p ROOT/REL's parent, then write TEXT to ROOT/REL. */
static void
tree_put (const char *root, const char *rel, const char *text)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", root, rel);
  for (char *p = path + strlen (root) + 1; (p = strchr (p, '/')) != NULL; p++)
    {
      *p = '\0';
      if (mkdir (path, 0755) < 0 && errno != EEXIST)
        fail_msg ("mkdir %s: %s", path, strerror (errno));
      *p = '/';
    }
  tu_write_file (path, text, strlen (text));
}

static void
tree_mkdir (const char *root, const char *rel)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s/.keep", root, rel);
  tree_put (root, path + strlen (root) + 1, "");
  assert_int_equal (unlink (path), 0);
}

static char *
tree_read (const char *root, const char *rel)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", root, rel);
  FILE *f = fopen (path, "r");
  assert_non_null (f);
  char *buf = cp_xmalloc0 (4096);
  size_t n = fread (buf, 1, 4095, f);
  buf[n] = '\0';
  fclose (f);
  return buf;
}

/* A tree whose debugfs is mounted and has the 7.2+ llc_balancing directory. */
static void
tree_dir_variant (const char *root, const char *enabled)
{
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (root, CP_SCHED_CAS_DIR "/enabled", enabled);
  tree_put (root, CP_SCHED_CAS_DIR "/aggr_tolerance", "1\n");
  tree_put (root, CP_SCHED_CAS_DIR "/epoch_period", "2\n");
  tree_put (root, CP_SCHED_SCHED_DIR "/features", FEATURES_PLAIN);
}

static struct cp_sched_cas
probe_ok (const char *root)
{
  struct cp_sched_cas cas;
  cp_error_t err = NULL;
  if (cp_sched_cas_probe (root, &cas, &err) < 0)
    fail_msg ("probe %s: %s", root, cp_error_message (err));
  return cas;
}

static void
assert_cas (struct cp_sched_cas cas, enum cp_sched_avail avail, enum cp_sched_cas_iface iface, int enabled)
{
  assert_string_equal (cp_sched_avail_name (cas.avail), cp_sched_avail_name (avail));
  assert_string_equal (cp_sched_cas_iface_name (cas.iface), cp_sched_cas_iface_name (iface));
  assert_int_equal (cas.enabled, enabled);
}

/* ------------------------------------------------------------------ CAS: variants */

static void
test_cas_dir_variant (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_dir_variant (root, "1\n");
  /* An older interface next to it never wins over the directory. */
  tree_put (root, CP_SCHED_SCHED_DIR "/llc_enabled", "0\n");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_DIR, 1);
  tree_put (root, CP_SCHED_CAS_DIR "/enabled", "0\n");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_DIR, 0);
  /* debugfs bools print Y/N; no newline is fine too. */
  tree_put (root, CP_SCHED_CAS_DIR "/enabled", "Y");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_DIR, 1);
}

static void
test_cas_llc_enabled_variant (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (root, CP_SCHED_SCHED_DIR "/llc_enabled", "1\n");
  tree_put (root, CP_SCHED_SCHED_DIR "/features", "PLACE_LAG NO_SCHED_CACHE\n");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_LLC_ENABLED, 1);
}

static void
test_cas_features_variant (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (root, CP_SCHED_SCHED_DIR "/features", "PLACE_LAG SCHED_CACHE TTWU_QUEUE\n");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_FEATURES, 1);
  tree_put (root, CP_SCHED_SCHED_DIR "/features", "PLACE_LAG NO_SCHED_CACHE TTWU_QUEUE\n");
  assert_cas (probe_ok (root), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_FEATURES, 0);
  /* A prefix of the token is not the token. */
  tree_put (root, CP_SCHED_SCHED_DIR "/features", "SCHED_CACHE_HOT NO_SCHED_CACHEX\n");
  assert_cas (probe_ok (root), CP_SCHED_UNSUPPORTED, CP_SCHED_CAS_IFACE_NONE, -1);
}

static void
test_cas_unsupported (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  /* Debian 12's kernels: debugfs mounted, sched/ there, no CAS anywhere. */
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (root, CP_SCHED_SCHED_DIR "/features", FEATURES_PLAIN);
  assert_cas (probe_ok (root), CP_SCHED_UNSUPPORTED, CP_SCHED_CAS_IFACE_NONE, -1);
  /* No sched/ directory at all (CONFIG_SCHED_DEBUG off on old kernels). */
  cleanup_free char *sched = cp_xasprintf ("%s/%s", root, CP_SCHED_SCHED_DIR);
  nftw (sched, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  tree_put (root, CP_SCHED_DEBUGFS "/tracing/README", "x\n");
  assert_cas (probe_ok (root), CP_SCHED_UNSUPPORTED, CP_SCHED_CAS_IFACE_NONE, -1);
}

static void
test_cas_no_debugfs (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  /* mountinfo says no debugfs: the files under the mount point (left there by
     someone, or a tmpfs) are not the kernel's. */
  tree_dir_variant (root, "1\n");
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_NONE);
  assert_cas (probe_ok (root), CP_SCHED_NO_DEBUGFS, CP_SCHED_CAS_IFACE_NONE, -1);
  /* debugfs mounted elsewhere, tracefs at a path below: neither counts. */
  tree_put (root, "proc/self/mountinfo",
            MOUNTINFO_NONE "40 22 0:11 / /mnt/debug rw - debugfs debugfs rw\n"
                           "41 22 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n"
                           "42 22 0:13 / /sys/kernel/debugfs rw - debugfs debugfs rw\n");
  assert_cas (probe_ok (root), CP_SCHED_NO_DEBUGFS, CP_SCHED_CAS_IFACE_NONE, -1);

  /* Without mountinfo the mount point's emptiness tells. */
  cleanup_tree char *bare = tree_new ();
  tree_mkdir (bare, CP_SCHED_DEBUGFS);
  assert_cas (probe_ok (bare), CP_SCHED_NO_DEBUGFS, CP_SCHED_CAS_IFACE_NONE, -1);
  tree_put (bare, CP_SCHED_CAS_DIR "/enabled", "0\n");
  assert_cas (probe_ok (bare), CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_DIR, 0);
  /* ... and no mount point at all (a container without /sys/kernel/debug). */
  cleanup_tree char *empty = tree_new ();
  assert_cas (probe_ok (empty), CP_SCHED_NO_DEBUGFS, CP_SCHED_CAS_IFACE_NONE, -1);
}

static void
test_cas_bad_content (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_dir_variant (root, "2\n");
  struct cp_sched_cas cas;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_sched_cas_probe (root, &cas, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);
  tu_assert_contains (cp_error_message (err), "llc_balancing/enabled: unexpected content '2");
  /* The switch is not a regular file: refused, not read. */
  cleanup_free char *enabled = cp_xasprintf ("%s/%s/enabled", root, CP_SCHED_CAS_DIR);
  assert_int_equal (unlink (enabled), 0);
  assert_int_equal (symlink ("aggr_tolerance", enabled), 0);
  assert_int_equal (cp_sched_cas_probe (root, &cas, &err), -1);
  tu_assert_contains (cp_error_message (err), "enabled: is a symbolic link");
}

/* ------------------------------------------------------------------ CAS: denied */

/* Run cp_sched_cas_probe(ROOT) with no privileges, so that the kernel refuses
 * opens with EACCES (root's CAP_DAC_OVERRIDE would read a 0000 file): as root,
 * in a child that drops to nobody with setresuid() (which clears every
 * capability); as anyone else, right here. */
static struct cp_sched_cas
probe_unprivileged (const char *root)
{
  if (geteuid () != 0)
    return probe_ok (root);
  int fds[2];
  assert_int_equal (pipe (fds), 0);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      close (fds[0]);
      struct cp_sched_cas cas = { .avail = 99 };
      cp_error_t err = NULL;
      if (setgroups (0, NULL) < 0 || setresgid (65534, 65534, 65534) < 0 || setresuid (65534, 65534, 65534) < 0)
        _exit (3);
      if (cp_sched_cas_probe (root, &cas, &err) < 0)
        {
          fprintf (stderr, "child probe: %s\n", cp_error_message (err));
          _exit (4);
        }
      _exit (write (fds[1], &cas, sizeof cas) == (ssize_t) sizeof cas ? 0 : 5);
    }
  close (fds[1]);
  struct cp_sched_cas cas;
  ssize_t n = read (fds[0], &cas, sizeof cas);
  close (fds[0]);
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFEXITED (status));
  if (WEXITSTATUS (status) == 3)
    {
      /* A user namespace without uid 65534: no way to drop to it here. */
      print_message ("cannot setresuid(65534) here; skipped\n");
      tu_skip ();
    }
  assert_int_equal (WEXITSTATUS (status), 0);
  assert_int_equal (n, sizeof cas);
  return cas;
}

static void
test_cas_denied (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_dir_variant (root, "1\n");
  /* The switch file is root's alone (the lockdown case, where debugfs refuses
     the open of a writable file, takes the same path with EPERM). */
  cleanup_free char *enabled = cp_xasprintf ("%s/%s/enabled", root, CP_SCHED_CAS_DIR);
  assert_int_equal (chmod (enabled, 0600), 0);
  struct cp_sched_cas cas = probe_unprivileged (root);
  assert_cas (cas, CP_SCHED_DENIED, CP_SCHED_CAS_IFACE_DIR, -1);
  assert_int_equal (cas.errnum, EACCES);

  /* debugfs's own root is 0700: an unprivileged process cannot even see which
     interface there is. */
  cleanup_free char *debug = cp_xasprintf ("%s/%s", root, CP_SCHED_DEBUGFS);
  assert_int_equal (chmod (debug, 0700), 0);
  cas = probe_unprivileged (root);
  assert_cas (cas, CP_SCHED_DENIED, CP_SCHED_CAS_IFACE_NONE, -1);
  assert_int_equal (cas.errnum, EACCES);

  /* The same without mountinfo: a mount point we may not look into counts as
     mounted, then denied (not "not mounted"). */
  cleanup_free char *proc = cp_xasprintf ("%s/proc", root);
  nftw (proc, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  cas = probe_unprivileged (root);
  assert_cas (cas, CP_SCHED_DENIED, CP_SCHED_CAS_IFACE_NONE, -1);
}

/* ------------------------------------------------------------------ CAS: writes */

/* Set PATH's mtime far in the past, to see later whether anything wrote it. */
static void
age (const char *root, const char *rel)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", root, rel);
  struct timespec ts[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
  assert_int_equal (utimensat (AT_FDCWD, path, ts, 0), 0);
}

static bool
untouched (const char *root, const char *rel)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", root, rel);
  struct stat st;
  assert_int_equal (stat (path, &st), 0);
  return st.st_mtim.tv_sec == 1000000000;
}

static struct cp_sched_cas_change
set_ok (const char *root, bool on)
{
  struct cp_sched_cas_change ch;
  cp_error_t err = NULL;
  if (cp_sched_cas_set (root, on, &ch, &err) < 0)
    fail_msg ("set %s: %s", on ? "on" : "off", cp_error_message (err));
  return ch;
}

static void
test_cas_set_switch_files (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_dir_variant (root, "0\n");
  const char *rel = CP_SCHED_CAS_DIR "/enabled";

  struct cp_sched_cas_change ch = set_ok (root, true);
  assert_int_equal (ch.iface, CP_SCHED_CAS_IFACE_DIR);
  assert_true (ch.written);
  assert_int_equal (ch.before, 0);
  assert_int_equal (ch.after, 1);
  cleanup_free char *text = tree_read (root, rel);
  assert_string_equal (text, "1\n"); /* "1" written over "0\n" */

  /* Already on: nothing is written. */
  age (root, rel);
  ch = set_ok (root, true);
  assert_false (ch.written);
  assert_int_equal (ch.before, 1);
  assert_int_equal (ch.after, 1);
  assert_true (untouched (root, rel));

  ch = set_ok (root, false);
  assert_true (ch.written);
  assert_int_equal (ch.before, 1);
  assert_int_equal (ch.after, 0);
  assert_false (untouched (root, rel));
  /* Other knobs of the directory are never touched. */
  free (text);
  text = tree_read (root, CP_SCHED_CAS_DIR "/aggr_tolerance");
  assert_string_equal (text, "1\n");

  /* The pre-7.2 llc_enabled file the same way. */
  cleanup_tree char *old = tree_new ();
  tree_put (old, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (old, CP_SCHED_SCHED_DIR "/llc_enabled", "1\n");
  ch = set_ok (old, false);
  assert_int_equal (ch.iface, CP_SCHED_CAS_IFACE_LLC_ENABLED);
  assert_true (ch.written);
  assert_int_equal (ch.before, 1);
  assert_int_equal (ch.after, 0);
  age (old, CP_SCHED_SCHED_DIR "/llc_enabled");
  ch = set_ok (old, false);
  assert_false (ch.written);
  assert_true (untouched (old, CP_SCHED_SCHED_DIR "/llc_enabled"));
}

static void
test_cas_set_features (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_put (root, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  const char *rel = CP_SCHED_SCHED_DIR "/features";
  /* The kernel parses one token per write and reads back the whole list; a
     regular file only has the bytes overwritten.  Off over "SCHED_CACHE\n"
     reads back right... */
  tree_put (root, rel, "SCHED_CACHE\n");
  struct cp_sched_cas_change ch = set_ok (root, false);
  assert_int_equal (ch.iface, CP_SCHED_CAS_IFACE_FEATURES);
  assert_true (ch.written);
  assert_int_equal (ch.before, 1);
  assert_int_equal (ch.after, 0);
  cleanup_free char *text = tree_read (root, rel);
  assert_string_equal (text, "NO_SCHED_CACHE");
  age (root, rel);
  ch = set_ok (root, false);
  assert_false (ch.written);
  assert_true (untouched (root, rel));

  /* ... and on over "NO_SCHED_CACHE\n" leaves "SCHED_CACHECHE\n", which no
     kernel would show: the exact bytes written are checked, and the read-back
     check reports a value that did not take. */
  tree_put (root, rel, "NO_SCHED_CACHE\n");
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_sched_cas_set (root, true, &ch, &err), -1);
  free (text);
  text = tree_read (root, rel);
  assert_string_equal (text, "SCHED_CACHECHE\n");
  tu_assert_contains (cp_error_message (err), "read back after writing SCHED_CACHE");
  assert_true (ch.written);
}

static void
test_cas_set_refused (void **state)
{
  (void) state;
  struct cp_sched_cas_change ch;
  cleanup_error cp_error_t err = NULL;

  cleanup_tree char *none = tree_new ();
  tree_put (none, "proc/self/mountinfo", MOUNTINFO_DEBUGFS);
  tree_put (none, CP_SCHED_SCHED_DIR "/features", FEATURES_PLAIN);
  assert_int_equal (cp_sched_cas_set (none, true, &ch, &err), -1);
  assert_int_equal (cp_error_errno (err), EOPNOTSUPP);
  assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);

  cleanup_tree char *unmounted = tree_new ();
  tree_put (unmounted, "proc/self/mountinfo", MOUNTINFO_NONE);
  assert_int_equal (cp_sched_cas_set (unmounted, true, &ch, &err), -1);
  assert_int_equal (cp_error_errno (err), ENOENT);
  tu_assert_contains (cp_error_message (err), "debugfs is not mounted");

  assert_int_equal (cp_sched_cas_set ("/nonexistent-cachepin-root", true, &ch, &err), -1);
  assert_int_equal (cp_error_errno (err), ENOENT);
  tu_assert_contains (cp_error_message (err), "open root /nonexistent-cachepin-root");
}

/* ------------------------------------------------------------------ core scheduling */

static void
test_core_classify (void **state)
{
  (void) state;
  struct cp_sched_core core;
  cleanup_error cp_error_t err = NULL;
  static const struct
  {
    int rc, errnum, smt;
    enum cp_sched_core_avail want;
  } cases[] = {
    { 0, 0, 1, CP_SCHED_CORE_SUPPORTED },      { -1, EINVAL, 1, CP_SCHED_CORE_NO_CONFIG },
    { -1, EINVAL, -1, CP_SCHED_CORE_NO_CONFIG }, { -1, ENODEV, 0, CP_SCHED_CORE_NO_SMT },
    { -1, EPERM, 1, CP_SCHED_CORE_DENIED },    { -1, EACCES, 1, CP_SCHED_CORE_DENIED },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      assert_int_equal (cp_sched_core_classify (cases[i].rc, cases[i].errnum, cases[i].smt, &core, &err), 0);
      assert_string_equal (cp_sched_core_avail_name (core.avail), cp_sched_core_avail_name (cases[i].want));
      assert_int_equal (core.errnum, cases[i].errnum);
      assert_int_equal (core.smt_active, cases[i].smt);
    }
  assert_int_equal (cp_sched_core_classify (-1, EFAULT, 1, &core, &err), -1);
  assert_int_equal (cp_error_errno (err), EFAULT);
  assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);
}

/* The probe on this host agrees with the prctl it wraps, and creating a cookie
 * fails with the errno the probe predicts (or works, where it is supported). */
static void
test_core_on_this_kernel (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_put (root, "sys/devices/system/cpu/smt/active", "0\n");
  struct cp_sched_state st;
  cleanup_error cp_error_t err = NULL;
  if (cp_sched_probe (root, &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (st.core.smt_active, 0);
  unsigned long long cookie = 0;
  int rc = prctl (62 /* PR_SCHED_CORE */, 0 /* GET */, 0UL, 0UL, (unsigned long) &cookie);
  assert_int_equal (st.core.errnum, rc < 0 ? errno : 0);

  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      pause ();
      _exit (0);
    }
  int r = cp_sched_core_create (child, &err);
  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
  switch (st.core.avail)
    {
    case CP_SCHED_CORE_SUPPORTED:
      if (r < 0)
        fail_msg ("supported, yet: %s", cp_error_message (err));
      /* A pid that does not exist is ESRCH. */
      assert_int_equal (cp_sched_core_create (INT_MAX, &err), -1);
      assert_int_equal (cp_error_errno (err), ESRCH);
      break;
    case CP_SCHED_CORE_NO_CONFIG:
    case CP_SCHED_CORE_NO_SMT:
    case CP_SCHED_CORE_DENIED:
    default:
      assert_int_equal (r, -1);
      assert_int_equal (cp_error_errno (err), st.core.errnum);
      assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);
      tu_assert_contains (cp_error_message (err), "core scheduling: create a cookie for pid");
      break;
    }
}

/* The real sysfs: its files claim a size of 4096 bytes whatever they hold, so
 * a bound below that refuses them (it did: smt_active read -1 here). */
static void
test_smt_active_real_sysfs (void **state)
{
  (void) state;
  FILE *f = fopen ("/sys/devices/system/cpu/smt/active", "r");
  if (f == NULL)
    tu_skip ();
  int want = -1;
  assert_int_equal (fscanf (f, "%d", &want), 1);
  fclose (f);
  struct cp_sched_state st;
  cleanup_error cp_error_t err = NULL;
  if (cp_sched_probe ("/", &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (st.core.smt_active, want);
  /* /proc/cmdline is there on any Linux. */
  assert_int_not_equal (st.smt_asym_packing, CP_SCHED_BOOT_UNKNOWN);
}

/* ------------------------------------------------------------------ boot option */

static void
test_boot_parse (void **state)
{
  (void) state;
  static const struct
  {
    const char *cmdline;
    enum cp_sched_boot want;
  } cases[] = {
    { "console=ttyS0 quiet\n", CP_SCHED_BOOT_UNSET },
    { "", CP_SCHED_BOOT_UNSET },
    { "quiet sched_smt_asym_packing=on\n", CP_SCHED_BOOT_ON },
    { "sched_smt_asym_packing=1 x", CP_SCHED_BOOT_ON },
    { "sched_smt_asym_packing=Y", CP_SCHED_BOOT_ON },
    { "sched_smt_asym_packing", CP_SCHED_BOOT_ON },
    { "sched_smt_asym_packing=off", CP_SCHED_BOOT_OFF },
    { "sched_smt_asym_packing=0", CP_SCHED_BOOT_OFF },
    { "sched_smt_asym_packing=maybe", CP_SCHED_BOOT_INVALID },
    { "sched_smt_asym_packing=", CP_SCHED_BOOT_INVALID },
    { "sched_smt_asym_packing=o", CP_SCHED_BOOT_INVALID },
    /* The last occurrence wins, as the kernel parses them in order. */
    { "sched_smt_asym_packing=on sched_smt_asym_packing=off", CP_SCHED_BOOT_OFF },
    /* Another parameter that starts with the same name is not it. */
    { "sched_smt_asym_packing_x=on", CP_SCHED_BOOT_UNSET },
    /* After "--" the words are init's arguments. */
    { "quiet -- sched_smt_asym_packing=on", CP_SCHED_BOOT_UNSET },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      enum cp_sched_boot got = cp_sched_boot_parse (cases[i].cmdline);
      if (got != cases[i].want)
        fail_msg ("'%s': got %s, want %s", cases[i].cmdline, cp_sched_boot_name (got),
                  cp_sched_boot_name (cases[i].want));
    }
}

static void
test_probe_all (void **state)
{
  (void) state;
  cleanup_tree char *root = tree_new ();
  tree_dir_variant (root, "1\n");
  tree_put (root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz sched_smt_asym_packing=on quiet\n");
  tree_put (root, "sys/devices/system/cpu/smt/active", "1\n");
  struct cp_sched_state st;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_sched_probe (root, &st, &err), 0);
  assert_cas (st.cas, CP_SCHED_SUPPORTED, CP_SCHED_CAS_IFACE_DIR, 1);
  assert_int_equal (st.smt_asym_packing, CP_SCHED_BOOT_ON);
  assert_int_equal (st.core.smt_active, 1);

  /* No cmdline under the root: unknown, not an error. */
  cleanup_tree char *bare = tree_new ();
  assert_int_equal (cp_sched_probe (bare, &st, &err), 0);
  assert_int_equal (st.smt_asym_packing, CP_SCHED_BOOT_UNKNOWN);
  assert_int_equal (st.core.smt_active, -1);
  assert_int_equal (st.cas.avail, CP_SCHED_NO_DEBUGFS);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_cas_dir_variant),
    cmocka_unit_test (test_cas_llc_enabled_variant),
    cmocka_unit_test (test_cas_features_variant),
    cmocka_unit_test (test_cas_unsupported),
    cmocka_unit_test (test_cas_no_debugfs),
    cmocka_unit_test (test_cas_bad_content),
    cmocka_unit_test (test_cas_denied),
    cmocka_unit_test (test_cas_set_switch_files),
    cmocka_unit_test (test_cas_set_features),
    cmocka_unit_test (test_cas_set_refused),
    cmocka_unit_test (test_core_classify),
    cmocka_unit_test (test_core_on_this_kernel),
    cmocka_unit_test (test_smt_active_real_sysfs),
    cmocka_unit_test (test_boot_parse),
    cmocka_unit_test (test_probe_all),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
