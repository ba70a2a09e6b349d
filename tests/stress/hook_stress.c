/* Many hooks started at once against one ledger.
 *
 *   hook_stress [ROUNDS [HOOKS [SEED [replace-lock]]]]   (default 50 rounds of 64 hooks)
 *
 * Each round forks HOOKS processes that wait on one pipe and are released
 * together.  Each one is a hook: the very code `cachepin hook` runs under the
 * ledger lock, cp_placer_open_ledger() (lock with the hook's timeout, read,
 * reconcile with the REAL liveness checks) and then either cp_placer_decide_in()
 * (engine, put, commit) for a placement, or cp_ledger_remove() + commit for the
 * release of an entry placed in an earlier round (cp_placer_release_commit()'s body,
 * split so the lock wait can be timed).  Left out: the cgroup write (this host
 * cannot hold a 384-CPU cpuset) and the seccomp/Landlock sandbox the real hook
 * enters between the two (hook/host/sandbox.h; crash_points.c's release runs in it).
 *
 * A placement's "container" is a holder process the test forks beforehand (its
 * pid is the entry's pid, as a container's init is) and a directory standing for
 * its cgroup, in a private cgroup hierarchy (st_cgroup_mount(): reconcile's
 * cgroup check vouches only for directories on a cgroup filesystem).
 *
 * After each round the parent reads ledger.json itself and checks it with an
 * independent reader (stresslib.c): it parses, no CPU is in two exclusive held
 * sets, and the entries are exactly the ones the test expects, each with the pid
 * of its holder, the CPUs its hook reported and the count it asked for.  Then it
 * takes some containers away, SIGKILLing the holder (pid check) or removing the
 * directory (cgroup check), and the next round's hooks must have reconciled them
 * away.  Every hook's wait for the lock is measured against the timeout.
 *
 * Same-id clashes (issue 18): a container run under another runtime state root
 * with the id of a live one (runc --root R2 run web while R1's web runs) is a
 * hook with that id from another cgroup and another process.  Its placement must
 * be refused (CP_ERR_RUNTIME) and its release, through cp_front_release() with
 * its own identity (its pid as a crafted state gives it, its cgroup as
 * config.json's cgroupsPath does, or both), must keep the live container's
 * entry: the model check after the round finds that entry as it was placed.  A
 * share of the real releases go through cp_front_release() with the owner's
 * identity too, and must release.  (Those are timed whole, sandbox included.)
 *
 * With replace-lock, a process removes ledger.lock in a loop while the hooks run
 * (now and then planting a symlink in its place, for the repair path): what an
 * admin's `rm` or a cleaner does.  A hook that flocked a new ledger.lock while
 * another held the removed one would write the ledger beside it, and the model
 * check would see a lost entry or a CPU held twice (1 round in 18 of 40 hooks). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostconfig.h"
#include "ledger.h"
#include "log.h"
#include "cli.h"
#include "placer.h"
#include "cpulist.h"
#include "placement.h"
#include "util.h"
#include "stresslib.h"

/* 64 hooks queue for one lock: how long the last one waits is the machine's load
 * (seen: over 5 s on a 2-core machine at load 14), not what this test checks (the
 * ledger's invariants under contention; the timeout itself is test_ledger's
 * test_lock_timeout).  The production default (5 s) made it fail under load. */
#define LOCK_TIMEOUT_MS 30000
#define TEXT_MAX 2048
#define RELEASE_PERCENT 35 /* of a round's hooks, while there is something to release */
#define CLASH_PERCENT 10   /* of a round's hooks, the same: a same-id clash with a live container */
#define VICTIM_PERCENT 20  /* of the live containers, taken away after each round */

enum job_kind
{
  JOB_PLACE,
  JOB_RELEASE,
  JOB_CLASH_PLACE,   /* another container with a live one's id: refused */
  JOB_CLASH_RELEASE, /* that container's release: the live one's entry kept */
};

static const char *const job_names[]
    = { [JOB_PLACE] = "place", [JOB_RELEASE] = "release", [JOB_CLASH_PLACE] = "same-id clash: place",
        [JOB_CLASH_RELEASE] = "same-id clash: release" };

/* Who a release through cp_front_release() says it is (JOB_RELEASE: the owner,
   JOB_CLASH_RELEASE: the clashing container).  BY_ID: the ledger call alone. */
enum release_ident
{
  BY_ID,
  BY_PID,
  BY_CGROUP,
  BY_BOTH,
};

enum job_status
{
  JOB_PENDING = 0, /* the hook never reported */
  JOB_PLACED,
  JOB_REFUSED,
  JOB_RELEASED,
  JOB_CLASH_REFUSED,
  JOB_CLASH_KEPT,
  JOB_FAILED,
};

/* One hook of a round, in memory shared with the parent. */
struct slot
{
  /* Set by the parent. */
  enum job_kind kind;
  char id[32];
  char cgroup[32];
  pid_t holder;
  struct cp_request req;
  enum release_ident ident; /* JOB_RELEASE, JOB_CLASH_RELEASE */
  /* Set by the hook. */
  enum job_status status;
  long long wait_us; /* released -> ledger locked, read and reconciled */
  long long hold_us; /* locked -> unlocked */
  char cpus[TEXT_MAX];
  char msg[512];
};

/* The parent's model of a container in the ledger. */
struct live
{
  char id[32];
  char cgroup[32];
  pid_t holder;
  struct cp_request req;
  char *cpus;
  bool chosen; /* released in this round */
};

/* Taken away after a round; the next round's hooks must drop it. */
struct victim
{
  char id[32];
  pid_t holder; /* still alive when the cgroup was removed instead, else 0 */
};

struct stats
{
  unsigned hooks, placed, refused, released, dropped_pid, dropped_cgroup, clash_refused, clash_kept;
  long long *waits;
  size_t n_waits;
  long long hold_max, hold_sum, round_max, round_sum;
};

static const char *cg_mount;
static const char *replace_lock_in; /* the state directory with replace-lock, else NULL */

static void
slot_fail (struct slot *s, const char *what, cp_error_t *err)
{
  s->status = JOB_FAILED;
  snprintf (s->msg, sizeof s->msg, "%s: %s", what, err && *err ? cp_error_message (*err) : "(no error)");
  cp_error_free (err);
}

/* Free capacity from the topology's cores alone: free PUs, and cores none of
   whose PUs is held (test_scale.c's oracle). */
static void
free_capacity (const struct cp_topo *topo, hwloc_const_bitmap_t held, unsigned *free_pus, unsigned *free_cores)
{
  *free_pus = *free_cores = 0;
  hwloc_bitmap_t f = hwloc_bitmap_alloc ();
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      hwloc_bitmap_andnot (f, topo->cores[c].pus, held);
      int fw = hwloc_bitmap_weight (f);
      *free_pus += (unsigned) fw;
      *free_cores += fw == hwloc_bitmap_weight (topo->cores[c].pus);
    }
  hwloc_bitmap_free (f);
}

/* A refusal must be real: still under the lock, the free CPUs (whole free cores
   under smt=pe0) could not hold the request. */
static bool
refusal_is_real (const struct cp_ledger *l, const struct cp_topo *topo, const struct slot *s, char *why, size_t len)
{
  const struct cp_request *r = &s->req;
  if (r->mode != CP_MODE_EXCLUSIVE || r->smt == CP_SMT_CORES || r->strict)
    return true;
  struct cp_ledger_usage usage;
  cp_ledger_usage (l, s->id, &usage);
  unsigned free_pus, free_cores;
  free_capacity (topo, usage.held, &free_pus, &free_cores);
  cp_ledger_usage_release (&usage);
  unsigned room = r->smt == CP_SMT_PE0 ? free_cores : free_pus;
  snprintf (why, len, "refused %u CPUs (smt=%s align=%s) with room for %u", r->cpus, cp_smt_name (r->smt),
            cp_align_name (r->align), room);
  return room < r->cpus;
}

/* A release through cp_front_release(), saying who it is as S->ident asks. */
static void
run_release (struct slot *s, const struct cp_hostconfig *hc)
{
  cp_error_t err = NULL;
  struct cp_release rel = {
    .id = s->id,
    .pid = s->ident == BY_PID || s->ident == BY_BOTH ? s->holder : 0,
    .cgroup = s->ident == BY_CGROUP || s->ident == BY_BOTH ? s->cgroup : NULL,
  };
  enum cp_release_result result;
  enum cp_release_result want = s->kind == JOB_RELEASE ? CP_RELEASE_DONE : CP_RELEASE_NOT_ITS;
  long long t0 = st_now_us ();
  int r = cp_front_release (hc, CP_JOURNAL_HOOK, &rel, &result, &err);
  s->wait_us = st_now_us () - t0;
  if (r < 0)
    slot_fail (s, "release", &err);
  else if (result != want)
    {
      s->status = JOB_FAILED;
      snprintf (s->msg, sizeof s->msg, "%s release of %s (pid %d, cgroup %s): result %d, expected %d",
                s->kind == JOB_RELEASE ? "the owner's" : "a clashing container's", s->id, (int) rel.pid,
                rel.cgroup ? rel.cgroup : "-", (int) result, (int) want);
    }
  else
    s->status = s->kind == JOB_RELEASE ? JOB_RELEASED : JOB_CLASH_KEPT;
}

/* The placement of a clashing container: refused, as the id is placed elsewhere. */
static void
clash_decided (struct slot *s, int r, cp_error_t *err)
{
  if (r == 0)
    {
      s->status = JOB_FAILED;
      snprintf (s->msg, sizeof s->msg, "a second container with the id %s (cgroup %s) was placed", s->id, s->cgroup);
    }
  else if ((*err)->kind != CP_ERR_RUNTIME || strstr (cp_error_message (*err), "is already placed in cgroup") == NULL)
    slot_fail (s, "clash: not refused for the id", err);
  else
    s->status = JOB_CLASH_REFUSED;
  cp_error_free (err);
}

/* One hook, in its own process. */
static void
run_hook (struct slot *s, const struct cp_hostconfig *hc, const struct cp_topo *topo)
{
  if (s->kind == JOB_CLASH_RELEASE || (s->kind == JOB_RELEASE && s->ident != BY_ID))
    {
      run_release (s, hc);
      return;
    }
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  long long t0 = st_now_us ();
  if (cp_placer_open_ledger (hc, &l, &err) < 0)
    {
      s->wait_us = st_now_us () - t0;
      slot_fail (s, "open", &err);
      return;
    }
  long long t1 = st_now_us ();
  s->wait_us = t1 - t0;
  /* Stands for the cgroup write left out here, which a real hook does under the
     lock: the window in which a second holder would write the ledger too. */
  if (replace_lock_in)
    usleep (2000);
  if (cp_ledger_was_recovered (l, NULL))
    {
      s->status = JOB_FAILED;
      snprintf (s->msg, sizeof s->msg, "the ledger was not trusted and started empty");
    }
  else if (s->kind == JOB_RELEASE)
    {
      bool found = cp_ledger_remove (l, s->id);
      if (cp_ledger_commit (l, &err) < 0)
        slot_fail (s, "commit", &err);
      else if (!found)
        {
          s->status = JOB_FAILED;
          snprintf (s->msg, sizeof s->msg, "release: %s is not in the ledger", s->id);
        }
      else
        s->status = JOB_RELEASED;
    }
  else
    {
      struct cp_target t = {
        .id = s->id, .cgroup = NULL, .cgroup_mount = cg_mount, .cgroup_path = s->cgroup, .pid = s->holder,
      };
      struct cp_container_request creq = { .req = s->req };
      struct cp_plan *plan = NULL;
      int r = cp_placer_decide_in (l, topo, topo->allowed, topo->allowed_nodes, &t, &creq, NULL, &plan, &err);
      if (s->kind == JOB_CLASH_PLACE)
        {
          clash_decided (s, r, &err);
          cp_plan_free (plan);
        }
      else if (r < 0)
        {
          if (err->kind != CP_ERR_UNSATISFIABLE)
            slot_fail (s, "decide", &err);
          else if (!refusal_is_real (l, topo, s, s->msg, sizeof s->msg))
            s->status = JOB_FAILED;
          else
            {
              snprintf (s->msg, sizeof s->msg, "%s", cp_error_message (err));
              s->status = JOB_REFUSED;
            }
          cp_error_free (&err);
        }
      else
        {
          cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
          snprintf (s->cpus, sizeof s->cpus, "%s", cpus);
          unsigned got = (unsigned) hwloc_bitmap_weight (plan->cpus);
          s->status = JOB_PLACED;
          if (plan->mode == CP_MODE_EXCLUSIVE && got != s->req.cpus)
            {
              s->status = JOB_FAILED;
              snprintf (s->msg, sizeof s->msg, "asked %u CPUs, got %u (%s)", s->req.cpus, got, cpus);
            }
          cp_plan_free (plan);
        }
    }
  cp_ledger_close (l);
  s->hold_us = st_now_us () - t1;
}

static struct cp_request
random_request (void)
{
  static const unsigned sizes[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 };
  static const enum cp_level aligns[] = { CP_LEVEL_LLC, CP_LEVEL_LLC, CP_LEVEL_L2, CP_LEVEL_NUMA, CP_LEVEL_MACHINE };
  struct cp_request req;
  cp_request_init (&req);
  req.cpus = sizes[st_rnd (CP_ARRAY_SIZE (sizes))];
  req.smt = (enum cp_smt) st_rnd (4);
  req.align = aligns[st_rnd (CP_ARRAY_SIZE (aligns))];
  req.mode = st_rnd (10) == 0 ? CP_MODE_SHARED : CP_MODE_EXCLUSIVE;
  req.strict = st_rnd (10) == 0;
  if (req.smt == CP_SMT_CORES && req.cpus % 2)
    req.cpus++;
  return req;
}

static char *
cg_dir (const char *cgroup)
{
  return cp_xasprintf ("%s%s", cg_mount, cgroup);
}

static void
cg_make (const char *cgroup)
{
  cleanup_free char *dir = cg_dir (cgroup);
  if (mkdir (dir, 0700) < 0)
    st_fail ("mkdir %s: %s", dir, strerror (errno));
}

static void
cg_remove (const char *cgroup)
{
  cleanup_free char *dir = cg_dir (cgroup);
  if (rmdir (dir) < 0)
    st_fail ("rmdir %s: %s", dir, strerror (errno));
}

/* With replace-lock: a process that removes ledger.lock in STATE in a loop, now
 * and then planting a symlink instead, until the parent kills it.  GATE_W is the
 * write end of the hooks' gate: closed here, or the hooks would never see it
 * open. */
static pid_t
spawn_lock_remover (const char *state, int gate_w)
{
  pid_t pid = fork ();
  if (pid < 0)
    st_fail ("fork: %s", strerror (errno));
  if (pid > 0)
    return pid;
  st_die_with_parent ();
  close (gate_w);
  cleanup_free char *lock = cp_xasprintf ("%s/%s", state, CP_LEDGER_LOCK_FILE);
  for (unsigned i = 0;; i++)
    {
      if (unlink (lock) == 0 && i % 16 == 0)
        (void) !symlink ("/dev/null", lock);
      usleep (500 + (i % 5) * 200);
    }
}

/* Fork the round's hooks, release them together, wait for them all. */
static long long
run_round (struct slot *slots, unsigned n, const struct cp_hostconfig *hc, const struct cp_topo *topo)
{
  int ready[2], gate[2];
  if (pipe (ready) < 0 || pipe (gate) < 0)
    st_fail ("pipe: %s", strerror (errno));
  fflush (NULL);
  pid_t *pids = cp_xcalloc (n, sizeof *pids);
  for (unsigned k = 0; k < n; k++)
    {
      pids[k] = fork ();
      if (pids[k] < 0)
        st_fail ("fork: %s", strerror (errno));
      if (pids[k] > 0)
        continue;
      st_die_with_parent ();
      close (ready[0]);
      close (gate[1]);
      char c = 'r';
      if (write (ready[1], &c, 1) != 1)
        _exit (3);
      close (ready[1]);
      while (read (gate[0], &c, 1) < 0 && errno == EINTR)
        ;
      close (gate[0]);
      /* Spread the opens over the remover's loop: hooks that all opened the lock
         before its first removal would all queue on that one file. */
      if (replace_lock_in)
        usleep ((k * 7919u % 40u) * 7000u);
      run_hook (&slots[k], hc, topo);
      _exit (slots[k].status == JOB_FAILED ? 1 : 0);
    }
  close (ready[1]);
  close (gate[0]);
  /* Every hook is forked and about to block on the gate: open it. */
  unsigned got = 0;
  char buf[64];
  for (ssize_t r; got < n && (r = read (ready[0], buf, sizeof buf)) != 0;)
    if (r > 0)
      got += (unsigned) r;
    else if (errno != EINTR)
      st_fail ("read: %s", strerror (errno));
  close (ready[0]);
  st_check (got == n, "only %u of %u hooks got ready", got, n);
  pid_t remover = replace_lock_in ? spawn_lock_remover (replace_lock_in, gate[1]) : 0;
  long long t0 = st_now_us ();
  close (gate[1]);
  for (unsigned k = 0; k < n; k++)
    {
      int status;
      while (waitpid (pids[k], &status, 0) < 0)
        if (errno != EINTR)
          st_fail ("waitpid: %s", strerror (errno));
      if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
        st_fail ("hook %s (%s) %s %d: %s", slots[k].id, job_names[slots[k].kind],
                 WIFEXITED (status) ? "exited" : "died of signal",
                 WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status), slots[k].msg);
    }
  if (remover)
    st_kill_holder (remover);
  free (pids);
  return st_now_us () - t0;
}

static struct st_ledger
read_ledger (const char *state, const char *when)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", state, CP_LEDGER_FILE);
  cleanup_free char *corrupt = cp_xasprintf ("%s/%s", state, CP_LEDGER_CORRUPT_FILE);
  cleanup_free char *tmp = cp_xasprintf ("%s/%s", state, CP_LEDGER_TMP_FILE);
  size_t len;
  cleanup_free char *text = st_read_file (path, &len);
  st_check (text != NULL, "%s: no ledger", when);
  st_check (!st_exists (corrupt), "%s: a ledger was set aside as corrupt", when);
  st_check (!st_exists (tmp), "%s: %s left behind", when, CP_LEDGER_TMP_FILE);
  struct st_ledger l;
  cleanup_free char *why = NULL;
  if (st_ledger_check (text, len, &l, &why) < 0)
    st_fail ("%s: bad ledger: %s", when, why);
  return l;
}

/* The ledger holds exactly LIVE, as placed; none of the victims. */
static void
check_model (const struct st_ledger *l, const struct live *live, size_t n_live, const struct victim *victims,
             size_t n_victims, const char *when)
{
  for (size_t i = 0; i < n_victims; i++)
    st_check (st_ledger_find (l, victims[i].id) == NULL, "%s: %s was taken away but reconcile kept it", when,
              victims[i].id);
  st_check (l->n == n_live, "%s: %zu entries in the ledger, %zu expected", when, l->n, n_live);
  for (size_t i = 0; i < n_live; i++)
    {
      const struct live *lv = &live[i];
      const struct st_entry *e = st_ledger_find (l, lv->id);
      st_check (e != NULL, "%s: %s is missing", when, lv->id);
      st_check (e->pid == lv->holder, "%s: %s has pid %d, not %d", when, lv->id, (int) e->pid, (int) lv->holder);
      st_check (strcmp (e->cpus, lv->cpus) == 0, "%s: %s has cpus %s, its hook reported %s", when, lv->id, e->cpus,
                lv->cpus);
      st_check (e->exclusive == (lv->req.mode == CP_MODE_EXCLUSIVE), "%s: %s has the wrong mode", when, lv->id);
      st_check (!e->exclusive || e->n_cpus == lv->req.cpus, "%s: %s holds %u CPUs, asked %u", when, lv->id, e->n_cpus,
                lv->req.cpus);
    }
}

static int
cmp_ll (const void *a, const void *b)
{
  long long x = *(const long long *) a, y = *(const long long *) b;
  return x < y ? -1 : x > y;
}

/* A hook of the parent's own, to make the reconcile of the last victims happen. */
static void
parent_hook (const struct cp_hostconfig *hc)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_placer_open_ledger (hc, &l, &err) < 0 || cp_ledger_commit (l, &err) < 0)
    st_fail ("final hook: %s", cp_error_message (err));
  cp_ledger_close (l);
}

int
main (int argc, char **argv)
{
  unsigned rounds = argc > 1 ? (unsigned) strtoul (argv[1], NULL, 10) : 50;
  unsigned hooks = argc > 2 ? (unsigned) strtoul (argv[2], NULL, 10) : 64;
  unsigned long long seed = argc > 3 ? strtoull (argv[3], NULL, 10) : 20240601;
  bool replace_lock = argc > 4 && strcmp (argv[4], "replace-lock") == 0;
  st_check (rounds > 0 && hooks > 0 && hooks <= 1000 && argc <= 5 && (argc <= 4 || replace_lock),
            "usage: %s [ROUNDS [HOOKS [SEED [replace-lock]]]]", argv[0]);
  setvbuf (stdout, NULL, _IOLBF, 0);
  st_seed (seed);
  /* The drops are checked here; one info line per drop per hook would drown the
     output, and so would the warning each clashing release gives (its result is
     checked). */
  cp_log_set_level (CP_LOG_ERROR);

  struct cp_topo *topo = st_topology ();
  char *root = st_make_root ("stress");
  cleanup_free char *state = cp_xasprintf ("%s/state", root);
  char *mount = cp_xasprintf ("%s/cg", root);
  cg_mount = mount;
  if (mkdir (mount, 0700) < 0)
    st_fail ("mkdir %s: %s", mount, strerror (errno));
  st_cgroup_mount (mount);
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  free (hc.state_dir);
  hc.state_dir = cp_xstrdup (state);
  hc.lock_timeout_ms = LOCK_TIMEOUT_MS;
  replace_lock_in = replace_lock ? state : NULL;
  printf ("%u rounds of %u hooks, seed %llu, lock timeout %u ms, state %s%s\n", rounds, hooks, seed, LOCK_TIMEOUT_MS,
          state, replace_lock ? ", ledger.lock removed in a loop" : "");

  struct slot *slots = mmap (NULL, hooks * sizeof *slots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  st_check (slots != MAP_FAILED, "mmap: %s", strerror (errno));
  size_t cap = 1024, n_live = 0, n_victims = 0;
  struct live *live = cp_xcalloc (cap, sizeof *live);
  struct victim *victims = cp_xcalloc (cap, sizeof *victims);
  struct stats st = { .waits = cp_xcalloc ((size_t) rounds * hooks, sizeof (long long)) };
  long long t_start = st_now_us ();

  for (unsigned r = 0; r < rounds; r++)
    {
      /* The round's jobs; the holders and cgroups of its placements exist first,
         as a container's init and cgroup exist before createRuntime runs. */
      memset (slots, 0, hooks * sizeof *slots);
      size_t releasable = n_live;
      for (size_t i = 0; i < n_live; i++)
        live[i].chosen = false;
      for (unsigned k = 0; k < hooks; k++)
        {
          struct slot *s = &slots[k];
          unsigned dice = st_rnd (100);
          if (releasable > 0 && dice < RELEASE_PERCENT + CLASH_PERCENT)
            {
              /* A live container not otherwise chosen this round: released, or
                 clashed with (it must stay through the round either way). */
              size_t pick = st_rnd ((unsigned) releasable);
              size_t i = 0;
              while (live[i].chosen || pick-- > 0)
                i++;
              live[i].chosen = true;
              releasable--;
              snprintf (s->id, sizeof s->id, "%s", live[i].id);
              s->ident = (enum release_ident) st_rnd (4);
              if (dice < RELEASE_PERCENT)
                {
                  s->kind = JOB_RELEASE;
                  memcpy (s->cgroup, live[i].cgroup, sizeof s->cgroup);
                  s->holder = live[i].holder;
                  continue;
                }
              /* The clashing container: its own cgroup and process. */
              s->kind = st_rnd (2) ? JOB_CLASH_PLACE : JOB_CLASH_RELEASE;
              if (s->kind == JOB_CLASH_RELEASE && s->ident == BY_ID)
                s->ident = BY_BOTH; /* by id alone, a release cannot tell (documented) */
              snprintf (s->cgroup, sizeof s->cgroup, "/x%02u-h%02u", r, k);
              s->req = random_request ();
              cg_make (s->cgroup);
              s->holder = st_spawn_holder ();
              continue;
            }
          s->kind = JOB_PLACE;
          snprintf (s->id, sizeof s->id, "r%02u-h%02u", r, k);
          snprintf (s->cgroup, sizeof s->cgroup, "/%.30s", s->id); /* ids are 7 bytes */
          s->req = random_request ();
          cg_make (s->cgroup);
          s->holder = st_spawn_holder ();
        }

      long long wall = run_round (slots, hooks, &hc, topo);
      st.round_max = wall > st.round_max ? wall : st.round_max;
      st.round_sum += wall;

      /* What the hooks did, into the model. */
      for (unsigned k = 0; k < hooks; k++)
        {
          struct slot *s = &slots[k];
          st_check (s->status != JOB_PENDING && s->status != JOB_FAILED, "round %u: hook %s did not finish: %s", r,
                    s->id, s->msg);
          st_check (s->wait_us <= LOCK_TIMEOUT_MS * 1000LL, "round %u: hook %s waited %lld ms for the lock", r, s->id,
                    s->wait_us / 1000);
          st.hooks++;
          st.waits[st.n_waits++] = s->wait_us;
          st.hold_sum += s->hold_us;
          st.hold_max = s->hold_us > st.hold_max ? s->hold_us : st.hold_max;
          if (s->status == JOB_PLACED)
            {
              if (n_live == cap)
                st_fail ("more than %zu live containers", cap);
              struct live *lv = &live[n_live++];
              memset (lv, 0, sizeof *lv);
              memcpy (lv->id, s->id, sizeof lv->id);
              memcpy (lv->cgroup, s->cgroup, sizeof lv->cgroup);
              lv->holder = s->holder;
              lv->req = s->req;
              lv->cpus = cp_xstrdup (s->cpus);
              st.placed++;
            }
          else if (s->status == JOB_REFUSED || s->status == JOB_CLASH_REFUSED || s->status == JOB_CLASH_KEPT)
            {
              /* Nothing placed: the container (the clashing one too) goes. */
              st_kill_holder (s->holder);
              cg_remove (s->cgroup);
              st.refused += s->status == JOB_REFUSED;
              st.clash_refused += s->status == JOB_CLASH_REFUSED;
              st.clash_kept += s->status == JOB_CLASH_KEPT;
            }
          else
            {
              /* Released: the container is gone. */
              size_t i = 0;
              while (strcmp (live[i].id, s->id) != 0)
                i++;
              st_kill_holder (live[i].holder);
              cg_remove (live[i].cgroup);
              free (live[i].cpus);
              live[i] = live[--n_live];
              st.released++;
            }
        }

      cleanup_free char *when = cp_xasprintf ("after round %u", r);
      struct st_ledger l = read_ledger (state, when);
      check_model (&l, live, n_live, victims, n_victims, when);
      st_ledger_free (&l);
      for (size_t i = 0; i < n_victims; i++)
        if (victims[i].holder)
          st_kill_holder (victims[i].holder);
      n_victims = 0;

      /* Take some containers away, behind the hooks' back. */
      for (size_t i = 0; i < n_live;)
        {
          if (st_rnd (100) >= VICTIM_PERCENT)
            {
              i++;
              continue;
            }
          struct victim *v = &victims[n_victims++];
          memcpy (v->id, live[i].id, sizeof v->id);
          if (st_rnd (4) == 0)
            {
              /* The cgroup goes, its process (as far as reconcile knows) stays. */
              cg_remove (live[i].cgroup);
              v->holder = live[i].holder;
              st.dropped_cgroup++;
            }
          else
            {
              st_kill_holder (live[i].holder);
              v->holder = 0;
              st.dropped_pid++;
            }
          free (live[i].cpus);
          live[i] = live[--n_live];
        }
      if (r % 10 == 9 || r == rounds - 1)
        printf ("round %u: %zu containers live, %zu taken away for the next round; round wall %.1f ms\n", r, n_live,
                n_victims, (double) wall / 1000);
    }

  /* The last victims: the next hook reconciles them away. */
  parent_hook (&hc);
  struct st_ledger l = read_ledger (state, "after the final reconcile");
  check_model (&l, live, n_live, victims, n_victims, "after the final reconcile");
  st_ledger_free (&l);
  for (size_t i = 0; i < n_victims; i++)
    if (victims[i].holder)
      st_kill_holder (victims[i].holder);
  /* Everything stops: the ledger empties. */
  for (size_t i = 0; i < n_live; i++)
    {
      st_kill_holder (live[i].holder);
      free (live[i].cpus);
    }
  parent_hook (&hc);
  l = read_ledger (state, "after every container stopped");
  st_check (l.n == 0, "%zu entries left after every container stopped", l.n);
  st_ledger_free (&l);
  long long total = st_now_us () - t_start;

  qsort (st.waits, st.n_waits, sizeof *st.waits, cmp_ll);
  long long wait_sum = 0;
  for (size_t i = 0; i < st.n_waits; i++)
    wait_sum += st.waits[i];
  printf ("rounds %u, hooks %u (%u placements: %u placed, %u refused; %u releases)\n", rounds, st.hooks,
          st.placed + st.refused, st.placed, st.refused, st.released);
  printf ("taken away behind the hooks' back and reconciled: %u by pid (SIGKILL), %u by cgroup (rmdir)\n",
          st.dropped_pid, st.dropped_cgroup);
  printf ("same-id clashes: %u placements refused, %u releases that kept the live entry\n", st.clash_refused,
          st.clash_kept);
  printf ("lock wait (open: lock, read, reconcile): max %.1f ms, p99 %.1f ms, median %.1f ms, avg %.1f ms (limit %u ms)\n",
          (double) st.waits[st.n_waits - 1] / 1000, (double) st.waits[st.n_waits * 99 / 100] / 1000,
          (double) st.waits[st.n_waits / 2] / 1000, (double) wait_sum / (double) st.n_waits / 1000, LOCK_TIMEOUT_MS);
  printf ("lock held per hook: max %.1f ms, avg %.2f ms; round wall: max %.0f ms, avg %.0f ms; total %.1f s\n",
          (double) st.hold_max / 1000, (double) st.hold_sum / st.hooks / 1000, (double) st.round_max / 1000,
          (double) st.round_sum / rounds / 1000, (double) total / 1e6);
  st_check (st.placed > 0 && st.released > 0, "the run placed or released nothing");
  st_check (st.clash_refused > 0 && st.clash_kept > 0, "the run had no same-id clash");

  free (st.waits);
  free (live);
  free (victims);
  munmap (slots, hooks * sizeof *slots);
  cp_hostconfig_free (&hc);
  cp_topo_free (topo);
  st_cgroup_unmount (mount);
  st_remove_tree (root);
  free (root);
  free (mount);
  st_cgroup_check_gone ();
  printf ("OK\n");
  return 0;
}
