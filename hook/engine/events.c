#include "events.h"

#include <stdlib.h>

#include "bitmap.h"
#include "ledger.h"
#include "util.h"

static cp_event_fn observer;
static void *observer_data;

void
cp_events_set_observer (cp_event_fn fn, void *data)
{
  observer = fn;
  observer_data = data;
}

void
cp_event_emit (const struct cp_event *ev)
{
  if (observer)
    observer (ev, observer_data);
}

/* A copy of an event, its strings and set owned. */
static void
emit_copy (void *data)
{
  cp_event_emit (data);
}

static void
free_copy (void *data)
{
  struct cp_event *c = data;
  free ((char *) c->id);
  free ((char *) c->name);
  free ((char *) c->cgroup);
  free ((char *) c->what);
  hwloc_bitmap_free ((hwloc_bitmap_t) c->cpus);
  free (c);
}

static char *
dup_or_null (const char *s)
{
  return s ? cp_xstrdup (s) : NULL;
}

void
cp_event_emit_on_commit (struct cp_ledger *l, const struct cp_event *ev)
{
  struct cp_event *c = cp_xcalloc (1, sizeof *c);
  *c = (struct cp_event) {
    .kind = ev->kind,
    .id = dup_or_null (ev->id),
    .name = dup_or_null (ev->name),
    .cgroup = dup_or_null (ev->cgroup),
    .cpus = ev->cpus ? cp_bitmap_dup (ev->cpus) : NULL,
    .what = dup_or_null (ev->what),
  };
  cp_ledger_on_commit (l, emit_copy, c, free_copy);
}
