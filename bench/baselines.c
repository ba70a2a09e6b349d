/* bench: baselines.  See baselines.h and docs/benchmarks.md. */
#include "baselines.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int
bm_model_init (struct bm_model *m, const struct cp_topo *topo)
{
  memset (m, 0, sizeof *m);
  m->topo = topo;
  m->npu = topo->pu_limit;
  m->ncores = topo->n_cores;
  m->usable = cp_xcalloc (m->npu, sizeof *m->usable);
  m->core = cp_xcalloc (m->npu, sizeof *m->core);
  m->core_size = cp_xcalloc (m->ncores, sizeof *m->core_size);
  m->core_id = cp_xcalloc (m->ncores, sizeof *m->core_id);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      m->dom[l] = cp_xcalloc (m->npu, sizeof *m->dom[l]);
      m->ndom[l] = topo->n_domains[l];
      m->dom_size[l] = cp_xcalloc (m->ndom[l], sizeof *m->dom_size[l]);
    }
  for (unsigned c = 0; c < m->ncores; c++)
    m->core_id[c] = topo->cores[c].first_pu;
  for (unsigned pu = 0; pu < m->npu; pu++)
    {
      m->core[pu] = topo->core_of_pu[pu];
      if (m->core[pu] < 0)
        continue;
      const struct cp_core *core = &topo->cores[m->core[pu]];
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        m->dom[l][pu] = core->domain[l];
      if (!hwloc_bitmap_isset (topo->allowed, pu) || !hwloc_bitmap_isset (topo->online, pu))
        continue;
      m->usable[pu] = true;
      m->n_usable++;
      if (m->core_size[m->core[pu]]++ == 0)
        m->n_usable_cores++;
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        m->dom_size[l][core->domain[l]]++;
    }
  return 0;
}

void
bm_model_release (struct bm_model *m)
{
  free (m->usable);
  free (m->core);
  free (m->core_size);
  free (m->core_id);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      free (m->dom[l]);
      free (m->dom_size[l]);
    }
  memset (m, 0, sizeof *m);
}

int
bm_first_fit (const struct bm_model *m, const int *owner, unsigned n, bool *out)
{
  unsigned got = 0;
  memset (out, 0, m->npu * sizeof *out);
  for (unsigned pu = 0; pu < m->npu && got < n; pu++)
    if (m->usable[pu] && owner[pu] < 0)
      {
        out[pu] = true;
        got++;
      }
  return got == n ? 0 : -1;
}

/* ---- kubelet static policy -------------------------------------------------
 *
 * Follows pkg/kubelet/cm/cpumanager/cpu_assignment.go (Kubernetes 1.32+):
 * takeByTopologyNUMAPacked() = takeFullFirstLevel, takeFullSecondLevel,
 * [takeUncoreCache], takeFullCores, takeRemainingCPUs, with the "packed" sort
 * (fewest available CPUs first, then the lowest id) at every level.  The first
 * level is the larger of NUMA node and socket (numaFirst when there are at
 * least as many sockets as NUMA nodes), the second the other one. */

enum
{
  K_NUMA = CP_LEVEL_NUMA,
  K_SOCKET = CP_LEVEL_PACKAGE,
  K_UNCORE = CP_LEVEL_LLC,
};

struct kacc
{
  const struct bm_model *m;
  bool *avail;                   /* [npu] free and not yet taken */
  bool *out;
  unsigned need;
  unsigned *cnt[CP_LEVEL_COUNT]; /* available PUs per domain (NUMA, socket, uncore) */
  unsigned *core_cnt;            /* available PUs per core */
  int first, second;             /* K_NUMA / K_SOCKET */
  /* scratch */
  unsigned *ids, *order2, *order_numa, *order_uncore, *order_cores, *tmp;
  bool *seen;
};

static void
k_take (struct kacc *a, unsigned pu)
{
  const struct bm_model *m = a->m;
  a->avail[pu] = false;
  a->out[pu] = true;
  a->need--;
  a->core_cnt[m->core[pu]]--;
  a->cnt[K_NUMA][m->dom[K_NUMA][pu]]--;
  a->cnt[K_SOCKET][m->dom[K_SOCKET][pu]]--;
  a->cnt[K_UNCORE][m->dom[K_UNCORE][pu]]--;
}

/* The packed sort: ascending available CPUs, then ascending id.  qsort has no
 * context argument; the bench is single-threaded. */
static const unsigned *sort_cnt;
static const unsigned *sort_key;

static int
packed_cmp (const void *pa, const void *pb)
{
  unsigned a = *(const unsigned *) pa, b = *(const unsigned *) pb;
  if (sort_cnt[a] != sort_cnt[b])
    return sort_cnt[a] < sort_cnt[b] ? -1 : 1;
  unsigned ka = sort_key ? sort_key[a] : a, kb = sort_key ? sort_key[b] : b;
  return ka < kb ? -1 : ka > kb;
}

static void
packed_sort (unsigned *ids, unsigned k, const unsigned *cnt, const unsigned *key)
{
  sort_cnt = cnt;
  sort_key = key;
  qsort (ids, k, sizeof *ids, packed_cmp);
}

/* Domains of LEVEL with available CPUs, packed-sorted (sortAvailableNUMANodes /
 * sortAvailableSockets at the first level). */
static unsigned
k_sorted_level (struct kacc *a, int level, unsigned *ids)
{
  unsigned k = 0;
  for (unsigned d = 0; d < a->m->ndom[level]; d++)
    if (a->cnt[level][d] > 0)
      ids[k++] = d;
  packed_sort (ids, k, a->cnt[level], NULL);
  return k;
}

/* Domains of CHILD with available CPUs, grouped under the PARENT domains in
 * PORDER (NP of them), each group packed-sorted; a child that appears under two
 * parents (levels that do not nest) is kept at its first place. */
static unsigned
k_grouped (struct kacc *a, const unsigned *porder, unsigned np, int parent, int child, unsigned *out)
{
  const struct bm_model *m = a->m;
  unsigned k = 0;
  memset (a->seen, 0, m->ndom[child] * sizeof *a->seen);
  for (unsigned i = 0; i < np; i++)
    {
      unsigned g = 0;
      for (unsigned pu = 0; pu < m->npu; pu++)
        if (a->avail[pu] && m->dom[parent][pu] == porder[i] && !a->seen[m->dom[child][pu]])
          {
            a->seen[m->dom[child][pu]] = true;
            a->tmp[g++] = m->dom[child][pu];
          }
      packed_sort (a->tmp, g, a->cnt[child], NULL);
      memcpy (out + k, a->tmp, g * sizeof *out);
      k += g;
    }
  return k;
}

/* The second level's order: its domains grouped under the sorted first level. */
static unsigned
k_order2 (struct kacc *a, unsigned *out)
{
  unsigned n1 = k_sorted_level (a, a->first, a->ids);
  return k_grouped (a, a->ids, n1, a->first, a->second, out);
}

/* sortAvailableNUMANodes(). */
static unsigned
k_order_numa (struct kacc *a, unsigned *out)
{
  if (a->first == K_NUMA)
    return k_sorted_level (a, K_NUMA, out);
  return k_order2 (a, out);
}

/* sortAvailableCores(): cores with available CPUs grouped by the second level in
 * its order, packed-sorted by available CPUs then core id. */
static unsigned
k_order_cores (struct kacc *a, unsigned *out)
{
  const struct bm_model *m = a->m;
  unsigned n2 = k_order2 (a, a->order2), k = 0;
  for (unsigned i = 0; i < n2; i++)
    {
      unsigned g = 0;
      for (unsigned c = 0; c < m->ncores; c++)
        if (a->core_cnt[c] > 0 && m->topo->cores[c].domain[a->second] == a->order2[i])
          a->tmp[g++] = c;
      packed_sort (a->tmp, g, a->core_cnt, m->core_id);
      memcpy (out + k, a->tmp, g * sizeof *out);
      k += g;
    }
  return k;
}

/* sortAvailableUncoreCaches(): uncore caches grouped by NUMA node in that order. */
static unsigned
k_order_uncore (struct kacc *a, unsigned *out)
{
  unsigned nn = k_order_numa (a, a->order_numa);
  return k_grouped (a, a->order_numa, nn, K_NUMA, K_UNCORE, out);
}

static void
k_take_domain (struct kacc *a, int level, unsigned d)
{
  for (unsigned pu = 0; pu < a->m->npu; pu++)
    if (a->avail[pu] && a->m->dom[level][pu] == d)
      k_take (a, pu);
}

/* takeFullNUMANodes / takeFullSockets / takeFullUncore: every wholly free domain,
 * in ORDER, whose size the request still needs at least. */
static void
k_take_full (struct kacc *a, int level, const unsigned *order, unsigned k)
{
  for (unsigned i = 0; i < k && a->need > 0; i++)
    {
      unsigned d = order[i], size = a->m->dom_size[level][d];
      if (a->cnt[level][d] == size && a->need >= size)
        k_take_domain (a, level, d);
    }
}

/* takePartialUncore (with the odd-count fix of later releases): the first
 * ceil(need / CPUsPerCore) cores of the cache that have available CPUs, by core
 * id; their available CPUs, less the highest one when the count is odd on SMT;
 * taken only when that is exactly the count still needed. */
static void
k_take_partial_uncore (struct kacc *a, unsigned u, unsigned cpus_per_core)
{
  const struct bm_model *m = a->m;
  unsigned cores_needed = (a->need + cpus_per_core - 1) / cpus_per_core, nc = 0;
  for (unsigned c = 0; c < m->ncores; c++)
    if (a->core_cnt[c] > 0 && m->topo->cores[c].domain[K_UNCORE] == u)
      a->tmp[nc++] = c;
  for (unsigned i = 1; i < nc; i++) /* insertion sort: few cores per cache */
    for (unsigned j = i; j > 0 && m->core_id[a->tmp[j - 1]] > m->core_id[a->tmp[j]]; j--)
      {
        unsigned t = a->tmp[j];
        a->tmp[j] = a->tmp[j - 1];
        a->tmp[j - 1] = t;
      }
  if (nc > cores_needed)
    nc = cores_needed;
  unsigned ncpu = 0, last = 0;
  for (unsigned pu = 0; pu < m->npu; pu++)
    if (a->avail[pu] && m->dom[K_UNCORE][pu] == u)
      for (unsigned i = 0; i < nc; i++)
        if ((unsigned) m->core[pu] == a->tmp[i])
          {
            ncpu++;
            last = pu;
            break;
          }
  bool drop_last = (a->need % 2 != 0 && cpus_per_core > 1 && ncpu > a->need);
  if (drop_last)
    ncpu--;
  if (ncpu != a->need)
    return;
  for (unsigned pu = 0; pu < m->npu; pu++)
    if (a->avail[pu] && m->dom[K_UNCORE][pu] == u && !(drop_last && pu == last))
      for (unsigned i = 0; i < nc; i++)
        if ((unsigned) m->core[pu] == a->tmp[i])
          {
            k_take (a, pu);
            break;
          }
}

/* takeUncoreCache. */
static void
k_take_uncore (struct kacc *a)
{
  const struct bm_model *m = a->m;
  unsigned nu = k_order_uncore (a, a->order_uncore);
  unsigned cpus_per_uncore = m->n_usable / (m->ndom[K_UNCORE] ? m->ndom[K_UNCORE] : 1);
  unsigned cpus_per_core = m->n_usable / (m->n_usable_cores ? m->n_usable_cores : 1);
  if (cpus_per_core == 0)
    cpus_per_core = 1;
  unsigned *order = cp_xcalloc (nu, sizeof *order);
  memcpy (order, a->order_uncore, nu * sizeof *order);
  for (unsigned i = 0; i < nu && a->need > 0; i++)
    {
      if (a->need >= cpus_per_uncore)
        {
          unsigned k = k_order_uncore (a, a->order_uncore);
          k_take_full (a, K_UNCORE, a->order_uncore, k);
        }
      if (a->need == 0)
        break;
      k_take_partial_uncore (a, order[i], cpus_per_core);
    }
  free (order);
}

/* takeFullCores. */
static void
k_take_full_cores (struct kacc *a)
{
  const struct bm_model *m = a->m;
  unsigned k = k_order_cores (a, a->order_cores);
  for (unsigned i = 0; i < k && a->need > 0; i++)
    {
      unsigned c = a->order_cores[i];
      if (a->core_cnt[c] == m->core_size[c] && a->need >= m->core_size[c])
        for (unsigned pu = 0; pu < m->npu; pu++)
          if (a->avail[pu] && (unsigned) m->core[pu] == c)
            k_take (a, pu);
    }
}

/* takeRemainingCPUs: sortAvailableCPUsPacked(), the cores' CPUs by number. */
static void
k_take_remaining (struct kacc *a)
{
  const struct bm_model *m = a->m;
  unsigned k = k_order_cores (a, a->order_cores);
  for (unsigned i = 0; i < k && a->need > 0; i++)
    for (unsigned pu = 0; pu < m->npu && a->need > 0; pu++)
      if (a->avail[pu] && (unsigned) m->core[pu] == a->order_cores[i])
        k_take (a, pu);
}

int
bm_kubelet_static (const struct bm_model *m, const int *owner, unsigned n, bool uncore, bool *out)
{
  struct kacc a = { .m = m, .out = out, .need = n };
  unsigned maxdom = m->ncores + 1, total = 0;
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    if (m->ndom[l] + 1 > maxdom)
      maxdom = m->ndom[l] + 1;
  a.avail = cp_xcalloc (m->npu, sizeof *a.avail);
  a.core_cnt = cp_xcalloc (m->ncores, sizeof *a.core_cnt);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    a.cnt[l] = cp_xcalloc (m->ndom[l], sizeof *a.cnt[l]);
  a.ids = cp_xcalloc (maxdom, sizeof *a.ids);
  a.order2 = cp_xcalloc (maxdom, sizeof *a.order2);
  a.order_numa = cp_xcalloc (maxdom, sizeof *a.order_numa);
  a.order_uncore = cp_xcalloc (maxdom, sizeof *a.order_uncore);
  a.order_cores = cp_xcalloc (maxdom, sizeof *a.order_cores);
  a.tmp = cp_xcalloc (maxdom, sizeof *a.tmp);
  a.seen = cp_xcalloc (maxdom, sizeof *a.seen);
  memset (out, 0, m->npu * sizeof *out);
  for (unsigned pu = 0; pu < m->npu; pu++)
    if (m->usable[pu] && owner[pu] < 0)
      {
        a.avail[pu] = true;
        total++;
        a.core_cnt[m->core[pu]]++;
        for (int l = 0; l < CP_LEVEL_COUNT; l++)
          a.cnt[l][m->dom[l][pu]]++;
      }
  a.first = m->ndom[K_SOCKET] >= m->ndom[K_NUMA] ? K_NUMA : K_SOCKET;
  a.second = a.first == K_NUMA ? K_SOCKET : K_NUMA;

  int ret = -1;
  if (n > total) /* isFailed */
    goto out;
  unsigned k = k_sorted_level (&a, a.first, a.ids);
  k_take_full (&a, a.first, a.ids, k);
  if (a.need > 0)
    {
      k = k_order2 (&a, a.order2);
      k_take_full (&a, a.second, a.order2, k);
    }
  if (a.need > 0 && uncore)
    k_take_uncore (&a);
  if (a.need > 0)
    k_take_full_cores (&a);
  if (a.need > 0)
    k_take_remaining (&a);
  ret = a.need == 0 ? 0 : -1;
out:
  free (a.avail);
  free (a.core_cnt);
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    free (a.cnt[l]);
  free (a.ids);
  free (a.order2);
  free (a.order_numa);
  free (a.order_uncore);
  free (a.order_cores);
  free (a.tmp);
  free (a.seen);
  return ret;
}
