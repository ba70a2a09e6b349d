/* cachepin: the devices a node publishes for DRA (dra_model.h): one per cache
 * domain of the host's align level, with what a selector may ask of it. */
#define _GNU_SOURCE
#include "dra_model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "isolate.h"
#include "util.h"

/* The level devices are made of: align none places on the allowed CPUs as one
   domain, which is no device a claim can tell from another: the LLCs instead, as
   the map of such a plan shows them. */
static enum cp_level
device_level (enum cp_level level)
{
  return level == CP_LEVEL_MACHINE ? CP_LEVEL_LLC : level;
}

/* "l3", "l2", "llc", "numa", "package": the level's label, lower-cased, so that
   a name is a DNS label. */
static void
device_name (const struct cp_topo *topo, enum cp_level level, unsigned index, char *out, size_t size)
{
  char label[16];
  snprintf (label, sizeof label, "%s", cp_topo_level_label (topo, level));
  for (char *c = label; *c; c++)
    *c = (char) tolower ((unsigned char) *c);
  snprintf (out, size, "%s-%u", label, index);
}

/* The range of the topology's core kinds: a part is hybrid when they differ. */
static void
kind_range (const struct cp_topo *topo, int *lo, int *hi)
{
  *lo = *hi = -1;
  for (unsigned i = 0; i < topo->n_cores; i++)
    {
      int k = topo->cores[i].kind;
      if (k < 0)
        continue;
      if (*lo < 0 || k < *lo)
        *lo = k;
      if (k > *hi)
        *hi = k;
    }
}

/* Cores, threads per core, kind and package of D's cores that have a usable CPU;
   LO and HI: the topology's range of core kinds (kind_range()). */
static void
describe_cores (const struct cp_topo *topo, int lo, int hi, const struct cp_domain *d, struct cp_dra_device *dev)
{
  bool fast = false, slow = false;
  bool first = true;
  for (unsigned i = 0; i < d->n_cores; i++)
    {
      const struct cp_core *core = &topo->cores[d->cores[i]];
      if (!hwloc_bitmap_intersects (core->pus, dev->cpus))
        continue;
      if (first)
        dev->package = core->domain[CP_LEVEL_PACKAGE];
      first = false;
      dev->cores++;
      unsigned threads = (unsigned) hwloc_bitmap_weight (core->pus);
      if (threads > dev->threads_per_core)
        dev->threads_per_core = threads;
      if (core->kind == hi)
        fast = true;
      else
        slow = true;
    }
  if (lo == hi)
    dev->cpu_kind = "uniform";
  else
    dev->cpu_kind = fast && slow ? "mixed" : fast ? "performance" : "efficiency";
}

/* The NUMA nodes local to DEV's CPUs: the lowest, and how many. */
static void
describe_nodes (const struct cp_topo *topo, struct cp_dra_device *dev)
{
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      const struct cp_node *node = &topo->nodes_info[i];
      if (!node->cpu_memory || !hwloc_bitmap_intersects (node->cpus, dev->cpus))
        continue;
      if (dev->numa_nodes == 0 || node->os_index < dev->numa_node)
        dev->numa_node = node->os_index;
      dev->numa_nodes++;
    }
}

/* The LLC domain that holds all of DEV's CPUs, or -1. */
static int
llc_of (const struct cp_topo *topo, const struct cp_dra_device *dev)
{
  for (unsigned i = 0; i < topo->n_domains[CP_LEVEL_LLC]; i++)
    if (hwloc_bitmap_isincluded (dev->cpus, topo->domains[CP_LEVEL_LLC][i].cpus))
      return (int) i;
  return -1;
}

static void
device_clear (struct cp_dra_device *dev)
{
  hwloc_bitmap_free (dev->cpus);
  hwloc_bitmap_free (dev->held);
}

/* DEV for domain D: false (DEV cleared) when D has no usable CPU. */
/* What every device is made with: the usable CPUs, the cores the host keeps from
   isolation, the range of core kinds. */
struct make_ctx
{
  const struct cp_dra_inputs *in;
  hwloc_bitmap_t usable, kept;
  int kind_lo, kind_hi;
};

static bool
device_make (const struct make_ctx *c, const struct cp_domain *d, struct cp_dra_device *dev)
{
  const struct cp_dra_inputs *in = c->in;
  hwloc_const_bitmap_t usable = c->usable, kept = c->kept;
  const struct cp_topo *topo = in->topo;
  *dev = (struct cp_dra_device) { .level = d->level, .index = d->index };
  dev->cpus = cp_bitmap_dup (d->cpus);
  hwloc_bitmap_and (dev->cpus, dev->cpus, usable);
  dev->usable = (unsigned) hwloc_bitmap_weight (dev->cpus);
  if (dev->usable == 0)
    {
      device_clear (dev);
      return false;
    }
  dev->held = cp_bitmap_new ();
  if (in->held)
    hwloc_bitmap_and (dev->held, dev->cpus, in->held);
  dev->capacity = dev->usable - (unsigned) hwloc_bitmap_weight (dev->held);
  device_name (topo, d->level, d->index, dev->name, sizeof dev->name);
  dev->llc_index = llc_of (topo, dev);
  describe_cores (topo, c->kind_lo, c->kind_hi, d, dev);
  describe_nodes (topo, dev);
  /* Isolatable: a CPU outside the cores the host keeps (the isolation rule's
     own answer for a set of CPUs, cp_isolate_check(), is then yes). */
  dev->isolatable = in->isolate_allowed && !hwloc_bitmap_isincluded (dev->cpus, kept);
  return true;
}

int
cp_dra_model_build (const struct cp_dra_inputs *in, struct cp_dra_model **out, cp_error_t *err)
{
  const struct cp_topo *topo = in->topo;
  enum cp_level level = device_level (in->level);
  unsigned n = topo->n_domains[level];
  if (n == 0)
    return cp_fail_input (err, "align: the topology has no %s domains", cp_topo_level_label (topo, level));
  cleanup_bitmap hwloc_bitmap_t usable = cp_bitmap_dup (in->usable ? in->usable : topo->allowed);
  hwloc_bitmap_and (usable, usable, topo->online);
  hwloc_bitmap_and (usable, usable, topo->allowed);
  cleanup_bitmap hwloc_bitmap_t kept = cp_bitmap_new ();
  cp_isolate_kept (topo, kept);
  struct make_ctx ctx = { .in = in, .usable = usable, .kept = kept };
  kind_range (topo, &ctx.kind_lo, &ctx.kind_hi);

  struct cp_dra_model *m = cp_xmalloc0 (sizeof *m);
  m->level = level;
  m->llc_is_l3 = topo->llc_depth == 3;
  m->devices = cp_xcalloc (n, sizeof *m->devices);
  for (unsigned i = 0; i < n; i++)
    {
      struct cp_dra_device *dev = &m->devices[m->n_devices];
      if (!device_make (&ctx, &topo->domains[level][i], dev))
        continue;
      if (dev->capacity == 0)
        {
          m->hidden++;
          device_clear (dev);
          continue;
        }
      m->n_devices++;
    }
  *out = m;
  return 0;
}

void
cp_dra_model_free (struct cp_dra_model *m)
{
  if (m == NULL)
    return;
  for (size_t i = 0; i < m->n_devices; i++)
    device_clear (&m->devices[i]);
  free (m->devices);
  free (m);
}
