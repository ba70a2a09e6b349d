#include "isolate.h"

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* NODE's first core, the one the host keeps: the core of its lowest allowed online
   CPU; NULL when it has none. */
static const struct cp_core *
kept_core (const struct cp_topo *topo, const struct cp_node *node)
{
  cleanup_bitmap hwloc_bitmap_t usable = cp_bitmap_dup (node->cpus);
  hwloc_bitmap_and (usable, usable, topo->allowed);
  hwloc_bitmap_and (usable, usable, topo->online);
  int cpu = hwloc_bitmap_first (usable);
  return cpu < 0 ? NULL : cp_topo_core_of (topo, (unsigned) cpu);
}

void
cp_isolate_kept (const struct cp_topo *topo, hwloc_bitmap_t out)
{
  hwloc_bitmap_zero (out);
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      const struct cp_core *core = kept_core (topo, &topo->nodes_info[i]);
      if (core)
        hwloc_bitmap_or (out, out, core->pus);
    }
}

int
cp_isolate_check (const struct cp_topo *topo, hwloc_const_bitmap_t cpus, cp_error_t *err)
{
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      const struct cp_node *node = &topo->nodes_info[i];
      const struct cp_core *core = kept_core (topo, node);
      if (core == NULL || !hwloc_bitmap_intersects (core->pus, cpus))
        continue;
      cleanup_bitmap hwloc_bitmap_t hit = cp_bitmap_dup (core->pus);
      hwloc_bitmap_and (hit, hit, cpus);
      cleanup_free char *list = cp_cpulist_format (cpus);
      return cp_fail_unsatisfiable (err,
                                    "cachepin.io/isolate: CPUs %s include CPU %d, in the first core of NUMA node %u, "
                                    "which the host keeps (never isolated)",
                                    list, hwloc_bitmap_first (hit), node->os_index);
    }
  return 0;
}
