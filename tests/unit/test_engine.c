/* The engine's calls a front end makes (hook/engine/admission.h, placer.h):
 * admission's failure policy (strict x on_error), its checks on plain inputs,
 * and a decision made before the container's cgroup exists, which must write
 * nothing under the cgroup root. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "admission.h"
#include "hostconfig.h"
#include "ledger.h"
#include "ledger_store.h"
#include "log.h"
#include "placer.h"
#include "proc.h"
#include "recheck.h"
#include "topo.h"
#include "unitpin.h"

/* ---- the failure policy ----------------------------------------------------------- */

static cp_error_t
input_error (void)
{
  cp_error_t e = NULL;
  cp_fail_input (&e, "what went wrong");
  return e;
}

/* Every cell of strict x on_error (and no host config at all), for the host's
   failure and the container's own: who fails, and with what kind. */
static void
test_policy_matrix (void **state)
{
  (void) state;
  struct cp_hostconfig allow, deny;
  cp_hostconfig_init (&allow);
  cp_hostconfig_init (&deny);
  deny.on_error = CP_ON_ERROR_DENY;
  static const struct
  {
    int hc; /* 0: none (the defaults), 1: on_error=allow, 2: on_error=deny */
    bool strict;
    int host_ret; /* cp_admission_host_failure() */
  } cases[] = {
    { 0, false, 0 },  { 0, true, -1 }, { 1, false, 0 },
    { 1, true, -1 },  { 2, false, -1 }, { 2, true, -1 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      const struct cp_hostconfig *hc = cases[i].hc == 0 ? NULL : cases[i].hc == 1 ? &allow : &deny;
      /* The host's failure: starts unplaced (the error consumed) or fails as a
         runtime error, never the input error (exit 2) it was where found. */
      cp_error_t e = input_error ();
      int r = cp_admission_host_failure (hc, cases[i].strict, "c", &e);
      if (r != cases[i].host_ret)
        fail_msg ("case %zu: host failure returned %d, expected %d", i, r, cases[i].host_ret);
      if (r == 0)
        assert_null (e);
      else
        {
          assert_non_null (e);
          assert_int_equal (cp_error_kind (e), CP_ERR_RUNTIME);
          assert_string_equal (cp_error_message (e), "what went wrong");
        }
      cp_error_free (&e);
      /* An unsatisfiable request stays one. */
      cp_fail_unsatisfiable (&e, "no room");
      r = cp_admission_host_failure (hc, cases[i].strict, "c", &e);
      assert_int_equal (r, cases[i].host_ret);
      if (r < 0)
        assert_int_equal (cp_error_kind (e), CP_ERR_UNSATISFIABLE);
      cp_error_free (&e);
      /* The container's own error: fails it whatever strict and on_error say,
         as the input error it is. */
      e = input_error ();
      assert_int_equal (cp_admission_refuse ("c", &e), -1);
      assert_int_equal (cp_error_kind (e), CP_ERR_INPUT);
      cp_error_free (&e);
      /* The primitive, at the level the broken host config uses. */
      e = input_error ();
      r = cp_admission_allow_or_fail (hc, cases[i].strict, "c", CP_LOG_ERROR, &e);
      assert_int_equal (r, cases[i].host_ret);
      assert_int_equal (r == 0, e == NULL);
      if (r < 0)
        assert_int_equal (cp_error_kind (e), CP_ERR_INPUT); /* not reclassified */
      cp_error_free (&e);
    }
  cp_hostconfig_free (&allow);
  cp_hostconfig_free (&deny);
}

static void
test_exhausted (void **state)
{
  (void) state;
  static const int yes[] = { EMFILE, ENFILE, ENOMEM, EFBIG, ENOSPC, EDQUOT };
  static const int no[] = { 0, EACCES, ENOENT, EIO, EINVAL, ELOOP };
  for (size_t i = 0; i < CP_ARRAY_SIZE (yes) + CP_ARRAY_SIZE (no); i++)
    {
      bool want = i < CP_ARRAY_SIZE (yes);
      int e = want ? yes[i] : no[i - CP_ARRAY_SIZE (yes)];
      cp_error_t err = NULL;
      cp_fail_errno (&err, e, "x");
      if (cp_admission_exhausted (err) != want)
        fail_msg ("errno %d: exhausted %d, expected %d", e, !want, want);
      cp_error_free (&err);
    }
}

/* ---- the checks --------------------------------------------------------------------- */

static void
test_admit_pid (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  tu_check_error ("init", cp_admit_pid (1, &err), &err, "state: pid: 1 is the init of this pid namespace, not a "
                                                         "container's init");
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  cp_error_free (&err);
  cleanup_free char *self = cp_xasprintf ("state: pid: %d is this hook, not a container's init", (int) getpid ());
  tu_check_error ("self", cp_admit_pid (getpid (), &err), &err, self);
  cp_error_free (&err);
  cleanup_free char *parent = cp_xasprintf ("state: pid: %d is the runtime running this hook, not a container's init",
                                            (int) getppid ());
  if (getppid () != 1)
    {
      tu_check_error ("parent", cp_admit_pid (getppid (), &err), &err, parent);
      cp_error_free (&err);
    }
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    _exit (0);
  assert_int_equal (cp_admit_pid (child, &err), 0);
  waitpid (child, NULL, 0);
}

static void
test_admit_pid_cgroup (void **state)
{
  (void) state;
  struct cp_cgroup cg = { .version = 2, .mount = "/sys/fs/cgroup", .path = "/pod/ctr/init", .dirfd = -1,
                          .mountfd = -1 };
  cp_error_t err = NULL;
  assert_int_equal (cp_admit_pid_cgroup (42, &cg, NULL, &err), 0);
  assert_int_equal (cp_admit_pid_cgroup (42, &cg, "/pod/ctr", &err), 0);
  assert_int_equal (cp_admit_pid_cgroup (42, &cg, "/pod/ctr/init", &err), 0);
  tu_check_error ("outside", cp_admit_pid_cgroup (42, &cg, "/pod/ct", &err), &err,
                  "state: pid: process 42 is in cgroup /pod/ctr/init, outside /pod/ct, the cgroup config.json's "
                  "linux.cgroupsPath names");
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  cp_error_free (&err);
}

/* cp_admit() with the pid of this pid namespace's init: refused whatever strict
   and on_error say (the state contradicts itself), before anything is read. */
static void
test_admit_refuses_init (void **state)
{
  (void) state;
  struct cp_hostconfig hc;
  cp_hostconfig_init (&hc);
  struct cp_container_request creq = { 0 };
  cp_request_init (&creq.req);
  struct cp_admission a = { .id = "c", .pid = 1, .creq = &creq };
  struct cp_admitted out;
  cp_error_t err = NULL;
  assert_int_equal (cp_admit (&hc, &a, &out, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_null (out.cgroup);
  cp_error_free (&err);
  cp_hostconfig_free (&hc);
}

/* ---- decide without a cgroup ----------------------------------------------------------- */

struct fixture
{
  char *dir, *state, *cgroot, *kernel;
  struct cp_hostconfig hc;
};

static int
setup (void **state)
{
  struct fixture *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("engine");
  fx->state = cp_xasprintf ("%s/state", fx->dir);
  fx->cgroot = cp_xasprintf ("%s/cgroup", fx->dir);
  fx->kernel = cp_xasprintf ("%s/kernel", fx->dir);
  cleanup_free char *cmd = cp_xasprintf ("mkdir -p %s %s/pod %s", fx->state, fx->cgroot, fx->kernel);
  assert_int_equal (system (cmd), 0);
  assert_int_equal (chmod (fx->state, 0700), 0);
  /* What a cgroup root holds: a parent with its cpuset. */
  cleanup_free char *cpus = cp_xasprintf ("%s/pod/cpuset.cpus", fx->cgroot);
  tu_write_file (cpus, "0\n", 2);
  tu_hostconfig (&fx->hc, fx->state, fx->kernel);
  cp_log_set_level (CP_LOG_ERROR);
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
  free (fx->state);
  free (fx->cgroot);
  free (fx->kernel);
  free (fx);
  return 0;
}

/* Every name under DIR with its size and mtime, one line each, sorted. */
static char *
tree (const char *dir)
{
  cleanup_free char *cmd = cp_xasprintf ("cd %s && find . -printf '%%p %%y %%s %%T@\\n' | sort", dir);
  FILE *p = popen (cmd, "r");
  assert_non_null (p);
  char *buf = NULL;
  size_t cap = 0, len = 0;
  char chunk[4096];
  size_t n;
  while ((n = fread (chunk, 1, sizeof chunk, p)) > 0)
    {
      buf = realloc (buf, cap = len + n + 1);
      memcpy (buf + len, chunk, n);
      len += n;
    }
  assert_int_equal (pclose (p), 0);
  if (buf == NULL)
    return cp_xstrdup ("");
  buf[len] = '\0';
  return buf;
}

/* A front end that decides before the container's cgroup exists (a plugin of
   the engine at container creation): the decision is recorded in the ledger,
   within what the topology allows, and nothing under the cgroup root is
   written, by decide or by apply. */
static void
test_decide_without_cgroup (void **state)
{
  struct fixture *fx = *state;
  cleanup_free char *before = tree (fx->cgroot);
  struct cp_container_request creq = { .cpus_source = CP_CPUS_SOURCE_ANNOTATION };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  struct cp_target t = { .id = "ctr", .cgroup_mount = fx->cgroot, .cgroup_path = "/pod/ctr" };
  cp_error_t err = NULL;
  struct cp_placer *p = NULL;
  if (cp_placer_open (&fx->hc, &t, &creq, &p, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  struct cp_sandbox sb;
  if (cp_placer_sandbox (p, &sb, &err) < 0)
    fail_msg ("sandbox: %s", cp_error_message (err));
  assert_true (sb.state_dirfd >= 0);
  assert_int_equal (sb.cgroup_mountfd, -1); /* no cgroup to write into */
  if (cp_placer_decide (p, &err) < 0)
    fail_msg ("decide: %s", cp_error_message (err));
  if (cp_placer_apply (p, &err) < 0)
    fail_msg ("apply: %s", cp_error_message (err));
  struct cp_plan *plan = cp_placer_take_plan (p);
  assert_non_null (plan);
  cp_placer_close (p);

  /* One CPU, one the topology allows. */
  struct cp_topo *topo = tu_topo ("host");
  assert_int_equal (hwloc_bitmap_weight (plan->cpus), 1);
  assert_true (hwloc_bitmap_isincluded (plan->cpus, topo->allowed));
  cp_topo_free (topo);
  /* Recorded, for the cgroup the container will have. */
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  const struct cp_ledger_entry *e = cp_ledger_find (l, "ctr");
  assert_non_null (e);
  assert_string_equal (e->cgroup_mount, fx->cgroot);
  assert_string_equal (e->cgroup, "/pod/ctr");
  assert_true (hwloc_bitmap_isequal (e->cpus, plan->cpus));
  cp_ledger_close (l);
  cp_plan_free (plan);
  /* Nothing written, made or touched under the cgroup root. */
  cleanup_free char *after = tree (fx->cgroot);
  assert_string_equal (before, after);
}

/* ledger.json as the state directory holds it now ("" when there is none). */
static char *
ledger_text (const struct fixture *fx)
{
  cleanup_free char *path = cp_xasprintf ("%s/ledger.json", fx->state);
  FILE *f = fopen (path, "r");
  if (f == NULL)
    return cp_xstrdup ("");
  char *buf = cp_xcalloc (1, 1 << 20);
  size_t n = fread (buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose (f);
  return buf;
}

/* A batch (placer.h: the NRI plugin's Synchronize): each decision sees the ones
   before it (exclusive CPUs never twice), nothing reaches ledger.json before the
   commit, everything after it, and what was decided after the last commit is
   dropped with the lock. */
static void
test_batch_commits_once (void **state)
{
  struct fixture *fx = *state;
  struct cp_container_request creq = { .cpus_source = CP_CPUS_SOURCE_ANNOTATION };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  cleanup_error cp_error_t err = NULL;
  /* Two CPUs, whatever this host has: the batch fills them (an XML file of a
     synthetic machine, as the host config names one). */
  hwloc_topology_t two;
  assert_int_equal (hwloc_topology_init (&two), 0);
  assert_int_equal (hwloc_topology_set_synthetic (two, "pack:1 core:2 pu:1"), 0);
  assert_int_equal (hwloc_topology_load (two), 0);
  cleanup_free char *xml = cp_xasprintf ("%s/two.xml", fx->dir);
  assert_int_equal (hwloc_topology_export_xml (two, xml, 0), 0);
  hwloc_topology_destroy (two);
  free (fx->hc.topology);
  fx->hc.topology = cp_xstrdup (xml);
  struct cp_placer_batch *b = NULL;
  if (cp_placer_batch_open (&fx->hc, &b, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  cleanup_bitmap hwloc_bitmap_t seen = cp_bitmap_new ();
  const char *ids[] = { "b-one", "b-late" }; /* the two CPUs */
  for (size_t i = 0; i < 2; i++)
    {
      cleanup_free char *path = cp_xasprintf ("/pod/%s", ids[i]);
      struct cp_target t = { .id = ids[i], .cgroup_mount = fx->cgroot, .cgroup_path = path };
      struct cp_plan *plan = NULL;
      if (cp_placer_batch_decide (b, &t, &creq, &plan, &err) < 0)
        fail_msg ("decide %s: %s", ids[i], cp_error_message (err));
      assert_int_equal (hwloc_bitmap_weight (plan->cpus), 1);
      assert_false (hwloc_bitmap_intersects (seen, plan->cpus)); /* held by an earlier one of the batch */
      hwloc_bitmap_or (seen, seen, plan->cpus);
      cp_plan_free (plan);
      if (i > 0)
        continue;
      cleanup_free char *before = ledger_text (fx);
      assert_null (strstr (before, "b-one"));
      if (cp_placer_batch_commit (b, &err) < 0)
        fail_msg ("commit: %s", cp_error_message (err));
      cleanup_free char *after = ledger_text (fx);
      assert_non_null (strstr (after, "b-one"));
    }
  /* The host is full now for the batch, b-late's CPU held though not committed. */
  struct cp_target third = { .id = "b-three", .cgroup_mount = fx->cgroot, .cgroup_path = "/pod/b-three" };
  struct cp_plan *none = NULL;
  tu_check_error ("full", cp_placer_batch_decide (b, &third, &creq, &none, &err), &err,
                  "cannot place 1 CPU (smt=pe0-first, mode=exclusive): only 0 usable CPUs are free");
  cp_error_free (&err);
  /* A target with a cgroup made (or a pid) is not a batch's. */
  struct cp_target made = { .id = "b-pid", .cgroup_mount = fx->cgroot, .cgroup_path = "/pod/b-pid", .pid = 1 };
  tu_check_error ("not a batch's", cp_placer_batch_decide (b, &made, &creq, &none, &err), &err,
                  "b-pid: a batch places targets whose cgroup is named and not made yet");
  cp_placer_batch_close (b);
  cleanup_free char *closed = ledger_text (fx);
  assert_null (strstr (closed, "b-late"));
  assert_non_null (strstr (closed, "b-one"));
}

/* Decide TARGET (an id, a cgroup under the fixture's root) for one CPU: 0 and
   *PLAN, or < 0 and *ERR. */
static int
decide_one (struct fixture *fx, const char *id, struct cp_plan **plan, cp_error_t *err)
{
  struct cp_container_request creq = { .cpus_source = CP_CPUS_SOURCE_ANNOTATION };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  cleanup_free char *path = cp_xasprintf ("/pod/%s", id);
  struct cp_target t = { .id = id, .cgroup_mount = fx->cgroot, .cgroup_path = path };
  struct cp_placer *p = NULL;
  int r = cp_placer_open (&fx->hc, &t, &creq, &p, err);
  if (r == 0)
    r = cp_placer_decide (p, err);
  if (r == 0)
    *plan = cp_placer_take_plan (p);
  cp_placer_close (p);
  return r;
}

/* The preview (`cachepin plan` on this host) is the decision the next placement
   makes: with one CPU held by a placed target, it names the CPU the next
   decide gives (or fails as it does), and it writes nothing in the state
   directory, nor creates one. */
static void
test_preview_is_the_next_decision (void **state)
{
  struct fixture *fx = *state;
  struct cp_container_request creq = { .cpus_source = "--cpus" };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  struct cp_target plan_t = { .id = "plan:" };
  cp_error_t err = NULL;

  /* No state directory yet: the preview leaves it absent. */
  cleanup_free char *rm = cp_xasprintf ("rmdir %s", fx->state);
  assert_int_equal (system (rm), 0);
  struct cp_preview pv;
  struct cp_plan *first = NULL;
  if (cp_preview_open (&fx->hc, NULL, true, &plan_t, &creq, &pv, &err) < 0
      || cp_preview_place (&pv, &plan_t, &creq, NULL, &first, &err) < 0)
    fail_msg ("preview: %s", cp_error_message (err));
  assert_string_equal (pv.ledger_state, "missing");
  cp_preview_clear (&pv);
  assert_int_equal (access (fx->state, F_OK), -1);

  struct cp_plan *a = NULL;
  if (decide_one (fx, "a", &a, &err) < 0)
    fail_msg ("decide a: %s", cp_error_message (err));
  assert_true (hwloc_bitmap_isequal (a->cpus, first->cpus)); /* the empty ledger's answer */

  cleanup_free char *before = tree (fx->state);
  struct cp_plan *next = NULL;
  int pr = cp_preview_open (&fx->hc, NULL, true, &plan_t, &creq, &pv, &err);
  assert_int_equal (pr, 0);
  assert_int_equal (cp_ledger_count (pv.ledger), 1);
  assert_true (hwloc_bitmap_isincluded (a->cpus, pv.held));
  pr = cp_preview_place (&pv, &plan_t, &creq, NULL, &next, &err);
  cp_preview_clear (&pv);
  cleanup_free char *after = tree (fx->state);
  assert_string_equal (before, after);
  cp_error_t perr = err;
  err = NULL;

  struct cp_plan *b = NULL;
  int dr = decide_one (fx, "b", &b, &err);
  assert_int_equal (pr, dr);
  if (pr == 0)
    {
      assert_true (hwloc_bitmap_isequal (next->cpus, b->cpus));
      assert_false (hwloc_bitmap_intersects (next->cpus, a->cpus));
    }
  else
    assert_int_equal (cp_error_kind (perr), cp_error_kind (err)); /* a 1-CPU host: both refuse */
  cp_error_free (&perr);
  cp_error_free (&err);
  cp_plan_free (first);
  cp_plan_free (next);
  cp_plan_free (a);
  cp_plan_free (b);
}

/* Without a cgroup the ledger still needs to know where the container will be. */
static void
test_open_needs_cgroup_path (void **state)
{
  struct fixture *fx = *state;
  struct cp_container_request creq = { .cpus_source = CP_CPUS_SOURCE_ANNOTATION };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  struct cp_target t = { .id = "ctr" };
  cp_error_t err = NULL;
  struct cp_placer *p = NULL;
  tu_check_error ("no cgroup path", cp_placer_open (&fx->hc, &t, &creq, &p, &err), &err,
                  "ctr: no cgroup to record (cgroup_mount and cgroup_path)");
  assert_null (p);
  cp_error_free (&err);
}

/* ---- the recheck window of a long-running front end (recheck.h) ---------------------- */

static long long fake_ms;
static long long
fake_clock (void)
{
  return fake_ms;
}

/* Put an entry ID for a live child process into the fixture's ledger (another
   writer's: the hook's), and return the child. */
static pid_t
put_live (struct fixture *fx, const char *id)
{
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      pause ();
      _exit (0);
    }
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  unsigned long long start = 0;
  bool zombie = false;
  if (cp_proc_start_time (child, &start, &zombie, &err) < 0 || cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  cleanup_free char *cgroup = cp_xasprintf ("/pod/%s", id);
  struct cp_ledger_entry e = { .id = (char *) id, .cgroup_mount = fx->cgroot, .cgroup = cgroup, .pid = child,
                               .start_time = start, .mode = CP_MODE_SHARED, .cpus = tu_set ("0"),
                               .held = tu_set (""), .mems = tu_set ("0"), .placed_at = 1700000000 };
  if (cp_ledger_put (l, &e, &err) < 0 || cp_ledger_commit (l, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  cp_ledger_close (l);
  hwloc_bitmap_free (e.cpus);
  hwloc_bitmap_free (e.held);
  hwloc_bitmap_free (e.mems);
  return child;
}

static void
end_child (pid_t child)
{
  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
}

/* Whether a placement's reconcile (cp_placer_open_ledger) keeps ID. */
static bool
kept (struct fixture *fx, const char *id)
{
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (&fx->hc, &l, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  bool found = cp_ledger_find (l, id) != NULL;
  cp_ledger_close (l);
  return found;
}

/* An entry found alive is checked again only once the window has passed: its
   container's death is seen by the window's end, not before; an entry new to
   this process is checked at once; without a window, at every placement. */
static void
test_recheck_window (void **state)
{
  struct fixture *fx = *state;
  fake_ms = 1000000;
  cp_placer_recheck_after (CP_PLACER_RECHECK_SECONDS, fake_clock);
  pid_t a = put_live (fx, "a");
  assert_true (kept (fx, "a")); /* checked: alive, remembered */
  end_child (a);
  fake_ms += 2000; /* within the window (its second half starts at 2.5 s) */
  assert_true (kept (fx, "a"));
  pid_t b = put_live (fx, "b"); /* new to this process: checked now */
  end_child (b);
  assert_false (kept (fx, "b"));
  fake_ms += CP_PLACER_RECHECK_SECONDS * 1000 - 2000; /* the window has passed */
  assert_false (kept (fx, "a"));

  cp_placer_recheck_after (0, NULL);
  pid_t c = put_live (fx, "c");
  assert_true (kept (fx, "c"));
  end_child (c);
  assert_false (kept (fx, "c"));
}

/* The hook meeting the NRI plugin's placement of the same container (a pod on the
   `cachepin` runtime handler while the plugin runs): the plugin's entry (no pid,
   its cgroup's inode not yet known) is taken over, its CPU kept where a choice
   of the hook's own would be another (CPU 0, the first free), and recorded with
   the hook's pid.  Not taken over: a target without a pid, CPUs outside what the
   target may get (the spec's cpuset wins), another cgroup's inode, an `apply:`
   entry. */
static void
test_take_over_plugin_entry (void **state)
{
  struct fixture *fx = *state;
  struct cp_topo *topo = tu_topo ("pack:1 l3:2 core:1 pu:1");
  cleanup_bitmap hwloc_bitmap_t all = tu_set ("0-1"), one = tu_set ("1"), zero = tu_set ("0"), mems = tu_set ("0");
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  struct cp_ledger_entry e = { .id = "ctr", .cgroup_mount = fx->cgroot, .cgroup = "/pod/ctr", .mode = CP_MODE_EXCLUSIVE,
                               .cpus = one, .held = one, .mems = mems, .placed_at = 1 };
  struct cp_ledger_entry applied = e;
  applied.id = "apply:/pod/x";
  applied.cgroup = "/pod/x";
  applied.cpus = applied.held = zero;
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);
  assert_int_equal (cp_ledger_put (l, &applied, &err), 0);
  struct cp_container_request creq = { .cpus_source = CP_CPUS_SOURCE_ANNOTATION };
  creq.req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  struct cp_target t = { .id = "ctr", .cgroup_mount = fx->cgroot, .cgroup_path = "/pod/ctr", .pid = getpid () };
  struct cp_plan *plan = NULL;

  struct cp_target other = t;
  other.pid = 0;
  assert_int_equal (cp_placer_take_over (l, &other, all, mems, &plan), 0);
  assert_int_equal (cp_placer_take_over (l, &t, zero, mems, &plan), 0);
  other = t;
  other.id = "apply:/pod/x";
  other.cgroup_path = "/pod/x";
  assert_int_equal (cp_placer_take_over (l, &other, all, mems, &plan), 0);
  e.cgroup_ino = 42;
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);
  t.cgroup_ino = 43;
  assert_int_equal (cp_placer_take_over (l, &t, all, mems, &plan), 0);
  assert_null (plan);
  t.cgroup_ino = 42;

  cp_ledger_remove (l, "apply:/pod/x");
  if (cp_placer_decide_in (l, topo, all, mems, &t, &creq, NULL, &plan, &err) < 0)
    fail_msg ("decide: %s", cp_error_message (err));
  tu_assert_set (plan->cpus, "1");
  tu_assert_contains (plan->reason, "taken over");
  const struct cp_ledger_entry *now = cp_ledger_find (l, "ctr");
  assert_non_null (now);
  assert_int_equal (now->pid, getpid ());
  assert_true (now->start_time > 0);
  assert_int_equal (now->cgroup_ino, 42);
  tu_assert_set (now->cpus, "1");
  cp_plan_free (plan);
  cp_ledger_close (l);
  cp_topo_free (topo);
}

/* A pinned unit's start (apply --unit-start) gets the CPUs its entry held since it
   last ran: CPU 1 where a fresh choice would be CPU 0 (the first free), recorded
   on the new cgroup's inode.  Not kept: another request (two CPUs), CPUs no
   longer allowed, an entry on another cgroup's inode (a running unit's), an entry
   not a unit's. */
static void
test_unit_keeps_its_cpus (void **state)
{
  struct fixture *fx = *state;
  struct cp_topo *topo = tu_topo ("pack:1 l3:2 core:1 pu:1");
  cleanup_bitmap hwloc_bitmap_t all = tu_set ("0-1"), one = tu_set ("1"), zero = tu_set ("0"), mems = tu_set ("0");
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  cleanup_free char *id = cp_unitpin_id ("web.service");
  assert_string_equal (id, "apply:unit:web.service");
  struct cp_ledger_entry e = { .id = id, .cgroup_mount = fx->cgroot, .cgroup = "/system.slice/web.service",
                               .mode = CP_MODE_EXCLUSIVE, .cpus = one, .held = one, .mems = mems, .placed_at = 1 };
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);
  assert_true (cp_ledger_entry_pending (cp_ledger_find (l, id)));
  struct cp_container_request creq = { .cpus_source = "--cpus" };
  creq.req = tu_req (2, CP_LEVEL_LLC, CP_SMT_PE0_FIRST, CP_MODE_EXCLUSIVE, false);
  struct cp_target t = { .id = id, .cgroup_mount = fx->cgroot, .cgroup_path = "/system.slice/web.service",
                         .cgroup_ino = 7 };
  struct cp_plan *plan = NULL;

  assert_int_equal (cp_unitpin_keep (l, &t, all, mems, &creq, &plan), 0); /* 2 CPUs asked */
  creq.req.cpus = 1;
  assert_int_equal (cp_unitpin_keep (l, &t, zero, mems, &creq, &plan), 0); /* CPU 1 not allowed */
  struct cp_target other = t;
  other.id = "apply:/system.slice/web.service";
  assert_int_equal (cp_unitpin_keep (l, &other, all, mems, &creq, &plan), 0);
  e.cgroup_ino = 6;
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);
  assert_false (cp_ledger_entry_pending (cp_ledger_find (l, id)));
  assert_int_equal (cp_unitpin_keep (l, &t, all, mems, &creq, &plan), 0); /* another cgroup runs it */
  assert_null (plan);
  e.cgroup_ino = 0;
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);

  if (cp_placer_decide_in (l, topo, all, mems, &t, &creq, NULL, &plan, &err) < 0)
    fail_msg ("decide: %s", cp_error_message (err));
  tu_assert_set (plan->cpus, "1");
  tu_assert_contains (plan->reason, "kept");
  const struct cp_ledger_entry *now = cp_ledger_find (l, id);
  assert_non_null (now);
  assert_int_equal (now->cgroup_ino, 7);
  tu_assert_set (now->cpus, "1");
  cp_plan_free (plan);
  cp_ledger_close (l);
  cp_topo_free (topo);
}

/* The unit's stop (release --unit-stop) holds its entry: the inode forgotten, so
   pending; an entry that is not a unit's is left alone. */
static void
test_unit_stop_holds (void **state)
{
  struct fixture *fx = *state;
  cleanup_bitmap hwloc_bitmap_t one = tu_set ("1"), mems = tu_set ("0");
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  cleanup_free char *id = cp_unitpin_id ("web.service");
  /* Its cgroup stands while ExecStopPost= runs: the fixture's root. */
  struct cp_ledger_entry e = { .id = id, .cgroup_mount = fx->cgroot, .cgroup = "/pod", .mode = CP_MODE_EXCLUSIVE,
                               .cpus = one, .held = one, .mems = mems, .placed_at = 1 };
  assert_int_equal (cp_ledger_put (l, &e, &err), 0);
  if (cp_ledger_commit (l, &err) < 0)
    fail_msg ("commit: %s", cp_error_message (err));
  cp_ledger_close (l);
  assert_int_equal (cp_unitpin_hold (&fx->hc, "apply:/x", &err), 0);
  if (cp_unitpin_hold (&fx->hc, id, &err) != 1)
    fail_msg ("hold: %s", err ? cp_error_message (err) : "not held");
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  const struct cp_ledger_entry *now = cp_ledger_find (l, id);
  assert_non_null (now);
  assert_int_equal (now->cgroup_ino, 0);
  assert_true (cp_ledger_entry_pending (now));
  tu_assert_set (now->cpus, "1");
  cp_ledger_close (l);
}

/* Whether a release of another container's id leaves ID in the ledger. */
static bool
kept_by_release (struct fixture *fx, const char *id)
{
  cp_error_t err = NULL;
  struct cp_placer *p = NULL;
  struct cp_release rel = { .id = "someone-else" };
  enum cp_release_result result;
  if (cp_placer_open_release (&fx->hc, &rel, &p, &err) < 0 || cp_placer_release_commit (p, &result, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  cp_placer_close (p);
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (fx->state, 1000, &l, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  bool found = cp_ledger_find (l, id) != NULL;
  cp_ledger_close (l);
  return found;
}

/* A release drops an entry whose pid is gone, except, with a window, one found
   alive within it: that one goes at the first release or placement after it. */
static void
test_recheck_window_release (void **state)
{
  struct fixture *fx = *state;
  fake_ms = 2000000;
  cp_placer_recheck_after (CP_PLACER_RECHECK_SECONDS, fake_clock);
  pid_t a = put_live (fx, "a");
  assert_true (kept (fx, "a")); /* checked: alive, remembered */
  end_child (a);
  fake_ms += 2000;
  assert_true (kept_by_release (fx, "a")); /* within the window: not asked */
  fake_ms += CP_PLACER_RECHECK_SECONDS * 1000 - 2000;
  assert_false (kept_by_release (fx, "a"));

  cp_placer_recheck_after (0, NULL);
  pid_t c = put_live (fx, "c");
  assert_true (kept (fx, "c"));
  end_child (c);
  assert_false (kept_by_release (fx, "c")); /* the hook's: every entry asked */
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_policy_matrix),
    cmocka_unit_test (test_exhausted),
    cmocka_unit_test (test_admit_pid),
    cmocka_unit_test (test_admit_pid_cgroup),
    cmocka_unit_test (test_admit_refuses_init),
    cmocka_unit_test_setup_teardown (test_decide_without_cgroup, setup, teardown),
    cmocka_unit_test_setup_teardown (test_batch_commits_once, setup, teardown),
    cmocka_unit_test_setup_teardown (test_recheck_window, setup, teardown),
    cmocka_unit_test_setup_teardown (test_recheck_window_release, setup, teardown),
    cmocka_unit_test_setup_teardown (test_open_needs_cgroup_path, setup, teardown),
    cmocka_unit_test_setup_teardown (test_preview_is_the_next_decision, setup, teardown),
    cmocka_unit_test_setup_teardown (test_take_over_plugin_entry, setup, teardown),
    cmocka_unit_test_setup_teardown (test_unit_keeps_its_cpus, setup, teardown),
    cmocka_unit_test_setup_teardown (test_unit_stop_holds, setup, teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
