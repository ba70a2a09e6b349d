/* The topology cache's model kept in memory (hook/state/topocache.h:
   cp_topocache_keep()): the same model while its key holds, another one as soon as
   the key changes (here: the XML file is rewritten), none kept once turned off. */
#define _GNU_SOURCE
#include "testutil.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "hostconfig.h"
#include "log.h"
#include "topo.h"
#include "topo_codec.h"
#include "topocache.h"
#include "util.h"

/* An XML file of a synthetic machine of N cores. */
static void
write_xml (const char *path, unsigned n)
{
  hwloc_topology_t t;
  assert_int_equal (hwloc_topology_init (&t), 0);
  cleanup_free char *desc = cp_xasprintf ("pack:1 core:%u pu:1", n);
  assert_int_equal (hwloc_topology_set_synthetic (t, desc), 0);
  assert_int_equal (hwloc_topology_load (t), 0);
  cleanup_free char *tmp = cp_xasprintf ("%s.tmp", path);
  assert_int_equal (hwloc_topology_export_xml (t, tmp, 0), 0);
  assert_int_equal (rename (tmp, path), 0);
  hwloc_topology_destroy (t);
}

static struct cp_topo *
load_ok (const struct cp_hostconfig *hc)
{
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  if (cp_topocache_load (hc, 0, &topo, &err) < 0)
    fail_msg ("load: %s", cp_error_message (err));
  return topo;
}

static void
test_keep (void **state)
{
  (void) state;
  char dir[] = "/tmp/cp-topocache-XXXXXX";
  assert_non_null (mkdtemp (dir));
  cleanup_free char *sd = cp_xasprintf ("%s/state", dir);
  cleanup_free char *xml = cp_xasprintf ("%s/machine.xml", dir);
  write_xml (xml, 2);
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  free (hc.state_dir);
  hc.state_dir = cp_xstrdup (sd);
  free (hc.topology);
  hc.topology = cp_xstrdup (xml);
  cp_log_set_level (CP_LOG_ERROR);

  cp_topocache_keep (true);
  struct cp_topo *a = load_ok (&hc), *b = load_ok (&hc);
  assert_ptr_equal (a, b); /* the kept model, while the key holds */
  assert_int_equal (hwloc_bitmap_weight (a->online), 2);
  cp_topo_free (a);
  cp_topo_free (b); /* still kept: the next load returns it */
  struct cp_topo *c = load_ok (&hc);
  assert_int_equal (hwloc_bitmap_weight (c->online), 2);
  cp_topo_free (c);

  /* The file changes (another inode, size and times): the key does, and the model. */
  write_xml (xml, 4);
  struct cp_topo *d = load_ok (&hc);
  assert_int_equal (hwloc_bitmap_weight (d->online), 4);
  struct cp_topo *e = load_ok (&hc);
  assert_ptr_equal (d, e);
  cp_topo_free (e);

  /* Off: every load its own model again. */
  cp_topocache_keep (false);
  struct cp_topo *f = load_ok (&hc);
  assert_ptr_not_equal (f, d);
  assert_int_equal (hwloc_bitmap_weight (f->online), 4);
  cp_topo_free (f);
  cp_topo_free (d);

  cp_hostconfig_free (&hc);
  cleanup_free char *cmd = cp_xasprintf ("rm -rf %s", dir);
  assert_int_equal (system (cmd), 0);
}

/* The key's `allowed=` line is this process's affinity, CPU by CPU (the key reads
   the mask a word at a time): checked with this process's own mask, and with one
   narrowed to its last CPU (a CPU past the first word on a machine that has one). */
static void
check_allowed_line (void)
{
  cpu_set_t set;
  CPU_ZERO (&set);
  assert_int_equal (sched_getaffinity (0, sizeof set, &set), 0);
  cleanup_bitmap hwloc_bitmap_t want = cp_bitmap_new ();
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET (c, &set))
      hwloc_bitmap_set (want, (unsigned) c);
  cleanup_free char *list = cp_cpulist_format (want);
  cleanup_free char *line = cp_xasprintf ("\nallowed=%s\n", list);
  cleanup_free char *key = NULL;
  cp_error_t err = NULL;
  if (cp_topocache_key ("host", &key, &err) < 0)
    fail_msg ("key: %s", cp_error_message (err));
  if (strstr (key, line) == NULL)
    fail_msg ("the key has no `%s` line:\n%s", line + 1, key);
}

static void
test_key_allowed (void **state)
{
  (void) state;
  cpu_set_t saved;
  assert_int_equal (sched_getaffinity (0, sizeof saved, &saved), 0);
  check_allowed_line ();
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET (c, &saved))
      last = c;
  cpu_set_t one;
  CPU_ZERO (&one);
  CPU_SET (last, &one);
  assert_int_equal (sched_setaffinity (0, sizeof one, &one), 0);
  check_allowed_line ();
  assert_int_equal (sched_setaffinity (0, sizeof saved, &saved), 0);
}

/* A directory DIR/REL and its parents. */
static void
make_dirs (const char *dir, const char *rel)
{
  cleanup_free char *cmd = cp_xasprintf ("mkdir -p '%s/%s'", dir, rel);
  assert_int_equal (system (cmd), 0);
}

/* HC's topology set to SOURCE; the load fails with input error EXPECTED. */
static void
load_refused (struct cp_hostconfig *hc, const char *source, const char *expected)
{
  free (hc->topology);
  hc->topology = cp_xstrdup (source);
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  tu_check_error (source, cp_topocache_load (hc, 0, &topo, &err), &err, expected);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  cp_error_free (&err);
  tu_check_error (source, cp_topocache_discover (source, &topo, &err), &err, expected);
  cp_error_free (&err);
}

/* A "sysfs:" source must be a dump hwloc's Linux backend reads: given /proc or an
   empty directory, hwloc would say so on stderr and build this host's CPUID
   topology instead.  Refused before hwloc (no sys/devices/system/cpu) and before
   the cache (a model cached under such a source's key, as a version without the
   check saved it, is not used), or after the load (the directory there, a CPU's
   topology files not); a minimal dump is read. */
static void
test_sysfs_dump (void **state)
{
  (void) state;
  cleanup_free char *dir = tu_tmpdir ("topocache-sysfs");
  cleanup_free char *sd = cp_xasprintf ("%s/state", dir);
  assert_int_equal (mkdir (sd, 0700), 0);
  struct cp_hostconfig hc;
  tu_hostconfig (&hc, sd, NULL);
  cp_log_set_level (CP_LOG_ERROR);

  load_refused (&hc, "sysfs:/proc", "`sysfs:/proc`: not a sysfs dump (no directory sys/devices/system/cpu in it)");
  make_dirs (dir, "empty");
  cleanup_free char *empty = cp_xasprintf ("sysfs:%s/empty", dir);
  cleanup_free char *no_cpu = cp_xasprintf ("`%s`: not a sysfs dump (no directory sys/devices/system/cpu in it)", empty);
  load_refused (&hc, empty, no_cpu);

  /* A valid cache for that source's key. */
  cleanup_free char *key = NULL, *buf = NULL;
  size_t len = 0;
  cp_error_t err = NULL;
  struct cp_topo *topo = NULL;
  assert_int_equal (cp_topocache_key (empty, &key, &err), 0);
  assert_int_equal (cp_topo_load ("pack:1 core:2 pu:1", &topo, &err), 0);
  assert_int_equal (cp_topo_encode (topo, key, &buf, &len, &err), 0);
  cp_topo_free (topo);
  cleanup_free char *cache = cp_xasprintf ("%s/%s", sd, CP_TOPOCACHE_FILE);
  tu_write_file (cache, buf, len);
  load_refused (&hc, empty, no_cpu);

  make_dirs (dir, "cpu-dir-only/sys/devices/system/cpu");
  cleanup_free char *cpu_only = cp_xasprintf ("sysfs:%s/cpu-dir-only", dir);
  cleanup_free char *no_topology = cp_xasprintf (
      "`%s`: not a sysfs dump (hwloc's Linux backend found no CPU topology in its sys/devices/system/cpu)", cpu_only);
  load_refused (&hc, cpu_only, no_topology);

  /* Two CPUs of one package, a core each: as much as the backend needs. */
  static const char *const files[][2] = {
    { "online", "0-1\n" },
    { "cpu0/topology/package_cpus", "3\n" },
    { "cpu0/topology/core_cpus", "1\n" },
    { "cpu1/topology/package_cpus", "3\n" },
    { "cpu1/topology/core_cpus", "2\n" },
  };
  make_dirs (dir, "dump/sys/devices/system/cpu/cpu0/topology");
  make_dirs (dir, "dump/sys/devices/system/cpu/cpu1/topology");
  for (size_t i = 0; i < CP_ARRAY_SIZE (files); i++)
    {
      cleanup_free char *path = cp_xasprintf ("%s/dump/sys/devices/system/cpu/%s", dir, files[i][0]);
      tu_write_file (path, files[i][1], strlen (files[i][1]));
    }
  free (hc.topology);
  hc.topology = cp_xasprintf ("sysfs:%s/dump", dir);
  topo = load_ok (&hc);
  assert_int_equal (hwloc_bitmap_weight (topo->online), 2);
  cp_topo_free (topo);

  cp_hostconfig_free (&hc);
  tu_rmtree (dir);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_keep),
    cmocka_unit_test (test_key_allowed),
    cmocka_unit_test (test_sysfs_dump),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
