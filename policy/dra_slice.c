/* cachepin: the devices of dra_model.h as resource.k8s.io/v1 ResourceSlices.
 *
 * The shape, and the limits relied on, are k8s.io/api/resource/v1's: a device is
 * a name (DNS label), attributes (a C identifier of at most 32 characters, in the
 * driver's domain when unqualified, each exactly one of int, bool, string (at most
 * 64 characters) or version), capacities (a Quantity and its requestPolicy), at
 * most 32 of both together, and allowMultipleAllocations (consumable capacity,
 * DRAConsumableCapacity); a slice holds at most 128 devices. */
#define _GNU_SOURCE
#include "dra_model.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* One DNS label of a subdomain, from S for LEN characters. */
static bool
dns_label_ok (const char *s, size_t len)
{
  if (len == 0)
    return false;
  for (size_t i = 0; i < len; i++)
    {
      char c = s[i];
      bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!alnum && (c != '-' || i == 0 || i == len - 1))
        return false;
    }
  return true;
}

int
cp_dra_check_node_name (const char *what, const char *node, cp_error_t *err)
{
  size_t len = strlen (node);
  if (len == 0)
    return cp_fail_input (err, "%s: empty (expected a Kubernetes node name)", what);
  if (len > CP_DRA_MAX_NODE_NAME)
    return cp_fail_input (err, "%s: %zu characters, more than a node name's %u", what, len, CP_DRA_MAX_NODE_NAME);
  for (const char *label = node;;)
    {
      const char *dot = strchr (label, '.');
      size_t n = dot ? (size_t) (dot - label) : strlen (label);
      if (!dns_label_ok (label, n))
        return cp_fail_input (err,
                              "%s: `%s` is not a node name (lower-case letters, digits, '-' and '.', starting and "
                              "ending with a letter or digit)",
                              what, node);
      if (dot == NULL)
        return 0;
      label = dot + 1;
    }
}

static json_object *
attr_int (int64_t v)
{
  json_object *a = json_object_new_object ();
  json_object_object_add (a, "int", json_object_new_int64 (v));
  return a;
}

static json_object *
attr_bool (bool v)
{
  json_object *a = json_object_new_object ();
  json_object_object_add (a, "bool", json_object_new_boolean (v));
  return a;
}

static json_object *
attr_string (const char *v)
{
  json_object *a = json_object_new_object ();
  json_object_object_add (a, "string", json_object_new_string (v));
  return a;
}

static json_object *
quantity (unsigned n)
{
  char buf[16];
  snprintf (buf, sizeof buf, "%u", n);
  return json_object_new_string (buf);
}

/* The capacity and how a claim consumes it: whole CPUs (a request of 2.5 is
   rounded up to 3, as the allocator rounds to the step); a request that names no
   amount takes all of it (the default: "a whole L3").  The API wants min + step
   within the value, so a device of one CPU gives its one value instead. */
static json_object *
capacity_json (unsigned cap)
{
  json_object *policy = json_object_new_object ();
  json_object_object_add (policy, "default", quantity (cap));
  if (cap >= 2)
    {
      json_object *range = json_object_new_object ();
      json_object_object_add (range, "min", quantity (1));
      json_object_object_add (range, "step", quantity (1));
      json_object_object_add (policy, "validRange", range);
    }
  else
    {
      json_object *values = json_object_new_array ();
      json_object_array_add (values, quantity (cap));
      json_object_object_add (policy, "validValues", values);
    }
  json_object *c = json_object_new_object ();
  json_object_object_add (c, "value", quantity (cap));
  json_object_object_add (c, "requestPolicy", policy);
  json_object *caps = json_object_new_object ();
  json_object_object_add (caps, CP_DRA_CAPACITY, c);
  return caps;
}

/* The attributes a DeviceClass or claim selects on (docs/dra.md lists them). */
static json_object *
attributes_json (const struct cp_dra_model *m, const struct cp_dra_device *d)
{
  enum cp_level level = m->level;
  json_object *a = json_object_new_object ();
  json_object_object_add (a, "level", attr_string (cp_align_name (level)));
  json_object_object_add (a, "index", attr_int (d->index));
  if (d->llc_index >= 0 && m->llc_is_l3)
    json_object_object_add (a, "l3Index", attr_int (d->llc_index));
  json_object_object_add (a, "numaNode", attr_int (d->numa_nodes ? (int64_t) d->numa_node : -1));
  json_object_object_add (a, "numaNodes", attr_int (d->numa_nodes));
  json_object_object_add (a, "package", attr_int (d->package));
  json_object_object_add (a, "cores", attr_int (d->cores));
  json_object_object_add (a, "threadsPerCore", attr_int (d->threads_per_core));
  json_object_object_add (a, "cpuKind", attr_string (d->cpu_kind));
  json_object_object_add (a, "isolatable", attr_bool (d->isolatable));
  json_object_object_add (a, "usableCpus", attr_int (d->usable));
  json_object_object_add (a, "heldOutside", attr_int (d->usable - d->capacity));
  return a;
}

static json_object *
device_json (const struct cp_dra_model *m, const struct cp_dra_device *d)
{
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "name", json_object_new_string (d->name));
  json_object_object_add (o, "attributes", attributes_json (m, d));
  json_object_object_add (o, "capacity", capacity_json (d->capacity));
  json_object_object_add (o, "allowMultipleAllocations", json_object_new_boolean (true));
  return o;
}

static json_object *
slice_json (const struct cp_dra_model *m, const char *node, int64_t generation, size_t slice, size_t n_slices)
{
  json_object *meta = json_object_new_object ();
  char *name = cp_xasprintf ("%s-%s-%zu", node, CP_DRA_DRIVER, slice);
  json_object_object_add (meta, "name", json_object_new_string (name));
  free (name);
  json_object *pool = json_object_new_object ();
  json_object_object_add (pool, "name", json_object_new_string (node));
  json_object_object_add (pool, "generation", json_object_new_int64 (generation));
  json_object_object_add (pool, "resourceSliceCount", json_object_new_int64 ((int64_t) n_slices));
  json_object *devices = json_object_new_array ();
  size_t first = slice * CP_DRA_MAX_DEVICES_PER_SLICE;
  for (size_t i = first; i < m->n_devices && i < first + CP_DRA_MAX_DEVICES_PER_SLICE; i++)
    json_object_array_add (devices, device_json (m, &m->devices[i]));
  json_object *spec = json_object_new_object ();
  json_object_object_add (spec, "driver", json_object_new_string (CP_DRA_DRIVER));
  json_object_object_add (spec, "pool", pool);
  json_object_object_add (spec, "nodeName", json_object_new_string (node));
  json_object_object_add (spec, "devices", devices);
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "apiVersion", json_object_new_string ("resource.k8s.io/v1"));
  json_object_object_add (o, "kind", json_object_new_string ("ResourceSlice"));
  json_object_object_add (o, "metadata", meta);
  json_object_object_add (o, "spec", spec);
  return o;
}

int
cp_dra_slices_json (const struct cp_dra_model *m, const char *node, int64_t generation, json_object **out,
                    cp_error_t *err)
{
  if (cp_dra_check_node_name ("node name", node, err) < 0)
    return -1;
  if (generation < 1)
    return cp_fail_input (err, "pool generation %" PRId64 ": expected 1 or more", generation);
  size_t n_slices = m->n_devices ? (m->n_devices + CP_DRA_MAX_DEVICES_PER_SLICE - 1) / CP_DRA_MAX_DEVICES_PER_SLICE
                                 : 1;
  /* "<node>-cachepin.io-<i>" must itself be a name the API takes. */
  size_t suffix = strlen (CP_DRA_DRIVER) + 2 + (size_t) snprintf (NULL, 0, "%zu", n_slices - 1);
  if (strlen (node) + suffix > CP_DRA_MAX_NODE_NAME)
    return cp_fail_input (err, "node name `%.20s...`: %zu characters, too long to name its slices after (at most %zu)",
                          node, strlen (node), CP_DRA_MAX_NODE_NAME - suffix);
  json_object *slices = json_object_new_array ();
  for (size_t s = 0; s < n_slices; s++)
    json_object_array_add (slices, slice_json (m, node, generation, s, n_slices));
  *out = slices;
  return 0;
}
