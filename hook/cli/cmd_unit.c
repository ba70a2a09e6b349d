/* cachepin: `apply --unit NAME.service` and `release --unit NAME.service`: a
 * systemd service kept placed across restarts, crashes and reboots.
 *
 * The pin is a drop-in (hook/host/unitfile.h) whose ExecStartPre= runs `apply
 * --unit-start` (the service's new cgroup exists then, its main process does not
 * run yet) and whose ExecStopPost= runs `release --unit-stop` (the CPUs held for
 * the next start).  What becomes of the ledger's entry at each step is the
 * engine's rule (hook/engine/unitpin.h); this file says it to systemd and to the
 * user.  docs/apply.md defends the design. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_apply.h"
#include "cpulist.h"
#include "io.h"
#include "log.h"
#include "text.h"
#include "unitfile.h"
#include "unitpin.h"
#include "util.h"

/* Append WORD, quoted for an Exec= line, to the line *LINE. */
static void
add_word (char **line, const char *word)
{
  cleanup_free char *q = cp_unitfile_quote (word);
  char *next = *line ? cp_xasprintf ("%s %s", *line, q) : cp_xstrdup (q);
  free (*line);
  *line = next;
}

/* The options A was given that say what to ask (and --config), as words of
   the drop-in's line: at each start the same request, the host config's
   defaults filling in the rest, as for `apply`. */
static void
add_request (char **line, const struct apply_args *a)
{
  cleanup_free char *cpus = cp_xasprintf ("%u", a->req.cpus);
  if (a->req.cpus > 0)
    add_word (line, "--cpus"), add_word (line, cpus);
  if (a->given & CP_CLI_GIVEN (CP_OPT_ALIGN))
    add_word (line, "--align"), add_word (line, cp_align_name (a->req.align));
  if (a->given & CP_CLI_GIVEN (CP_OPT_SMT))
    add_word (line, "--smt"), add_word (line, cp_smt_name (a->req.smt));
  if (a->given & CP_CLI_GIVEN (CP_OPT_MODE))
    add_word (line, "--mode"), add_word (line, cp_mode_name (a->req.mode));
  if (a->given & CP_CLI_GIVEN (CP_OPT_STRICT))
    add_word (line, "--strict");
  if (a->mems_keep)
    add_word (line, "--mems"), add_word (line, "keep");
  if (a->isolate)
    add_word (line, "--isolate");
  if (a->name)
    add_word (line, "--name"), add_word (line, a->name);
}

static void
add_config (char **line, const struct apply_args *a)
{
  if (a->c.config)
    add_word (line, "--config"), add_word (line, a->c.config);
}

/* A value that would break the unit file's line (a newline ends it). */
static int
check_text (const char *what, const char *value, cp_error_t *err)
{
  for (const char *c = value; c && *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f)
      return cp_fail_input (err, "%s: a control character cannot go into a unit file", what);
  return 0;
}

/* The drop-in's text for A. */
static int
dropin_text (const struct apply_args *a, char **out, cp_error_t *err)
{
  if (check_text ("--name", a->name, err) < 0 || check_text ("--config", a->c.config, err) < 0)
    return -1;
  cleanup_free char *self = NULL;
  if (cp_unitfile_self (&self, err) < 0)
    return -1;
  cleanup_free char *start = NULL, *stop = NULL;
  add_word (&start, self), add_word (&start, "apply"), add_word (&start, "--unit-start"), add_word (&start, a->unit);
  add_request (&start, a);
  add_config (&start, a);
  add_word (&stop, self), add_word (&stop, "release"), add_word (&stop, "--unit-stop"), add_word (&stop, a->unit);
  add_config (&stop, a);
  cleanup_free char *command = cp_xasprintf ("cachepin apply --unit %s", a->unit);
  *out = cp_unitfile_dropin_text (command, start, stop);
  return 0;
}

/* systemctl show -p PROP --value UNIT into *OUT. */
static int
unit_property (const char *unit, const char *prop, char **out, cp_error_t *err)
{
  const char *args[] = { "show", "-p", prop, "--value", "--", unit, NULL };
  return cp_unitfile_systemctl (args, out, err);
}

static int
daemon_reload (cp_error_t *err)
{
  const char *args[] = { "daemon-reload", NULL };
  return cp_unitfile_systemctl (args, NULL, err);
}

/* Where --unit can work: systemd as PID 1, cgroup v2. */
static int
check_host (const char *opt, cp_error_t *err)
{
  if (!cp_unitfile_systemd_booted ())
    return cp_fail_input (err, "%s: systemd is not running here (PID 1 is not systemd): place the service's cgroup "
                          "with --cgroup (docs/apply.md, \"Without systemd\")", opt);
  if (!cp_unitfile_unified ())
    return cp_fail_input (err, "%s: needs cgroup v2 (systemd keeps no cpuset per service on a v1 or hybrid host): "
                          "use --cgroup (docs/apply.md, \"Without systemd\")", opt);
  return 0;
}

/* The cgroup of UNIT while it runs (systemd's ControlGroup), NULL when none. */
static int
unit_cgroup (const char *unit, char **out, cp_error_t *err)
{
  cleanup_free char *cg = NULL;
  if (unit_property (unit, "ControlGroup", &cg, err) < 0)
    return -1;
  *out = cg[0] == '/' ? cp_steal_pointer (&cg) : NULL;
  return 0;
}

/* `apply --unit`: the request checked against the running cgroup, the drop-in
   written, systemd reloaded, then the running cgroup placed.  A running service
   is placed where it runs, not restarted: a restart would stop what it serves for
   what the placement alone gives, and the drop-in places every later start. */
static int
pin (const struct apply_args *a, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (dropin_text (a, &text, err) < 0)
    return -1;
  cleanup_free char *path = cp_unitfile_dropin_path (a->runtime ? CP_UNITFILE_DIR_RUN : CP_UNITFILE_DIR_ETC, a->unit);
  if (a->dry_run)
    {
      printf ("%s\n%sdry run: nothing was written; without --dry-run, apply writes %s, reloads systemd and places "
              "the service if it runs\n", path, text, path);
      return 0;
    }
  if (check_host ("--unit", err) < 0)
    return -1;
  cleanup_free char *load = NULL;
  if (unit_property (a->unit, "LoadState", &load, err) < 0)
    return cp_error_wrap (err, "--unit");
  if (strcmp (load, "loaded") != 0)
    return cp_fail_input (err, "--unit: %s: no such unit (systemd says LoadState=%s)", a->unit, load);
  struct cp_hostconfig hc = { 0 };
  cleanup_free char *cg = NULL, *id = cp_unitpin_id (a->unit);
  int ret = cp_cli_load_config (&a->c, &hc, err);
  if (ret == 0)
    ret = unit_cgroup (a->unit, &cg, err);
  if (ret == 0 && cg && cp_unitfile_want_cpuset (a->unit, cg, err) < 0)
    ret = -1;
  if (ret == 0 && cg)
    ret = cp_cli_apply_check (a, &hc, cg, id, err);
  /* One drop-in: a --runtime one replaces the persistent one and the other way. */
  if (ret == 0)
    ret = cp_unitfile_remove (a->unit, err) < 0 || cp_unitfile_write (path, text, err) < 0 || daemon_reload (err) < 0
              ? -1
              : 0;
  if (ret == 0 && !a->c.json)
    printf ("%s: pinned (drop-in %s): each start is placed before it runs, on the same CPUs while they are its\n",
            a->unit, path);
  if (ret == 0 && cg)
    ret = cp_cli_apply_cgroup (a, &hc, cg, id, err);
  else if (ret == 0 && !a->c.json)
    printf ("%s does not run now: it is placed when it starts\n", a->unit);
  cp_hostconfig_free (&hc);
  return ret;
}

/* `apply --unit-start`, the drop-in's ExecStartPre=: the unit's new cgroup placed.
   A placement that fails lets the service start unplaced (a warning in its
   journal), unless the request is strict: then the start fails, as a strict
   container's would. */
static int
unit_start (const struct apply_args *a, cp_error_t *err)
{
  struct cp_hostconfig hc = { 0 };
  cleanup_free char *cg = NULL, *id = cp_unitpin_id (a->unit);
  int ret = cp_cli_load_config (&a->c, &hc, err);
  if (ret == 0)
    ret = unit_cgroup (a->unit, &cg, err);
  if (ret == 0 && cg == NULL)
    ret = cp_fail_runtime (err, "%s has no cgroup (systemd's ControlGroup is empty)", a->unit);
  if (ret == 0 && cp_unitfile_want_cpuset (a->unit, cg, err) < 0)
    ret = -1;
  if (ret == 0)
    ret = cp_cli_apply_cgroup (a, &hc, cg, id, err);
  bool strict = a->req.strict || hc.defaults.strict;
  cp_hostconfig_free (&hc);
  if (ret < 0 && !strict)
    {
      cp_log (CP_LOG_WARNING, "--unit-start: %s starts unplaced: %s", a->unit, cp_error_message (*err));
      cp_error_free (err);
      return 0;
    }
  return ret < 0 ? cp_error_wrap (err, "--unit-start %s", a->unit) : 0;
}

int
cp_cli_apply_unit (const struct apply_args *a, cp_error_t *err)
{
  if (cp_unitfile_check_name (a->unit, err) < 0)
    return cp_error_wrap (err, a->unit_how == OPT_UNIT ? "--unit" : "--unit-start");
  return a->unit_how == OPT_UNIT ? pin (a, err) : unit_start (a, err);
}

/* `release --unit-stop`, the drop-in's ExecStopPost=: the entry held for the next
   start.  Never fails the stop: a failure is a warning in the unit's journal (the
   entry is then dropped by the next reconcile, its cgroup gone). */
static int
unit_stop (const struct apply_args *a, struct cp_hostconfig *hc)
{
  cleanup_error cp_error_t e = NULL;
  cleanup_free char *id = cp_unitpin_id (a->unit);
  int r = cp_hostconfig_load (a->c.config, hc, &e);
  if (r == 0)
    r = cp_unitpin_hold (hc, id, &e);
  if (r < 0)
    cp_log (CP_LOG_WARNING, "--unit-stop: %s: its CPUs are not held for its next start: %s", a->unit,
            cp_error_message (e));
  else if (r > 0)
    cp_log (CP_LOG_INFO, "%s stopped: its CPUs are held for its next start", a->unit);
  return 0;
}

/* AllowedCPUs= and AllowedMemoryNodes= that the placements set at runtime
   (hook/host/systemd.h) cleared, so that the next start runs on what its slice
   allows.  A unit that is gone has none: a failure is a debug line. */
static void
clear_allowed (const char *unit)
{
  cleanup_error cp_error_t e = NULL;
  const char *args[] = { "set-property", "--runtime", "--", unit, "AllowedCPUs=", "AllowedMemoryNodes=", NULL };
  if (cp_unitfile_systemctl (args, NULL, &e) < 0)
    cp_log (CP_LOG_DEBUG, "%s: AllowedCPUs= not cleared: %s", unit, cp_error_message (e));
}

/* What a release in a child process tells its parent. */
struct release_answer
{
  int ret;
  int kind;
  int errnum;
  int result;
  char message[2048];
};

/* cp_front_release() in a child process, which enters the release's sandbox and
   exits: this process stays free to run systemctl after it (the unit's cpuset
   properties are cleared only once the cgroup is widened, while systemd still
   gives the slice its cpuset controller). */
static int
release_apart (const struct cp_hostconfig *hc, const struct cp_release *rel, enum cp_release_result *result,
               cp_error_t *err)
{
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return cp_fail_errno (err, errno, "pipe");
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    {
      int e = errno;
      close (p[0]);
      close (p[1]);
      return cp_fail_errno (err, e, "fork");
    }
  if (pid == 0)
    {
      close (p[0]);
      struct release_answer a = { 0 };
      cleanup_error cp_error_t e = NULL;
      enum cp_release_result r = CP_RELEASE_NONE;
      a.ret = cp_front_release (hc, CP_JOURNAL_RELEASE, rel, &r, &e);
      a.result = (int) r;
      if (a.ret < 0)
        {
          a.kind = (int) cp_error_kind (e);
          a.errnum = cp_error_errno (e);
          snprintf (a.message, sizeof a.message, "%s", cp_error_message (e));
        }
      _exit (cp_io_write_all (p[1], &a, sizeof a) < 0 ? 1 : 0);
    }
  close (p[1]);
  struct release_answer a = { .ret = -1 };
  ssize_t n;
  do
    n = read (p[0], &a, sizeof a);
  while (n < 0 && errno == EINTR);
  close (p[0]);
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (n != (ssize_t) sizeof a)
    return cp_fail_runtime (err, "the release's process ended without an answer (status %d)", status);
  *result = (enum cp_release_result) a.result;
  if (a.ret < 0)
    return cp_error_set (err, (enum cp_error_kind) a.kind, 0, "%s", a.message);
  return 0;
}

/* `release --unit`: the drop-in removed and systemd reloaded first (no start
   places it again after), then the entry released, the running cgroup widened. */
static int
unpin (const struct apply_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (check_host ("--unit", err) < 0)
    return -1;
  if (cp_hostconfig_load (a->c.config, hc, err) < 0)
    return -1;
  int removed = cp_unitfile_remove (a->unit, err);
  if (removed < 0 || (removed > 0 && daemon_reload (err) < 0))
    return -1;
  cleanup_free char *cg = NULL, *id = cp_unitpin_id (a->unit);
  if (unit_cgroup (a->unit, &cg, err) < 0)
    return -1;
  cleanup_cgroup struct cp_cgroup *widen = NULL;
  if (cg && cp_cgroup_from_path (cg, &widen, err) < 0)
    return cp_error_wrap (err, "--unit %s", a->unit);
  struct cp_release rel = { .id = id, .widen = widen };
  enum cp_release_result result = CP_RELEASE_NONE;
  if (release_apart (hc, &rel, &result, err) < 0)
    return -1;
  if (result == CP_RELEASE_NONE && removed == 0)
    return cp_fail_input (err, "--unit: %s is not pinned (no cachepin drop-in, no ledger entry)", a->unit);
  clear_allowed (a->unit);
  printf ("%s: released (%s; %s)\n", a->unit, removed ? "drop-in removed, systemd reloaded" : "no drop-in was left",
          result == CP_RELEASE_NONE ? "the ledger held nothing for it"
          : widen                   ? "its CPUs freed, its cgroup widened to what its slice allows"
                                    : "its CPUs freed");
  return 0;
}

int
cp_cli_release_unit (const struct apply_args *a, cp_error_t *err)
{
  if (cp_unitfile_check_name (a->unit, err) < 0)
    return cp_error_wrap (err, a->unit_how == OPT_UNIT ? "--unit" : "--unit-stop");
  struct cp_hostconfig hc = { 0 };
  int ret = a->unit_how == OPT_UNIT_STOP ? unit_stop (a, &hc) : unpin (a, &hc, err);
  cp_hostconfig_free (&hc);
  return ret;
}
