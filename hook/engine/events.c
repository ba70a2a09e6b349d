#include "events.h"

#include <stddef.h>

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
