/* The devices a node publishes for DRA (policy/dra_model.h) and their
 * ResourceSlices, on synthetic topologies and every captured one.
 *
 *   AMD = "package:2 numa:1 l3cache:4 core:4 pu:2(indexes=core)": 2 packages of one
 *         NUMA node and 4 L3s of 4 two-thread cores; core i = {i, i+32}, so L3 k
 *         holds CPUs 4k..4k+3 and 4k+32..4k+35.
 * The promises: one device per domain of the align level with usable CPUs, named
 * after the level and the domain's index (so a name does not move when another
 * domain's CPUs are reserved or held); capacity = usable CPUs (online, allowed, not
 * reserved) less those held outside DRA; a device with none left is left out; the
 * JSON follows resource.k8s.io/v1's rules (checked by check_slice() below, the
 * rules written out from k8s.io/api/resource/v1/types.go and apimachinery's
 * validation: not from this code). */
#include "testutil.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bitmap.h"
#include "cpulist.h"
#include "dra_model.h"
#include "util.h"

#define AMD "package:2 numa:1 l3cache:4 core:4 pu:2(indexes=core)"

/* ------------------------------------------------------------------ the API's rules */

static bool
is_dns_label (const char *s, size_t max)
{
  size_t n = strlen (s);
  if (n == 0 || n > max)
    return false;
  for (size_t i = 0; i < n; i++)
    {
      bool ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || (s[i] == '-' && i > 0 && i < n - 1);
      if (!ok)
        return false;
    }
  return true;
}

static bool
is_dns_subdomain (const char *s)
{
  if (strlen (s) > 253)
    return false;
  cleanup_free char *copy = cp_xstrdup (s);
  for (char *save = NULL, *l = strtok_r (copy, ".", &save); l; l = strtok_r (NULL, ".", &save))
    if (!is_dns_label (l, 63))
      return false;
  return s[0] != '.' && s[strlen (s) - 1] != '.' && strstr (s, "..") == NULL;
}

/* A C identifier of at most 32 characters (an unqualified QualifiedName). */
static bool
is_c_identifier (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > 32 || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')
          || s[i] == '_'))
      return false;
  return true;
}

/* A whole, non-negative Quantity in canonical form ("0", "8", no leading zero). */
static long
quantity (json_object *q)
{
  assert_true (json_object_is_type (q, json_type_string));
  const char *s = json_object_get_string (q);
  assert_true (s[0] != '\0' && strspn (s, "0123456789") == strlen (s));
  assert_true (s[0] != '0' || s[1] == '\0');
  return strtol (s, NULL, 10);
}

static json_object *
get (json_object *o, const char *key)
{
  json_object *v = NULL;
  if (!json_object_object_get_ex (o, key, &v))
    fail_msg ("no key %s in %s", key, json_object_to_json_string (o));
  return v;
}

/* DeviceCapacity with a requestPolicy: default and range within the value. */
static void
check_capacity (json_object *c)
{
  long value = quantity (get (c, "value"));
  assert_true (value >= 1); /* a device of no capacity is left out */
  json_object *policy = get (c, "requestPolicy");
  long def = quantity (get (policy, "default"));
  assert_true (def >= 1 && def <= value);
  json_object *range = NULL, *values = NULL;
  bool has_range = json_object_object_get_ex (policy, "validRange", &range);
  bool has_values = json_object_object_get_ex (policy, "validValues", &values);
  assert_true (has_range != has_values); /* exactly one of ValidRequestValues */
  if (has_range)
    {
      long min = quantity (get (range, "min")), step = quantity (get (range, "step"));
      assert_true (min >= 0 && min <= value && min <= def);
      assert_true (min + step <= value); /* "Min + Step must be less than or equal to the capacity value" */
      assert_int_equal (def % step, 0);
    }
  else
    {
      assert_true (json_object_array_length (values) >= 1 && json_object_array_length (values) <= 10);
      bool found = false;
      for (size_t i = 0; i < json_object_array_length (values); i++)
        found |= quantity (json_object_array_get_idx (values, i)) == def;
      assert_true (found);
    }
}

/* One device: its name, attributes (one value each), capacity, and their count. */
static void
check_device (json_object *d)
{
  assert_true (is_dns_label (json_object_get_string (get (d, "name")), 63));
  size_t n = 0;
  json_object_object_foreach (get (d, "attributes"), key, attr)
  {
    assert_true (is_c_identifier (key));
    assert_int_equal (json_object_object_length (attr), 1);
    json_object *v;
    if (json_object_object_get_ex (attr, "int", &v))
      assert_true (json_object_is_type (v, json_type_int));
    else if (json_object_object_get_ex (attr, "bool", &v))
      assert_true (json_object_is_type (v, json_type_boolean));
    else if (json_object_object_get_ex (attr, "string", &v))
      assert_true (json_object_is_type (v, json_type_string) && json_object_get_string_len (v) <= 64);
    else
      fail_msg ("attribute %s: neither int, bool nor string", key);
    n++;
  }
  json_object_object_foreach (get (d, "capacity"), ckey, cap)
  {
    assert_true (is_c_identifier (ckey));
    check_capacity (cap);
    n++;
  }
  assert_true (n <= 32);
  /* a requestPolicy needs allowMultipleAllocations */
  assert_true (json_object_get_boolean (get (d, "allowMultipleAllocations")));
}

/* One slice of NODE: the shape and the limits; returns its device count. */
static size_t
check_slice (json_object *s, const char *node, int64_t generation, size_t n_slices)
{
  assert_string_equal (json_object_get_string (get (s, "apiVersion")), "resource.k8s.io/v1");
  assert_string_equal (json_object_get_string (get (s, "kind")), "ResourceSlice");
  assert_true (is_dns_subdomain (json_object_get_string (get (get (s, "metadata"), "name"))));
  json_object *spec = get (s, "spec");
  const char *driver = json_object_get_string (get (spec, "driver"));
  assert_true (is_dns_subdomain (driver) && strlen (driver) <= 63);
  assert_string_equal (json_object_get_string (get (spec, "nodeName")), node);
  json_object *pool = get (spec, "pool");
  assert_string_equal (json_object_get_string (get (pool, "name")), node);
  assert_int_equal (json_object_get_int64 (get (pool, "generation")), generation);
  assert_int_equal (json_object_get_int64 (get (pool, "resourceSliceCount")), n_slices);
  json_object *devices = get (spec, "devices");
  size_t n = json_object_array_length (devices);
  assert_true (n <= 128);
  for (size_t i = 0; i < n; i++)
    check_device (json_object_array_get_idx (devices, i));
  return n;
}

/* M's slices for NODE, checked whole: names unique across the pool. */
static json_object *
check_slices (const struct cp_dra_model *m, const char *node)
{
  json_object *slices = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_dra_slices_json (m, node, 3, &slices, &err), 0);
  size_t n_slices = json_object_array_length (slices), total = 0;
  assert_true (n_slices >= 1);
  json_object *names = json_object_new_object ();
  for (size_t s = 0; s < n_slices; s++)
    {
      json_object *slice = json_object_array_get_idx (slices, s);
      total += check_slice (slice, node, 3, n_slices);
      json_object *devices = get (get (slice, "spec"), "devices");
      for (size_t i = 0; i < json_object_array_length (devices); i++)
        {
          const char *name = json_object_get_string (get (json_object_array_get_idx (devices, i), "name"));
          assert_false (json_object_object_get_ex (names, name, NULL));
          json_object_object_add (names, name, NULL);
        }
    }
  json_object_put (names);
  assert_int_equal (total, m->n_devices);
  return slices;
}

/* ------------------------------------------------------------------ building */

static struct cp_dra_model *
build (const struct cp_topo *topo, enum cp_level level, const char *usable, const char *held, bool isolate)
{
  cleanup_bitmap hwloc_bitmap_t u = usable ? tu_set (usable) : NULL;
  cleanup_bitmap hwloc_bitmap_t h = held ? tu_set (held) : NULL;
  struct cp_dra_inputs in = { .topo = topo, .level = level, .usable = u, .held = h, .isolate_allowed = isolate };
  struct cp_dra_model *m = NULL;
  cp_error_t err = NULL;
  if (cp_dra_model_build (&in, &m, &err) < 0)
    fail_msg ("cp_dra_model_build: %s", cp_error_message (err));
  return m;
}

static const struct cp_dra_device *
device (const struct cp_dra_model *m, const char *name)
{
  for (size_t i = 0; i < m->n_devices; i++)
    if (strcmp (m->devices[i].name, name) == 0)
      return &m->devices[i];
  fail_msg ("no device %s", name);
  return NULL;
}

/* One device per L3, with what the layout above says. */
static void
test_l3_devices (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (AMD);
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  assert_int_equal (m->n_devices, 8);
  assert_int_equal (m->hidden, 0);
  for (unsigned k = 0; k < 8; k++)
    {
      const struct cp_dra_device *d = &m->devices[k];
      char name[16], cpus[32];
      snprintf (name, sizeof name, "l3-%u", k);
      snprintf (cpus, sizeof cpus, "%u-%u,%u-%u", 4 * k, 4 * k + 3, 4 * k + 32, 4 * k + 35);
      assert_string_equal (d->name, name);
      tu_assert_set (d->cpus, cpus);
      assert_int_equal (d->usable, 8);
      assert_int_equal (d->capacity, 8);
      assert_int_equal (d->llc_index, k);
      assert_int_equal (d->numa_nodes, 1);
      assert_int_equal (d->numa_node, k / 4);
      assert_int_equal (d->package, k / 4);
      assert_int_equal (d->cores, 4);
      assert_int_equal (d->threads_per_core, 2);
      assert_string_equal (d->cpu_kind, "uniform");
      assert_true (d->isolatable);
    }
  json_object *slices = check_slices (m, "node-a.example");
  json_object *dev0 = json_object_array_get_idx (get (get (json_object_array_get_idx (slices, 0), "spec"), "devices"), 0);
  json_object *attrs = get (dev0, "attributes");
  assert_int_equal (json_object_get_int (get (get (attrs, "l3Index"), "int")), 0);
  assert_int_equal (json_object_get_int (get (get (attrs, "numaNode"), "int")), 0);
  assert_string_equal (json_object_get_string (get (get (attrs, "level"), "string")), "llc");
  assert_string_equal (json_object_get_string (get (get (get (dev0, "capacity"), "cpus"), "value")), "8");
  assert_string_equal (json_object_get_string (get (get (get (get (dev0, "capacity"), "cpus"), "requestPolicy"),
                                                    "default")),
                       "8"); /* no amount asked: the whole L3 */
  assert_string_equal (json_object_get_string (get (get (json_object_array_get_idx (slices, 0), "metadata"), "name")),
                       "node-a.example-cachepin.io-0");
  json_object_put (slices);
}

/* Reserved CPUs are not usable; held ones are taken out of the capacity; a
   device with nothing left is left out, and the others keep their names. */
static void
test_reserved_and_held (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (AMD);
  /* usable: all but CPUs 0 and 32 (reserved); held outside DRA: the rest of L3 0
     and two CPUs of L3 1 */
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, "1-31,33-63", "1-3,33-35,4,36", true);
  assert_int_equal (m->n_devices, 7);
  assert_int_equal (m->hidden, 1);
  assert_string_equal (m->devices[0].name, "l3-1");
  assert_int_equal (device (m, "l3-1")->usable, 8);
  assert_int_equal (device (m, "l3-1")->capacity, 6);
  tu_assert_set (device (m, "l3-1")->held, "4,36");
  assert_int_equal (device (m, "l3-2")->capacity, 8);
  json_object_put (check_slices (m, "n1"));

  /* reserved alone: l3-0 keeps 6 usable CPUs, its 3 cores with a usable one... */
  cleanup_dra_model struct cp_dra_model *r = build (topo, CP_LEVEL_LLC, "1-31,33-63", NULL, true);
  assert_int_equal (r->n_devices, 8);
  assert_int_equal (device (r, "l3-0")->usable, 6);
  assert_int_equal (device (r, "l3-0")->capacity, 6);
  assert_int_equal (device (r, "l3-0")->cores, 3);
  /* ...and a device of one CPU still has a policy the API takes */
  cleanup_dra_model struct cp_dra_model *one = build (topo, CP_LEVEL_LLC, "0-31,33-63", "1-3,33-35", true);
  assert_int_equal (device (one, "l3-0")->capacity, 1);
  json_object_put (check_slices (one, "n1"));
}

/* The host config's align names the level; align none publishes the LLCs. */
static void
test_levels (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo (AMD);
  cleanup_dra_model struct cp_dra_model *numa = build (topo, CP_LEVEL_NUMA, NULL, NULL, true);
  assert_int_equal (numa->n_devices, 2);
  assert_string_equal (numa->devices[1].name, "numa-1");
  assert_int_equal (numa->devices[1].capacity, 32);
  assert_int_equal (numa->devices[1].llc_index, -1); /* over 4 L3s */
  json_object *slices = check_slices (numa, "n1");
  json_object *attrs = get (json_object_array_get_idx (get (get (json_object_array_get_idx (slices, 0), "spec"),
                                                            "devices"),
                                                       0),
                            "attributes");
  assert_false (json_object_object_get_ex (attrs, "l3Index", NULL));
  json_object_put (slices);
  cleanup_dra_model struct cp_dra_model *none = build (topo, CP_LEVEL_MACHINE, NULL, NULL, true);
  assert_int_equal (none->n_devices, 8);
  assert_string_equal (none->devices[7].name, "l3-7");
  cleanup_dra_model struct cp_dra_model *pkg = build (topo, CP_LEVEL_PACKAGE, NULL, NULL, true);
  assert_int_equal (pkg->n_devices, 2);
  assert_string_equal (pkg->devices[0].name, "package-0");

  /* a machine whose last level is an L2: devices named after it, and no l3Index */
  cleanup_topo struct cp_topo *l2 = tu_topo ("package:2 l2cache:2 core:2 pu:2");
  cleanup_dra_model struct cp_dra_model *m2 = build (l2, CP_LEVEL_LLC, NULL, NULL, true);
  assert_int_equal (m2->n_devices, 4);
  assert_string_equal (m2->devices[3].name, "l2-3");
  json_object *s2 = check_slices (m2, "n1");
  json_object *a2 = get (json_object_array_get_idx (get (get (json_object_array_get_idx (s2, 0), "spec"), "devices"), 3),
                         "attributes");
  assert_false (json_object_object_get_ex (a2, "l3Index", NULL));
  assert_string_equal (json_object_get_string (get (get (a2, "level"), "string")), "llc");
  json_object_put (s2);
}

/* Isolatable: some CPU outside the first core of each NUMA node, and the host
   allows isolation at all. */
static void
test_isolatable (void **state)
{
  (void) state;
  /* each L3 one core, the first of its own NUMA node: never isolated */
  cleanup_topo struct cp_topo *topo = tu_topo ("package:1 numa:2 l3cache:1 core:1 pu:2");
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  assert_int_equal (m->n_devices, 2);
  assert_false (m->devices[0].isolatable);
  assert_false (m->devices[1].isolatable);
  cleanup_topo struct cp_topo *amd = tu_topo (AMD);
  cleanup_dra_model struct cp_dra_model *deny = build (amd, CP_LEVEL_LLC, NULL, NULL, false);
  assert_false (deny->devices[2].isolatable);
  /* l3-0 holds node 0's first core, and three more cores: isolatable */
  cleanup_dra_model struct cp_dra_model *allow = build (amd, CP_LEVEL_LLC, NULL, NULL, true);
  assert_true (allow->devices[0].isolatable);
  /* only the first core usable: not */
  cleanup_dra_model struct cp_dra_model *first = build (amd, CP_LEVEL_LLC, "0,32,4-31,36-63", NULL, true);
  assert_false (device (first, "l3-0")->isolatable);
}

/* A hybrid part: the kinds of a device's cores (hwloc's efficiency ranks, set
   here on a synthetic model: synthetic descriptions carry no kinds). */
static void
test_cpu_kind (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo ("package:1 l3cache:3 core:2 pu:1");
  /* L3 0: both fast; L3 1: one of each; L3 2: both slow */
  int kinds[] = { 1, 1, 1, 0, 0, 0 };
  for (unsigned i = 0; i < topo->n_cores; i++)
    topo->cores[i].kind = kinds[i];
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  assert_string_equal (m->devices[0].cpu_kind, "performance");
  assert_string_equal (m->devices[1].cpu_kind, "mixed");
  assert_string_equal (m->devices[2].cpu_kind, "efficiency");
  assert_int_equal (m->devices[2].threads_per_core, 1);
}

/* More than 128 devices: several slices in one pool, each within the limit. */
static void
test_many_devices (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo ("package:2 l3cache:100 core:1 pu:1");
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  assert_int_equal (m->n_devices, 200);
  json_object *slices = check_slices (m, "big");
  assert_int_equal (json_object_array_length (slices), 2);
  assert_string_equal (json_object_get_string (get (get (json_object_array_get_idx (slices, 1), "metadata"), "name")),
                       "big-cachepin.io-1");
  json_object_put (slices);
  /* and none: one empty slice, so that the pool says so */
  cleanup_dra_model struct cp_dra_model *none = build (topo, CP_LEVEL_LLC, "0-199", "0-199", true);
  assert_int_equal (none->n_devices, 0);
  assert_int_equal (none->hidden, 200);
  json_object *empty = check_slices (none, "big");
  assert_int_equal (json_object_array_length (empty), 1);
  json_object_put (empty);
}

/* Node names: a DNS subdomain, one line naming the option. */
static void
test_node_names (void **state)
{
  (void) state;
  const char *good[] = { "a", "node-1", "n1.example.com", "0" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (good); i++)
    {
      cp_error_t err = NULL;
      assert_int_equal (cp_dra_check_node_name ("--node", good[i], &err), 0);
    }
  const char *bad[] = { "Node1", "-a", "a-", "a..b", ".a", "a.", "a_b", "a b", "" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      cp_error_t err = NULL;
      assert_int_equal (cp_dra_check_node_name ("--node", bad[i], &err), -1);
      assert_int_equal (err->kind, CP_ERR_INPUT);
      tu_assert_contains (cp_error_message (err), "--node: ");
      cp_error_free (&err);
    }
  char long_name[260];
  memset (long_name, 'a', 254);
  long_name[254] = '\0';
  cp_error_t err = NULL;
  tu_check_error ("254", cp_dra_check_node_name ("--node", long_name, &err), &err,
                  "--node: 254 characters, more than a node name's 253");
  cp_error_free (&err);
  /* a node name the API takes, too long to name its slices after */
  long_name[250] = '\0';
  cleanup_topo struct cp_topo *topo = tu_topo (AMD);
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  json_object *slices = NULL;
  assert_int_equal (cp_dra_slices_json (m, long_name, 1, &slices, &err), -1);
  tu_check_error ("250", -1, &err,
                  "node name `aaaaaaaaaaaaaaaaaaaa...`: 250 characters, too long to name its slices after (at most 239)");
  cp_error_free (&err);
  tu_check_error ("generation 0", cp_dra_slices_json (m, "n", 0, &slices, &err), &err,
                  "pool generation 0: expected 1 or more");
  cp_error_free (&err);
}

/* ------------------------------------------------------------------ captured */

/* FILE's L3 devices against hwloc itself: one per L3 object with allowed online
   CPUs, holding exactly those, the most PUs of one of its cores as threads, the
   lowest NUMA node touching it; and the slices by the API's rules. */
static void
check_captured (const char *file, const char *name)
{
  hwloc_topology_t h;
  assert_int_equal (hwloc_topology_init (&h), 0);
  assert_int_equal (hwloc_topology_set_xml (h, file), 0);
  hwloc_topology_set_flags (h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  assert_int_equal (hwloc_topology_load (h), 0);
  cleanup_topo struct cp_topo *topo = tu_topo (file);
  cleanup_dra_model struct cp_dra_model *m = build (topo, CP_LEVEL_LLC, NULL, NULL, true);
  json_object_put (check_slices (m, "captured"));
  if (topo->llc_depth != 3)
    {
      print_message ("%-55s %zu devices (no L3: %s)\n", name, m->n_devices, cp_topo_level_label (topo, CP_LEVEL_LLC));
      hwloc_topology_destroy (h);
      return;
    }
  cleanup_bitmap hwloc_bitmap_t usable = cp_bitmap_dup (hwloc_topology_get_allowed_cpuset (h));
  hwloc_bitmap_and (usable, usable, hwloc_topology_get_topology_cpuset (h));
  hwloc_bitmap_and (usable, usable, topo->online);
  size_t want = 0, usable_total = 0;
  for (hwloc_obj_t l3 = NULL; (l3 = hwloc_get_next_obj_by_type (h, HWLOC_OBJ_L3CACHE, l3));)
    {
      cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_dup (l3->cpuset);
      hwloc_bitmap_and (cpus, cpus, usable);
      if (hwloc_bitmap_iszero (cpus))
        continue;
      want++;
      const struct cp_dra_device *d = NULL;
      for (size_t i = 0; i < m->n_devices && d == NULL; i++)
        if (hwloc_bitmap_isequal (m->devices[i].cpus, cpus))
          d = &m->devices[i];
      if (d == NULL)
        fail_msg ("%s: no device holds exactly L3 #%u's usable CPUs", name, l3->logical_index);
      usable_total += d->usable;
      unsigned threads = 0;
      for (hwloc_obj_t c = NULL; (c = hwloc_get_next_obj_inside_cpuset_by_type (h, l3->cpuset, HWLOC_OBJ_CORE, c));)
        if (hwloc_bitmap_intersects (c->cpuset, usable))
          {
            cleanup_bitmap hwloc_bitmap_t online = cp_bitmap_dup (c->cpuset);
            hwloc_bitmap_and (online, online, topo->online);
            if ((unsigned) hwloc_bitmap_weight (online) > threads)
              threads = (unsigned) hwloc_bitmap_weight (online);
          }
      if (threads)
        assert_int_equal (d->threads_per_core, threads);
      int node = -1;
      for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type (h, HWLOC_OBJ_NUMANODE, n));)
        if (hwloc_bitmap_intersects (n->cpuset, cpus) && (node < 0 || (int) n->os_index < node))
          node = (int) n->os_index;
      if (d->numa_nodes && node >= 0)
        assert_true (d->numa_node >= (unsigned) node); /* the lowest with the CPUs' own memory */
    }
  assert_int_equal (m->n_devices, want);
  assert_int_equal (usable_total, hwloc_bitmap_weight (usable));
  print_message ("%-55s %zu L3 devices, %zu CPUs\n", name, m->n_devices, usable_total);
  hwloc_topology_destroy (h);
}

static void
test_captured_every_topology (void **state)
{
  (void) state;
  const char *dir;
  size_t n_files;
  char **files = tu_captured_xml (&dir, &n_files);
  for (size_t f = 0; f < n_files; f++)
    {
      check_captured (files[f], files[f] + strlen (dir) + 1);
      free (files[f]);
    }
  free (files);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_l3_devices),    cmocka_unit_test (test_reserved_and_held),
    cmocka_unit_test (test_levels),        cmocka_unit_test (test_isolatable),
    cmocka_unit_test (test_cpu_kind),      cmocka_unit_test (test_many_devices),
    cmocka_unit_test (test_node_names),    cmocka_unit_test (test_captured_every_topology),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
