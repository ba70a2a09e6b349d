/* cachepin: what a node publishes to Kubernetes' scheduler (Dynamic Resource
 * Allocation, resource.k8s.io/v1): one device per cache domain, and its CPUs as a
 * consumable capacity.
 *
 * The scheduler's structured allocator keeps count of a device's capacity itself:
 * every claim allocated on it consumes what it asked.  What it cannot see are the
 * CPUs held on the node outside DRA (the hook, `apply`, NRI pods without a claim):
 * those are taken out of the capacity published here, and the slice is published
 * again when they change (docs/dra.md, "What the capacity means").  Pure: a
 * topology model and CPU sets in, a model and its JSON out. */
#ifndef CP_DRA_MODEL_H
#define CP_DRA_MODEL_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "request.h"
#include "topo.h"

/* The driver's name: a DNS subdomain the project owns, as DRA asks of a driver
   (at most 63 characters); the domain of the devices' attributes and capacity. */
#define CP_DRA_DRIVER "cachepin.io"
/* The consumable capacity: a device's usable CPUs less those held outside DRA. */
#define CP_DRA_CAPACITY "cpus"
/* resource.k8s.io/v1 limits this code relies on (k8s.io/api/resource/v1/types.go). */
#define CP_DRA_MAX_DEVICES_PER_SLICE 128u /* ResourceSliceMaxDevices */
#define CP_DRA_MAX_NAME 63u               /* a device name: a DNS label */
#define CP_DRA_MAX_ATTRIBUTE_NAME 32u     /* DeviceMaxIDLength: a C identifier */
#define CP_DRA_MAX_ATTRIBUTES 32u         /* attributes and capacities of one device */
#define CP_DRA_MAX_STRING 64u             /* DeviceAttributeMaxValueLength */
#define CP_DRA_MAX_NODE_NAME 253u         /* a node name, the pool's name: a DNS subdomain */

/* What the model is built from. */
struct cp_dra_inputs
{
  const struct cp_topo *topo;
  enum cp_level level;           /* the host config's align: one device per domain of it
                                    (CP_LEVEL_MACHINE, align none: per LLC, as the map) */
  hwloc_const_bitmap_t usable;   /* CPUs a claim may get: online, allowed, within the host
                                    config's `cpus`, not `reserved` (NULL: the topology's
                                    allowed online CPUs) */
  hwloc_const_bitmap_t held;     /* of those, held exclusively outside DRA now (NULL: none) */
  bool isolate_allowed;          /* the host config's `isolate` is allow */
};

/* One device: a cache domain with usable CPUs. */
struct cp_dra_device
{
  char name[CP_DRA_MAX_NAME + 1]; /* "l3-<index>" (or l2-, llc-, numa-, package-): the level's
                                     label and the domain's index in topology order */
  enum cp_level level;
  unsigned index;                 /* position in cp_topo.domains[level] */
  int llc_index;                  /* the LLC domain holding it, -1 when it spans several */
  hwloc_bitmap_t cpus;            /* its usable CPUs */
  hwloc_bitmap_t held;            /* of those, held outside DRA */
  unsigned usable, capacity;      /* counts: cpus, and cpus less held */
  unsigned numa_node;             /* the lowest NUMA node local to its CPUs ... */
  unsigned numa_nodes;            /* ... and how many are (0: none, a node without memory) */
  unsigned package;               /* the package domain's index */
  unsigned cores;                 /* cores with a usable CPU */
  unsigned threads_per_core;      /* the most online threads of one of those cores */
  const char *cpu_kind;           /* "uniform" (not a hybrid part), "performance", "efficiency",
                                     or "mixed" (its cores are of both kinds) */
  bool isolatable;                /* some of its CPUs may become an isolated partition
                                     (policy/isolate.h, and the host allows it) */
};

struct cp_dra_model
{
  enum cp_level level;            /* the level devices were made of */
  bool llc_is_l3;                 /* the last-level cache is an L3 (else an L2, or unknown):
                                     only then do devices say their l3Index */
  struct cp_dra_device *devices;  /* topology order; only those with capacity */
  size_t n_devices;
  unsigned hidden;                /* domains with usable CPUs, all held outside DRA: left out
                                     until some come back (a device of no capacity would
                                     be allocated whole to a claim asking for nothing) */
};

/* Build the model of IN.  Fails (input) only on a level the topology has no
   domains of. */
int cp_dra_model_build (const struct cp_dra_inputs *in, struct cp_dra_model **out, cp_error_t *err);

void cp_dra_model_free (struct cp_dra_model *m);

#define cleanup_dra_model __attribute__ ((cleanup (cp_dra_model_freep)))
static inline void
cp_dra_model_freep (struct cp_dra_model **m)
{
  cp_dra_model_free (*m);
}

/* A Kubernetes node name (the pool's and the slices'): a DNS subdomain (RFC 1123:
   lower-case letters, digits, '-' and '.', starting and ending with a letter or
   digit) of at most 253 characters.  Input error naming WHAT ("--node"). */
int cp_dra_check_node_name (const char *what, const char *node, cp_error_t *err);

/* M as resource.k8s.io/v1 ResourceSlices of driver CP_DRA_DRIVER for NODE (checked
   as above), pool NODE at GENERATION (>= 1): one slice per CP_DRA_MAX_DEVICES_PER_SLICE
   devices, at least one (a node with no device publishes an empty pool, so that the
   scheduler sees it has none).  *OUT is a JSON array of the slices (the caller's);
   slice I is named "<NODE>-cachepin.io-<I>". */
int cp_dra_slices_json (const struct cp_dra_model *m, const char *node, int64_t generation, json_object **out,
                        cp_error_t *err);

#endif
