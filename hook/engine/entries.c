/* The ledger's entries as a long-running front end reads them (entries.h). */
#include "entries.h"

#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "ledger.h"
#include "placer.h"
#include "util.h"

/* The copy of E the reader keeps: what the settle rule (owner.h) and the
   answers read, nothing of the ledger's own. */
static struct cp_entry_view
view_of (const struct cp_owner *owner, const struct cp_ledger_entry *e)
{
  return (struct cp_entry_view) {
    .e = { .id = cp_xstrdup (e->id),
           .runtime = e->runtime ? cp_xstrdup (e->runtime) : NULL,
           .cgroup = cp_xstrdup (e->cgroup),
           .pid = e->pid,
           .cgroup_ino = e->cgroup_ino,
           .cpus = cp_bitmap_dup (e->cpus),
           .mems = cp_bitmap_dup (e->mems),
           .core_sched = e->core_sched,
           .isolated = e->isolated },
    .owned = cp_owner_owns (owner, e),
  };
}

static int
cmp_view (const void *a, const void *b)
{
  return strcmp (((const struct cp_entry_view *) a)->e.id, ((const struct cp_entry_view *) b)->e.id);
}

int
cp_entries_read (const struct cp_hostconfig *hc, const struct cp_owner *owner, struct cp_entries *out,
                 cp_error_t *err)
{
  *out = (struct cp_entries) { 0 };
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  out->n = cp_ledger_count (l);
  out->v = cp_xcalloc (out->n + 1, sizeof *out->v);
  for (size_t i = 0; i < out->n; i++)
    out->v[i] = view_of (owner, cp_ledger_at (l, i));
  qsort (out->v, out->n, sizeof *out->v, cmp_view);
  return 0;
}

const struct cp_entry_view *
cp_entries_find (const struct cp_entries *es, const char *id)
{
  struct cp_entry_view key = { .e = { .id = (char *) id } };
  return es->n ? bsearch (&key, es->v, es->n, sizeof *es->v, cmp_view) : NULL;
}

void
cp_entry_view_clear (struct cp_entry_view *v)
{
  cp_ledger_entry_clear (&v->e);
  v->owned = false;
}

void
cp_entries_clear (struct cp_entries *es)
{
  for (size_t i = 0; i < es->n; i++)
    cp_entry_view_clear (&es->v[i]);
  free (es->v);
  *es = (struct cp_entries) { 0 };
}

int
cp_entries_read_one (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                     struct cp_entry_view *out, cp_error_t *err)
{
  *out = (struct cp_entry_view) { 0 };
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  if (e == NULL)
    return 0;
  *out = view_of (owner, e);
  return 1;
}
