/* The host configuration, /etc/cachepin/config.json. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostconfig.h"
#include "util.h"

#define NAME CP_HOSTCONFIG_DEFAULT_PATH

static void
assert_defaults (const struct cp_hostconfig *hc)
{
  assert_true (hwloc_bitmap_isfull (hc->cpus));
  assert_true (hwloc_bitmap_iszero (hc->reserved));
  assert_int_equal (hc->defaults.cpus, 0);
  assert_int_equal (hc->defaults.align, CP_LEVEL_LLC);
  assert_int_equal (hc->defaults.smt, CP_SMT_PE0_FIRST);
  assert_int_equal (hc->defaults.mode, CP_MODE_EXCLUSIVE);
  assert_false (hc->defaults.strict);
  assert_string_equal (hc->state_dir, "/run/cachepin");
  assert_int_equal (hc->on_error, CP_ON_ERROR_ALLOW);
  assert_int_equal (hc->log_level, CP_LOG_INFO);
  assert_int_equal (hc->lock_timeout_ms, 5000);
  assert_string_equal (hc->topology, "host");
  assert_int_equal (hc->isolate, CP_ISOLATE_ALLOW);
  assert_string_equal (hc->cdi_dir, "/var/run/cdi");
}

static void
test_defaults (void **state)
{
  (void) state;
  struct cp_hostconfig hc;
  cp_error_t err = NULL;
  cp_hostconfig_init (&hc);
  assert_defaults (&hc);
  assert_null (hc.path);
  cp_hostconfig_free (&hc);

  /* An empty object is the defaults too. */
  assert_int_equal (cp_hostconfig_parse ("{}\n", 3, NAME, &hc, &err), 0);
  assert_defaults (&hc);
  assert_string_equal (hc.path, NAME);
  cp_hostconfig_free (&hc);

  /* The default path: a missing file means the defaults (only checked where
     this machine has none). */
  if (access (CP_HOSTCONFIG_DEFAULT_PATH, F_OK) < 0 && errno == ENOENT)
    {
      if (cp_hostconfig_load (NULL, &hc, &err) < 0)
        fail_msg ("%s", cp_error_message (err));
      assert_defaults (&hc);
      assert_null (hc.path);
      cp_hostconfig_free (&hc);
    }
}

static void
test_full (void **state)
{
  (void) state;
  static const char text[] = "{\n"
                             "  \"cpus\": \"0-63\",\n"
                             "  \"reserved\": \"0,32\",\n"
                             "  \"defaults\": {\"align\": \"l2\", \"smt\": \"cores\", \"mode\": \"shared\", \"strict\": true},\n"
                             "  \"state_dir\": \"/var/run/cachepin-test\",\n"
                             "  \"on_error\": \"deny\",\n"
                             "  \"log_level\": \"debug\",\n"
                             "  \"lock_timeout_ms\": 60000,\n"
                             "  \"topology\": \"/usr/share/cachepin/epyc.xml\",\n"
                             "  \"isolate\": \"deny\",\n"
                             "  \"cdi_dir\": \"/etc/cdi\"\n"
                             "}\n";
  struct cp_hostconfig hc;
  cp_error_t err = NULL;
  if (cp_hostconfig_parse (text, strlen (text), NAME, &hc, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  tu_assert_set (hc.cpus, "0-63");
  tu_assert_set (hc.reserved, "0,32");
  assert_int_equal (hc.defaults.align, CP_LEVEL_L2);
  assert_int_equal (hc.defaults.smt, CP_SMT_CORES);
  assert_int_equal (hc.defaults.mode, CP_MODE_SHARED);
  assert_true (hc.defaults.strict);
  assert_string_equal (hc.state_dir, "/var/run/cachepin-test");
  assert_int_equal (hc.on_error, CP_ON_ERROR_DENY);
  assert_string_equal (cp_on_error_name (hc.on_error), "deny");
  assert_int_equal (hc.log_level, CP_LOG_DEBUG);
  assert_int_equal (hc.lock_timeout_ms, 60000);
  assert_string_equal (hc.topology, "/usr/share/cachepin/epyc.xml");
  assert_int_equal (hc.isolate, CP_ISOLATE_DENY);
  assert_string_equal (cp_isolate_setting_name (hc.isolate), "deny");
  assert_string_equal (hc.cdi_dir, "/etc/cdi");
  cp_hostconfig_free (&hc);

  /* strict also as the annotation's spelling; reserved may be empty. */
  static const char text2[] = "{\"defaults\":{\"strict\":\"true\"},\"reserved\":\"\",\"lock_timeout_ms\":1,"
                              "\"topology\":\"host\",\"on_error\":\"allow\",\"isolate\":\"allow\"}";
  if (cp_hostconfig_parse (text2, strlen (text2), NAME, &hc, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_true (hc.defaults.strict);
  assert_true (hwloc_bitmap_iszero (hc.reserved));
  assert_int_equal (hc.lock_timeout_ms, 1);
  assert_int_equal (hc.isolate, CP_ISOLATE_ALLOW);
  assert_string_equal (cp_isolate_setting_name (hc.isolate), "allow");
  cp_hostconfig_free (&hc);

  /* The defaults parse as the options and annotations do: any case, l3 for llc. */
  static const char text3[] = "{\"defaults\":{\"align\":\"L3\",\"smt\":\"PE0\",\"mode\":\"Shared\"}}";
  if (cp_hostconfig_parse (text3, strlen (text3), NAME, &hc, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (hc.defaults.align, CP_LEVEL_LLC);
  assert_int_equal (hc.defaults.smt, CP_SMT_PE0);
  assert_int_equal (hc.defaults.mode, CP_MODE_SHARED);
  cp_hostconfig_free (&hc);
}

static const struct
{
  const char *name;
  const char *text;
  const char *error;
} bad[] = {
  { "on_error unknown", "{\"on_error\":\"maybe\"}", NAME ": on_error: expected \"allow\" or \"deny\", got \"maybe\"" },
  { "on_error a bool", "{\"on_error\":false}", NAME ": on_error: expected \"allow\" or \"deny\", got false" },
  { "on_error with NUL", "{\"on_error\":\"deny\\u0000\"}",
    NAME ": on_error: expected \"allow\" or \"deny\", got \"deny\\u0000\"" },
  { "isolate unknown", "{\"isolate\":\"on\"}", NAME ": isolate: expected \"allow\" or \"deny\", got \"on\"" },
  { "isolate in another case", "{\"isolate\":\"Deny\"}", NAME ": isolate: expected \"allow\" or \"deny\", got \"Deny\"" },
  { "isolate a bool", "{\"isolate\":true}", NAME ": isolate: expected \"allow\" or \"deny\", got true" },
  { "isolate with NUL", "{\"isolate\":\"deny\\u0000\"}",
    NAME ": isolate: expected \"allow\" or \"deny\", got \"deny\\u0000\"" },
  { "cpus not a string", "{\"cpus\":[0,1]}", NAME ": cpus: expected a string, got [0,1]" },
  { "cpus open range", "{\"cpus\":\"0-\"}", NAME ": cpus: `0-`: a number is missing at the end" },
  { "cpus empty", "{\"cpus\":\"\"}", NAME ": cpus: empty" },
  { "cpus all", "{\"cpus\":\"all\"}", NAME ": cpus: `all`: expected a number at `all`" },
  { "reserved bad", "{\"reserved\":\"0,,1\"}", NAME ": reserved: `0,,1`: expected a number at `,1`" },
  { "reserved not a string", "{\"reserved\":0}", NAME ": reserved: expected a string, got 0" },
  { "reserved covers cpus", "{\"cpus\":\"2-3\",\"reserved\":\"0-7\"}",
    NAME ": reserved: covers every CPU of cpus, leaving none to hand out" },
  { "defaults not an object", "{\"defaults\":\"llc\"}", NAME ": defaults: expected an object, got \"llc\"" },
  { "defaults unknown key", "{\"defaults\":{\"cpus\":\"4\"}}",
    NAME ": defaults: unknown key \"cpus\" (expected align, smt, mode or strict)" },
  { "defaults.align bad", "{\"defaults\":{\"align\":\"l4\"}}",
    NAME ": defaults.align: invalid value `l4` (expected l2|llc|numa|package|none)" },
  { "defaults.align not a string", "{\"defaults\":{\"align\":3}}", NAME ": defaults.align: expected a string, got 3" },
  { "defaults.smt bad", "{\"defaults\":{\"smt\":\"pe1\"}}",
    NAME ": defaults.smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)" },
  { "defaults.mode bad", "{\"defaults\":{\"mode\":\"exclusive \"}}",
    NAME ": defaults.mode: invalid value `exclusive ` (expected exclusive|shared)" },
  { "defaults.strict a number", "{\"defaults\":{\"strict\":1}}", NAME ": defaults.strict: expected a boolean, got 1" },
  { "defaults.strict bad", "{\"defaults\":{\"strict\":\"yes\"}}",
    NAME ": defaults.strict: invalid value `yes` (expected false|true)" },
  { "state_dir relative", "{\"state_dir\":\"run/cachepin\"}",
    NAME ": state_dir: expected an absolute path, got \"run/cachepin\"" },
  { "state_dir empty", "{\"state_dir\":\"\"}", NAME ": state_dir: empty" },
  { "cdi_dir relative", "{\"cdi_dir\":\"var/run/cdi\"}",
    NAME ": cdi_dir: expected an absolute path, got \"var/run/cdi\"" },
  { "cdi_dir empty", "{\"cdi_dir\":\"\"}", NAME ": cdi_dir: empty" },
  { "state_dir not a string", "{\"state_dir\":null}", NAME ": state_dir: expected a string, got null" },
  { "state_dir with NUL", "{\"state_dir\":\"/run\\u0000/x\"}", NAME ": state_dir: contains a NUL character" },
  { "log_level bad", "{\"log_level\":\"warn\"}",
    NAME ": log_level: invalid value `warn` (expected error|warning|info|debug)" },
  { "log_level not a string", "{\"log_level\":2}", NAME ": log_level: expected a string, got 2" },
  { "lock_timeout_ms zero", "{\"lock_timeout_ms\":0}",
    NAME ": lock_timeout_ms: expected an integer from 1 to 60000, got 0" },
  { "lock_timeout_ms too big", "{\"lock_timeout_ms\":60001}",
    NAME ": lock_timeout_ms: expected an integer from 1 to 60000, got 60001" },
  { "lock_timeout_ms a string", "{\"lock_timeout_ms\":\"5000\"}",
    NAME ": lock_timeout_ms: expected an integer from 1 to 60000, got \"5000\"" },
  { "lock_timeout_ms a float", "{\"lock_timeout_ms\":5e3}",
    NAME ": lock_timeout_ms: expected an integer from 1 to 60000, got 5e3" },
  { "topology relative", "{\"topology\":\"epyc.xml\"}",
    NAME ": topology: expected \"host\", an absolute path or \"sysfs:\" and one, got \"epyc.xml\"" },
  { "topology not a string", "{\"topology\":{}}", NAME ": topology: expected a string, got {}" },
  { "unknown key", "{\"on-error\":\"deny\"}", NAME ": unknown key \"on-error\" (did you mean \"on_error\"?)" },
  { "unknown key, nothing near", "{\"sandbox_off\":true}", NAME ": unknown key \"sandbox_off\"" },
  { "defaults unknown key near one", "{\"defaults\":{\"alin\":\"llc\"}}",
    NAME ": defaults: unknown key \"alin\" (did you mean \"align\"? expected align, smt, mode or strict)" },
  { "duplicate key", "{\"on_error\":\"deny\",\"on_error\":\"allow\"}", NAME ": duplicate key \"on_error\"" },
  { "invalid JSON", "{\"on_error\":\"deny\",}", NAME ": invalid JSON at byte 19: unexpected character" },
  { "comment", "{\"on_error\":\"deny\"} // deny", NAME ": invalid JSON at byte 20: unexpected character" },
  { "not an object", "\"deny\"", NAME ": expected a JSON object" },
};

static void
test_malformed (void **state)
{
  (void) state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      struct cp_hostconfig hc;
      cp_error_t err = NULL;
      int r = cp_hostconfig_parse (bad[i].text, strlen (bad[i].text), NAME, &hc, &err);
      tu_check_error (bad[i].name, r, &err, bad[i].error);
      assert_int_equal (err->kind, CP_ERR_INPUT);
      assert_null (hc.state_dir); /* nothing left to free */
      cp_error_free (&err);
    }
}

static void
test_load (void **state)
{
  (void) state;
  struct cp_hostconfig hc;
  cp_error_t err = NULL;
  char dir[] = "/tmp/cachepin-test-hostconfig-XXXXXX";
  assert_non_null (mkdtemp (dir));
  cleanup_free char *path = cp_xasprintf ("%s/config.json", dir);

  /* Given explicitly, a missing file is an error. */
  cleanup_free char *missing = cp_xasprintf ("open %s: No such file or directory", path);
  tu_check_error ("explicit missing path", cp_hostconfig_load (path, &hc, &err), &err, missing);
  assert_int_equal (cp_error_errno (err), ENOENT);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT); /* exit 2, as a malformed one */
  assert_null (hc.state_dir);

  static const char deny[] = "{\"on_error\":\"deny\",\"lock_timeout_ms\":250}\n";
  tu_write_file (path, deny, strlen (deny));
  if (cp_hostconfig_load (path, &hc, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (hc.on_error, CP_ON_ERROR_DENY);
  assert_int_equal (hc.lock_timeout_ms, 250);
  assert_string_equal (hc.path, path);
  cp_hostconfig_free (&hc);

  /* Admins may symlink it. */
  cleanup_free char *link = cp_xasprintf ("%s/link.json", dir);
  assert_int_equal (symlink (path, link), 0);
  if (cp_hostconfig_load (link, &hc, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (hc.on_error, CP_ON_ERROR_DENY);
  cp_hostconfig_free (&hc);

  /* Errors name the file as given. */
  static const char maybe_json[] = "{\"on_error\":\"maybe\"}";
  tu_write_file (path, maybe_json, strlen (maybe_json));
  cleanup_free char *maybe = cp_xasprintf ("%s: on_error: expected \"allow\" or \"deny\", got \"maybe\"", link);
  tu_check_error ("through the link", cp_hostconfig_load (link, &hc, &err), &err, maybe);

  /* Not a regular file, too large. */
  cleanup_free char *fifo = cp_xasprintf ("%s/fifo", dir);
  assert_int_equal (mkfifo (fifo, 0600), 0);
  cleanup_free char *not_regular = cp_xasprintf ("%s: not a regular file", fifo);
  tu_check_error ("a FIFO", cp_hostconfig_load (fifo, &hc, &err), &err, not_regular);
  int fd = open (path, O_WRONLY | O_TRUNC | O_CLOEXEC);
  assert_true (fd >= 0);
  assert_int_equal (ftruncate (fd, CP_HOSTCONFIG_MAX_SIZE + 1), 0);
  close (fd);
  cleanup_free char *too_big = cp_xasprintf ("%s: larger than 1048576 bytes", path);
  tu_check_error ("too large", cp_hostconfig_load (path, &hc, &err), &err, too_big);
  cp_error_free (&err);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_defaults),
    cmocka_unit_test (test_full),
    cmocka_unit_test (test_malformed),
    cmocka_unit_test (test_load),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
