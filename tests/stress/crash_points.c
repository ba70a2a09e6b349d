/* A hook killed at every step of a placement, a release and a refusal.
 *
 * Built with -DCACHEPIN_FAULT_INJECTION against a test-only copy of the library
 * (cachepin_core_fault): the steps are the placer's fault points (ledger locked,
 * reconciled, entry put) and the ledger's (tmp written, tmp synced, the old
 * ledger.json kept as ledger.json.prev, renamed),
 * plus "done" (the call returned: the hook would write the cgroup next).  A
 * child runs the hook's own calls, cp_placer_open_ledger() + cp_placer_decide_in()
 * or cp_front_release() (the release's steps, the sandbox entered between them, as
 * the hook runs them), and raise(SIGKILL)s itself at the chosen step.  Then:
 *   - ledger.json is byte for byte the old file (killed before the rename) or the
 *     new one (after it), which the child saved when it wrote ledger.json.tmp;
 *     never anything else, never a ledger set aside as corrupt;
 *   - once the old file was kept (prev-kept on), ledger.json.prev is the old
 *     ledger byte for byte, and after the next hook's commit it is the ledger
 *     that commit replaced: the generation a lost ledger.json goes back to;
 *   - the lock is free at once (flock dies with its process);
 *   - the next hook (a real placement) reconciles: the dead child's own entry, and
 *     the entries of containers that were already gone, are dropped, the stale
 *     tmp is replaced, and what is left is exactly what should be. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostconfig.h"
#include "ledger.h"
#include "ledger_internal.h"
#include "log.h"
#include "cli.h"
#include "placer.h"
#include "placement.h"
#include "util.h"
#include "stresslib.h"

#ifndef CACHEPIN_FAULT_INJECTION
#error "crash_points.c needs -DCACHEPIN_FAULT_INJECTION"
#endif

enum point
{
  P_LOCKED,
  P_RECONCILED,
  P_RECORDED,
  P_TMP_WRITTEN,
  P_TMP_SYNCED,
  P_PREV_KEPT,
  P_RENAMED,
  P_DONE,
  P_COUNT,
};
static const char *const point_names[] = {
  "locked", "reconciled", "recorded", "tmp-written", "tmp-synced", "prev-kept", "renamed", "done",
};

enum path
{
  PATH_FIRST,   /* the first placement ever: no ledger.json yet */
  PATH_PLACE,   /* a placement into a ledger with live and dead entries */
  PATH_RELEASE, /* cp_front_release() of a live entry */
  PATH_REFUSE,  /* a refused re-placement: decide keeps the earlier entry */
  PATH_COUNT,
};
static const char *const path_names[] = { "first", "place", "release", "refuse" };

#define N_BASE 10
#define NEW_MAX (1 << 20)

/* What the child wrote to ledger.json.tmp: the new ledger, byte for byte. */
struct capture
{
  bool captured;
  size_t len;
  char text[NEW_MAX];
};

struct scenario
{
  char *root, *state, *mount;
  struct cp_hostconfig hc;
  const struct cp_topo *topo;
  pid_t holders[N_BASE];
};

static enum point kill_at;
static struct capture *cap;
static const char *cap_state;

static void
placer_fault (enum cp_placer_fault_point p, void *data)
{
  (void) data;
  enum point at = p == CP_PLACER_FAULT_LOCKED ? P_LOCKED : p == CP_PLACER_FAULT_RECONCILED ? P_RECONCILED : P_RECORDED;
  if (at == kill_at)
    raise (SIGKILL);
}

static int
ledger_fault (enum cp_ledger_fault_point p, void *data)
{
  (void) data;
  if (p == CP_LEDGER_FAULT_TMP_WRITTEN)
    {
      cleanup_free char *path = cp_xasprintf ("%s/%s", cap_state, CP_LEDGER_TMP_FILE);
      size_t len;
      cleanup_free char *text = st_read_file (path, &len);
      if (text && len <= NEW_MAX)
        {
          memcpy (cap->text, text, len);
          cap->len = len;
          cap->captured = true;
        }
    }
  enum point at = p == CP_LEDGER_FAULT_TMP_WRITTEN ? P_TMP_WRITTEN
                  : p == CP_LEDGER_FAULT_TMP_SYNCED ? P_TMP_SYNCED
                  : p == CP_LEDGER_FAULT_PREV_KEPT  ? P_PREV_KEPT
                                                    : P_RENAMED;
  if (at == kill_at)
    raise (SIGKILL);
  return 0;
}

static struct cp_request
request (unsigned cpus, enum cp_mode mode)
{
  struct cp_request req;
  cp_request_init (&req);
  req.cpus = cpus;
  req.mode = mode;
  return req;
}

static char *
path_in (const char *dir, const char *name)
{
  return cp_xasprintf ("%s/%s", dir, name);
}

/* A placement as the hook makes it; 0, or -1 and *ERR. */
static int
place (const struct scenario *sc, const char *id, pid_t pid, struct cp_request req, cp_error_t *err)
{
  cleanup_free char *cgroup = cp_xasprintf ("/%s", id);
  struct cp_target t = { .id = id, .cgroup_mount = sc->mount, .cgroup_path = cgroup, .pid = pid };
  struct cp_container_request creq = { .req = req };
  struct cp_ledger *l = NULL;
  struct cp_plan *plan = NULL;
  if (cp_placer_open_ledger (&sc->hc, &l, err) < 0)
    return -1;
  int ret = cp_placer_decide_in (l, sc->topo, sc->topo->allowed, sc->topo->allowed_nodes, &t, &creq, NULL, &plan, err);
  cp_plan_free (plan);
  cp_ledger_close (l);
  return ret;
}

static void
cg_make (const struct scenario *sc, const char *id)
{
  cleanup_free char *dir = cp_xasprintf ("%s/%s", sc->mount, id);
  if (mkdir (dir, 0700) < 0)
    st_fail ("mkdir %s: %s", dir, strerror (errno));
}

/* c0..c9 placed for live holders; then c0 and c1 lose their process and c2 its
   cgroup, so the ledger holds three entries the next reconcile must drop. */
static void
scenario_init (struct scenario *sc, const struct cp_topo *topo, enum path path)
{
  memset (sc, 0, sizeof *sc);
  sc->topo = topo;
  sc->root = st_make_root ("crash");
  sc->state = path_in (sc->root, "state");
  sc->mount = path_in (sc->root, "cg");
  if (mkdir (sc->mount, 0700) < 0)
    st_fail ("mkdir %s: %s", sc->mount, strerror (errno));
  st_cgroup_mount (sc->mount);
  cp_hostconfig_init (&sc->hc);
  free (sc->hc.state_dir);
  sc->hc.state_dir = cp_xstrdup (sc->state);
  sc->hc.lock_timeout_ms = 5000;
  cg_make (sc, "victim");
  cg_make (sc, "next");
  if (path == PATH_FIRST)
    return;
  static const unsigned sizes[N_BASE] = { 8, 4, 16, 2, 1, 12, 6, 3, 24, 4 };
  for (unsigned i = 0; i < N_BASE; i++)
    {
      char id[16];
      snprintf (id, sizeof id, "c%u", i);
      cg_make (sc, id);
      sc->holders[i] = st_spawn_holder ();
      cp_error_t err = NULL;
      if (place (sc, id, sc->holders[i], request (sizes[i], i == 9 ? CP_MODE_SHARED : CP_MODE_EXCLUSIVE), &err) < 0)
        st_fail ("base placement %s: %s", id, cp_error_message (err));
    }
  st_kill_holder (sc->holders[0]);
  st_kill_holder (sc->holders[1]);
  sc->holders[0] = sc->holders[1] = 0;
  cleanup_free char *c2 = cp_xasprintf ("%s/c2", sc->mount);
  if (rmdir (c2) < 0)
    st_fail ("rmdir %s: %s", c2, strerror (errno));
}

static void
scenario_free (struct scenario *sc)
{
  for (unsigned i = 0; i < N_BASE; i++)
    if (sc->holders[i])
      st_kill_holder (sc->holders[i]);
  cp_hostconfig_free (&sc->hc);
  st_cgroup_unmount (sc->mount);
  st_remove_tree (sc->root);
  free (sc->root);
  free (sc->state);
  free (sc->mount);
}

/* The child: the hook, killed at KILL_AT. */
static void
run_child (const struct scenario *sc, enum path path)
{
  cp_log_set_level (CP_LOG_ERROR);
  cap_state = sc->state;
  cp_placer_set_fault_hook (placer_fault, NULL);
  cp_ledger_set_fault_hook (ledger_fault, NULL);
  cp_error_t err = NULL;
  int ret;
  enum cp_release_result result;
  switch (path)
    {
    case PATH_RELEASE:
      ret = cp_front_release (&sc->hc, CP_JOURNAL_HOOK, &(struct cp_release){ .id = "c5" }, &result, &err);
      if (ret == 0 && result != CP_RELEASE_DONE)
        _exit (4);
      break;
    case PATH_REFUSE:
      /* More CPUs than the host has: refused, and c6's earlier entry kept. */
      ret = place (sc, "c6", sc->holders[6], request (999, CP_MODE_EXCLUSIVE), &err) < 0
                    && err->kind == CP_ERR_UNSATISFIABLE
                ? 0
                : -1;
      break;
    case PATH_FIRST:
    case PATH_PLACE:
    case PATH_COUNT:
    default:
      ret = place (sc, "victim", getpid (), request (8, CP_MODE_EXCLUSIVE), &err);
      break;
    }
  if (ret < 0)
    _exit (3);
  if (kill_at == P_DONE)
    raise (SIGKILL);
  _exit (2); /* the step was never reached */
}

/* The ids the ledger must hold, in any order, as a sorted comma-joined string. */
static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static char *
ids_of (const struct st_ledger *l)
{
  const char **ids = cp_xcalloc (l->n + 1, sizeof *ids);
  for (size_t i = 0; i < l->n; i++)
    ids[i] = l->e[i].id;
  qsort (ids, l->n, sizeof *ids, cmp_str);
  size_t len = 1;
  for (size_t i = 0; i < l->n; i++)
    len += strlen (ids[i]) + 1;
  char *s = cp_xmalloc0 (len);
  for (size_t i = 0; i < l->n; i++)
    {
      if (i)
        strcat (s, ",");
      strcat (s, ids[i]);
    }
  free (ids);
  return s;
}

static struct st_ledger
check_text (const char *text, size_t len, const char *expected_ids, const char *what)
{
  struct st_ledger l;
  cleanup_free char *why = NULL;
  if (st_ledger_check (text, len, &l, &why) < 0)
    st_fail ("%s: %s", what, why);
  cleanup_free char *ids = ids_of (&l);
  st_check (strcmp (ids, expected_ids) == 0, "%s: entries %s, expected %s", what, ids, expected_ids);
  return l;
}

static bool
lock_is_free (const char *state)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (state, 0, &l, &err) < 0)
    {
      cp_error_free (&err);
      return false;
    }
  cp_ledger_close (l);
  return true;
}

/* The entries before and after the child's operation, and after the next hook. */
static const char *const expect_old[PATH_COUNT] = {
  [PATH_FIRST] = NULL,
  [PATH_PLACE] = "c0,c1,c2,c3,c4,c5,c6,c7,c8,c9",
  [PATH_RELEASE] = "c0,c1,c2,c3,c4,c5,c6,c7,c8,c9",
  [PATH_REFUSE] = "c0,c1,c2,c3,c4,c5,c6,c7,c8,c9",
};
static const char *const expect_new[PATH_COUNT] = {
  [PATH_FIRST] = "victim",
  [PATH_PLACE] = "c3,c4,c5,c6,c7,c8,c9,victim",
  /* A release checks only the entries that asked for cache-aware scheduling
     (none here) and those whose pid no longer exists (c0, c1): c2, whose
     cgroup went but whose process lives, waits for the next placement. */
  [PATH_RELEASE] = "c2,c3,c4,c6,c7,c8,c9",
  [PATH_REFUSE] = "c3,c4,c5,c6,c7,c8,c9",
};
/* After the next hook when the child's commit did not happen / did. */
static const char *const expect_next_old[PATH_COUNT] = {
  [PATH_FIRST] = "next",
  [PATH_PLACE] = "c3,c4,c5,c6,c7,c8,c9,next",
  [PATH_RELEASE] = "c3,c4,c5,c6,c7,c8,c9,next",
  [PATH_REFUSE] = "c3,c4,c5,c6,c7,c8,c9,next",
};
static const char *const expect_next_new[PATH_COUNT] = {
  [PATH_FIRST] = "next",
  [PATH_PLACE] = "c3,c4,c5,c6,c7,c8,c9,next",
  [PATH_RELEASE] = "c3,c4,c6,c7,c8,c9,next",
  [PATH_REFUSE] = "c3,c4,c5,c6,c7,c8,c9,next",
};

static bool
point_applies (enum path path, enum point p)
{
  /* Only a successful placement puts an entry. */
  return p != P_RECORDED || path == PATH_FIRST || path == PATH_PLACE;
}

/* ledger.json.prev (at PREV) is WANT byte for byte, or absent when WANT is NULL
 * (there was no ledger.json to keep). */
static void
check_prev (const char *prev, const char *want, size_t want_len, const char *what, const char *when)
{
  size_t len = 0;
  cleanup_free char *text = st_read_file (prev, &len);
  if (want == NULL)
    st_check (text == NULL, "%s: %s, a ledger.json.prev appeared without a ledger.json to keep", what, when);
  else
    st_check (text && len == want_len && memcmp (text, want, len) == 0,
              "%s: %s, ledger.json.prev is not the ledger it replaced", what, when);
}

/* Returns whether the file was the new ledger. */
static bool
run_one (const struct cp_topo *topo, enum path path, enum point p)
{
  struct scenario sc;
  scenario_init (&sc, topo, path);
  char what[96];
  snprintf (what, sizeof what, "%s killed at %s", path_names[path], point_names[p]);
  cleanup_free char *file = path_in (sc.state, CP_LEDGER_FILE);
  cleanup_free char *tmp = path_in (sc.state, CP_LEDGER_TMP_FILE);
  cleanup_free char *corrupt = path_in (sc.state, CP_LEDGER_CORRUPT_FILE);
  cleanup_free char *prev = path_in (sc.state, CP_LEDGER_PREV_FILE);
  size_t old_len = 0;
  cleanup_free char *old = st_read_file (file, &old_len);
  st_check ((old != NULL) == (expect_old[path] != NULL), "%s: the old ledger is %s", what, old ? "there" : "missing");
  if (old)
    {
      struct st_ledger l = check_text (old, old_len, expect_old[path], "the old ledger");
      st_ledger_free (&l);
    }

  memset (cap, 0, sizeof *cap);
  kill_at = p;
  fflush (NULL);
  pid_t child = fork ();
  st_check (child >= 0, "fork: %s", strerror (errno));
  if (child == 0)
    {
      st_die_with_parent ();
      run_child (&sc, path);
    }
  int status;
  while (waitpid (child, &status, 0) < 0)
    st_check (errno == EINTR, "waitpid: %s", strerror (errno));
  st_check (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL, "%s: the child %s %d instead", what,
            WIFEXITED (status) ? "exited" : "died of signal", WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status));

  /* Old or new, byte for byte. */
  bool renamed = p >= P_RENAMED;
  st_check (cap->captured == (p >= P_TMP_WRITTEN), "%s: the new ledger was %s written", what,
            cap->captured ? "" : "not");
  size_t len = 0;
  cleanup_free char *now = st_read_file (file, &len);
  size_t now_len = len;
  if (renamed)
    {
      st_check (now && len == cap->len && memcmp (now, cap->text, len) == 0,
                "%s: ledger.json is not the new ledger (%zu bytes, new %zu)", what, len, cap->len);
      struct st_ledger l = check_text (now, len, expect_new[path], what);
      const struct st_entry *v = st_ledger_find (&l, "victim");
      st_check (v == NULL || v->pid == child, "%s: the victim's pid is %d, not %d", what, (int) v->pid, (int) child);
      st_ledger_free (&l);
    }
  else if (old == NULL)
    st_check (now == NULL, "%s: a ledger.json appeared", what);
  else
    st_check (now && len == old_len && memcmp (now, old, len) == 0, "%s: ledger.json is not the old ledger", what);
  if (cap->captured)
    {
      struct st_ledger l = check_text (cap->text, cap->len, expect_new[path], "the new ledger");
      st_ledger_free (&l);
    }
  st_check (!st_exists (corrupt), "%s: a ledger was set aside as corrupt", what);
  if (p >= P_PREV_KEPT)
    check_prev (prev, old, old_len, what, "when the old ledger was kept");
  bool stale_tmp = st_exists (tmp);
  st_check (stale_tmp == (p == P_TMP_WRITTEN || p == P_TMP_SYNCED || p == P_PREV_KEPT),
            "%s: ledger.json.tmp is %s", what, stale_tmp ? "left behind" : "missing");
  if (stale_tmp)
    {
      size_t tmp_len;
      cleanup_free char *tmp_text = st_read_file (tmp, &tmp_len);
      st_check (tmp_len == cap->len && memcmp (tmp_text, cap->text, tmp_len) == 0,
                "%s: the stale ledger.json.tmp is not the new ledger", what);
    }
  st_check (lock_is_free (sc.state), "%s: the lock is still held after the kill", what);

  /* The next hook: a real placement, whose reconcile drops the dead. */
  pid_t next = st_spawn_holder ();
  cp_error_t err = NULL;
  if (place (&sc, "next", next, request (4, CP_MODE_EXCLUSIVE), &err) < 0)
    st_fail ("%s: the next hook: %s", what, cp_error_message (err));
  cleanup_free char *after = st_read_file (file, &len);
  st_check (after != NULL, "%s: no ledger after the next hook", what);
  struct st_ledger l = check_text (after, len, renamed ? expect_next_new[path] : expect_next_old[path],
                                   "after the next hook");
  st_ledger_free (&l);
  /* Its one commit kept the ledger it replaced (none on a first placement). */
  check_prev (prev, now, now_len, what, "after the next hook");
  st_check (!st_exists (tmp), "%s: the next hook left ledger.json.tmp", what);
  st_check (!st_exists (corrupt), "%s: a ledger was set aside as corrupt", what);
  st_kill_holder (next);
  scenario_free (&sc);
  printf ("  %-8s killed at %-11s -> ledger.json %s; next hook reconciled%s\n", path_names[path], point_names[p],
          renamed ? "= new" : old ? "= old" : "absent (old)", stale_tmp ? ", replaced the stale tmp" : "");
  return renamed;
}

int
main (void)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  cp_log_set_level (CP_LOG_WARNING);
  cap = mmap (NULL, sizeof *cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  st_check (cap != MAP_FAILED, "mmap: %s", strerror (errno));
  struct cp_topo *topo = st_topology ();
  unsigned runs = 0, as_old = 0, as_new = 0;
  long long t0 = st_now_us ();
  for (int path = 0; path < PATH_COUNT; path++)
    for (int p = 0; p < P_COUNT; p++)
      {
        if (!point_applies ((enum path) path, (enum point) p))
          continue;
        runs++;
        if (run_one (topo, (enum path) path, (enum point) p))
          as_new++;
        else
          as_old++;
      }
  printf ("%u kills: ledger.json was the old ledger %u times, the new one %u times, never anything else; %.1f s\n",
          runs, as_old, as_new, (double) (st_now_us () - t0) / 1e6);
  cp_topo_free (topo);
  munmap (cap, sizeof *cap);
  st_cgroup_check_gone ();
  printf ("OK\n");
  return 0;
}
