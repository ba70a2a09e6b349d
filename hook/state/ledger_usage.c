/* cachepin: the CPUs the ledger's entries take, for a placement (see ledger.h:
 * cp_ledger_entry_taken(), cp_ledger_usage()).  Apart from ledger.c, whose model
 * it reads, to keep each file within the 600 lines cmake/layers.cmake allows. */
#include "ledger_internal.h"

#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "util.h"

void
cp_ledger_entry_taken (const struct cp_ledger_entry *e, hwloc_const_bitmap_t live, hwloc_bitmap_t into)
{
  hwloc_bitmap_or (into, into, e->mode == CP_MODE_EXCLUSIVE ? e->held : e->cpus);
  if (live && !hwloc_bitmap_iszero (live))
    {
      if (cp_ledger_live_drifted (e, live))
        hwloc_bitmap_or (into, into, live);
    }
  else if (e->drift)
    hwloc_bitmap_or (into, into, e->drift);
}

/* The bitmap of U equal to SET, one of the last few made (entries placed alike
   follow each other), or a new one: a thousand shared entries on a few CPUs were a
   thousand bitmaps made and freed at every placement (issue 22). */
static hwloc_bitmap_t
usage_set (struct cp_ledger_usage *u, hwloc_const_bitmap_t set)
{
  for (size_t k = u->n_distinct, tries = 0; k > 0 && tries < 8; k--, tries++)
    if (hwloc_bitmap_isequal (u->distinct[k - 1], set))
      return u->distinct[k - 1];
  hwloc_bitmap_t b = hwloc_bitmap_dup (set);
  if (b == NULL)
    cp_oom ();
  u->distinct[u->n_distinct++] = b;
  return b;
}

void
cp_ledger_usage (const struct cp_ledger *l, const char *exclude_id, struct cp_ledger_usage *out)
{
  memset (out, 0, sizeof *out);
  out->held = cp_bitmap_new ();
  out->shared = cp_xcalloc (l->n, sizeof *out->shared);
  out->distinct = cp_xcalloc (l->n, sizeof *out->distinct);
  cleanup_bitmap hwloc_bitmap_t taken = cp_bitmap_new ();
  for (size_t i = 0; i < l->n; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      if (exclude_id && strcmp (e->id, exclude_id) == 0)
        continue;
      if (e->mode == CP_MODE_EXCLUSIVE)
        cp_ledger_entry_taken (e, NULL, out->held);
      else
        {
          hwloc_bitmap_zero (taken);
          cp_ledger_entry_taken (e, NULL, taken);
          out->shared[out->n_shared++] = usage_set (out, taken);
        }
    }
  cp_ledger_partitions_taken (l, exclude_id, out->held); /* partitions not undone yet */
  out->usage.held = out->held;
  out->usage.shared = (const hwloc_const_bitmap_t *) out->shared;
  out->usage.n_shared = out->n_shared;
}

void
cp_ledger_usage_release (struct cp_ledger_usage *u)
{
  if (u == NULL)
    return;
  hwloc_bitmap_free (u->held);
  for (size_t i = 0; i < u->n_distinct; i++)
    hwloc_bitmap_free (u->distinct[i]);
  free (u->distinct);
  free (u->shared);
  memset (u, 0, sizeof *u);
}
