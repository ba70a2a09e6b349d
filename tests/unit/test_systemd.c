/* hook/host/systemd.c's pure parts: which cgroups are a systemd unit's own, the
 * version check, and the AllowedCPUs= byte encoding (runc's RangeToBits: byte i
 * holds CPUs 8i..8i+7, least significant bit first).  The D-Bus call itself runs
 * against a real systemd in the VM (tests/vm/systemd-tests.sh). */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "manager.h"
#include "systemd.h"
#include "util.h"

/* libsystemd is loaded only on the systemd path (hook/host/systemd.h): a process that
   has not taken it has not mapped it. */
static bool
libsystemd_loaded (void)
{
  void *h = dlopen ("libsystemd.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (h)
    dlclose (h);
  return h != NULL;
}

static void
test_unit_of_cgroup (void **state)
{
  (void) state;
  /* runc --systemd-cgroup with system.slice:cachepin:ID, podman with runc. */
  assert_string_equal (cp_systemd_unit_of_cgroup ("/system.slice/cachepin-c1.scope"), "cachepin-c1.scope");
  assert_string_equal (cp_systemd_unit_of_cgroup ("/machine.slice/libpod-0123abcd.scope"), "libpod-0123abcd.scope");
  assert_string_equal (cp_systemd_unit_of_cgroup ("/system.slice/foo.service"), "foo.service");
  assert_string_equal (cp_systemd_unit_of_cgroup ("/kubepods.slice/kubepods-pod1.slice/cri-containerd-x.scope"),
                       "cri-containerd-x.scope");
  assert_string_equal (cp_systemd_unit_of_cgroup ("/a.slice/x\\x2dy.scope"), "x\\x2dy.scope");
  /* crun's payload child of the scope, systemd leaves it alone; slices hold no
     process; cgroupfs paths; nothing before the suffix. */
  assert_null (cp_systemd_unit_of_cgroup ("/machine.slice/libpod-0123.scope/container"));
  assert_null (cp_systemd_unit_of_cgroup ("/system.slice"));
  assert_null (cp_systemd_unit_of_cgroup ("/user.slice/user-0.slice"));
  assert_null (cp_systemd_unit_of_cgroup ("/cachepin/c1"));
  assert_null (cp_systemd_unit_of_cgroup ("/x/.scope"));
  assert_null (cp_systemd_unit_of_cgroup ("/x/a.scope.d"));
  assert_null (cp_systemd_unit_of_cgroup ("/x/"));
  assert_null (cp_systemd_unit_of_cgroup (NULL));
  /* Not a name systemd would give a unit. */
  assert_null (cp_systemd_unit_of_cgroup ("/x/a b.scope"));
  assert_null (cp_systemd_unit_of_cgroup ("/x/\xc3\xa9.scope"));
  char long_name[300];
  memset (long_name, 'a', sizeof long_name);
  strcpy (long_name + 250, ".scope"); /* 256 bytes */
  assert_null (cp_systemd_unit_of_cgroup (long_name));
  long_name[249] = '\0';
  strcat (long_name, ".scope"); /* 255 */
  assert_non_null (cp_systemd_unit_of_cgroup (long_name));
}

static void
test_parse_version (void **state)
{
  (void) state;
  assert_int_equal (cp_systemd_parse_version ("257.9-1"), 257);
  assert_int_equal (cp_systemd_parse_version ("252.39-1~deb12u1"), 252);
  assert_int_equal (cp_systemd_parse_version ("243"), 243);
  assert_int_equal (cp_systemd_parse_version ("v256"), 256);
  assert_int_equal (cp_systemd_parse_version (""), -1);
  assert_int_equal (cp_systemd_parse_version ("abc"), -1);
  assert_int_equal (cp_systemd_parse_version (NULL), -1);
  assert_int_equal (cp_systemd_parse_version ("99999999999999"), -1);
  assert_true (cp_systemd_parse_version ("243.7") < CP_SYSTEMD_MIN_VERSION);
  assert_true (cp_systemd_parse_version ("244") >= CP_SYSTEMD_MIN_VERSION);
}

static void
expect_bytes (const char *cpulist, const uint8_t *expected, size_t n)
{
  hwloc_bitmap_t set = tu_set (cpulist);
  cleanup_free uint8_t *bytes = NULL;
  size_t len = 99;
  cp_error_t err = NULL;
  if (cp_systemd_cpuset_bytes (set, &bytes, &len, &err) < 0)
    fail_msg ("%s: %s", cpulist, cp_error_message (err));
  hwloc_bitmap_free (set);
  if (len != n || (n > 0 && memcmp (bytes, expected, n) != 0))
    {
      fprintf (stderr, "%s: got %zu bytes:", cpulist, len);
      for (size_t i = 0; i < len; i++)
        fprintf (stderr, " %02x", bytes[i]);
      fprintf (stderr, "\n");
      fail ();
    }
}

static void
test_cpuset_bytes (void **state)
{
  (void) state;
  expect_bytes ("0", (const uint8_t[]){ 0x01 }, 1);
  expect_bytes ("7", (const uint8_t[]){ 0x80 }, 1);
  /* 8 starts the second byte: little-endian byte order, as runc reverses big.Int's. */
  expect_bytes ("8", (const uint8_t[]){ 0x00, 0x01 }, 2);
  expect_bytes ("1,3-5", (const uint8_t[]){ 0x3a }, 1);
  expect_bytes ("0-15", (const uint8_t[]){ 0xff, 0xff }, 2);
  expect_bytes ("2,4,10,11", (const uint8_t[]){ 0x14, 0x0c }, 2);
  /* No trailing zero bytes, leading ones kept. */
  expect_bytes ("17", (const uint8_t[]){ 0x00, 0x00, 0x02 }, 3);
  expect_bytes ("0,63", (const uint8_t[]){ 0x01, 0, 0, 0, 0, 0, 0, 0x80 }, 8);
  /* Empty: an empty array, systemd's "no restriction" (a release). */
  hwloc_bitmap_t none = hwloc_bitmap_alloc ();
  uint8_t *bytes = (uint8_t *) 1;
  size_t len = 99;
  cp_error_t err = NULL;
  assert_int_equal (cp_systemd_cpuset_bytes (none, &bytes, &len, &err), 0);
  assert_null (bytes);
  assert_int_equal (len, 0);
  /* An infinite set has no encoding. */
  hwloc_bitmap_fill (none);
  assert_int_equal (cp_systemd_cpuset_bytes (none, &bytes, &len, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  cp_error_free (&err);
  hwloc_bitmap_free (none);
}

/* A cgroup that does not qualify is decided before any bus is opened: no
   connection, no error, and a reason. */
static void
test_open_not_applicable (void **state)
{
  (void) state;
  struct cp_cgroup v1 = { .version = 1, .mount = (char *) "/sys/fs/cgroup/cpuset",
                          .path = (char *) "/system.slice/x.scope", .dirfd = -1, .mountfd = -1 };
  struct cp_cgroup child = { .version = 2, .mount = (char *) "/sys/fs/cgroup",
                             .path = (char *) "/machine.slice/libpod-1.scope/container", .dirfd = -1, .mountfd = -1 };
  struct cp_cgroup *cases[] = { &v1, &child };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_systemd *sd = (struct cp_systemd *) 1;
      const char *why = NULL;
      cp_error_t err = NULL;
      assert_int_equal (cp_systemd_open (cases[i], &sd, &why, &err), 0);
      assert_null (sd);
      assert_non_null (why);
      assert_null (err);
    }
  assert_int_equal (cp_systemd_fd (NULL), -1);
  /* Through the managers' table: not attached, nothing kept for the sandbox. */
  struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE, .cgroup = &child };
  cleanup_managers struct cp_managers set;
  cp_managers_attach (NULL, &ctx, &set);
  for (size_t i = 0; i < set.n; i++)
    assert_string_not_equal (set.on[i].m->name, "systemd");
  int fd = 0;
  cp_error_t err = NULL;
  assert_int_equal (cp_managers_fd (&set, &fd, &err), 0);
  assert_int_equal (fd, -1);
  /* Not linked, and not loaded for a cgroup that does not qualify. */
  assert_false (libsystemd_loaded ());
}

#ifdef CACHEPIN_FAULT_INJECTION
/* The managers' table attached for a placement on CG (no kubelet state), with
   stderr captured: *OUT is what it logged; whether systemd's entry was attached. */
static bool
attach_logged (const struct cp_cgroup *cg, char **out)
{
  char path[] = "/tmp/cachepin-test-log.XXXXXX";
  int fd = mkstemp (path);
  assert_true (fd >= 0);
  unlink (path);
  fflush (stderr);
  int saved = dup (STDERR_FILENO);
  assert_true (saved >= 0 && dup2 (fd, STDERR_FILENO) == STDERR_FILENO);
  cp_log_init ("cachepin-test", true);
  struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE, .cgroup = cg };
  cleanup_managers struct cp_managers set;
  cp_managers_attach (NULL, &ctx, &set);
  bool attached = false;
  for (size_t i = 0; i < set.n; i++)
    attached = attached || set.on[i].m == &cp_manager_systemd;
  fflush (stderr);
  assert_true (dup2 (saved, STDERR_FILENO) == STDERR_FILENO);
  close (saved);
  char buf[4096];
  ssize_t n = pread (fd, buf, sizeof buf - 1, 0);
  close (fd);
  assert_true (n >= 0);
  buf[n] = '\0';
  *out = cp_xstrdup (buf);
  return attached;
}

/* The systemd path is taken (PID 1 "is" systemd, a v2 unit's cgroup) and the
   library cannot be loaded: the same as a bus that cannot be reached, one
   warning line that names the library and no connection, so the placer's
   direct cgroup write is all there is (as in cp_placer_apply()). */
static void
test_attach_without_libsystemd (void **state)
{
  (void) state;
  char booted[] = "/tmp/cachepin-test-booted.XXXXXX";
  assert_non_null (mkdtemp (booted));
  cp_systemd_set_test_paths ("libcachepin-test-absent.so.0", booted);
  struct cp_cgroup cg = { .version = 2, .mount = (char *) "/sys/fs/cgroup",
                          .path = (char *) "/system.slice/cachepin-t.scope", .dirfd = -1, .mountfd = -1 };
  cleanup_free char *log = NULL;
  assert_false (attach_logged (&cg, &log));
  const char *nl = strchr (log, '\n');
  if (nl == NULL || nl[1] != '\0' || strstr (log, "warning") == NULL
      || strstr (log, "libcachepin-test-absent.so.0") == NULL
      || strstr (log, "systemd may undo the placement") == NULL)
    fail_msg ("expected one warning line naming the library, got: [%s]", log);

  /* Not booted with systemd: the library is not even tried (no warning). */
  rmdir (booted);
  cleanup_free char *quiet = NULL;
  assert_false (attach_logged (&cg, &quiet));
  assert_string_equal (quiet, "");
  cp_systemd_set_test_paths (NULL, NULL);
}
#endif

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_unit_of_cgroup),
    cmocka_unit_test (test_parse_version),
    cmocka_unit_test (test_cpuset_bytes),
    cmocka_unit_test (test_open_not_applicable),
#ifdef CACHEPIN_FAULT_INJECTION
    cmocka_unit_test (test_attach_without_libsystemd),
#endif
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
