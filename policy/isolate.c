#include "isolate.h"

#include <stdbool.h>

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* Does NODE_CPUS hold a core of TOPO none of whose PUs is in ISOLATED? */
static bool
keeps_a_core (const struct cp_topo *topo, hwloc_const_bitmap_t node_cpus, hwloc_const_bitmap_t isolated)
{
  for (unsigned i = 0; i < topo->n_cores; i++)
    {
      hwloc_const_bitmap_t pus = topo->cores[i].pus;
      if (hwloc_bitmap_intersects (pus, node_cpus) && !hwloc_bitmap_intersects (pus, isolated))
        return true;
    }
  return false;
}

int
cp_isolate_check (const struct cp_topo *topo, hwloc_const_bitmap_t already_isolated, hwloc_const_bitmap_t cpus,
                  cp_error_t *err)
{
  cleanup_bitmap hwloc_bitmap_t after = cp_bitmap_dup (cpus);
  if (already_isolated)
    hwloc_bitmap_or (after, after, already_isolated);
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      const struct cp_node *node = &topo->nodes_info[i];
      if (!hwloc_bitmap_intersects (node->cpus, topo->allowed) || !hwloc_bitmap_intersects (node->cpus, cpus))
        continue;
      if (!keeps_a_core (topo, node->cpus, after))
        {
          cleanup_free char *list = cp_cpulist_format (cpus);
          return cp_fail_unsatisfiable (err,
                                        "cachepin.io/isolate: CPUs %s would leave NUMA node %u no core outside "
                                        "isolated partitions (the host keeps one core per node)",
                                        list, node->os_index);
        }
    }
  return 0;
}
