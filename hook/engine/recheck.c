/* cachepin: the recheck window of a long-running front end (recheck.h). */
#define _GNU_SOURCE
#include "recheck.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* What identifies an entry's container: a change of any of them is another
   placement, checked at once. */
struct seen
{
  char *id; /* NULL: an empty slot */
  char *cgroup_mount, *cgroup;
  unsigned long long cgroup_ino, start_time;
  pid_t pid;
  long long placed_at;
  long long due_ms; /* checked again from then on */
  bool moved;       /* its strings now belong to the next table (kept for the probes) */
};

static struct
{
  long long window_ms; /* 0: off */
  cp_recheck_clock_fn clock;
  struct seen *slots; /* open addressing, a power of two */
  size_t cap;
  long long now_ms; /* the clock, read once per reconcile */
} rc;

static long long
monotonic_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t
hash (const char *s)
{
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ull;
  return h;
}

static void
seen_clear (struct seen *s)
{
  free (s->id);
  free (s->cgroup_mount);
  free (s->cgroup);
  *s = (struct seen) { 0 };
}

static void
table_free (struct seen *slots, size_t cap)
{
  for (size_t i = 0; i < cap; i++)
    if (!slots[i].moved)
      seen_clear (&slots[i]);
  free (slots);
}

void
cp_placer_recheck_after (unsigned seconds, cp_recheck_clock_fn clock)
{
  table_free (rc.slots, rc.cap);
  rc.slots = NULL;
  rc.cap = 0;
  rc.window_ms = (long long) seconds * 1000;
  rc.clock = clock ? clock : monotonic_ms;
}

bool
cp_recheck_on (void)
{
  return rc.window_ms > 0;
}

/* The slot of ID in SLOTS (CAP a power of two): its own, or the empty one where it
   goes. */
static struct seen *
slot_of (struct seen *slots, size_t cap, const char *id)
{
  for (size_t i = hash (id) & (cap - 1);; i = (i + 1) & (cap - 1))
    if (slots[i].id == NULL || strcmp (slots[i].id, id) == 0)
      return &slots[i];
}

static bool
same (const struct seen *s, const struct cp_ledger_entry *e)
{
  return s->id && !s->moved && s->pid == e->pid && s->start_time == e->start_time && s->cgroup_ino == e->cgroup_ino
         && s->placed_at == e->placed_at && strcmp (s->cgroup, e->cgroup) == 0
         && strcmp (s->cgroup_mount, e->cgroup_mount) == 0;
}

bool
cp_recheck_due (const struct cp_ledger_entry *e, void *data)
{
  (void) data;
  if (rc.window_ms <= 0 || rc.cap == 0)
    return true;
  const struct seen *s = slot_of (rc.slots, rc.cap, e->id);
  return !same (s, e) || rc.now_ms >= s->due_ms;
}

/* When E, found alive at NOW, falls due: in the second half of the window. */
static long long
due_after (const struct cp_ledger_entry *e, long long now)
{
  long long half = rc.window_ms / 2;
  return now + rc.window_ms - (half ? (long long) (hash (e->id) % (uint64_t) half) : 0);
}

void
cp_recheck_seen (const struct cp_ledger *l)
{
  if (rc.window_ms <= 0)
    return;
  size_t n = cp_ledger_count (l), cap = 16;
  while (cap < 2 * n + 1)
    cap *= 2;
  struct seen *slots = cp_xcalloc (cap, sizeof *slots);
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      struct seen *to = slot_of (slots, cap, e->id), *from = rc.cap ? slot_of (rc.slots, rc.cap, e->id) : NULL;
      if (from && !from->moved && same (from, e) && rc.now_ms < from->due_ms)
        {
          *to = *from; /* skipped this time: its due time stands */
          from->moved = true;
          continue;
        }
      *to = (struct seen) { .id = cp_xstrdup (e->id), .cgroup_mount = cp_xstrdup (e->cgroup_mount),
                            .cgroup = cp_xstrdup (e->cgroup), .cgroup_ino = e->cgroup_ino,
                            .start_time = e->start_time, .pid = e->pid, .placed_at = e->placed_at,
                            .due_ms = due_after (e, rc.now_ms) };
    }
  table_free (rc.slots, rc.cap);
  rc.slots = slots;
  rc.cap = cap;
}

void
cp_recheck_begin (void)
{
  if (rc.window_ms > 0)
    rc.now_ms = rc.clock ();
}
