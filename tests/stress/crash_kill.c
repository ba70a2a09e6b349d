/* Hooks SIGKILLed at random moments of their ledger work, release build.
 *
 *   crash_kill [KILLS [SEED]]         (default 500 kills)
 *
 * No fault points here: the library is the one the binary ships.  Each worker
 * loops as fast as it can over what a hook does under the lock:
 * cp_placer_open_ledger() (lock, read, reconcile with the real checks), a
 * placement from the engine put with the worker's own pid, or the release of one
 * of its entries, and cp_ledger_commit().  Before each commit it saves the text
 * it is about to write in shared memory, next to the text of the file as it
 * found it.  The parent SIGKILLs it after a random delay (0..MAX_DELAY_US after
 * it started), meanwhile reading ledger.json over and over without the lock as
 * any reader could.  After each kill:
 *   - ledger.json is byte for byte the file before the interrupted commit or the
 *     one it was writing; every read during the run parsed;
 *   - no ledger was ever set aside as corrupt;
 *   - the lock is free at once (flock dies with the process);
 *   - once the next worker has committed, the entries of every worker killed
 *     before it are gone: its reconcile saw their pids dead.
 * At the end a last hook must find nobody alive and leave the ledger empty. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostconfig.h"
#include "ledger.h"
#include "proc.h"
#include "log.h"
#include "placer.h"
#include "cpulist.h"
#include "placement.h"
#include "util.h"
#include "stresslib.h"

#define MAX_DELAY_US 20000
#define TEXT_MAX (512 * 1024)
#define MAX_OWN 24

enum phase
{
  PH_STARTING,
  PH_OPENING,    /* in cp_placer_open_ledger: lock, read, reconcile */
  PH_DECIDING,   /* engine, put/remove, serialize */
  PH_STAGING,    /* saving the new text for the parent */
  PH_COMMITTING, /* in cp_ledger_commit */
  PH_CLOSING,    /* committed, lock not yet released */
  PH_COUNT,
};
static const char *const phase_names[] = { "starting", "opening", "deciding", "staging", "committing", "closing" };

/* Shared with the parent.  At every moment ledger.json equals a valid text[]. */
struct board
{
  int phase;
  unsigned commits;
  int cur; /* the text[] ledger.json had when the worker locked it */
  int valid[2];
  size_t len[2]; /* SIZE_MAX: no ledger.json */
  char msg[256];
  char text[2][TEXT_MAX];
};

static struct board *b;

static void
set_phase (enum phase p)
{
  __atomic_store_n (&b->phase, (int) p, __ATOMIC_SEQ_CST);
}

static bool
same_as (int k, const char *text, size_t len)
{
  if (!__atomic_load_n (&b->valid[k], __ATOMIC_SEQ_CST))
    return false;
  if (text == NULL)
    return b->len[k] == SIZE_MAX;
  return b->len[k] == len && memcmp (b->text[k], text, len) == 0;
}

static void
stage (int k, const char *text, size_t len)
{
  __atomic_store_n (&b->valid[k], 0, __ATOMIC_SEQ_CST);
  b->len[k] = text ? len : SIZE_MAX;
  if (text)
    memcpy (b->text[k], text, len);
  __atomic_store_n (&b->valid[k], 1, __ATOMIC_SEQ_CST);
}

__attribute__ ((noreturn)) static void
worker_fail (const char *what, cp_error_t *err)
{
  snprintf (b->msg, sizeof b->msg, "%s: %s", what, err && *err ? cp_error_message (*err) : "");
  _exit (1);
}

static void
worker (unsigned gen, const struct cp_hostconfig *hc, const struct cp_topo *topo, const char *mount, int ready)
{
  static const unsigned sizes[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
  cleanup_free char *file = cp_xasprintf ("%s/%s", hc->state_dir, CP_LEDGER_FILE);
  char own[MAX_OWN][32];
  unsigned n_own = 0;
  st_seed (gen * 7919ULL + 1);
  if (write (ready, "r", 1) != 1)
    _exit (3);
  close (ready);
  for (unsigned i = 0;; i++)
    {
      cp_error_t err = NULL;
      struct cp_ledger *l = NULL;
      set_phase (PH_OPENING);
      if (cp_placer_open_ledger (hc, &l, &err) < 0)
        worker_fail ("open", &err);
      if (cp_ledger_was_recovered (l, NULL))
        worker_fail ("the ledger was not trusted", NULL);
      set_phase (PH_DECIDING);
      size_t len;
      cleanup_free char *found = st_read_file (file, &len);
      if (!same_as (b->cur, found, len))
        {
          if (!same_as (1 - b->cur, found, len))
            worker_fail ("ledger.json is neither text the board knows", NULL);
          b->cur = 1 - b->cur; /* the last commit had nothing to write */
        }

      if (n_own < MAX_OWN && (n_own == 0 || st_rnd (100) < 60))
        {
          struct cp_request req;
          cp_request_init (&req);
          req.cpus = sizes[st_rnd (CP_ARRAY_SIZE (sizes))];
          req.smt = (enum cp_smt) st_rnd (2);
          req.mode = st_rnd (8) == 0 ? CP_MODE_SHARED : CP_MODE_EXCLUSIVE;
          struct cp_ledger_usage usage;
          cp_ledger_usage (l, NULL, &usage);
          struct cp_plan *plan = NULL;
          if (cp_place (topo, NULL, NULL, &usage.usage, &req, &plan, &err) == 0)
            {
              snprintf (own[n_own], sizeof own[n_own], "w%u-%u", gen, i);
              struct cp_ledger_entry e = {
                .id = own[n_own], .cgroup_mount = (char *) mount, .cgroup = (char *) "/w", .pid = getpid (),
                .mode = plan->mode, .cpus = plan->cpus, .held = plan->held, .mems = plan->mems,
                .placed_at = (long long) time (NULL),
              };
              if (cp_proc_start_time (e.pid, &e.start_time, NULL, &err) < 0)
                worker_fail ("start time", &err);
              if (cp_ledger_put (l, &e, &err) < 0)
                worker_fail ("put", &err);
              n_own++;
            }
          cp_error_free (&err);
          cp_plan_free (plan);
          cp_ledger_usage_release (&usage);
        }
      else if (n_own > 0)
        {
          unsigned k = st_rnd (n_own);
          if (!cp_ledger_remove (l, own[k]))
            worker_fail ("an own entry is missing", NULL);
          memcpy (own[k], own[--n_own], sizeof own[k]);
        }

      cleanup_free char *text = cp_ledger_serialize (l);
      set_phase (PH_STAGING);
      stage (1 - b->cur, text, strlen (text));
      set_phase (PH_COMMITTING);
      if (cp_ledger_commit (l, &err) < 0)
        worker_fail ("commit", &err);
      set_phase (PH_CLOSING);
      __atomic_add_fetch (&b->commits, 1, __ATOMIC_SEQ_CST);
      b->cur = 1 - b->cur;
      cp_ledger_close (l);
    }
}

static bool
lock_is_free (const char *state)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", state, CP_LEDGER_LOCK_FILE);
  int fd = open (path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT;
  bool free_now = flock (fd, LOCK_EX | LOCK_NB) == 0;
  close (fd);
  return free_now;
}

int
main (int argc, char **argv)
{
  unsigned kills = argc > 1 ? (unsigned) strtoul (argv[1], NULL, 10) : 500;
  unsigned long long seed = argc > 2 ? strtoull (argv[2], NULL, 10) : 4242;
  st_check (kills > 0, "usage: %s [KILLS [SEED]]", argv[0]);
  setvbuf (stdout, NULL, _IOLBF, 0);
  cp_log_set_level (CP_LOG_WARNING);
  b = mmap (NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  st_check (b != MAP_FAILED, "mmap: %s", strerror (errno));

  struct cp_topo *topo = st_topology ();
  char *root = st_make_root ("kill");
  cleanup_free char *state = cp_xasprintf ("%s/state", root);
  cleanup_free char *mount = cp_xasprintf ("%s/cg", root);
  cleanup_free char *w = cp_xasprintf ("%s/cg/w", root);
  if (mkdir (mount, 0700) < 0 || mkdir (w, 0700) < 0)
    st_fail ("mkdir %s: %s", w, strerror (errno));
  cleanup_free char *file = cp_xasprintf ("%s/%s", state, CP_LEDGER_FILE);
  cleanup_free char *corrupt = cp_xasprintf ("%s/%s", state, CP_LEDGER_CORRUPT_FILE);
  cleanup_free char *tmp = cp_xasprintf ("%s/%s", state, CP_LEDGER_TMP_FILE);
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  free (hc.state_dir);
  hc.state_dir = cp_xstrdup (state);
  printf ("%u kills, seed %llu, delays 0..%u us, state %s\n", kills, seed, MAX_DELAY_US, state);
  st_seed (seed);

  unsigned at_phase[PH_COUNT] = { 0 }, as_old = 0, as_new = 0, stale_tmp = 0, committed_before = 0;
  unsigned long reads = 0, commits = 0;
  long long t0 = st_now_us ();
  for (unsigned k = 0; k < kills; k++)
    {
      /* The board starts from the file as it is. */
      size_t len;
      cleanup_free char *before = st_read_file (file, &len);
      memset (b, 0, offsetof (struct board, text));
      stage (0, before, len);
      b->cur = 0;

      int ready[2];
      st_check (pipe (ready) == 0, "pipe: %s", strerror (errno));
      unsigned delay = st_rnd (MAX_DELAY_US + 1);
      fflush (NULL);
      pid_t pid = fork ();
      st_check (pid >= 0, "fork: %s", strerror (errno));
      if (pid == 0)
        {
          st_die_with_parent ();
          close (ready[0]);
          worker (k, &hc, topo, mount, ready[1]);
        }
      close (ready[1]);
      char c;
      st_check (read (ready[0], &c, 1) == 1, "worker %u never started", k);
      close (ready[0]);

      /* Read the ledger as an outsider until the moment comes. */
      long long deadline = st_now_us () + delay;
      do
        {
          size_t n;
          cleanup_free char *text = st_read_file (file, &n);
          if (text)
            {
              struct st_ledger l;
              cleanup_free char *why = NULL;
              if (st_ledger_check (text, n, &l, &why) < 0)
                st_fail ("kill %u: a reader saw a bad ledger: %s", k, why);
              st_ledger_free (&l);
              reads++;
            }
        }
      while (st_now_us () < deadline);
      kill (pid, SIGKILL);
      int status;
      while (waitpid (pid, &status, 0) < 0)
        st_check (errno == EINTR, "waitpid: %s", strerror (errno));
      st_check (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL, "kill %u: the worker %s %d: %s", k,
                WIFEXITED (status) ? "exited" : "died of signal",
                WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status), b->msg);
      at_phase[b->phase]++;
      commits += b->commits;

      /* Old or new, byte for byte, and sound. */
      cleanup_free char *now = st_read_file (file, &len);
      bool is_cur = same_as (b->cur, now, len), is_other = same_as (1 - b->cur, now, len);
      st_check (is_cur || is_other, "kill %u (%s): ledger.json (%zu bytes) is neither the old nor the new ledger", k,
                phase_names[b->phase], now ? len : 0);
      as_old += is_cur;
      as_new += !is_cur;
      st_check (!st_exists (corrupt), "kill %u: a ledger was set aside as corrupt", k);
      stale_tmp += st_exists (tmp);
      st_check (lock_is_free (state), "kill %u (%s): the lock is still held", k, phase_names[b->phase]);
      if (now)
        {
          struct st_ledger l;
          cleanup_free char *why = NULL;
          if (st_ledger_check (now, len, &l, &why) < 0)
            st_fail ("kill %u: bad ledger: %s", k, why);
          /* A worker that committed reconciled first: only its own entries are left. */
          if (b->commits > 0)
            {
              committed_before++;
              for (size_t i = 0; i < l.n; i++)
                st_check (l.e[i].pid == pid, "kill %u: %s (pid %d) survived the reconcile of worker %d", k,
                          l.e[i].id, (int) l.e[i].pid, (int) pid);
            }
          st_ledger_free (&l);
        }
    }

  /* The next hook after the last kill: every worker is dead, nothing is left. */
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_placer_open_ledger (&hc, &l, &err) < 0 || cp_ledger_commit (l, &err) < 0)
    st_fail ("final hook: %s", cp_error_message (err));
  st_check (cp_ledger_count (l) == 0, "%zu entries survived the final reconcile", cp_ledger_count (l));
  cp_ledger_close (l);
  st_check (!st_exists (tmp), "the final commit left ledger.json.tmp");

  printf ("%u kills in %.1f s; the workers committed %lu times; %lu reads without the lock, all sound\n", kills,
          (double) (st_now_us () - t0) / 1e6, commits, reads);
  printf ("killed while:");
  for (int p = 0; p < PH_COUNT; p++)
    printf (" %s %u%s", phase_names[p], at_phase[p], p + 1 < PH_COUNT ? "," : "\n");
  printf ("ledger.json after the kill: the file before the commit %u times, the one being written %u times; stale "
          "tmp left %u times\n",
          as_old, as_new, stale_tmp);
  printf ("%u workers had committed before dying: their reconcile had dropped every dead worker's entries\n",
          committed_before);
  st_check (at_phase[PH_COMMITTING] > 0, "no kill landed inside a commit");

  cp_hostconfig_free (&hc);
  cp_topo_free (topo);
  munmap (b, sizeof *b);
  st_remove_tree (root);
  free (root);
  printf ("OK\n");
  return 0;
}
