#define _GNU_SOURCE
#include "topo.h"
#include "bitmap.h"
#include "util.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- loading --------------------------------------------------------------- */

/* What the model does not read is not built: the L1 and instruction caches (on a
   sysfs tree, hwloc then skips reading their files, half of the cache files on
   most machines), the NUMA distances and the memory attributes.  Groups stay: a
   NUMA node hangs below one where a package has several, and the model's NUMA
   level comes from where it hangs.  The model is the same either way
   (test_topo.c and test_topologies.c hold it to a full load).  The hook runs in
   the runtime's cgroup, not the container's: it sees every CPU and the caller
   decides what is allowed. */
void
cp_topo_hwloc_prepare (hwloc_topology_t t)
{
  unsigned long flags = HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED;
#ifdef HWLOC_TOPOLOGY_FLAG_NO_DISTANCES /* hwloc 2.8 */
  flags |= HWLOC_TOPOLOGY_FLAG_NO_DISTANCES | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS;
#endif
  hwloc_topology_set_flags (t, flags);
  hwloc_topology_set_type_filter (t, HWLOC_OBJ_L1CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter (t, HWLOC_TYPE_FILTER_KEEP_NONE);
}

static bool
is_regular_file (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

/* hwloc failed us: with its errno when it set one, which it does not always. */
static int
fail_hwloc (cp_error_t *err, const char *what)
{
  int e = errno;
  if (e != 0)
    return cp_fail_errno (err, e, "%s", what);
  return cp_fail_runtime (err, "%s", what);
}

/* Every way an XML file can be refused, whichever parser hwloc uses: with its
   libxml2 plugin (libhwloc-plugins) hwloc_topology_set_xml*() already fails on
   garbage, with its built-in parser only hwloc_topology_load() does.  Both are
   the file's fault, and both say so the same way. */
static int
fail_xml (cp_error_t *err, const char *path)
{
  return cp_fail_input (err, "`%s`: not a usable hwloc XML file", path);
}

/* We read the file ourselves, bounded (CP_TOPO_XML_MAX), and hand hwloc the
   buffer: a read error is then ours to report (with its errno), and the parser,
   whichever it is, only ever sees bytes.  *XML must outlive the load. */
static int
set_xml (hwloc_topology_t topology, const char *path, char **xml, cp_error_t *err)
{
  size_t len = 0;
  if (cp_io_read_at (AT_FDCWD, path, 0, path, CP_TOPO_XML_MAX, CP_IO_INPUT, xml, &len, err) < 0)
    return -1;
  /* the size hwloc wants counts the terminating NUL */
  if (hwloc_topology_set_xmlbuffer (topology, *xml, (int) len + 1) < 0)
    return fail_xml (err, path);
  return 0;
}

/* Walk a synthetic description the way hwloc's parser does (hwloc/topology-synthetic.c:
   an optional "(root attributes)", then levels "type:count" or "count", each with
   optional "(attributes)", memory children "[...]" between them; counts as strtoul
   base 0 reads them), only to bound its size before hwloc builds it.  Anything this
   walk does not follow is left to hwloc, which refuses it. */
static int
check_synthetic_size (const char *source, const char *desc, cp_error_t *err)
{
  const char *pos = desc;
  unsigned long long pus = 1;
  if (*pos == '(' && (pos = strchr (pos, ')')) == NULL)
    return 0;
  if (pos != desc)
    pos++;
  while (*pos)
    {
      while (*pos == ' ')
        pos++;
      if (*pos == '\0')
        break;
      const char *close = NULL;
      if (*pos == '[')
        {
          if ((close = strchr (pos, ']')) == NULL)
            return 0;
          pos = close + 1;
          continue;
        }
      const char *level = pos;
      if (*pos < '0' || *pos > '9')
        {
          if ((pos = strchr (pos, ':')) == NULL)
            return 0;
          pos++;
        }
      char *end = NULL;
      unsigned long long arity = strtoull (pos, &end, 0);
      if (end == pos)
        return 0;
      int level_len = (int) strcspn (level, " (");
      if (arity > CP_TOPO_SYNTHETIC_MAX_ARITY)
        return cp_fail_input (err, "`%s`: level `%.*s` has %llu objects under each parent, more than the %u a synthetic "
                              "topology may have", source, level_len, level, arity, CP_TOPO_SYNTHETIC_MAX_ARITY);
      pus *= arity; /* <= 8192 * 512: no overflow */
      if (pus > CP_TOPO_SYNTHETIC_MAX_PUS)
        return cp_fail_input (err, "`%s`: describes more than the %u PUs a synthetic topology may have", source,
                              CP_TOPO_SYNTHETIC_MAX_PUS);
      pos = end;
      if (*pos == '(')
        {
          if ((close = strchr (pos, ')')) == NULL)
            return 0;
          pos = close + 1;
        }
    }
  return 0;
}

static int
set_synthetic (hwloc_topology_t topology, const char *source, char **normalized, cp_error_t *err)
{
  const char *synthetic = source;
  if (strncmp (synthetic, "synthetic:", 10) == 0)
    synthetic += 10;
  if (hwloc_topology_set_synthetic (topology, synthetic) < 0)
    return cp_fail_input (err, "`%s` is neither \"host\", a readable XML file, nor an hwloc synthetic description",
                          source);
  /* after hwloc's own parse, which only reads the string (5000000 cores: 10 ms):
     the walk then sees only descriptions hwloc's grammar accepted */
  if (check_synthetic_size (source, synthetic, err) < 0)
    return -1;
  *normalized = cp_xasprintf ("synthetic:%s", synthetic);
  return 0;
}

int
cp_topo_load (const char *source, struct cp_topo **out, cp_error_t *err)
{
  cleanup_hwloc hwloc_topology_t topology = NULL;
  cleanup_free char *normalized = NULL;
  cleanup_free char *xml = NULL;

  errno = 0;
  if (hwloc_topology_init (&topology) < 0)
    return fail_hwloc (err, "hwloc_topology_init");
  cp_topo_hwloc_prepare (topology);

  if (source == NULL || strcmp (source, "host") == 0)
    {
      normalized = cp_xstrdup ("host");
      errno = 0;
      if (hwloc_topology_load (topology) < 0)
        return fail_hwloc (err, "hwloc could not discover this host's topology");
    }
  else if (is_regular_file (source))
    {
      if (set_xml (topology, source, &xml, err) < 0)
        return -1;
      if (hwloc_topology_load (topology) < 0)
        return fail_xml (err, source);
      normalized = cp_xstrdup (source);
    }
  else
    {
      if (set_synthetic (topology, source, &normalized, err) < 0)
        return -1;
      if (hwloc_topology_load (topology) < 0)
        return cp_fail_input (err, "`%s`: hwloc could not build this synthetic topology", source);
    }
  return cp_topo_from_hwloc (topology, normalized, out, err);
}

/* ---- cores ------------------------------------------------------------------ */

struct core_sort
{
  unsigned first_logical;
  struct cp_core core;
};

static int
cmp_core_sort (const void *a, const void *b)
{
  const struct core_sort *x = a, *y = b;
  return (x->first_logical > y->first_logical) - (x->first_logical < y->first_logical);
}

/* CORES has room for every Core and PU object (build_cores). */
static void
add_core (struct core_sort *cores, unsigned *n, const unsigned *pu_logical, hwloc_const_bitmap_t pus)
{
  int first = hwloc_bitmap_first (pus);
  struct core_sort *c = &cores[(*n)++];
  memset (c, 0, sizeof *c);
  c->first_logical = pu_logical[first];
  c->core.pus = cp_bitmap_dup (pus);
  c->core.first_pu = (unsigned) first;
  c->core.kind = -1;
}

/* Cores in topology order.  A PU that hwloc shows without a Core object (some
   synthetic or partial topologies) is a core of its own.  Runs after pu_limit is
   known; every lookup by CPU number goes through a table built once (a search per
   PU, hwloc_get_pu_obj_by_os_index(), made this quadratic in the PUs). */
static void
build_cores (struct cp_topo *topo, hwloc_topology_t t)
{
  int n_objects = hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_CORE) + hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_PU);
  struct core_sort *cores = cp_xcalloc ((size_t) (n_objects > 0 ? n_objects : 1), sizeof *cores);
  unsigned n = 0;
  cleanup_bitmap hwloc_bitmap_t pus = cp_bitmap_new ();

  int last = hwloc_bitmap_last (topo->online);
  topo->pu_limit = last < 0 ? 0 : (unsigned) last + 1;
  cleanup_free unsigned *pu_logical = cp_xcalloc (topo->pu_limit, sizeof *pu_logical);
  for (unsigned i = 0; i < topo->pu_limit; i++)
    pu_logical[i] = i;
  for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type (t, HWLOC_OBJ_PU, pu));)
    if (pu->os_index < topo->pu_limit)
      pu_logical[pu->os_index] = pu->logical_index;

  for (hwloc_obj_t core = NULL; (core = hwloc_get_next_obj_by_type (t, HWLOC_OBJ_CORE, core));)
    {
      hwloc_bitmap_and (pus, core->cpuset, topo->online);
      if (!hwloc_bitmap_iszero (pus))
        add_core (cores, &n, pu_logical, pus);
    }
  for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type (t, HWLOC_OBJ_PU, pu));)
    if (hwloc_get_ancestor_obj_by_type (t, HWLOC_OBJ_CORE, pu) == NULL
        && hwloc_bitmap_isset (topo->online, pu->os_index))
      {
        hwloc_bitmap_only (pus, pu->os_index);
        add_core (cores, &n, pu_logical, pus);
      }
  qsort (cores, n, sizeof *cores, cmp_core_sort);

  topo->cores = cp_xcalloc (n, sizeof *topo->cores);
  topo->n_cores = n;
  for (unsigned i = 0; i < n; i++)
    topo->cores[i] = cores[i].core;
  free (cores);

  topo->core_of_pu = cp_xcalloc (topo->pu_limit, sizeof *topo->core_of_pu);
  for (unsigned i = 0; i < topo->pu_limit; i++)
    topo->core_of_pu[i] = -1;
  for (unsigned c = 0; c < n; c++)
    {
      int pu;
      hwloc_bitmap_foreach_begin (pu, topo->cores[c].pus)
        topo->core_of_pu[pu] = (int) c;
      hwloc_bitmap_foreach_end ();
    }
}

/* Hybrid parts: hwloc ranks CPU kinds by efficiency, 0 the most energy-efficient
   (slowest); we keep the rank so placement can prefer the fastest cores. */
static void
assign_kinds (struct cp_topo *topo, hwloc_topology_t t)
{
  int nr = hwloc_cpukinds_get_nr (t, 0);
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  for (int k = 0; k < nr; k++)
    {
      int efficiency = -1;
      if (hwloc_cpukinds_get_info (t, (unsigned) k, set, &efficiency, NULL, NULL, 0) < 0)
        continue;
      for (unsigned c = 0; c < topo->n_cores; c++)
        if (hwloc_bitmap_isset (set, topo->cores[c].first_pu))
          topo->cores[c].kind = efficiency;
    }
}

/* ---- domains ---------------------------------------------------------------- */

struct set_list
{
  hwloc_bitmap_t *sets;
  bool *fallback;
  unsigned n;
};

static void
set_list_add (struct set_list *l, hwloc_const_bitmap_t set, bool fallback)
{
  l->sets = cp_xrealloc (l->sets, (l->n + 1) * sizeof *l->sets);
  l->fallback = cp_xrealloc (l->fallback, (l->n + 1) * sizeof *l->fallback);
  l->sets[l->n] = cp_bitmap_dup (set);
  l->fallback[l->n] = fallback;
  l->n++;
}

static void
set_list_clear (struct set_list *l)
{
  for (unsigned i = 0; i < l->n; i++)
    hwloc_bitmap_free (l->sets[i]);
  free (l->sets);
  free (l->fallback);
}

struct sized_set
{
  int weight;
  unsigned pos;
  hwloc_bitmap_t set;
};

static int
cmp_sized_set (const void *a, const void *b)
{
  const struct sized_set *x = a, *y = b;
  if (x->weight != y->weight)
    return x->weight < y->weight ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The cpusets of every object of TYPE, online part only, smallest first so that
   partition_level() keeps the finest grouping when objects nest. */
static void
collect_objects (hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_bitmap_t online,
                 struct set_list *out)
{
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type (t, type, o));)
    {
      if (type == HWLOC_OBJ_NUMANODE && o->subtype && strcmp (o->subtype, "GPUMemory") == 0)
        continue;
      hwloc_bitmap_and (set, o->cpuset, online);
      if (!hwloc_bitmap_iszero (set))
        set_list_add (out, set, false);
    }
  /* stable: equal sizes keep topology order (an insertion sort did this in
     quadratic time, which a file of many objects could make slow) */
  cleanup_free struct sized_set *sized = cp_xcalloc (out->n ? out->n : 1, sizeof *sized);
  for (unsigned i = 0; i < out->n; i++)
    sized[i] = (struct sized_set) { hwloc_bitmap_weight (out->sets[i]), i, out->sets[i] };
  qsort (sized, out->n, sizeof *sized, cmp_sized_set);
  for (unsigned i = 0; i < out->n; i++)
    out->sets[i] = sized[i].set;
}

/* Turn candidate sets into a partition of the online CPUs: overlapping parts go
   to the earlier (smaller) set, duplicates vanish (two NUMA nodes with the same
   CPUs, such as DDR and HBM, are one domain), and CPUs no candidate covers are
   grouped by the enclosing domain of the PARENT level. */
static void
partition_level (struct cp_topo *topo, const struct set_list *candidates, enum cp_level parent,
                 struct set_list *out)
{
  cleanup_bitmap hwloc_bitmap_t covered = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t part = cp_bitmap_new ();
  for (unsigned i = 0; i < candidates->n; i++)
    {
      hwloc_bitmap_andnot (part, candidates->sets[i], covered);
      if (hwloc_bitmap_iszero (part))
        continue;
      set_list_add (out, part, false);
      hwloc_bitmap_or (covered, covered, part);
    }
  if (parent == CP_LEVEL_COUNT)
    return;
  for (unsigned d = 0; d < topo->n_domains[parent]; d++)
    {
      hwloc_bitmap_andnot (part, topo->domains[parent][d].cpus, covered);
      if (!hwloc_bitmap_iszero (part))
        set_list_add (out, part, true);
    }
}

/* Install SETS as the domains of LEVEL, numbered in topology (core) order. */
static void
install_level (struct cp_topo *topo, enum cp_level level, const struct set_list *sets)
{
  int *order = cp_xcalloc (sets->n, sizeof *order);
  for (unsigned i = 0; i < sets->n; i++)
    order[i] = -1;
  struct cp_domain *domains = cp_xcalloc (sets->n, sizeof *domains);
  unsigned next = 0;

  /* which set each CPU is in, built once: the sets are a partition */
  cleanup_free unsigned *set_of = cp_xcalloc (topo->pu_limit, sizeof *set_of);
  for (unsigned i = 0; i < topo->pu_limit; i++)
    set_of[i] = sets->n;
  for (unsigned s = 0; s < sets->n; s++)
    {
      int pu;
      hwloc_bitmap_foreach_begin (pu, sets->sets[s])
        if ((unsigned) pu < topo->pu_limit && set_of[pu] == sets->n)
          set_of[pu] = s;
      hwloc_bitmap_foreach_end ();
    }

  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      struct cp_core *core = &topo->cores[c];
      unsigned s = set_of[core->first_pu];
      if (s == sets->n)
        abort (); /* partition_level() covers every online CPU */
      if (order[s] < 0)
        {
          order[s] = (int) next;
          struct cp_domain *d = &domains[next++];
          d->level = level;
          d->index = (unsigned) order[s];
          d->cpus = cp_bitmap_dup (sets->sets[s]);
          d->fallback = sets->fallback[s];
        }
      struct cp_domain *d = &domains[order[s]];
      d->cores = cp_xrealloc (d->cores, (d->n_cores + 1) * sizeof *d->cores);
      d->cores[d->n_cores++] = c;
      core->domain[level] = d->index;
    }
  free (order);
  topo->domains[level] = domains;
  topo->n_domains[level] = next;
}

static void
build_level (struct cp_topo *topo, hwloc_topology_t t, enum cp_level level, hwloc_obj_type_t type,
             enum cp_level parent)
{
  struct set_list candidates = { 0 }, parts = { 0 };
  if (level == CP_LEVEL_MACHINE)
    set_list_add (&candidates, topo->online, false);
  else if (type != HWLOC_OBJ_TYPE_MAX)
    collect_objects (t, type, topo->online, &candidates);
  partition_level (topo, &candidates, parent, &parts);
  install_level (topo, level, &parts);
  set_list_clear (&candidates);
  set_list_clear (&parts);
}

/* The LLC is the deepest CPU-side cache level present, L3 normally, L2 where the
   machine has no L3.  L4 (eDRAM, memory-side caches) is not what threads share
   their working set in, so it is not considered. */
static void
build_domains (struct cp_topo *topo, hwloc_topology_t t)
{
  hwloc_obj_type_t llc_type = HWLOC_OBJ_TYPE_MAX;
  if (hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_L3CACHE) > 0)
    {
      llc_type = HWLOC_OBJ_L3CACHE;
      topo->llc_depth = 3;
    }
  else if (hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_L2CACHE) > 0)
    {
      llc_type = HWLOC_OBJ_L2CACHE;
      topo->llc_depth = 2;
    }
  bool have_l2 = hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_L2CACHE) > 0;
  topo->l2_depth = have_l2 ? 2 : 0;

  /* Largest first: each level falls back on the one above it. */
  build_level (topo, t, CP_LEVEL_MACHINE, HWLOC_OBJ_TYPE_MAX, CP_LEVEL_COUNT);
  build_level (topo, t, CP_LEVEL_PACKAGE, HWLOC_OBJ_PACKAGE, CP_LEVEL_MACHINE);
  build_level (topo, t, CP_LEVEL_NUMA, HWLOC_OBJ_NUMANODE, CP_LEVEL_PACKAGE);
  build_level (topo, t, CP_LEVEL_LLC, llc_type, CP_LEVEL_PACKAGE);
  build_level (topo, t, CP_LEVEL_L2, have_l2 ? HWLOC_OBJ_L2CACHE : HWLOC_OBJ_TYPE_MAX, CP_LEVEL_LLC);
}

static void
build_nodes (struct cp_topo *topo, hwloc_topology_t t)
{
  unsigned n = (unsigned) hwloc_get_nbobjs_by_type (t, HWLOC_OBJ_NUMANODE);
  topo->nodes_info = cp_xcalloc (n, sizeof *topo->nodes_info);
  unsigned i = 0;
  for (hwloc_obj_t o = NULL; i < n && (o = hwloc_get_next_obj_by_type (t, HWLOC_OBJ_NUMANODE, o)); i++)
    {
      struct cp_node *node = &topo->nodes_info[i];
      node->os_index = o->os_index;
      node->cpus = cp_bitmap_new ();
      hwloc_bitmap_and (node->cpus, o->cpuset, topo->online);
      node->cpu_memory = !(o->subtype && strcmp (o->subtype, "GPUMemory") == 0);
    }
  topo->n_nodes = i;
}

int
cp_topo_from_hwloc (hwloc_topology_t t, const char *source, struct cp_topo **out, cp_error_t *err)
{
  cleanup_topo struct cp_topo *topo = cp_xmalloc0 (sizeof *topo);
  topo->source = cp_xstrdup (source ? source : "host");
  topo->online = cp_bitmap_dup (hwloc_topology_get_topology_cpuset (t));
  topo->allowed = cp_bitmap_new ();
  hwloc_bitmap_and (topo->allowed, hwloc_topology_get_allowed_cpuset (t), topo->online);
  topo->nodes = cp_bitmap_dup (hwloc_topology_get_topology_nodeset (t));
  topo->allowed_nodes = cp_bitmap_new ();
  hwloc_bitmap_and (topo->allowed_nodes, hwloc_topology_get_allowed_nodeset (t), topo->nodes);

  if (hwloc_bitmap_iszero (topo->online) || hwloc_bitmap_weight (topo->online) < 0)
    return cp_fail_input (err, "topology `%s`: no online CPUs", source);
  if (hwloc_bitmap_last (topo->online) > 65535)
    return cp_fail_input (err, "topology `%s`: CPU numbers above 65535", source);

  build_cores (topo, t);
  assign_kinds (topo, t);
  build_domains (topo, t);
  build_nodes (topo, t);
  *out = cp_steal_pointer (&topo);
  return 0;
}

struct cp_topo *
cp_topo_ref (struct cp_topo *topo)
{
  topo->refs++;
  return topo;
}

void
cp_topo_free (struct cp_topo *topo)
{
  if (topo == NULL)
    return;
  if (topo->refs > 0)
    {
      topo->refs--;
      return;
    }
  for (unsigned c = 0; c < topo->n_cores; c++)
    hwloc_bitmap_free (topo->cores[c].pus);
  free (topo->cores);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      for (unsigned d = 0; d < topo->n_domains[l]; d++)
        {
          hwloc_bitmap_free (topo->domains[l][d].cpus);
          free (topo->domains[l][d].cores);
        }
      free (topo->domains[l]);
    }
  for (unsigned i = 0; i < topo->n_nodes; i++)
    hwloc_bitmap_free (topo->nodes_info[i].cpus);
  free (topo->nodes_info);
  free (topo->core_of_pu);
  hwloc_bitmap_free (topo->online);
  hwloc_bitmap_free (topo->allowed);
  hwloc_bitmap_free (topo->nodes);
  hwloc_bitmap_free (topo->allowed_nodes);
  free (topo->source);
  free (topo);
}

const struct cp_core *
cp_topo_core_of (const struct cp_topo *topo, unsigned cpu)
{
  if (cpu >= topo->pu_limit || topo->core_of_pu[cpu] < 0)
    return NULL;
  return &topo->cores[topo->core_of_pu[cpu]];
}

int
cp_core_pe0 (const struct cp_core *core, hwloc_const_bitmap_t allowed)
{
  int pu;
  hwloc_bitmap_foreach_begin (pu, core->pus)
    if (hwloc_bitmap_isset (allowed, (unsigned) pu))
      return pu;
  hwloc_bitmap_foreach_end ();
  return -1;
}

const char *
cp_topo_level_label (const struct cp_topo *topo, enum cp_level level)
{
  if (level == CP_LEVEL_LLC)
    return topo->llc_depth == 3 ? "L3" : topo->llc_depth == 2 ? "L2" : "LLC";
  return cp_level_label (level);
}
