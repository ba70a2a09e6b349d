/* `cachepin status` as text (hook/cli/status_text.c): the status object in, the
 * lines people read out.  Pure: the gathering is tested against the real binary
 * in tests/cli/status.sh. */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "status.h"
#include "util.h"

static char *
render_view (const char *json, bool wide)
{
  json_object *status = json_tokener_parse (json);
  assert_non_null (status);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream (&text, &size);
  assert_non_null (out);
  cp_status_print_text (status, wide, out);
  fclose (out);
  json_object_put (status);
  return text;
}

static char *
render (const char *json)
{
  return render_view (json, false);
}

/* The number of lines of TEXT that start with PREFIX. */
static int
lines_starting (const char *text, const char *prefix)
{
  int n = 0;
  for (const char *l = text; l && *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : NULL)
    n += strncmp (l, prefix, strlen (prefix)) == 0;
  return n;
}

#define FEATURES_NO_CAS                                                                                           \
  "\"features\": {\"cache_aware_scheduling\": {\"interface\": \"none\", \"state\": \"debugfs-not-mounted\","     \
  " \"enabled\": null, \"errno\": null, \"error\": null},"                                                        \
  " \"core_scheduling\": {\"state\": \"unsupported\", \"smt_active\": false, \"errno\": \"EINVAL\", \"error\": null}," \
  " \"smt_asym_packing\": {\"state\": \"unset\", \"effective\": false, \"error\": null}}"

static const char full[] =
  "{\"cgroup\": {\"mode\": \"v2\", \"cpuset_version\": 2, \"cpuset_mount\": \"/sys/fs/cgroup\", \"error\": null},"
  " \"topology\": {\"source\": \"host\", \"online\": \"0-7\", \"allowed\": \"0-7\", \"packages\": 1,"
  "  \"numa_nodes\": [{\"os_index\": 0, \"cpus\": \"0-7\"}], \"llc_label\": \"L3\","
  "  \"llcs\": [{\"index\": 0, \"cpus\": \"0-7\", \"cores\": 4, \"fallback\": false}], \"cores\": 4,"
  "  \"pe0\": \"0,2,4,6\", \"smt_width\": 2, \"cpu_kinds\": [], \"error\": null},"
  " \"ledger\": {\"path\": \"/run/cachepin/ledger.json\", \"state\": \"ok\","
  "  \"entries\": [{\"id\": \"ctr-a\", \"cgroup_mount\": \"/sys/fs/cgroup\", \"cgroup\": \"/a\", \"pid\": 7,"
  "   \"mode\": \"exclusive\", \"cpus\": \"0,2\", \"held\": \"0-3\", \"mems\": \"0\", \"placed_at\": 0, \"llcs\": [0]}],"
  "  \"occupancy\": [{\"index\": 0, \"cpus\": \"0-7\", \"size\": 8, \"held\": \"0-3\", \"held_count\": 4,"
  "   \"shared\": \"\", \"reserved\": \"7\", \"core_cpus\": [\"0-1\", \"2-3\", \"4-5\", \"6-7\"],"
  "   \"map\": \"####...-\", \"holders\": [\"ctr-a\", \"ctr-b\"]}],"
  "  \"held\": \"0-3\", \"held_count\": 4, \"held_outside_topology\": \"\", \"error\": null}, " FEATURES_NO_CAS ","
  " \"config\": {\"path\": \"/etc/cachepin/config.json\", \"found\": false, \"state_dir\": \"/run/cachepin\","
  "  \"topology\": \"host\", \"cpus\": \"all\", \"reserved\": \"\", \"defaults\": {\"align\": \"llc\","
  "  \"smt\": \"pe0-first\", \"mode\": \"exclusive\", \"strict\": false}, \"on_error\": \"allow\","
  "  \"log_level\": \"info\", \"lock_timeout_ms\": 5000, \"sandbox\": true, \"error\": null}}";

static void
test_full (void **state)
{
  (void) state;
  cleanup_free char *text = render (full);
  tu_assert_contains (text, "cgroup      v2; cpuset hierarchy: v2 at /sys/fs/cgroup\n");
  tu_assert_contains (text, "host: 1 package, 1 NUMA node, 1 L3, 4 cores, SMT 2");
  tu_assert_contains (text, "  PE0        0,2,4,6\n");
  /* The map plan draws too: a core as its first CPU, a mark per thread (7 reserved). */
  tu_assert_contains (text, "  L3 map, a core as its first CPU and a mark per thread:\n"
                            "  x=held s=shared r=reserved .=free -=not allowed\n"
                            "  L3#0 4/8 held  0:xx 2:xx 4:.. 6:.r\n"
                            "       by ctr-a ctr-b\n");
  /* The default view: the short table; the placed time is --wide's. */
  tu_assert_contains (text, "  ID                 NAME                     MODE      CPUS           STATE\n"
                            "  ctr-a              -                        exclusive 0,2            ok\n");
  assert_null (strstr (text, "1970-01-01"));
  cleanup_free char *wide = render_view (full, true);
  tu_assert_contains (wide, "1970-01-01 00:00:00");
  tu_assert_contains (wide, "  ctr-a exclusive 0,2        0-3        0     7        1970-01-01 00:00:00 ok      /a  -");
  tu_assert_contains (text, "ledger      /run/cachepin/ledger.json: 1 entry, CPUs held: 0-3\n");
  /* One line per kernel feature, saying what this host lacks. */
  assert_int_equal (lines_starting (text, "  cache-aware scheduling"), 1);
  tu_assert_contains (text, "debugfs is not mounted");
  tu_assert_contains (text, "  core scheduling         unsupported: no CONFIG_SCHED_CORE\n");
  tu_assert_contains (text, "  sched_smt_asym_packing  off (not on the kernel command line)\n");
  tu_assert_contains (text, "(not found: the defaults)");
  tu_assert_contains (text, "reserved none");
}

/* A part that could not be read is one line saying why; the others still show. */
static void
test_failed_parts (void **state)
{
  (void) state;
  cleanup_free char *text = render (
    "{\"cgroup\": {\"mode\": \"hybrid\", \"cpuset_version\": null, \"cpuset_mount\": null, \"error\": \"no cpuset\"},"
    " \"topology\": {\"source\": \"/x.xml\", \"error\": \"`/x.xml`: not a usable hwloc XML file\"},"
    " \"ledger\": {\"path\": \"/s/ledger.json\", \"state\": \"invalid\", \"entries\": null, \"occupancy\": null,"
    "  \"warnings\": [\"a ledger the hook could not trust was set aside\"],"
    "  \"error\": \"/s/ledger.json: invalid JSON at byte 28\"}, " FEATURES_NO_CAS ","
    " \"config\": {\"path\": \"/c.json\", \"error\": \"open /c.json: No such file or directory\"}}");
  tu_assert_contains (text, "cgroup      hybrid; cpuset: no cpuset\n");
  tu_assert_contains (text, "topology    `/x.xml`: not a usable hwloc XML file\n");
  assert_int_equal (lines_starting (text, "ledger"), 1);
  tu_assert_contains (text, "ledger      invalid: /s/ledger.json: invalid JSON at byte 28\n"
                            "  warning: a ledger the hook could not trust was set aside\n");
  tu_assert_contains (text, "config      open /c.json: No such file or directory\n");
  assert_int_equal (lines_starting (text, "  L3#"), 0);
}

/* The root hint (cmd_status.c) is decided on the parts' errnos: EACCES or EPERM
   in any part, a kernel feature or the journal's; another errno, or a message
   that only reads like a refusal, is not one. */
static bool
denied (const char *json)
{
  json_object *status = json_tokener_parse (json);
  assert_non_null (status);
  bool d = cp_status_denied (status);
  json_object_put (status);
  return d;
}

static void
test_denied (void **state)
{
  (void) state;
  assert_true (denied ("{\"ledger\": {\"errno\": \"EACCES\", \"error\": \"x\"}, \"cgroup\": {\"errno\": null}}"));
  assert_true (denied ("{\"config\": {\"errno\": \"EPERM\", \"error\": \"x\"}}"));
  assert_true (denied ("{\"recent\": null, \"recent_errno\": \"EACCES\", \"recent_error\": \"x\"}"));
  assert_true (denied ("{\"features\": {\"cache_aware_scheduling\": {\"state\": \"denied\", \"errno\": \"EACCES\"}}}"));
  assert_true (denied ("{\"kubelet\": {\"errno\": \"EACCES\", \"error\": \"x\"}}"));
  assert_false (denied ("{\"ledger\": {\"errno\": \"ENOENT\", \"error\": \"open: Permission denied\"},"
                        " \"warnings\": [\"Operation not permitted\"], \"recent_errno\": null}"));
  assert_false (denied ("{\"topology\": {\"errno\": 13}, \"features\": {\"core_scheduling\": {\"errno\": \"EINVAL\"}}}"));
  assert_false (denied ("{}"));
}

/* CAS's other states, and core scheduling denied. */
static void
test_feature_states (void **state)
{
  (void) state;
  cleanup_free char *text = render (
    "{\"features\": {\"cache_aware_scheduling\": {\"interface\": \"llc_balancing\", \"state\": \"on\","
    " \"enabled\": true, \"errno\": null, \"error\": null, \"setting\": \"on-demand\","
    " \"asked_by\": [\"a\", \"b\"], \"restore\": \"off\"},"
    " \"core_scheduling\": {\"state\": \"denied\", \"smt_active\": true, \"errno\": \"EPERM\", \"error\": null},"
    " \"smt_asym_packing\": {\"state\": \"on\", \"effective\": true, \"error\": null}}}");
  tu_assert_contains (text, "  cache-aware scheduling  on (interface llc_balancing); sched_cache on-demand\n"
                            "                          asked by a, b\n"
                            "                          held by cachepin, gives back off when none asks\n");
  tu_assert_contains (text, "  core scheduling         denied (EPERM)\n");
  tu_assert_contains (text, "  sched_smt_asym_packing  boot option on\n");
  cleanup_free char *denied = render (
    "{\"features\": {\"cache_aware_scheduling\": {\"interface\": \"none\", \"state\": \"denied\","
    " \"enabled\": null, \"errno\": \"EACCES\", \"error\": null}}}");
  /* 81 columns: wrapped under its label. */
  tu_assert_contains (denied, "  cache-aware scheduling  unknown: access denied (EACCES; interface none);\n"
                              "                          sched_cache ?\n");
  /* A ledger that could not be read: who asks is unknown, and said so. */
  assert_int_equal (lines_starting (denied, "                          asked by ? (ledger not read)"), 1);
}

/* Strings come from files others wrote: no control character reaches the terminal. */
static void
test_sanitized (void **state)
{
  (void) state;
  cleanup_free char *text = render (
    "{\"ledger\": {\"path\": \"/s/\\u001b[2Jledger.json\", \"state\": \"ok\", \"entries\": [], \"error\": null,"
    "  \"held\": \"\", \"occupancy\": [{\"index\": 0, \"cpus\": \"0\", \"size\": 1, \"held_count\": 1,"
    "  \"map\": \"#\", \"holders\": [\"evil\\u001b]0;x\\u0007\"]}], \"held_outside_topology\": \"\"}}");
  assert_null (strchr (text, '\x1b'));
  assert_null (strchr (text, '\a'));
  tu_assert_contains (text, "ledger.json");
}

/* Missing keys and wrong types print "?", never crash. */
static void
test_garbage (void **state)
{
  (void) state;
  cleanup_free char *empty = render ("{}");
  tu_assert_contains (empty, "kernel features\n");
  cleanup_free char *wrong = render ("{\"cgroup\": 1, \"topology\": [], \"ledger\": \"x\", \"features\": null,"
                                     " \"config\": {\"error\": null, \"defaults\": 3}}");
  tu_assert_contains (wrong, "config      ?");
}


/* The widest line of TEXT, in characters (UTF-8). */
static size_t
widest (const char *text)
{
  size_t w = 0, n = 0;
  for (const char *p = text; *p; p++)
    {
      if (*p == '\n')
        {
          w = n > w ? n : w;
          n = 0;
        }
      else
        n += ((unsigned char) *p & 0xC0) != 0x80;
    }
  return n > w ? n : w;
}

#define ID64 "4f1c2e8a9b0d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e"

/* Long ids, names, cgroups and cpulists: the default view fits 80 columns,
   --wide shows them in full; states are one column (ok, DRIFTED, GONE). */
static void
test_eighty_columns (void **state)
{
  (void) state;
  const char *json
      = "{\"topology\": {\"source\": \"/very/long/path/to/a/captured/topology/of/an/epyc-9654-host.xml\","
        " \"online\": \"0-383\", \"allowed\": \"0-383\", \"packages\": 2, \"numa_nodes\": ["
        "  {\"os_index\": 0, \"cpus\": \"0-47,192-239\"}, {\"os_index\": 1, \"cpus\": \"48-95,240-287\"},"
        "  {\"os_index\": 2, \"cpus\": \"96-143,288-335\"}, {\"os_index\": 3, \"cpus\": \"144-191,336-383\"}],"
        " \"llc_label\": \"L3\", \"llcs\": [{\"index\": 0, \"cpus\": \"0-7,192-199\"}, {\"index\": 1, \"cpus\": \"8-15,200-207\"},"
        "  {\"index\": 2, \"cpus\": \"16-23,208-215\"}, {\"index\": 3, \"cpus\": \"24-31,216-223\"},"
        "  {\"index\": 4, \"cpus\": \"32-39,224-231\"}, {\"index\": 5, \"cpus\": \"40-47,232-239\"}],"
        " \"cores\": 192, \"pe0\": \"0-191\", \"smt_width\": 2, \"cpu_kinds\": [], \"error\": null},"
        " \"ledger\": {\"path\": \"/run/cachepin/ledger.json\", \"state\": \"ok\", \"held\": \"0-3\", \"entries\": ["
        "  {\"id\": \"" ID64 "\", \"name\": \"a-rather-long-namespace/a-pod-with-a-long-name-7d9f8/web\","
        "   \"state\": \"ok\", \"cgroup_mount\": \"/sys/fs/cgroup\", \"cgroup\": \"/kubepods.slice/kubepods-pod.slice/cri-containerd-" ID64 ".scope\","
        "   \"pid\": 4242, \"mode\": \"exclusive\", \"cpus\": \"0-3,192-195,8,10,12,14,16,18,20\", \"held\": \"0-3\","
        "   \"mems\": \"0\", \"placed_at\": 1764500000},"
        "  {\"id\": \"apply:/sys/fs/cgroup/system.slice/a-very-long-service-name-for-batch-jobs.service\", \"name\": null,"
        "   \"state\": \"gone\", \"gone_why\": \"cgroup /system.slice/a-very-long-service-name-for-batch-jobs.service under /sys/fs/cgroup no longer exists\","
        "   \"cgroup_mount\": \"/sys/fs/cgroup\", \"cgroup\": \"/system.slice/a-very-long-service-name-for-batch-jobs.service\","
        "   \"pid\": 0, \"mode\": \"shared\", \"cpus\": \"4-7\", \"held\": \"\", \"mems\": \"0\", \"placed_at\": 1764500000},"
        "  {\"id\": \"b7a1d03c11e4" "0000000000000000000000000000000000000000000000000000\", \"name\": \"db\", \"state\": \"drifted\","
        "   \"drifted\": true, \"live_cpus\": \"9\", \"cgroup_mount\": \"/sys/fs/cgroup\", \"cgroup\": \"/x\", \"pid\": 1,"
        "   \"mode\": \"exclusive\", \"cpus\": \"8\", \"held\": \"8\", \"mems\": \"0\", \"placed_at\": 1764500000}],"
        "  \"error\": null}, " FEATURES_NO_CAS "}";
  cleanup_free char *text = render (json);
  if (widest (text) > 80)
    fail_msg ("a line of %zu columns:\n%s", widest (text), text);
  tu_assert_contains (text, "  4f1c2e8a9b0d       a-rather-lo\u2026me-7d9f8/web exclusive 0-3,192-195,8+ ok\n");
  tu_assert_contains (text, "  apply:\u2026obs.service -                        shared    4-7            GONE\n");
  tu_assert_contains (text, "  b7a1d03c11e4       db                       exclusive 8              DRIFTED\n");
  tu_assert_contains (text, "  b7a1d03c11e4 DRIFTED: its cgroup runs on 9");
  tu_assert_contains (text, "  apply:\u2026obs.service GONE: cgroup");
  tu_assert_contains (text, "topology    /very/lo\u2026-host.xml: 2 packages, 4 NUMA nodes, 6 L3, 192 cores, SMT 2\n");
  tu_assert_contains (text, "  GONE: its CPUs stay held until the next placement (hook or apply) drops it\n");
  /* Wrapped, not cut: every LLC is still named. */
  tu_assert_contains (text, "#5:40-47,232-239");
  assert_null (strstr (text, ID64));

  cleanup_free char *wide = render_view (json, true);
  tu_assert_contains (wide, ID64 " exclusive");
  tu_assert_contains (wide, "a-rather-long-namespace/a-pod-with-a-long-name-7d9f8/web");
  tu_assert_contains (wide, "apply:/sys/fs/cgroup/system.slice/a-very-long-service-name-for-batch-jobs.service shared");
  /* apply's pid 0 is "-", a container's pid is shown. */
  tu_assert_contains (wide, " 0     -        2025-11-30 10:53:20 GONE    /system.slice/");
  tu_assert_contains (wide, " 0     4242     2025-11-30 10:53:20 ok      /kubepods.slice/");
  assert_true (widest (wide) > 80);
}

/* A name from a hostile annotation that got into a ledger another way: shown
   sanitized and cut, never raw. */
static void
test_hostile_name (void **state)
{
  (void) state;
  char *big = cp_xmalloc0 (10241);
  for (size_t i = 0; i < 10240; i++)
    big[i] = "\\u001b[2J"[i % 9];
  cleanup_free char *json = cp_xasprintf (
      "{\"ledger\": {\"path\": \"/l\", \"state\": \"ok\", \"held\": \"\", \"entries\": [{\"id\": \"x\", \"name\": \"%s\","
      " \"state\": \"ok\", \"cgroup\": \"/x\", \"mode\": \"shared\", \"cpus\": \"0\", \"pid\": 0}], \"error\": null}}",
      big);
  free (big);
  cleanup_free char *text = render (json);
  assert_null (strchr (text, '\x1b'));
  assert_true (widest (text) <= 80);
  cleanup_free char *wide = render_view (json, true);
  assert_null (strchr (wide, '\x1b'));
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_full),          cmocka_unit_test (test_failed_parts), cmocka_unit_test (test_feature_states),
    cmocka_unit_test (test_denied),
    cmocka_unit_test (test_sanitized),     cmocka_unit_test (test_garbage),
    cmocka_unit_test (test_eighty_columns), cmocka_unit_test (test_hostile_name),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
