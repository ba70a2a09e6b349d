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
  CP_EVENT_DRIFT,    /* another manager moved a placed entry's cpuset (cpus: where to; empty: back) */
  CP_EVENT_SWITCH,   /* the kernel's cache-aware scheduling switch written */
  CP_EVENT_RELEASED, /* an entry's CPUs given back (cpus: what it was placed on), by its
                        front end's release or by a reconcile that found its container
                        gone: every way an entry leaves the ledger but a placement
                        replacing it, told once the ledger without it is committed */
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

/* Tell the observer of a copy of EV once L is committed (ledger.h's
 * cp_ledger_on_commit()), never if L closes first: a release is told only when
 * it happened, once (a run that reconciles and does not commit, such as a read
 * of the NRI plugin's, leaves the next run to drop the entry, and tell it). */
struct cp_ledger;
void cp_event_emit_on_commit (struct cp_ledger *l, const struct cp_event *ev);

#endif
