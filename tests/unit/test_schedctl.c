/* hook/engine/schedctl.c: the host setting `sched_cache` against the ledger's requests,
 * on fake kernel trees (the 7.2+ llc_balancing directory): the decision table,
 * the on-demand reference count and the value given back, idempotence, and a
 * crash between any two steps. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostconfig.h"
#include "events.h"
#include "ledger.h"
#include "schedctl.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* ------------------------------------------------------------------ the table */

static void
test_decide (void **state)
{
  (void) state;
  static const struct
  {
    enum cp_sched_cache_setting setting;
    size_t askers;
    int restore, current;
    int target, restore_after;
  } cases[] = {
    /* leave: never moves the switch, but gives back a kept value */
    { CP_SCHED_CACHE_LEAVE, 0, -1, 0, 0, -1 },
    { CP_SCHED_CACHE_LEAVE, 3, -1, 0, 0, -1 },
    { CP_SCHED_CACHE_LEAVE, 3, -1, 1, 1, -1 },
    { CP_SCHED_CACHE_LEAVE, 1, 0, 1, 0, -1 },
    /* on-demand: on while anyone asks, keeping what was found */
    { CP_SCHED_CACHE_ON_DEMAND, 1, -1, 0, 1, 0 },
    { CP_SCHED_CACHE_ON_DEMAND, 1, -1, 1, 1, 1 }, /* it was on already: on is what comes back */
    { CP_SCHED_CACHE_ON_DEMAND, 2, 0, 1, 1, 0 },  /* held: the kept value does not change */
    { CP_SCHED_CACHE_ON_DEMAND, 2, 0, 0, 1, 0 },  /* someone turned it off meanwhile: on again */
    { CP_SCHED_CACHE_ON_DEMAND, 0, 0, 1, 0, -1 }, /* the last one went: back to off */
    { CP_SCHED_CACHE_ON_DEMAND, 0, 1, 1, 1, -1 },
    { CP_SCHED_CACHE_ON_DEMAND, 0, -1, 1, 1, -1 }, /* not ours: left alone */
    { CP_SCHED_CACHE_ON_DEMAND, 0, -1, 0, 0, -1 },
    /* always / never: set whatever was found; a kept value stays kept for the
       setting that follows to give back */
    { CP_SCHED_CACHE_ALWAYS, 0, -1, 0, 1, -1 },
    { CP_SCHED_CACHE_ALWAYS, 0, 0, 1, 1, 0 },
    { CP_SCHED_CACHE_NEVER, 2, -1, 1, 0, -1 },
    { CP_SCHED_CACHE_NEVER, 0, 1, 1, 0, 1 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_schedctl_step step;
      cp_schedctl_decide (cases[i].setting, cases[i].askers, cases[i].restore, cases[i].current, &step);
      if (step.target != cases[i].target || step.restore_after != cases[i].restore_after)
        fail_msg ("case %zu (%s, askers %zu, restore %d, current %d): got target %d restore %d, want %d %d", i,
                  cp_sched_cache_setting_name (cases[i].setting), cases[i].askers, cases[i].restore,
                  cases[i].current, step.target, step.restore_after, cases[i].target, cases[i].restore_after);
    }
}

/* ------------------------------------------------------------------ fake trees */

struct fixture
{
  char *dir;   /* mkdtemp */
  char *root;  /* dir/root: the fake kernel tree */
  char *state; /* dir/state: the ledger */
  char *switch_path;
  struct cp_hostconfig hc;
};

static void
put (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  assert_int_equal (fclose (f), 0);
}

static char *
slurp (const char *path)
{
  FILE *f = fopen (path, "r");
  assert_non_null (f);
  char *buf = cp_xmalloc0 (64);
  size_t n = fread (buf, 1, 63, f);
  buf[n] = '\0';
  fclose (f);
  return buf;
}

static int
setup (void **state)
{
  struct fixture *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("schedctl");
  fx->root = cp_xasprintf ("%s/root", fx->dir);
  fx->state = cp_xasprintf ("%s/state", fx->dir);
  cleanup_free char *cmd = cp_xasprintf ("mkdir -p %s/" CP_SCHED_CAS_DIR " %s", fx->root, fx->state);
  assert_int_equal (system (cmd), 0);
  assert_int_equal (chmod (fx->state, 0700), 0);
  fx->switch_path = cp_xasprintf ("%s/" CP_SCHED_CAS_DIR "/enabled", fx->root);
  put (fx->switch_path, "0\n");
  tu_hostconfig (&fx->hc, fx->state, fx->root);
  fx->hc.sched_cache = CP_SCHED_CACHE_ON_DEMAND;
  *state = fx;
  return 0;
}

static int
teardown (void **state)
{
  struct fixture *fx = *state;
  tu_rmtree (fx->dir);
  cp_hostconfig_free (&fx->hc);
  free (fx->dir);
  free (fx->root);
  free (fx->state);
  free (fx->switch_path);
  free (fx);
  return 0;
}

static int
switch_value (const struct fixture *fx)
{
  cleanup_free char *text = slurp (fx->switch_path);
  if (strcmp (text, "1\n") == 0)
    return 1;
  if (strcmp (text, "0\n") == 0)
    return 0;
  fail_msg ("switch reads '%s'", text);
  return -1;
}

static struct cp_ledger *
ledger_open (const struct fixture *fx)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  return l;
}

/* One run: open the switch, open the ledger, change it (add ADD asking ASK, or
 * remove REMOVE), commit, sync, as the placer does. */
static void
run (struct fixture *fx, const char *add, enum cp_ask ask, const char *remove)
{
  struct cp_schedctl sc;
  cp_error_t err = NULL;
  if (cp_schedctl_open (&fx->hc, &sc, &err) < 0)
    fail_msg ("schedctl open: %s", cp_error_message (err));
  struct cp_ledger *l = ledger_open (fx);
  cp_schedctl_ledger_opened (&sc, l);
  if (add)
    {
      cleanup_free char *cg = cp_xasprintf ("/c/%s", add);
      struct cp_ledger_entry e = {
        .id = (char *) add, .cgroup_mount = (char *) "/sys/fs/cgroup", .cgroup = cg,
        .mode = CP_MODE_SHARED, .cpus = tu_set ("0"), .held = tu_set (""), .mems = tu_set ("0"),
        .sched_cache = ask,
      };
      if (cp_ledger_put (l, &e, &err) < 0)
        fail_msg ("put: %s", cp_error_message (err));
      hwloc_bitmap_free (e.cpus);
      hwloc_bitmap_free (e.held);
      hwloc_bitmap_free (e.mems);
    }
  if (remove)
    cp_ledger_remove (l, remove);
  if (cp_ledger_commit (l, &err) < 0 || cp_schedctl_sync (&sc, l, &err) < 0)
    fail_msg ("run: %s", cp_error_message (err));
  cp_ledger_close (l);
  cp_schedctl_close (&sc);
}

static int
kept (const struct fixture *fx)
{
  struct cp_ledger *l = ledger_open (fx);
  int v = cp_ledger_cas_restore (l);
  cp_ledger_close (l);
  return v;
}

/* on at the first that asks, held while another does, back after the last. */
static void
test_on_demand_refcount (void **state)
{
  struct fixture *fx = *state;
  run (fx, "plain", CP_ASK_NONE, NULL);
  assert_int_equal (switch_value (fx), 0);
  assert_int_equal (kept (fx), -1);
  run (fx, "a", CP_ASK_ON, NULL);
  assert_int_equal (switch_value (fx), 1);
  assert_int_equal (kept (fx), 0);
  run (fx, "b", CP_ASK_ON, NULL);
  run (fx, "c", CP_ASK_OFF, NULL);
  assert_int_equal (switch_value (fx), 1);
  run (fx, NULL, CP_ASK_NONE, "a");
  assert_int_equal (switch_value (fx), 1); /* b still asks */
  assert_int_equal (kept (fx), 0);
  run (fx, NULL, CP_ASK_NONE, "b");
  assert_int_equal (switch_value (fx), 0);
  assert_int_equal (kept (fx), -1);
  run (fx, NULL, CP_ASK_NONE, "c");
  assert_int_equal (switch_value (fx), 0);
}

/* Found on: it stays on after the last release (it is given back as found), and
 * a value the admin set while nobody asks is never touched. */
static void
test_on_demand_found_on (void **state)
{
  struct fixture *fx = *state;
  put (fx->switch_path, "1\n");
  run (fx, "a", CP_ASK_ON, NULL);
  assert_int_equal (kept (fx), 1);
  run (fx, NULL, CP_ASK_NONE, "a");
  assert_int_equal (switch_value (fx), 1);
  assert_int_equal (kept (fx), -1);
  /* Nobody asks: whatever the admin writes stays. */
  put (fx->switch_path, "0\n");
  run (fx, "x", CP_ASK_NONE, NULL);
  assert_int_equal (switch_value (fx), 0);
}

/* Idempotent: a run that finds the switch where it should be writes nothing
 * (the file's mtime does not move). */
static void
test_idempotent (void **state)
{
  struct fixture *fx = *state;
  run (fx, "a", CP_ASK_ON, NULL);
  struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
  assert_int_equal (utimensat (AT_FDCWD, fx->switch_path, old, 0), 0);
  run (fx, "b", CP_ASK_ON, NULL);
  struct stat st;
  assert_int_equal (stat (fx->switch_path, &st), 0);
  assert_int_equal (st.st_mtim.tv_sec, 1000000000);
}

/* Each write of the switch is told to the events observer (events.h: the CLI's
 * journal keeps it), once, with the line the log has; a run that writes nothing
 * tells nothing. */
static int switch_events;
static char switch_what[256];

static void
count_switch (const struct cp_event *ev, void *data)
{
  (void) data;
  if (ev->kind != CP_EVENT_SWITCH)
    return;
  switch_events++;
  snprintf (switch_what, sizeof switch_what, "%s", ev->what);
}

static void
test_switch_event (void **state)
{
  struct fixture *fx = *state;
  switch_events = 0;
  cp_events_set_observer (count_switch, NULL);
  run (fx, "a", CP_ASK_ON, NULL);
  assert_int_equal (switch_events, 1);
  assert_non_null (strstr (switch_what, "off -> on"));
  run (fx, "b", CP_ASK_ON, NULL); /* already on: nothing written */
  assert_int_equal (switch_events, 1);
  run (fx, NULL, CP_ASK_NONE, "a");
  run (fx, NULL, CP_ASK_NONE, "b");
  assert_int_equal (switch_events, 2);
  assert_non_null (strstr (switch_what, "on -> off"));
  cp_events_set_observer (NULL, NULL);
}

/* leave: never written, even with containers asking; but a value an earlier
 * on-demand run kept is given back. */
static void
test_leave (void **state)
{
  struct fixture *fx = *state;
  fx->hc.sched_cache = CP_SCHED_CACHE_LEAVE;
  struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
  assert_int_equal (utimensat (AT_FDCWD, fx->switch_path, old, 0), 0);
  run (fx, "a", CP_ASK_ON, NULL);
  run (fx, "b", CP_ASK_ON, NULL);
  struct stat st;
  assert_int_equal (stat (fx->switch_path, &st), 0);
  assert_int_equal (st.st_mtim.tv_sec, 1000000000);
  assert_int_equal (switch_value (fx), 0);
  assert_int_equal (kept (fx), -1);

  fx->hc.sched_cache = CP_SCHED_CACHE_ON_DEMAND;
  run (fx, "c", CP_ASK_ON, NULL);
  assert_int_equal (switch_value (fx), 1);
  fx->hc.sched_cache = CP_SCHED_CACHE_LEAVE; /* the admin changes the setting */
  run (fx, "d", CP_ASK_NONE, NULL);
  assert_int_equal (switch_value (fx), 0);
  assert_int_equal (kept (fx), -1);
}

/* leave with nobody asking and nothing kept: no probe at all, so a host that
 * never uses the switch never pays for reading mountinfo and debugfs.  The
 * kernel root is one where any probe fails loudly (it does not exist). */
static void
test_leave_no_probe (void **state)
{
  struct fixture *fx = *state;
  cp_error_t err = NULL;
  struct cp_schedctl sc;
  free (fx->hc.kernel_root);
  fx->hc.kernel_root = cp_xasprintf ("%s/absent", fx->dir);
  fx->hc.sched_cache = CP_SCHED_CACHE_ON_DEMAND; /* probes, and fails */
  assert_int_equal (cp_schedctl_open (&fx->hc, &sc, &err), -1);
  cp_error_free (&err);
  cp_schedctl_close (&sc);

  fx->hc.sched_cache = CP_SCHED_CACHE_LEAVE;
  assert_int_equal (cp_schedctl_open (&fx->hc, &sc, &err), 0);
  assert_int_equal (cp_schedctl_check_request (&sc, "a", CP_ASK_NONE, true, &err), 0);
  struct cp_ledger *l = ledger_open (fx);
  cp_schedctl_ledger_opened (&sc, l);
  assert_int_equal (cp_schedctl_sync (&sc, l, &err), 0);
  assert_true (sc.deferred); /* only a probe clears it */
  assert_int_equal (sc.handle.fd, -1);
  /* A container that asks is logged with the switch's state: that probes (here
     the failure is a warning, and under leave nothing is refused). */
  assert_int_equal (cp_schedctl_check_request (&sc, "b", CP_ASK_ON, true, &err), 0);
  assert_false (sc.deferred);
  cp_ledger_close (l);
  cp_schedctl_close (&sc);
}

static void
test_always_never (void **state)
{
  struct fixture *fx = *state;
  fx->hc.sched_cache = CP_SCHED_CACHE_ALWAYS;
  run (fx, "a", CP_ASK_OFF, NULL);
  assert_int_equal (switch_value (fx), 1);
  assert_int_equal (kept (fx), -1);
  fx->hc.sched_cache = CP_SCHED_CACHE_NEVER;
  run (fx, "b", CP_ASK_ON, NULL);
  assert_int_equal (switch_value (fx), 0);
}

/* always and never set the switch whatever was found, but keep a value an
 * earlier on-demand run kept: the setting after them gives it back (found on,
 * then never, then leave: on again). */
static void
test_always_never_keep (void **state)
{
  struct fixture *fx = *state;
  static const struct
  {
    int found;
    enum cp_sched_cache_setting between;
  } cases[] = { { 1, CP_SCHED_CACHE_NEVER }, { 0, CP_SCHED_CACHE_ALWAYS } };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      const char *name = cp_sched_cache_setting_name (cases[i].between);
      put (fx->switch_path, cases[i].found ? "1\n" : "0\n");
      fx->hc.sched_cache = CP_SCHED_CACHE_ON_DEMAND;
      run (fx, "a", CP_ASK_ON, NULL);
      assert_int_equal (kept (fx), cases[i].found);
      fx->hc.sched_cache = cases[i].between;
      run (fx, "b", CP_ASK_NONE, NULL);
      assert_int_equal (switch_value (fx), cases[i].between == CP_SCHED_CACHE_ALWAYS);
      if (kept (fx) != cases[i].found)
        fail_msg ("found %d, then %s: the value to give back is %d", cases[i].found, name, kept (fx));
      fx->hc.sched_cache = CP_SCHED_CACHE_LEAVE;
      run (fx, NULL, CP_ASK_NONE, "a");
      run (fx, NULL, CP_ASK_NONE, "b");
      if (switch_value (fx) != cases[i].found)
        fail_msg ("found %d, then %s, then leave: the switch is %d", cases[i].found, name, switch_value (fx));
      assert_int_equal (kept (fx), -1);
    }
}

/* The value to give back outlives the ledger: ledger.json truncated, rewritten
 * with a version no reader knows, removed, or removed with its previous
 * generation: after the last asker's poststop and one more container, the switch
 * is back where it was found (it stayed on for good when the value lived only in
 * ledger.json), and the file holding it is gone. */
static void
test_restore_outlives_ledger (void **state)
{
  struct fixture *fx = *state;
  static const char *const damages[] = { "truncated", "unknown version", "removed", "removed with .prev" };
  cleanup_free char *file = cp_xasprintf ("%s/%s", fx->state, CP_LEDGER_FILE);
  cleanup_free char *prev = cp_xasprintf ("%s/%s", fx->state, CP_LEDGER_PREV_FILE);
  cleanup_free char *restore = cp_xasprintf ("%s/%s", fx->state, CP_LEDGER_RESTORE_FILE);
  for (size_t i = 0; i < CP_ARRAY_SIZE (damages); i++)
    {
      put (fx->switch_path, "0\n");
      run (fx, "a", CP_ASK_ON, NULL);
      assert_int_equal (switch_value (fx), 1);
      assert_int_equal (kept (fx), 0);
      if (i == 0)
        assert_int_equal (truncate (file, 0), 0);
      else if (i == 1)
        put (file, "{\"version\":99,\"entries\":[]}");
      else
        assert_int_equal (unlink (file), 0);
      if (i == 3)
        assert_int_equal (unlink (prev), 0);
      run (fx, NULL, CP_ASK_NONE, "a"); /* a's poststop */
      run (fx, "p", CP_ASK_NONE, NULL); /* one more container */
      if (switch_value (fx) != 0)
        fail_msg ("ledger.json %s: the switch stays on", damages[i]);
      assert_int_equal (kept (fx), -1);
      assert_int_equal (access (restore, F_OK), -1);
      run (fx, NULL, CP_ASK_NONE, "p");
    }
}

/* sched_cache_restore holds the value while cachepin holds the switch; one that
 * is not "on" or "off" is set aside (and logged), and ledger.json's copy is what
 * is given back then. */
static void
test_restore_file_damaged (void **state)
{
  struct fixture *fx = *state;
  cleanup_free char *restore = cp_xasprintf ("%s/%s", fx->state, CP_LEDGER_RESTORE_FILE);
  cleanup_free char *aside = cp_xasprintf ("%s/%s", fx->state, CP_LEDGER_RESTORE_CORRUPT_FILE);
  run (fx, "a", CP_ASK_ON, NULL);
  cleanup_free char *text = slurp (restore);
  assert_string_equal (text, "off\n");
  put (restore, "maybe\n");
  assert_int_equal (kept (fx), 0); /* ledger.json's copy */
  assert_int_equal (access (aside, F_OK), 0);
  run (fx, NULL, CP_ASK_NONE, "a");
  assert_int_equal (switch_value (fx), 0);
  assert_int_equal (access (restore, F_OK), -1);
}

/* The request check: a strict container asking on where the switch cannot be
 * written is refused (nothing has been written yet); not strict, or under leave
 * or never, it is not. */
static void
test_check_request (void **state)
{
  struct fixture *fx = *state;
  cp_error_t err = NULL;
  struct cp_schedctl sc;
  /* A kernel without CAS: no llc_balancing, a features file without the token. */
  cleanup_free char *cmd = cp_xasprintf ("rm -rf %s/" CP_SCHED_CAS_DIR, fx->root);
  assert_int_equal (system (cmd), 0);
  cleanup_free char *features = cp_xasprintf ("%s/" CP_SCHED_SCHED_DIR "/features", fx->root);
  put (features, "GENTLE_FAIR_SLEEPERS START_DEBIT\n");
  assert_int_equal (cp_schedctl_open (&fx->hc, &sc, &err), 0);
  assert_int_equal (sc.cas.avail, CP_SCHED_UNSUPPORTED);
  assert_int_equal (cp_schedctl_check_request (&sc, "x", CP_ASK_ON, true, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  tu_assert_contains (cp_error_message (err), "cachepin.io/sched-cache=on: cache-aware scheduling is not in this kernel");
  cp_error_free (&err);
  assert_int_equal (cp_schedctl_check_request (&sc, "x", CP_ASK_ON, false, &err), 0);
  assert_int_equal (cp_schedctl_check_request (&sc, "x", CP_ASK_OFF, true, &err), 0);
  sc.setting = CP_SCHED_CACHE_LEAVE;
  assert_int_equal (cp_schedctl_check_request (&sc, "x", CP_ASK_ON, true, &err), 0);
  sc.setting = CP_SCHED_CACHE_NEVER;
  assert_int_equal (cp_schedctl_check_request (&sc, "x", CP_ASK_ON, true, &err), 0);
  /* Syncing with nothing open writes nothing and fails nothing. */
  struct cp_ledger *l = ledger_open (fx);
  assert_int_equal (cp_schedctl_sync (&sc, l, &err), 0);
  cp_ledger_close (l);
  cp_schedctl_close (&sc);
}

#ifdef CACHEPIN_FAULT_INJECTION
static enum cp_schedctl_fault_point kill_at;

static void
kill_hook (enum cp_schedctl_fault_point point, void *data)
{
  (void) data;
  if (point == kill_at)
    raise (SIGKILL);
}

/* A run killed between any two steps of taking or giving back the switch: the
 * next run (whatever it is) leaves the switch and the ledger as if the killed
 * run had finished. */
static void
test_crash (void **state)
{
  struct fixture *fx = *state;
  static const enum cp_schedctl_fault_point points[] = { CP_SCHEDCTL_FAULT_KEPT, CP_SCHEDCTL_FAULT_WRITTEN };
  for (size_t i = 0; i < CP_ARRAY_SIZE (points); i++)
    {
      /* Taking it: killed while turning it on for "a". */
      put (fx->switch_path, "0\n");
      kill_at = points[i];
      pid_t child = fork ();
      assert_true (child >= 0);
      if (child == 0)
        {
          cp_schedctl_set_fault_hook (kill_hook, NULL);
          run (fx, "a", CP_ASK_ON, NULL);
          _exit (0);
        }
      int status;
      assert_int_equal (waitpid (child, &status, 0), child);
      assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
      assert_int_equal (kept (fx), 0); /* committed before the write */
      run (fx, NULL, CP_ASK_NONE, NULL);
      assert_int_equal (switch_value (fx), 1);
      assert_int_equal (kept (fx), 0);

      /* Giving it back: killed while the last asker goes. */
      child = fork ();
      assert_true (child >= 0);
      if (child == 0)
        {
          cp_schedctl_set_fault_hook (kill_hook, NULL);
          run (fx, NULL, CP_ASK_NONE, "a");
          _exit (0);
        }
      assert_int_equal (waitpid (child, &status, 0), child);
      /* KEPT is not reached when giving back (nothing new to keep): the run ends. */
      if (points[i] == CP_SCHEDCTL_FAULT_WRITTEN)
        {
          assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
          assert_int_equal (kept (fx), 0); /* not forgotten before the ledger says so */
        }
      run (fx, NULL, CP_ASK_NONE, NULL);
      assert_int_equal (switch_value (fx), 0);
      assert_int_equal (kept (fx), -1);
    }
}
#endif

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_decide),
    cmocka_unit_test_setup_teardown (test_on_demand_refcount, setup, teardown),
    cmocka_unit_test_setup_teardown (test_on_demand_found_on, setup, teardown),
    cmocka_unit_test_setup_teardown (test_idempotent, setup, teardown),
    cmocka_unit_test_setup_teardown (test_switch_event, setup, teardown),
    cmocka_unit_test_setup_teardown (test_leave, setup, teardown),
    cmocka_unit_test_setup_teardown (test_leave_no_probe, setup, teardown),
    cmocka_unit_test_setup_teardown (test_always_never, setup, teardown),
    cmocka_unit_test_setup_teardown (test_always_never_keep, setup, teardown),
    cmocka_unit_test_setup_teardown (test_restore_outlives_ledger, setup, teardown),
    cmocka_unit_test_setup_teardown (test_restore_file_damaged, setup, teardown),
    cmocka_unit_test_setup_teardown (test_check_request, setup, teardown),
#ifdef CACHEPIN_FAULT_INJECTION
    cmocka_unit_test_setup_teardown (test_crash, setup, teardown),
#endif
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
