/* cachepin: the ledger model: entries, their rules, the collection, reconcile
 * (see ledger.h).  The text is in ledger_codec.c (read) and ledger_codec_write.c
 * (written), the files in ledger_store.c, the CPUs taken in ledger_usage.c. */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "text.h"
#include "util.h"
#include "cgroup.h"
#include "proc.h"

/* ---------------------------------------------------------------- helpers */

void
cp_ledger_entry_clear (struct cp_ledger_entry *e)
{
  free (e->id);
  free (e->name);
  free (e->runtime);
  free (e->cgroup_mount);
  free (e->cgroup);
  hwloc_bitmap_free (e->cpus);
  hwloc_bitmap_free (e->held);
  hwloc_bitmap_free (e->mems);
  hwloc_bitmap_free (e->drift);
  memset (e, 0, sizeof *e);
}

/* SRC has passed cp_ledger_entry_check(). */
static void
entry_copy (struct cp_ledger_entry *dst, const struct cp_ledger_entry *src)
{
  dst->id = cp_xstrdup (src->id);
  dst->name = src->name ? cp_xstrdup (src->name) : NULL;
  dst->cgroup_mount = cp_xstrdup (src->cgroup_mount);
  dst->cgroup = cp_xstrdup (src->cgroup);
  dst->cgroup_ino = src->cgroup_ino;
  dst->pid = src->pid;
  dst->start_time = src->start_time;
  dst->mode = src->mode;
  dst->cpus = cp_bitmap_dup (src->cpus);
  dst->held = cp_bitmap_dup (src->held);
  dst->mems = cp_bitmap_dup (src->mems);
  dst->placed_at = src->placed_at;
  dst->sched_cache = src->sched_cache;
  dst->core_sched = src->core_sched;
  dst->drift = src->drift ? cp_bitmap_dup (src->drift) : cp_bitmap_new ();
  dst->isolated = src->isolated;
  dst->runtime = src->runtime ? cp_xstrdup (src->runtime) : NULL;
}

static bool
drift_equal (hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
  bool a_none = a == NULL || hwloc_bitmap_iszero (a), b_none = b == NULL || hwloc_bitmap_iszero (b);
  if (a_none || b_none)
    return a_none && b_none;
  return hwloc_bitmap_isequal (a, b);
}

static bool
entry_equal (const struct cp_ledger_entry *a, const struct cp_ledger_entry *b)
{
  return strcmp (a->id, b->id) == 0 && strcmp (a->name ? a->name : "", b->name ? b->name : "") == 0
         && strcmp (a->cgroup_mount, b->cgroup_mount) == 0
         && strcmp (a->cgroup, b->cgroup) == 0 && a->cgroup_ino == b->cgroup_ino && a->pid == b->pid
         && a->start_time == b->start_time
         && a->mode == b->mode && hwloc_bitmap_isequal (a->cpus, b->cpus)
         && hwloc_bitmap_isequal (a->held, b->held) && hwloc_bitmap_isequal (a->mems, b->mems)
         && a->placed_at == b->placed_at && a->sched_cache == b->sched_cache && a->core_sched == b->core_sched
         && drift_equal (a->drift, b->drift) && a->isolated == b->isolated
         && strcmp (a->runtime ? a->runtime : "", b->runtime ? b->runtime : "") == 0;
}

struct cp_ledger *
cp_ledger_new (void)
{
  struct cp_ledger *l = cp_xmalloc0 (sizeof *l);
  l->dirfd = -1;
  l->lockfd = -1;
  l->cas_restore = -1;
  return l;
}

struct cp_ledger_entry *
cp_ledger_append (struct cp_ledger *l)
{
  if (l->n == l->cap)
    {
      l->cap = l->cap ? l->cap * 2 : 16;
      l->entries = cp_xrealloc (l->entries, l->cap * sizeof *l->entries);
    }
  struct cp_ledger_entry *e = &l->entries[l->n++];
  memset (e, 0, sizeof *e);
  return e;
}

static ssize_t
index_of (const struct cp_ledger *l, const char *id)
{
  for (size_t i = 0; i < l->n; i++)
    if (strcmp (l->entries[i].id, id) == 0)
      return (ssize_t) i;
  return -1;
}

/* The first exclusive entry other than SKIP whose held CPUs meet HELD, or -1. */
static ssize_t
find_overlap (const struct cp_ledger *l, hwloc_const_bitmap_t held, ssize_t skip)
{
  for (size_t i = 0; i < l->n; i++)
    if ((ssize_t) i != skip && l->entries[i].mode == CP_MODE_EXCLUSIVE
        && hwloc_bitmap_intersects (l->entries[i].held, held))
      return (ssize_t) i;
  return -1;
}

static char *
overlap_text (hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
  hwloc_bitmap_t both = cp_bitmap_new ();
  hwloc_bitmap_and (both, a, b);
  char *s = cp_cpulist_format (both);
  hwloc_bitmap_free (both);
  return s;
}

/* ------------------------------------------------------------- validation */

bool
cp_ledger_quotable (const char *s)
{
  size_t len = strnlen (s, 257);
  return len <= 256 && cp_text_valid (s, len);
}

/* Ids and paths end up in logs and on terminals: policy/base/text.h says what may. */
int
cp_ledger_check_text (const char *what, const char *s, size_t max, cp_error_t *err)
{
  if (s == NULL)
    return cp_fail_input (err, "`%s` is missing", what);
  size_t len = strnlen (s, max + 1);
  if (len == 0)
    return cp_fail_input (err, "`%s` is empty", what);
  if (len > max)
    return cp_fail_input (err, "`%s` is longer than %zu bytes", what, max);
  if (!cp_text_valid (s, len))
    return cp_fail_input (err, "`%s` has a control character or is not valid UTF-8", what);
  return 0;
}

/* Absolute, no `..` component: reconcile stats these paths and other parts of the
 * hook may write below them. */
int
cp_ledger_check_path (const char *what, const char *s, cp_error_t *err)
{
  if (cp_ledger_check_text (what, s, CP_LEDGER_MAX_PATH, err) < 0)
    return -1;
  if (s[0] != '/')
    return cp_fail_input (err, "`%s`: `%.64s` is not an absolute path", what, s);
  for (const char *p = s; *p;)
    {
      while (*p == '/')
        p++;
      size_t n = strcspn (p, "/");
      if (n == 2 && p[0] == '.' && p[1] == '.')
        return cp_fail_input (err, "`%s`: `%.64s` has a `..` component", what, s);
      p += n;
    }
  return 0;
}

/* Finite, non-empty unless ALLOW_EMPTY, and inside what cpulists may name. */
static int
check_set (const char *what, hwloc_const_bitmap_t set, bool allow_empty, cp_error_t *err)
{
  if (set == NULL)
    return cp_fail_input (err, "`%s` is missing", what);
  if (hwloc_bitmap_weight (set) < 0 || hwloc_bitmap_last (set) > CP_CPULIST_MAX)
    return cp_fail_input (err, "`%s` goes past the maximum %d", what, CP_CPULIST_MAX);
  if (!allow_empty && hwloc_bitmap_iszero (set))
    return cp_fail_input (err, "`%s` is empty", what);
  return 0;
}

int
cp_ledger_entry_check (const struct cp_ledger_entry *e, cp_error_t *err)
{
  if (cp_ledger_check_text ("id", e->id, CP_LEDGER_MAX_ID, err) < 0
      || cp_ledger_check_path ("cgroup_mount", e->cgroup_mount, err) < 0
      || cp_ledger_check_path ("cgroup", e->cgroup, err) < 0
      || (e->name && cp_ledger_check_text ("name", e->name, CP_LEDGER_MAX_NAME, err) < 0)
      || (e->runtime && cp_ledger_check_text ("runtime", e->runtime, CP_LEDGER_MAX_PATH, err) < 0))
    return -1;
  if (e->runtime && e->pid != 0)
    return cp_fail_input (err, "`runtime` is the NRI plugin's, and its entries have no pid");
  if (e->cgroup_ino > (unsigned long long) CP_LEDGER_MAX_INT)
    return cp_fail_input (err, "`cgroup_ino` %llu is out of range", e->cgroup_ino);
  if (e->pid < 0)
    return cp_fail_input (err, "`pid` %d is negative", (int) e->pid);
  if (e->start_time > (unsigned long long) CP_LEDGER_MAX_INT)
    return cp_fail_input (err, "`start_time` %llu is out of range", e->start_time);
  if (e->pid == 0 && e->start_time != 0)
    return cp_fail_input (err, "`start_time` is %llu without a pid", e->start_time);
  if (e->placed_at < 0 || e->placed_at > CP_LEDGER_MAX_INT)
    return cp_fail_input (err, "`placed_at` %lld is out of range", e->placed_at);
  if (e->mode != CP_MODE_EXCLUSIVE && e->mode != CP_MODE_SHARED)
    return cp_fail_input (err, "`mode` %d is unknown", (int) e->mode);
  if (check_set ("cpus", e->cpus, false, err) < 0 || check_set ("mems", e->mems, true, err) < 0
      || check_set ("held", e->held, e->mode == CP_MODE_SHARED, err) < 0)
    return -1;
  if (e->mode == CP_MODE_SHARED && !hwloc_bitmap_iszero (e->held))
    return cp_fail_input (err, "`held` is not empty in shared mode");
  if (e->mode == CP_MODE_EXCLUSIVE && !hwloc_bitmap_isincluded (e->cpus, e->held))
    return cp_fail_input (err, "`held` does not include `cpus` in exclusive mode");
  if (e->sched_cache != CP_ASK_NONE && e->sched_cache != CP_ASK_ON && e->sched_cache != CP_ASK_OFF)
    return cp_fail_input (err, "`sched_cache` %d is unknown", (int) e->sched_cache);
  if (e->drift && check_set ("drift", e->drift, true, err) < 0)
    return -1;
  if (e->drift && hwloc_bitmap_isequal (e->drift, e->cpus))
    return cp_fail_input (err, "`drift` is `cpus` (no drift is written \"\")");
  return 0;
}

static int
cmp_entry_id (const void *a, const void *b)
{
  const struct cp_ledger_entry *x = *(const struct cp_ledger_entry *const *) a;
  const struct cp_ledger_entry *y = *(const struct cp_ledger_entry *const *) b;
  return strcmp (x->id, y->id);
}

int
cp_ledger_check_entries (const struct cp_ledger *l, cp_error_t *err)
{
  cleanup_free const struct cp_ledger_entry **sorted = cp_xcalloc (l->n, sizeof *sorted);
  for (size_t i = 0; i < l->n; i++)
    sorted[i] = &l->entries[i];
  qsort (sorted, l->n, sizeof *sorted, cmp_entry_id);
  for (size_t i = 1; i < l->n; i++)
    if (strcmp (sorted[i - 1]->id, sorted[i]->id) == 0)
      return cp_fail_input (err, "id `%.64s` appears more than once", sorted[i]->id);

  hwloc_bitmap_t all = cp_bitmap_new ();
  int ret = 0;
  for (size_t i = 0; i < l->n && ret == 0; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      if (e->mode != CP_MODE_EXCLUSIVE)
        continue;
      if (hwloc_bitmap_intersects (all, e->held))
        {
          ssize_t other = find_overlap (l, e->held, (ssize_t) i);
          cleanup_free char *cpus = overlap_text (e->held, l->entries[other].held);
          ret = cp_fail_input (err, "CPUs %s are held by both `%.64s` and `%.64s`", cpus, l->entries[other].id,
                               e->id);
        }
      hwloc_bitmap_or (all, all, e->held);
    }
  hwloc_bitmap_free (all);
  return ret;
}

/* ------------------------------------------------------------ the entries */

size_t
cp_ledger_count (const struct cp_ledger *l)
{
  return l->n;
}

const struct cp_ledger_entry *
cp_ledger_at (const struct cp_ledger *l, size_t i)
{
  return i < l->n ? &l->entries[i] : NULL;
}

const struct cp_ledger_entry *
cp_ledger_find (const struct cp_ledger *l, const char *id)
{
  ssize_t i = index_of (l, id);
  return i < 0 ? NULL : &l->entries[i];
}

int
cp_ledger_put (struct cp_ledger *l, const struct cp_ledger_entry *e, cp_error_t *err)
{
  if (cp_ledger_entry_check (e, err) < 0)
    return e->id ? cp_error_wrap (err, "ledger entry `%.64s`", e->id) : cp_error_wrap (err, "ledger entry");
  ssize_t same = index_of (l, e->id);
  if (e->mode == CP_MODE_EXCLUSIVE)
    {
      ssize_t other = find_overlap (l, e->held, same);
      if (other >= 0)
        {
          cleanup_free char *cpus = overlap_text (e->held, l->entries[other].held);
          cp_fail_runtime (err, "ledger entry `%.64s`: CPUs %s are already held by `%.64s`", e->id, cpus,
                           l->entries[other].id);
          return CP_LEDGER_CONFLICT;
        }
    }
  if (same >= 0)
    {
      if (entry_equal (&l->entries[same], e))
        return 0;
      /* Copied before the old entry is cleared: E may share its strings and bitmaps
         (a caller's `copy = *found; copy.x = ...`, as cp_placer_adopt_cgroup()). */
      struct cp_ledger_entry fresh = { 0 };
      entry_copy (&fresh, e);
      cp_ledger_entry_clear (&l->entries[same]);
      l->entries[same] = fresh;
    }
  else
    {
      if (l->n >= CP_LEDGER_MAX_ENTRIES)
        return cp_fail_runtime (err, "ledger entry `%.64s`: the ledger is full (%d entries)", e->id,
                                CP_LEDGER_MAX_ENTRIES);
      entry_copy (cp_ledger_append (l), e);
    }
  l->dirty = true;
  return 0;
}

bool
cp_ledger_remove (struct cp_ledger *l, const char *id)
{
  ssize_t i = index_of (l, id);
  if (i < 0)
    return false;
  cp_ledger_entry_clear (&l->entries[i]);
  memmove (&l->entries[i], &l->entries[i + 1], (l->n - (size_t) i - 1) * sizeof *l->entries);
  l->n--;
  l->dirty = true;
  return true;
}

/* ------------------------------------------------------------- liveness */

int
cp_ledger_pid_start_time (pid_t pid, unsigned long long *start_time, void *data)
{
  (void) data;
  cleanup_error cp_error_t err = NULL;
  bool zombie = false;
  if (cp_proc_start_time (pid, start_time, &zombie, &err) < 0)
    return cp_error_errno (err) == ENOENT || cp_error_errno (err) == ESRCH ? 0 : -1;
  return zombie ? 0 : 1;
}

int
cp_ledger_cgroup_state (const char *cgroup_mount, const char *cgroup, void *data)
{
  (void) data;
  return cp_cgroup_dir_state (cgroup_mount, cgroup);
}

enum cp_ledger_origin
cp_ledger_entry_origin (const struct cp_ledger_entry *e)
{
  if (e->pid > 0)
    return CP_ORIGIN_HOOK;
  if (strncmp (e->id, CP_LEDGER_DRA_PREFIX, strlen (CP_LEDGER_DRA_PREFIX)) == 0)
    return CP_ORIGIN_DRA;
  if (strncmp (e->id, "apply:", 6) == 0)
    return CP_ORIGIN_APPLY;
  return CP_ORIGIN_NRI;
}

const char *
cp_ledger_origin_name (enum cp_ledger_origin o)
{
  return o == CP_ORIGIN_HOOK ? "hook" : o == CP_ORIGIN_APPLY ? "apply" : o == CP_ORIGIN_DRA ? "dra" : "nri";
}

bool
cp_ledger_entry_unit (const struct cp_ledger_entry *e)
{
  return e->pid <= 0 && strncmp (e->id, CP_LEDGER_UNIT_PREFIX, strlen (CP_LEDGER_UNIT_PREFIX)) == 0;
}

/* E was decided before its container's cgroup was made and the runtime may still
 * make it: the NRI plugin answers CreateContainer (no pid, no inode: nothing exists
 * yet) and the runtime makes the cgroup when it creates the container, which it may
 * start minutes later (`crictl create`, then `crictl start`).  Dropping E in between
 * would hand its CPUs out twice, so no age ends it: its plugin settles it (the
 * cgroup recorded at StartContainer or Synchronize, or released at StopContainer,
 * RemoveContainer, or the Synchronize of its runtime that no longer has it).
 * A pinned unit's entry is pending the same way between the unit's stop and its
 * next start (`release --unit-stop`, then `apply --unit-start`): its cgroup is
 * removed at stop and made again at start, and its CPUs stay held for it meanwhile,
 * so that a restart, a crash with Restart=, or a stop and start finds them free. */
static bool
pending (const struct cp_ledger_entry *e)
{
  return e->cgroup_ino == 0 && (cp_ledger_entry_origin (e) == CP_ORIGIN_NRI || cp_ledger_entry_unit (e));
}

bool
cp_ledger_entry_pending (const struct cp_ledger_entry *e)
{
  return pending (e);
}

char *
cp_ledger_entry_gone (const struct cp_ledger_entry *e, const struct cp_ledger_liveness *alive, hwloc_bitmap_t live)
{
  unsigned long long ino = 0;
  if (cp_ledger_entry_origin (e) == CP_ORIGIN_DRA)
    {
      hwloc_bitmap_zero (live); /* no cgroup: its claim's unprepare ends it */
      return NULL;
    }
  int state = alive->cgroup_cpus
                  ? alive->cgroup_cpus (e->cgroup_mount, e->cgroup, live, e->cgroup_ino ? &ino : NULL, alive->data)
                  : alive->cgroup_exists (e->cgroup_mount, e->cgroup, alive->data);
  /* A pending entry's cgroup may exist before the runtime has applied the placement
     (created, then the cpuset written; or a Synchronize's update not applied yet):
     its cpuset says nothing of a drift until its front end records the cgroup. */
  if (state != 1 || pending (e))
    hwloc_bitmap_zero (live);
  if (state == 0 && pending (e))
    return NULL;
  if (state == 0)
    return cp_xasprintf ("cgroup %s under %s no longer exists", e->cgroup, e->cgroup_mount);
  /* A service restart removes its cgroup and makes it again: the new one's cpuset
     is not a drift of the old one's, and the entry's CPUs are nobody's now. */
  if (state == 1 && e->cgroup_ino && ino && ino != e->cgroup_ino)
    {
      hwloc_bitmap_zero (live);
      return cp_xasprintf ("cgroup %s under %s was removed and made again (inode %llu, placed in %llu)", e->cgroup,
                           e->cgroup_mount, ino, e->cgroup_ino);
    }
  if (e->pid == 0)
    return NULL;
  unsigned long long start = 0;
  int r = alive->pid_start_time (e->pid, &start, alive->data);
  if (r == 0)
    return cp_xasprintf ("pid %d has exited", (int) e->pid);
  if (r > 0 && start != e->start_time)
    return cp_xasprintf ("pid %d was reused (started at %llu, recorded %llu)", (int) e->pid, start, e->start_time);
  return NULL;
}

bool
cp_ledger_live_drifted (const struct cp_ledger_entry *e, hwloc_const_bitmap_t live)
{
  return !hwloc_bitmap_iszero (live) && !hwloc_bitmap_isequal (live, e->cpus);
}

/* E's drift from LIVE, the CPUs its cgroup runs on (empty: unknown, nothing
 * judged).  True when it changed. */
static bool
update_drift (struct cp_ledger_entry *e, hwloc_const_bitmap_t live, const struct cp_ledger_liveness *alive)
{
  if (hwloc_bitmap_iszero (live))
    return false;
  if (e->drift == NULL)
    e->drift = cp_bitmap_new ();
  bool none = !cp_ledger_live_drifted (e, live);
  if (none ? hwloc_bitmap_iszero (e->drift) : hwloc_bitmap_isequal (live, e->drift))
    return false;
  cleanup_bitmap hwloc_bitmap_t before = cp_bitmap_dup (e->drift);
  if (none)
    hwloc_bitmap_zero (e->drift);
  else
    hwloc_bitmap_copy (e->drift, live);
  if (alive->drifted)
    alive->drifted (e, before, alive->data);
  return true;
}

/* True when E's container is gone: told to ALIVE->dropped and E cleared.  Else
 * its drift is brought up to date (*CHANGED set when it moved), unless
 * ALIVE->check passes E over: then nothing is looked at. */
static bool
drop_if_gone (struct cp_ledger_entry *e, const struct cp_ledger_liveness *alive, hwloc_bitmap_t live, bool *changed)
{
  if (alive->check && !alive->check (e, alive->data))
    return false;
  /* Pending: kept whatever its cgroup says, and no drift judged (cp_ledger_entry_gone()):
     nothing to look at until its front end records the cgroup. */
  if (pending (e) || cp_ledger_entry_origin (e) == CP_ORIGIN_DRA)
    return false;
  cleanup_free char *why = cp_ledger_entry_gone (e, alive, live);
  if (why)
    {
      if (alive->dropped)
        alive->dropped (e, why, alive->data);
      cp_ledger_entry_clear (e);
      return true;
    }
  if (update_drift (e, live, alive))
    *changed = true;
  return false;
}

int
cp_ledger_reconcile (struct cp_ledger *l, const struct cp_ledger_liveness *alive, unsigned *dropped,
                     cp_error_t *err)
{
  static const struct cp_ledger_liveness real = {
    .cgroup_exists = cp_ledger_cgroup_state,
    .pid_start_time = cp_ledger_pid_start_time,
  };
  if (alive == NULL)
    alive = &real;
  if ((alive->cgroup_exists == NULL && alive->cgroup_cpus == NULL) || alive->pid_start_time == NULL)
    return cp_fail_runtime (err, "reconcile: a liveness check is missing");
  size_t kept = 0;
  unsigned n = 0;
  cleanup_bitmap hwloc_bitmap_t live = cp_bitmap_new ();
  for (size_t i = 0; i < l->n; i++)
    {
      struct cp_ledger_entry *e = &l->entries[i];
      if (drop_if_gone (e, alive, live, &l->dirty))
        {
          n++;
          continue;
        }
      if (kept != i)
        l->entries[kept] = *e;
      kept++;
    }
  l->n = kept;
  if (n)
    l->dirty = true;
  if (dropped)
    *dropped = n;
  return 0;
}

/* ------------------------------------------------------------- lifetime */

void
cp_ledger_close (struct cp_ledger *l)
{
  if (l == NULL)
    return;
  cp_ledger_cache_give (l); /* before the lock goes */
  cp_ledger_on_commit_done (l, false);
  for (size_t i = 0; i < l->n; i++)
    cp_ledger_entry_clear (&l->entries[i]);
  free (l->entries);
  cp_ledger_partitions_clear (l);
  /* Closing the last descriptor of the open file releases the flock. */
  if (l->lockfd >= 0)
    close (l->lockfd);
  if (l->dirfd >= 0)
    close (l->dirfd);
  free (l->dir);
  free (l->recovered);
  free (l);
}

/* ------------------------------------------------------------- kernel features */

int
cp_ledger_cas_restore (const struct cp_ledger *l)
{
  return l->cas_restore;
}

void
cp_ledger_set_cas_restore (struct cp_ledger *l, int value)
{
  if (value < -1 || value > 1)
    abort ();
  if (l->cas_restore != value)
    l->dirty = true;
  l->cas_restore = value;
}

size_t
cp_ledger_cas_askers (const struct cp_ledger *l)
{
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++)
    n += l->entries[i].sched_cache == CP_ASK_ON;
  return n;
}
