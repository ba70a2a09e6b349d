/* The topology model (policy/topo.c) on hwloc synthetic topologies and on captured
 * machines.  Expected values are worked out by hand from the synthetic description,
 * or read from hwloc objects directly, never from cp_topo itself. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "util.h"

/* ---- helpers ------------------------------------------------------------------ */

/* Core I's PUs are EXPECTED[I], in order, and there are exactly N cores. */
static void
check_cores (const struct cp_topo *t, const char *const *expected, unsigned n)
{
  assert_int_equal (t->n_cores, n);
  for (unsigned c = 0; c < n; c++)
    {
      char *got = cp_cpulist_format (t->cores[c].pus);
      if (strcmp (got, expected[c]) != 0)
        fail_msg ("%s: core %u has PUs `%s`, expected `%s`", t->source, c, got, expected[c]);
      free (got);
      assert_int_equal (t->cores[c].first_pu, (unsigned) hwloc_bitmap_first (t->cores[c].pus));
    }
}

/* The domains of LEVEL are EXPECTED (cpulists, in this order), FALLBACK says which
   are fallbacks ('f') and which real ('r'), and every domain lists exactly the
   cores whose PUs it holds, each core pointing back at it. */
static void
check_domains (const struct cp_topo *t, enum cp_level level, const char *const *expected, unsigned n,
               const char *fallback)
{
  if (t->n_domains[level] != n)
    fail_msg ("%s: %u %s domains, expected %u", t->source, t->n_domains[level], cp_level_label (level), n);
  assert_int_equal (strlen (fallback), n);
  hwloc_bitmap_t all = hwloc_bitmap_alloc ();
  for (unsigned d = 0; d < n; d++)
    {
      const struct cp_domain *dom = &t->domains[level][d];
      char *got = cp_cpulist_format (dom->cpus);
      if (strcmp (got, expected[d]) != 0)
        fail_msg ("%s: %s#%u is `%s`, expected `%s`", t->source, cp_level_label (level), d, got, expected[d]);
      free (got);
      assert_int_equal (dom->level, level);
      assert_int_equal (dom->index, d);
      if (dom->fallback != (fallback[d] == 'f'))
        fail_msg ("%s: %s#%u fallback is %d", t->source, cp_level_label (level), d, dom->fallback);
      assert_false (hwloc_bitmap_intersects (all, dom->cpus)); /* a partition */
      hwloc_bitmap_or (all, all, dom->cpus);
      /* cores: exactly those inside, in topology order */
      unsigned expect_n = 0;
      for (unsigned c = 0; c < t->n_cores; c++)
        if (hwloc_bitmap_isincluded (t->cores[c].pus, dom->cpus))
          {
            assert_true (expect_n < dom->n_cores);
            assert_int_equal (dom->cores[expect_n], c);
            assert_int_equal (t->cores[c].domain[level], d);
            expect_n++;
          }
        else
          assert_false (hwloc_bitmap_intersects (t->cores[c].pus, dom->cpus));
      assert_int_equal (dom->n_cores, expect_n);
    }
  assert_true (hwloc_bitmap_isequal (all, t->online));
  hwloc_bitmap_free (all);
}

/* Indices of cores in domain D of LEVEL are exactly EXPECTED. */
static void
check_domain_cores (const struct cp_topo *t, enum cp_level level, unsigned d, const unsigned *expected, unsigned n)
{
  const struct cp_domain *dom = &t->domains[level][d];
  assert_int_equal (dom->n_cores, n);
  for (unsigned i = 0; i < n; i++)
    assert_int_equal (dom->cores[i], expected[i]);
}

/* Every online CPU maps to the core holding it; others map to nothing. */
static void
check_core_of_pu (const struct cp_topo *t)
{
  assert_int_equal (t->pu_limit, (unsigned) hwloc_bitmap_last (t->online) + 1);
  for (unsigned cpu = 0; cpu < t->pu_limit + 8; cpu++)
    {
      const struct cp_core *core = cp_topo_core_of (t, cpu);
      if (!hwloc_bitmap_isset (t->online, cpu))
        {
          assert_null (core);
          if (cpu < t->pu_limit)
            assert_int_equal (t->core_of_pu[cpu], -1);
          continue;
        }
      assert_non_null (core);
      assert_true (hwloc_bitmap_isset (core->pus, cpu));
      assert_ptr_equal (core, &t->cores[t->core_of_pu[cpu]]);
    }
}

static void
expect_pe0 (const struct cp_topo *t, unsigned core, const char *allowed, int expected)
{
  hwloc_bitmap_t a = tu_set (allowed);
  int got = cp_core_pe0 (&t->cores[core], a);
  if (got != expected)
    fail_msg ("%s: PE0 of core %u among `%s` is %d, expected %d", t->source, core, allowed, got, expected);
  hwloc_bitmap_free (a);
}

/* ---- synthetic topologies --------------------------------------------------------- */

/* EPYC-style numbering: a core's threads are N and N+32. */
static void
test_amd_sibling_numbering (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:2 l3cache:4 core:4 pu:2(indexes=core)");
  assert_string_equal (t->source, "synthetic:package:2 l3cache:4 core:4 pu:2(indexes=core)");
  char *cores[32];
  for (unsigned c = 0; c < 32; c++)
    cores[c] = cp_xasprintf ("%u,%u", c, c + 32);
  check_cores (t, (const char *const *) cores, 32);
  for (unsigned c = 0; c < 32; c++)
    free (cores[c]);
  tu_assert_set (t->online, "0-63");
  tu_assert_set (t->allowed, "0-63");
  assert_int_equal (t->llc_depth, 3);
  assert_int_equal (t->l2_depth, 0);
  assert_string_equal (cp_topo_level_label (t, CP_LEVEL_LLC), "L3");

  static const char *const l3[] = { "0-3,32-35", "4-7,36-39", "8-11,40-43", "12-15,44-47",
                                    "16-19,48-51", "20-23,52-55", "24-27,56-59", "28-31,60-63" };
  check_domains (t, CP_LEVEL_LLC, l3, 8, "rrrrrrrr");
  check_domain_cores (t, CP_LEVEL_LLC, 5, (const unsigned[]){ 20, 21, 22, 23 }, 4);
  /* no L2 in the description: the L2 level falls back to the LLCs */
  check_domains (t, CP_LEVEL_L2, l3, 8, "ffffffff");
  static const char *const pkg[] = { "0-15,32-47", "16-31,48-63" };
  check_domains (t, CP_LEVEL_PACKAGE, pkg, 2, "rr");
  /* hwloc puts one NUMA node on the machine when the description has none */
  static const char *const all[] = { "0-63" };
  check_domains (t, CP_LEVEL_NUMA, all, 1, "r");
  check_domains (t, CP_LEVEL_MACHINE, all, 1, "r");
  check_core_of_pu (t);
  assert_int_equal (t->core_of_pu[32], 0);
  assert_int_equal (t->core_of_pu[63], 31);
  assert_int_equal (t->core_of_pu[17], 17);

  /* PE0: the lowest allowed thread; the sibling when the first is not allowed. */
  expect_pe0 (t, 0, "0-63", 0);
  expect_pe0 (t, 0, "1-63", 32);
  expect_pe0 (t, 0, "32", 32);
  expect_pe0 (t, 0, "1-31,33-63", -1);
  expect_pe0 (t, 31, "0-30,63", 63);
  expect_pe0 (t, 31, "", -1);
  /* no kinds in a synthetic topology */
  for (unsigned c = 0; c < t->n_cores; c++)
    assert_int_equal (t->cores[c].kind, -1);
  assert_int_equal (t->n_nodes, 1);
  assert_int_equal (t->nodes_info[0].os_index, 0);
  tu_assert_set (t->nodes_info[0].cpus, "0-63");
  assert_true (t->nodes_info[0].cpu_memory);
  tu_assert_set (t->nodes, "0");
  tu_assert_set (t->allowed_nodes, "0");
}

/* POWER/Intel-style numbering: a core's threads are adjacent. */
static void
test_adjacent_numbering (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:2 l3cache:2 core:4 pu:2");
  char *cores[16];
  for (unsigned c = 0; c < 16; c++)
    cores[c] = cp_xasprintf ("%u-%u", 2 * c, 2 * c + 1);
  check_cores (t, (const char *const *) cores, 16);
  for (unsigned c = 0; c < 16; c++)
    free (cores[c]);
  static const char *const l3[] = { "0-7", "8-15", "16-23", "24-31" };
  check_domains (t, CP_LEVEL_LLC, l3, 4, "rrrr");
  check_domain_cores (t, CP_LEVEL_LLC, 2, (const unsigned[]){ 8, 9, 10, 11 }, 4);
  static const char *const pkg[] = { "0-15", "16-31" };
  check_domains (t, CP_LEVEL_PACKAGE, pkg, 2, "rr");
  check_core_of_pu (t);
  assert_int_equal (t->core_of_pu[7], 3);
  expect_pe0 (t, 3, "0-31", 6);
  expect_pe0 (t, 3, "7", 7);
  expect_pe0 (t, 3, "0-5,8-31", -1);
  /* the package level of every core */
  for (unsigned c = 0; c < 16; c++)
    {
      assert_int_equal (t->cores[c].domain[CP_LEVEL_PACKAGE], c / 8);
      assert_int_equal (t->cores[c].domain[CP_LEVEL_LLC], c / 4);
      assert_int_equal (t->cores[c].domain[CP_LEVEL_MACHINE], 0);
    }
}

static void
test_smt_off (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:1 l3cache:2 core:4 pu:1");
  static const char *const cores[] = { "0", "1", "2", "3", "4", "5", "6", "7" };
  check_cores (t, cores, 8);
  static const char *const l3[] = { "0-3", "4-7" };
  check_domains (t, CP_LEVEL_LLC, l3, 2, "rr");
  static const char *const all[] = { "0-7" };
  check_domains (t, CP_LEVEL_PACKAGE, all, 1, "r");
  check_core_of_pu (t);
  expect_pe0 (t, 5, "0-7", 5);
  expect_pe0 (t, 5, "0-4,6-7", -1);
}

static void
test_smt4 (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:1 l3cache:2 core:2 pu:4(indexes=core)");
  static const char *const cores[] = { "0,4,8,12", "1,5,9,13", "2,6,10,14", "3,7,11,15" };
  check_cores (t, cores, 4);
  static const char *const l3[] = { "0-1,4-5,8-9,12-13", "2-3,6-7,10-11,14-15" };
  check_domains (t, CP_LEVEL_LLC, l3, 2, "rr");
  check_domain_cores (t, CP_LEVEL_LLC, 1, (const unsigned[]){ 2, 3 }, 2);
  check_core_of_pu (t);
  assert_int_equal (t->core_of_pu[14], 2);
  expect_pe0 (t, 2, "0-15", 2);
  expect_pe0 (t, 2, "3-15", 6);
  expect_pe0 (t, 2, "10,14", 10);
  expect_pe0 (t, 2, "14", 14);
}

/* No L3: the LLC is the L2. */
static void
test_no_l3 (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:1 l2cache:4 core:2 pu:2");
  assert_int_equal (t->llc_depth, 2);
  assert_int_equal (t->l2_depth, 2);
  assert_string_equal (cp_topo_level_label (t, CP_LEVEL_LLC), "L2");
  assert_string_equal (cp_topo_level_label (t, CP_LEVEL_L2), "L2");
  static const char *const l2[] = { "0-3", "4-7", "8-11", "12-15" };
  check_domains (t, CP_LEVEL_LLC, l2, 4, "rrrr");
  check_domains (t, CP_LEVEL_L2, l2, 4, "rrrr");
  check_domain_cores (t, CP_LEVEL_LLC, 3, (const unsigned[]){ 6, 7 }, 2);
  check_core_of_pu (t);
}

/* No caches at all: the LLC falls back to the package, the L2 to that. */
static void
test_no_caches (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:2 core:2 pu:2");
  assert_int_equal (t->llc_depth, 0);
  assert_int_equal (t->l2_depth, 0);
  assert_string_equal (cp_topo_level_label (t, CP_LEVEL_LLC), "LLC");
  static const char *const cores[] = { "0-1", "2-3", "4-5", "6-7" };
  check_cores (t, cores, 4);
  static const char *const pkg[] = { "0-3", "4-7" };
  check_domains (t, CP_LEVEL_PACKAGE, pkg, 2, "rr");
  check_domains (t, CP_LEVEL_LLC, pkg, 2, "ff");
  check_domains (t, CP_LEVEL_L2, pkg, 2, "ff");
  static const char *const all[] = { "0-7" };
  check_domains (t, CP_LEVEL_NUMA, all, 1, "r");
  check_core_of_pu (t);
}

static void
test_numa (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:2 numa:2 l3cache:2 core:2 pu:2");
  static const char *const numa[] = { "0-7", "8-15", "16-23", "24-31" };
  check_domains (t, CP_LEVEL_NUMA, numa, 4, "rrrr");
  check_domain_cores (t, CP_LEVEL_NUMA, 1, (const unsigned[]){ 4, 5, 6, 7 }, 4);
  static const char *const l3[] = { "0-3", "4-7", "8-11", "12-15", "16-19", "20-23", "24-27", "28-31" };
  check_domains (t, CP_LEVEL_LLC, l3, 8, "rrrrrrrr");
  static const char *const pkg[] = { "0-15", "16-31" };
  check_domains (t, CP_LEVEL_PACKAGE, pkg, 2, "rr");
  assert_int_equal (t->n_nodes, 4);
  for (unsigned i = 0; i < 4; i++)
    {
      assert_int_equal (t->nodes_info[i].os_index, i);
      tu_assert_set (t->nodes_info[i].cpus, numa[i]);
      assert_true (t->nodes_info[i].cpu_memory);
    }
  tu_assert_set (t->nodes, "0-3");
  tu_assert_set (t->allowed_nodes, "0-3");
  for (unsigned c = 0; c < t->n_cores; c++)
    assert_int_equal (t->cores[c].domain[CP_LEVEL_NUMA], c / 4);
}

/* cp_topo_load() builds only what the model reads (cp_topo_hwloc_prepare); the
   model is the one a full load gives, on synthetic machines with the objects
   the filters drop (L1 and instruction caches) among those they keep (dies,
   groups, NUMA nodes).  test_topologies.c does the same on every captured XML
   file when they are there. */
static void
test_filtered_load_same_model (void **state)
{
  (void) state;
  static const char *const descriptions[] = {
    "package:2 l3cache:4 core:4 pu:2(indexes=core)",
    "package:2 die:2 group:2 l3cache:2 l2cache:2 l1dcache:1 l1icache:1 core:2 pu:2",
    "package:2 numa:2 l3cache:3 core:8 pu:1",
    "package:1 [numa] l3cache:2 l2cache:4 l1dcache:1 core:1 pu:4",
    "package:2 group:3 l2cache:2 core:2 pu:1",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (descriptions); i++)
    {
      struct cp_topo *loaded = tu_topo (descriptions[i]);
      hwloc_topology_t full;
      assert_int_equal (hwloc_topology_init (&full), 0);
      hwloc_topology_set_flags (full, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
      assert_int_equal (hwloc_topology_set_synthetic (full, descriptions[i]), 0);
      assert_int_equal (hwloc_topology_load (full), 0);
      tu_assert_full_load_model (loaded, full, descriptions[i]);
      hwloc_topology_destroy (full);
      cp_topo_free (loaded);
    }
}

/* A topology whose allowed set is smaller than its online set: the model keeps
   every online PU in its cores and domains and records what is allowed. */
static void
test_allowed_smaller_than_online (void **state)
{
  (void) state;
  hwloc_topology_t topology;
  assert_int_equal (hwloc_topology_init (&topology), 0);
  hwloc_topology_set_flags (topology, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  assert_int_equal (hwloc_topology_set_synthetic (topology, "package:2 l3cache:2 core:4 pu:2"), 0);
  assert_int_equal (hwloc_topology_load (topology), 0);
  hwloc_bitmap_t allowed = tu_set ("1-7,9,11,16-31");
  assert_int_equal (hwloc_topology_allow (topology, allowed, NULL, HWLOC_ALLOW_FLAG_CUSTOM), 0);
  struct cp_topo *t = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_topo_from_hwloc (topology, NULL, &t, &err), 0);
  hwloc_topology_destroy (topology); /* the model must not need it any more */
  assert_string_equal (t->source, "host");
  tu_assert_set (t->online, "0-31");
  tu_assert_set (t->allowed, "1-7,9,11,16-31");
  assert_int_equal (t->n_cores, 16);
  tu_assert_set (t->cores[0].pus, "0-1");
  static const char *const l3[] = { "0-7", "8-15", "16-23", "24-31" };
  check_domains (t, CP_LEVEL_LLC, l3, 4, "rrrr");
  check_core_of_pu (t);
  /* PE0 among the allowed: core 0 moves to its sibling, core 4 = {8,9} too */
  assert_int_equal (cp_core_pe0 (&t->cores[0], t->allowed), 1);
  assert_int_equal (cp_core_pe0 (&t->cores[1], t->allowed), 2);
  assert_int_equal (cp_core_pe0 (&t->cores[4], t->allowed), 9);
  assert_int_equal (cp_core_pe0 (&t->cores[6], t->allowed), -1);
  hwloc_bitmap_free (allowed);
  cp_topo_free (t);
}

static void
test_load_errors (void **state)
{
  (void) state;
  struct cp_topo *t = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_topo_load ("/nonexistent-and-not-synthetic", &t, &err), -1);
  assert_null (t);
  assert_int_equal (err->kind, CP_ERR_INPUT);
  tu_assert_contains (cp_error_message (err), "/nonexistent-and-not-synthetic");
  cp_error_free (&err);
  assert_int_equal (cp_topo_load ("package:0 pu:2", &t, &err), -1);
  assert_null (t);
  assert_int_equal (err->kind, CP_ERR_INPUT);
  cp_error_free (&err);
  /* the "synthetic:" prefix is accepted and recorded once */
  assert_int_equal (cp_topo_load ("synthetic:core:2 pu:2", &t, &err), 0);
  assert_string_equal (t->source, "synthetic:core:2 pu:2");
  assert_int_equal (t->n_cores, 2);
  cp_topo_free (t);
}

/* A file hwloc cannot use is refused the same way whatever stage of hwloc refuses
   it: set_xml with its libxml2 plugin, load with its built-in parser (this process
   has whichever is installed; tests/cli/hostile_topology.sh runs both).  Before the
   fix the built-in parser's failure came out as "hwloc could not load it: Invalid
   argument", a runtime error (exit 1). */
static void
test_xml_errors (void **state)
{
  (void) state;
  static const struct
  {
    const char *what, *text;
    size_t len;
  } cases[] = {
    { "truncated inside a tag", "<?xml version=\"1.0\"?>\n<topology><object type=", 0 },
    { "empty", "", 0 },
    { "not XML", "hello\n", 0 },
    { "binary", "\x7f" "ELF\x02\x01\x01\0\0\0", 10 },
    { "another root", "<?xml version=\"1.0\"?>\n<foo/>\n", 0 },
    { "an hwloc root, nothing inside", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"></topology>\n", 0 },
    { "truncated after an object", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n <object type=\"Machine\" "
                                   "os_index=\"0\" cpuset=\"0x00000003\">\n", 0 },
  };
  char dir[] = "/tmp/cachepin-test-topo.XXXXXX";
  assert_non_null (mkdtemp (dir));
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      char *path = cp_xasprintf ("%s/case%zu.xml", dir, i);
      tu_write_file (path, cases[i].text, cases[i].len ? cases[i].len : strlen (cases[i].text));
      struct cp_topo *t = NULL;
      cp_error_t err = NULL;
      int r = cp_topo_load (path, &t, &err);
      assert_null (t);
      char *want = cp_xasprintf ("`%s`: not a usable hwloc XML file", path);
      tu_check_error (cases[i].what, r, &err, want);
      if (cp_error_kind (err) != CP_ERR_INPUT)
        fail_msg ("%s: kind %d, not an input error", cases[i].what, cp_error_kind (err));
      cp_error_free (&err);
      free (want);
      unlink (path);
      free (path);
    }
  /* Larger than CP_TOPO_XML_MAX: refused before hwloc reads it (sparse, so cheap). */
  char *big = cp_xasprintf ("%s/big.xml", dir);
  tu_write_file (big, "<?xml", 5);
  assert_int_equal (truncate (big, (off_t) CP_TOPO_XML_MAX + 1), 0);
  struct cp_topo *t = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_topo_load (big, &t, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  tu_assert_contains (cp_error_message (err), "larger than 33554432 bytes");
  cp_error_free (&err);
  unlink (big);
  free (big);
  assert_int_equal (rmdir (dir), 0);
}

/* Synthetic descriptions are bounded before hwloc builds them: "pu:100000" ran
   unbounded inside hwloc, and "pu:8192" (8192 PUs under one parent) takes hwloc
   7-10 s.  The bounds are the total PUs and the objects under one parent. */
static void
test_synthetic_bounds (void **state)
{
  (void) state;
  static const struct
  {
    const char *desc, *msg;
  } refused[] = {
    { "pu:100000", "`pu:100000`: level `pu:100000` has 100000 objects under each parent, more than the 512 a "
                   "synthetic topology may have" },
    { "pu:8192", "`pu:8192`: level `pu:8192` has 8192 objects under each parent, more than the 512 a synthetic "
                 "topology may have" },
    { "synthetic:pack:2 core:513(memory=1GB) pu:1", "`synthetic:pack:2 core:513(memory=1GB) pu:1`: level "
                                                    "`core:513` has 513 objects under each parent, more than the "
                                                    "512 a synthetic topology may have" },
    { "pack:17 l3cache:8 core:32 pu:2", "`pack:17 l3cache:8 core:32 pu:2`: describes more than the 8192 PUs a "
                                        "synthetic topology may have" },
    /* counts as hwloc reads them: base 0 (0x2001 = 8193), attributes and memory children skipped */
    { "pu:0x201", "`pu:0x201`: level `pu:0x201` has 513 objects under each parent, more than the 512 a synthetic "
                  "topology may have" },
    { "(memory=1GB) pack:2 [numa(memory=1GB)] l3cache:64(size=32MB) core:64 pu:2(indexes=core)",
      "`(memory=1GB) pack:2 [numa(memory=1GB)] l3cache:64(size=32MB) core:64 pu:2(indexes=core)`: describes more "
      "than the 8192 PUs a synthetic topology may have" },
    { "64 128 2", "`64 128 2`: describes more than the 8192 PUs a synthetic topology may have" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (refused); i++)
    {
      struct cp_topo *t = NULL;
      cp_error_t err = NULL;
      int r = cp_topo_load (refused[i].desc, &t, &err);
      assert_null (t);
      tu_check_error (refused[i].desc, r, &err, refused[i].msg);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      cp_error_free (&err);
    }
  /* at the bounds: accepted */
  static const char *const accepted[] = { "pack:16 l3cache:8 core:32 pu:2", "pack:16 pu:512",
                                          "(memory=1GB) pack:2 [numa(memory=1GB)] l3cache:32(size=32MB) core:64 pu:2(indexes=core)",
                                          "64 64 2" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (accepted); i++)
    {
      struct cp_topo *t = NULL;
      cp_error_t err = NULL;
      if (cp_topo_load (accepted[i], &t, &err) < 0)
        fail_msg ("%s: %s", accepted[i], cp_error_message (err));
      cp_topo_free (t);
    }
}

/* ---- captured topologies ------------------------------------------------------------ */

static hwloc_topology_t
hw_load (const char *path)
{
  hwloc_topology_t topology;
  assert_int_equal (hwloc_topology_init (&topology), 0);
  hwloc_topology_set_flags (topology, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  assert_int_equal (hwloc_topology_set_xml (topology, path), 0);
  assert_int_equal (hwloc_topology_load (topology), 0);
  return topology;
}

/* The model's cores are hwloc's Core objects (online part), in hwloc's order. */
static void
check_cores_against_hwloc (const struct cp_topo *t, hwloc_topology_t topology)
{
  unsigned i = 0;
  hwloc_bitmap_t pus = hwloc_bitmap_alloc ();
  for (hwloc_obj_t core = NULL; (core = hwloc_get_next_obj_by_type (topology, HWLOC_OBJ_CORE, core));)
    {
      hwloc_bitmap_zero (pus);
      for (unsigned k = 0; k < core->arity; k++)
        if (core->children[k]->type == HWLOC_OBJ_PU)
          hwloc_bitmap_set (pus, core->children[k]->os_index);
      hwloc_bitmap_and (pus, pus, hwloc_topology_get_topology_cpuset (topology));
      if (hwloc_bitmap_iszero (pus))
        continue;
      assert_true (i < t->n_cores);
      if (!hwloc_bitmap_isequal (pus, t->cores[i].pus))
        {
          char *a = cp_cpulist_format (pus), *b = cp_cpulist_format (t->cores[i].pus);
          fail_msg ("%s: core %u is `%s`, hwloc's Core L#%u has `%s`", t->source, i, b, core->logical_index, a);
        }
      i++;
    }
  assert_int_equal (i, t->n_cores);
  hwloc_bitmap_free (pus);
}

static void
test_captured_lassen (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("mpibind/coral-lassen.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  hwloc_topology_t topology = hw_load (path);
  /* The XML's complete cpuset has 0-175, but CPUs 0-7 and 88-95 (the first core of
     each socket, kept by the system) have no PU object: they are not online. */
  tu_assert_set (t->online, "8-87,96-175");
  tu_assert_set (t->allowed, "8-87,96-175");
  hwloc_bitmap_t complete = hwloc_bitmap_dup (hwloc_topology_get_complete_cpuset (topology));
  tu_assert_set (complete, "0-175");
  assert_false (hwloc_bitmap_isequal (complete, t->online));
  hwloc_bitmap_free (complete);
  for (unsigned cpu = 0; cpu < 8; cpu++)
    {
      assert_null (cp_topo_core_of (t, cpu));
      assert_null (cp_topo_core_of (t, 88 + cpu));
    }
  assert_int_equal (t->n_cores, 40);
  tu_assert_set (t->cores[0].pus, "8-11");
  tu_assert_set (t->cores[19].pus, "84-87");
  tu_assert_set (t->cores[20].pus, "96-99");
  check_cores_against_hwloc (t, topology);
  assert_int_equal (t->n_domains[CP_LEVEL_LLC], 20);
  tu_assert_set (t->domains[CP_LEVEL_LLC][0].cpus, "8-15");
  tu_assert_set (t->domains[CP_LEVEL_LLC][10].cpus, "96-103");
  assert_int_equal (t->n_nodes, 2);
  assert_int_equal (t->nodes_info[0].os_index, 0);
  assert_int_equal (t->nodes_info[1].os_index, 8);
  tu_assert_set (t->nodes_info[0].cpus, "8-87");
  tu_assert_set (t->nodes_info[1].cpus, "96-175");
  static const char *const numa[] = { "8-87", "96-175" };
  check_domains (t, CP_LEVEL_NUMA, numa, 2, "rr");
  check_core_of_pu (t);
  /* an allowed set that leaves out a core's first thread moves its PE0 */
  expect_pe0 (t, 0, "9-87", 9);
  expect_pe0 (t, 0, "11", 11);
  hwloc_topology_destroy (topology);
  free (path);
}

static void
test_captured_offline_cpu0_node0 (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/linux-offline-cpu0-node0.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  hwloc_topology_t topology = hw_load (path);
  tu_assert_set (t->online, "4-20");
  assert_int_equal (t->n_cores, 17);
  check_cores_against_hwloc (t, topology);
  /* package 0 (even CPUs) comes first in topology order */
  tu_assert_set (t->cores[0].pus, "4");
  tu_assert_set (t->cores[8].pus, "20");
  tu_assert_set (t->cores[9].pus, "5");
  static const char *const pkg[] = { "4,6,8,10,12,14,16,18,20", "5,7,9,11,13,15,17,19" };
  check_domains (t, CP_LEVEL_PACKAGE, pkg, 2, "rr");
  check_domains (t, CP_LEVEL_LLC, pkg, 2, "rr");
  /* Node 0 is offline: package 0 has no NUMA node and becomes a fallback domain. */
  check_domains (t, CP_LEVEL_NUMA, pkg, 2, "fr");
  tu_assert_set (t->nodes, "1");
  tu_assert_set (t->allowed_nodes, "1");
  assert_int_equal (t->n_nodes, 1);
  assert_int_equal (t->nodes_info[0].os_index, 1);
  tu_assert_set (t->nodes_info[0].cpus, pkg[1]);
  check_core_of_pu (t);
  assert_null (cp_topo_core_of (t, 0));
  assert_null (cp_topo_core_of (t, 3));
  assert_null (cp_topo_core_of (t, 21));
  assert_int_equal (t->pu_limit, 21);
  hwloc_topology_destroy (topology);
  free (path);
}

static void
test_captured_strix_point_uneven_l3 (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/x86-AMD-1Ah-Zen5StrixPoint-RyzenAI9HX370.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  hwloc_topology_t topology = hw_load (path);
  check_cores_against_hwloc (t, topology);
  static const char *const l3[] = { "0-3,12-15", "4-11,16-23" };
  check_domains (t, CP_LEVEL_LLC, l3, 2, "rr");
  assert_int_equal (t->domains[CP_LEVEL_LLC][0].n_cores, 4);
  assert_int_equal (t->domains[CP_LEVEL_LLC][1].n_cores, 8);
  tu_assert_set (t->cores[0].pus, "0,12");
  tu_assert_set (t->cores[4].pus, "4,16");
  /* Zen 5 (the XML's kind 1) in the first L3, Zen 5c (kind 0) in the second */
  for (unsigned c = 0; c < t->n_cores; c++)
    assert_int_equal (t->cores[c].kind, c < 4 ? 1 : 0);
  hwloc_topology_destroy (topology);
  free (path);
}

/* The efficiency rank hwloc gives the kind of CPU CPU, or -1. */
static int
hw_efficiency (hwloc_topology_t topology, unsigned cpu)
{
  hwloc_bitmap_t set = hwloc_bitmap_alloc ();
  hwloc_bitmap_only (set, cpu);
  int k = hwloc_cpukinds_get_by_cpuset (topology, set, 0);
  int efficiency = -1;
  if (k >= 0)
    assert_int_equal (hwloc_cpukinds_get_info (topology, (unsigned) k, NULL, &efficiency, NULL, NULL, 0), 0);
  hwloc_bitmap_free (set);
  return efficiency;
}

static void
test_captured_gb10_kinds (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/linux-nvidia-dgx-gb10.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  hwloc_topology_t topology = hw_load (path);
  check_cores_against_hwloc (t, topology);
  assert_int_equal (t->n_cores, 20);
  static const char *const l3[] = { "0-9", "10-19" };
  check_domains (t, CP_LEVEL_LLC, l3, 2, "rr");
  assert_int_equal (t->n_domains[CP_LEVEL_L2], 20); /* one L2 per core */
  /* From the XML's <cpukind forced_efficiency>: CPUs 0-4 rank 0, 10-14 rank 1,
     5-9 rank 2, 15-18 rank 3, 19 rank 4; one PU per core, core c is CPU c. */
  for (unsigned c = 0; c < 20; c++)
    {
      int expected = c < 5 ? 0 : c < 10 ? 2 : c < 15 ? 1 : c < 19 ? 3 : 4;
      assert_int_equal (t->cores[c].first_pu, c);
      if (t->cores[c].kind != expected)
        fail_msg ("GB10 core %u: kind %d, expected %d", c, t->cores[c].kind, expected);
      assert_int_equal (hw_efficiency (topology, c), expected);
    }
  hwloc_topology_destroy (topology);
  free (path);
}

/* Both Raptor Lake captures (x86 CPUID and Linux sysfs): P-cores faster than E-cores. */
static void
test_captured_raptor_lake_kinds (void **state)
{
  (void) state;
  static const char *const files[] = { "hwloc/x86-Intel-RaptorLake-Corei7-1370P.xml",
                                       "hwloc/linux-20em64t-hybrid-1p6c2t+2ca4co1t.xml" };
  for (size_t f = 0; f < CP_ARRAY_SIZE (files); f++)
    {
      char *path = tu_topology_file_or_skip (files[f]);
      cleanup_topo struct cp_topo *t = tu_topo (path);
      hwloc_topology_t topology = hw_load (path);
      check_cores_against_hwloc (t, topology);
      /* 6 P-cores with 2 threads (0-11), 8 E-cores with 1 (12-19) */
      assert_int_equal (t->n_cores, 14);
      for (unsigned c = 0; c < 14; c++)
        {
          assert_int_equal (hwloc_bitmap_weight (t->cores[c].pus), c < 6 ? 2 : 1);
          assert_int_equal (t->cores[c].kind, hw_efficiency (topology, t->cores[c].first_pu));
          if (c < 6)
            assert_true (t->cores[c].kind > t->cores[13].kind);
        }
      hwloc_topology_destroy (topology);
      free (path);
    }
}

/* Skylake interleaves packages (core 0 = {0,36}, the next {2,38}); the siblings
   must be hwloc's, whatever the numbering. */
static void
test_captured_skylake_siblings (void **state)
{
  (void) state;
  char *path = tu_topology_file_or_skip ("hwloc/x86-Intel-Skylake-2xXeon6140.xml");
  cleanup_topo struct cp_topo *t = tu_topo (path);
  hwloc_topology_t topology = hw_load (path);
  check_cores_against_hwloc (t, topology);
  assert_int_equal (t->n_cores, 36);
  tu_assert_set (t->cores[0].pus, "0,36");
  tu_assert_set (t->cores[1].pus, "2,38");
  /* Every PU's core is the Core object above it in hwloc. */
  for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type (topology, HWLOC_OBJ_PU, pu));)
    {
      hwloc_obj_t core = hwloc_get_ancestor_obj_by_type (topology, HWLOC_OBJ_CORE, pu);
      assert_non_null (core);
      const struct cp_core *c = cp_topo_core_of (t, pu->os_index);
      assert_non_null (c);
      assert_true (hwloc_bitmap_isequal (c->pus, core->cpuset));
    }
  /* LLC and package domains are hwloc's packages: the even and the odd CPUs */
  hwloc_obj_t p0 = hwloc_get_obj_by_type (topology, HWLOC_OBJ_PACKAGE, 0);
  hwloc_obj_t p1 = hwloc_get_obj_by_type (topology, HWLOC_OBJ_PACKAGE, 1);
  assert_true (hwloc_bitmap_isequal (t->domains[CP_LEVEL_LLC][0].cpus, p0->cpuset));
  assert_true (hwloc_bitmap_isequal (t->domains[CP_LEVEL_LLC][1].cpus, p1->cpuset));
  assert_true (hwloc_bitmap_isequal (t->domains[CP_LEVEL_PACKAGE][0].cpus, p0->cpuset));
  for (unsigned cpu = 0; cpu < 72; cpu++)
    assert_int_equal (hwloc_bitmap_isset (p0->cpuset, cpu), cpu % 2 == 0);
  /* one NUMA node for both packages: a NUMA domain wider than a package */
  assert_int_equal (t->n_domains[CP_LEVEL_NUMA], 1);
  tu_assert_set (t->domains[CP_LEVEL_NUMA][0].cpus, "0-71");
  /* PE0 with the first thread of core 1 left out: its sibling 38 */
  expect_pe0 (t, 1, "0-1,3-71", 38);
  hwloc_topology_destroy (topology);
  free (path);
}

/* Every captured topology: cores and domains agree with hwloc's objects. */
static void
test_captured_all_models (void **state)
{
  (void) state;
  static const char *const files[] = {
    "hwloc/linux-128arm-2pa2n8cluster4co.xml", "hwloc/linux-256ppc-8n8s4t.xml",
    "hwloc/linux-memorysidecaches.xml", "hwloc/linux-nvidiagpunumanodes.xml",
    "hwloc/x86-AMD-17h-Zen-2xEpyc-7451.xml", "hwloc/x86-AMD-19h-Zen3-2xEpyc-7763.xml",
    "hwloc/x86-AMD-19h-Zen4-2xEpyc-9654.xml", "hwloc/x86-Intel-SapphireRapids-2xXeonMax9460.xml",
    "mpibind/arm64-ulna-hwloc1.xml", "mpibind/coral-ea-hwloc1.xml", "mpibind/eas-tioga.xml",
  };
  for (size_t f = 0; f < CP_ARRAY_SIZE (files); f++)
    {
      char *path = tu_topology_file_or_skip (files[f]);
      cleanup_topo struct cp_topo *t = tu_topo (path);
      hwloc_topology_t topology = hw_load (path);
      check_cores_against_hwloc (t, topology);
      check_core_of_pu (t);
      /* LLC domains: hwloc's L3 objects (L2 where there is no L3), each exactly once */
      hwloc_obj_type_t llc = hwloc_get_nbobjs_by_type (topology, HWLOC_OBJ_L3CACHE) > 0 ? HWLOC_OBJ_L3CACHE
                                                                                        : HWLOC_OBJ_L2CACHE;
      unsigned n = 0;
      for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type (topology, llc, o));)
        {
          bool found = false;
          for (unsigned d = 0; d < t->n_domains[CP_LEVEL_LLC]; d++)
            if (hwloc_bitmap_isequal (t->domains[CP_LEVEL_LLC][d].cpus, o->cpuset))
              found = true;
          if (!found)
            fail_msg ("%s: no LLC domain for L%d L#%u", files[f], llc == HWLOC_OBJ_L3CACHE ? 3 : 2, o->logical_index);
          n++;
        }
      assert_int_equal (t->n_domains[CP_LEVEL_LLC], n);
      /* NUMA: the CPU-side nodes, minus duplicates (nodes with the same CPUs) */
      unsigned cpu_nodes = 0;
      for (unsigned i = 0; i < t->n_nodes; i++)
        cpu_nodes += t->nodes_info[i].cpu_memory;
      assert_true (t->n_domains[CP_LEVEL_NUMA] <= cpu_nodes);
      assert_true (t->n_domains[CP_LEVEL_NUMA] >= 1);
      hwloc_topology_destroy (topology);
      free (path);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_amd_sibling_numbering),
    cmocka_unit_test (test_adjacent_numbering),
    cmocka_unit_test (test_smt_off),
    cmocka_unit_test (test_smt4),
    cmocka_unit_test (test_no_l3),
    cmocka_unit_test (test_no_caches),
    cmocka_unit_test (test_numa),
    cmocka_unit_test (test_allowed_smaller_than_online),
    cmocka_unit_test (test_load_errors),
    cmocka_unit_test (test_xml_errors),
    cmocka_unit_test (test_synthetic_bounds),
    cmocka_unit_test (test_captured_lassen),
    cmocka_unit_test (test_captured_offline_cpu0_node0),
    cmocka_unit_test (test_captured_strix_point_uneven_l3),
    cmocka_unit_test (test_captured_gb10_kinds),
    cmocka_unit_test (test_captured_raptor_lake_kinds),
    cmocka_unit_test (test_captured_skylake_siblings),
    cmocka_unit_test (test_captured_all_models),
    cmocka_unit_test (test_filtered_load_same_model),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
