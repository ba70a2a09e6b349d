/* cachepin: what the engine's steps see besides the decision a front end asked
 * for, told to whoever keeps it for people (the front ends' journal, hook/engine/front.c).
 *
 * The engine logs each of these (architecture.md: it logs the decisions) and
 * writes no journal of its own: a front end knows whether it can write one (its
 * lock is taken before the sandbox) and under which name (hook, apply, release).
 * One observer per process, set by the front end; none: the events are only
 * logged. */
#ifndef CP_EVENTS_H
#define CP_EVENTS_H

#include <hwloc.h>

enum cp_event_kind
{
  CP_EVENT_DRIFT,  /* another manager moved a placed entry's cpuset (cpus: where to; empty: back) */
  CP_EVENT_SWITCH, /* the kernel's cache-aware scheduling switch written */
};

struct cp_event
{
  enum cp_event_kind kind;
  const char *id;          /* the entry's id; for the switch, the run's target */
  const char *name;        /* the entry's name (ledger.h); NULL: none known */
  const char *cgroup;      /* its cgroup path; NULL: none */
  hwloc_const_bitmap_t cpus; /* NULL: none */
  const char *what;        /* one line, as logged */
};

typedef void (*cp_event_fn) (const struct cp_event *ev, void *data);

/* FN (NULL: nobody) is told each event from now on. */
void cp_events_set_observer (cp_event_fn fn, void *data);

/* Tell the observer, if any. */
void cp_event_emit (const struct cp_event *ev);

#endif
