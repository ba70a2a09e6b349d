/* cachepin: the topology model placement works on.
 *
 * Built once from an hwloc topology and reduced to plain data: cores with their
 * hardware threads (PUs, by Linux CPU number), and for each level (L2, LLC, NUMA,
 * package, machine) a partition of the online CPUs into domains.  Nothing here
 * keeps the hwloc topology alive, so a model can later be cached or serialized.
 *
 * Siblings always come from hwloc's Core objects, never from CPU-number arithmetic:
 * EPYC numbers a core's threads N and N+ncores, Skylake interleaves packages, POWER
 * numbers them adjacently. */
#ifndef CP_TOPO_H
#define CP_TOPO_H

#include <hwloc.h>
#include <stdbool.h>

#include "error.h"
#include "request.h"

struct cp_core
{
  hwloc_bitmap_t pus;                /* the core's online PUs (allowed or not) */
  unsigned first_pu;                 /* lowest online PU */
  int kind;                          /* hwloc cpukind efficiency rank, higher = faster; -1 unknown */
  unsigned domain[CP_LEVEL_COUNT];   /* position in cp_topo.domains[level] */
};

struct cp_domain
{
  enum cp_level level;
  unsigned index;       /* position in cp_topo.domains[level], in topology order */
  hwloc_bitmap_t cpus;  /* online PUs */
  unsigned *cores;      /* positions in cp_topo.cores, in topology order */
  unsigned n_cores;
  bool fallback;        /* no hwloc object of this level covers these CPUs: they
                           were grouped by the next larger level instead */
};

struct cp_node
{
  unsigned os_index;     /* the Linux NUMA node number */
  hwloc_bitmap_t cpus;   /* its local online CPUs (may be empty) */
  bool cpu_memory;       /* false for memory that is not the CPUs' own (GPU memory) */
};

struct cp_topo
{
  char *source;             /* "host", the XML path, or "synthetic:<description>" */
  hwloc_bitmap_t online;    /* every PU the topology knows as online */
  hwloc_bitmap_t allowed;   /* PUs the source says may be used */
  hwloc_bitmap_t nodes;     /* every NUMA node */
  hwloc_bitmap_t allowed_nodes;
  struct cp_core *cores;    /* topology order */
  unsigned n_cores;
  struct cp_domain *domains[CP_LEVEL_COUNT];
  unsigned n_domains[CP_LEVEL_COUNT];
  struct cp_node *nodes_info;
  unsigned n_nodes;
  unsigned llc_depth;       /* 3 (L3), 2 (L2), or 0 when the source has no cache data */
  unsigned l2_depth;        /* 2, or 0 when the source has no L2 */
  int *core_of_pu;          /* Linux CPU number -> position in cores, -1 if none */
  unsigned pu_limit;        /* size of core_of_pu: highest online CPU number + 1 */
  unsigned refs;            /* holders besides the first (cp_topo_ref()); cp_topo_free()
                               frees the model when the last one lets go */
};

/* Bounds on what a topology source may ask hwloc to build, checked before it does.
 * hwloc builds a synthetic level in time that grows with its PUs times the level's
 * width ("pu:8192", 8192 PUs under one parent, takes hwloc 7 to 10 s; the same
 * 8192 PUs as "pack:16 l3cache:8 core:32 pu:2" take 0.3 s): 8192 PUs is Linux's
 * largest NR_CPUS (CPU numbers up to CP_CPULIST_MAX), and no real machine has more
 * than a few hundred objects under one parent (288 cores in a package).  An XML file
 * is read into memory first: 32 MiB is about five times the export of an 8192-PU
 * machine with its caches (a 384-PU Zen 4 is 310 KiB). */
#define CP_TOPO_SYNTHETIC_MAX_PUS 8192u
#define CP_TOPO_SYNTHETIC_MAX_ARITY 512u
#define CP_TOPO_XML_MAX ((size_t) 32 << 20)

/* Where a topology comes from: "host" (or NULL), an existing XML file, or an hwloc
 * synthetic description such as "package:2 l3cache:4 core:4 pu:2(indexes=core)".
 * Error kinds: a host hwloc cannot discover is a runtime error (errno kept); a file
 * we cannot read is what cp_io_read_at() says (too big: input); anything wrong with
 * the source's content, whichever XML parser hwloc has, is CP_ERR_INPUT with one
 * message per cause ("`FILE`: not a usable hwloc XML file", "`DESC` is neither ...",
 * the size bounds above). */
int cp_topo_load (const char *source, struct cp_topo **out, cp_error_t *err);

/* Flags and type filters for an initialized, not yet loaded hwloc topology that
 * cp_topo_from_hwloc() will read: only what the model is built from is built
 * (cp_topo_load() and the sysfs discovery use it; the model does not depend on it). */
void cp_topo_hwloc_prepare (hwloc_topology_t topology);

/* Build the model from a loaded hwloc topology; SOURCE is only recorded. */
int cp_topo_from_hwloc (hwloc_topology_t topology, const char *source, struct cp_topo **out,
                        cp_error_t *err);

/* One more holder of TOPO (a long-running process keeps the model across calls
 * while each call frees its own: hook/state/topocache.h).  Returns TOPO. */
struct cp_topo *cp_topo_ref (struct cp_topo *topo);

/* Let go of TOPO: freed when no other holder is left.  NULL is fine. */
void cp_topo_free (struct cp_topo *topo);

#define cleanup_topo __attribute__ ((cleanup (cp_topo_freep)))
static inline void
cp_topo_freep (struct cp_topo **topo)
{
  cp_topo_free (*topo);
}

/* An hwloc topology being discovered (cp_topo_load(), the topology cache's sysfs
 * discovery): destroyed unless handed off (NULL). */
#define cleanup_hwloc __attribute__ ((cleanup (cp_hwloc_topology_destroyp)))
static inline void
cp_hwloc_topology_destroyp (hwloc_topology_t *t)
{
  if (*t)
    hwloc_topology_destroy (*t);
}

/* The core a CPU belongs to, or NULL when the CPU is not online. */
const struct cp_core *cp_topo_core_of (const struct cp_topo *topo, unsigned cpu);

/* The PE0 of a core among ALLOWED: its lowest-numbered allowed PU, or -1. */
int cp_core_pe0 (const struct cp_core *core, hwloc_const_bitmap_t allowed);

/* "L3", "L2", "NUMA", "package", "machine": how a domain of LEVEL is named here. */
const char *cp_topo_level_label (const struct cp_topo *topo, enum cp_level level);

#endif
