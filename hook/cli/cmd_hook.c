/* `cachepin hook [STAGE]`: the OCI hook.  The runtime writes the container's state
 * to stdin; at createRuntime (or the older prestart) the container is placed, at
 * poststop it is released.
 *
 * Failure policy: a container without a cachepin.io/ annotation is never touched
 * and never failed, whatever else its state holds (so that is decided first, from
 * the annotations alone: run_hook()).  Invalid annotations always fail the container (it asked, and
 * what it asked is wrong).  Anything else that goes wrong (the host cannot meet
 * the request, the cgroup or the ledger fails) fails the container only when it
 * asked for strict or the host config says on_error=deny; otherwise the container
 * starts where the runtime put it and the reason is logged. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "annotations.h"
#include "config.h"
#include "state.h"
#include "cpulist.h"
#include "util.h"
#include "cgroup.h"
#include "hostconfig.h"
#include "log.h"
#include "placer.h"
#include "proc.h"
#include "sched.h"

static const char hook_usage[] =
  "Usage: cachepin hook [--config PATH] [STAGE]   (options may also follow STAGE)\n"
  "Run as an OCI hook: reads the container state on stdin (given up after 5 s\n"
  "without a complete JSON object).\n\n"
  "  STAGE            createRuntime or prestart (place), poststop (release);\n"
  "                   without it, taken from the state's status\n"
  "  --config PATH    host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  -h, --help       this text\n";

enum hook_stage
{
  STAGE_FROM_STATUS = 0,
  STAGE_PLACE,
  STAGE_RELEASE,
};

struct hook_args
{
  const char *config;
  enum hook_stage stage;
  bool help;
};

static int
parse_stage (const char *s, enum hook_stage *out, cp_error_t *err)
{
  if (strcmp (s, "createRuntime") == 0 || strcmp (s, "prestart") == 0)
    *out = STAGE_PLACE;
  else if (strcmp (s, "poststop") == 0)
    *out = STAGE_RELEASE;
  else
    return cp_fail_input (err, "stage `%.64s`: expected createRuntime, prestart or poststop", s);
  return 0;
}

static int
parse_args (int argc, char **argv, struct hook_args *a, cp_error_t *err)
{
  static const struct option options[] = {
    { "config", required_argument, NULL, 'c' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  optind = 1;
  opterr = 0;
  int opt;
  bool have_stage = false;
  /* "-": operands come back in order as option 1, so that options may follow the
     stage (`hook createRuntime --config F`, as hook files in the wild write it),
     whatever POSIXLY_CORRECT says. */
  while ((opt = getopt_long (argc, argv, "-:h", options, NULL)) != -1)
    switch (opt)
      {
      case 1:
        if (have_stage)
          return cp_fail_input (err, "`%.64s`: unexpected argument", optarg);
        if (parse_stage (optarg, &a->stage, err) < 0)
          return -1;
        have_stage = true;
        break;
      case 'c':
        a->config = optarg;
        break;
      case 'h':
        a->help = true;
        break;
      case ':':
      default:
        return cp_cli_option_error (opt, argv, "hook", err);
      }
  /* After "--", the rest are operands. */
  if (!have_stage && optind < argc && parse_stage (argv[optind++], &a->stage, err) < 0)
    return -1;
  if (optind < argc)
    return cp_fail_input (err, "`%.64s`: unexpected argument", argv[optind]);
  return 0;
}

static int
stage_from_status (const struct cp_oci_state *st, enum hook_stage *out, cp_error_t *err)
{
  switch (st->status)
    {
    case CP_OCI_CREATING: /* runc at createRuntime */
    case CP_OCI_CREATED:  /* crun at createRuntime */
      *out = STAGE_PLACE;
      return 0;
    case CP_OCI_STOPPED:
      *out = STAGE_RELEASE;
      return 0;
    case CP_OCI_RUNNING:
    default:
      return cp_fail_input (err, "state: status `%s` says no stage; give one (createRuntime or poststop)",
                            cp_oci_status_name (st->status));
    }
}

/* The failure policy for a container that asked (see the top of this file):
   returns 0 (let it start unplaced, logged at LEVEL: one line on stderr and in
   syslog) or -1 (fail it with ERR, which main() prints as the one line on stderr).
   Callers pass STRICT true for what always fails the container (its annotations
   are invalid). */
static int
allow_or_fail (const struct cp_hostconfig *hc, bool strict, const char *id, enum cp_log_level level,
               cp_error_t *err)
{
  if (strict || hc->on_error == CP_ON_ERROR_DENY)
    {
      cp_log_syslog (CP_LOG_ERROR, "container %s not started: %s", id, cp_error_message (*err));
      return -1;
    }
  cp_log (level, "container %s starts unplaced: %s", id, cp_error_message (*err));
  cp_error_free (err);
  return 0;
}

static void
log_plan (const char *id, const struct cp_plan *plan, const struct cp_container_request *creq)
{
  cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
  cleanup_free char *mems = cp_cpulist_format (plan->mems);
  cp_log (CP_LOG_INFO, "placed %s: cpus %s mems %s%s (cpus from %s); %s", id, cpus, mems,
          creq->mems_keep ? " (kept)" : "", creq->cpus_source, plan->reason);
}

/* The failure policy's one reclassification of an error (policy/base/error.h): past the
   annotations nothing is the container's input.  A topology file that does not
   load, a cgroup whose contents the ledger refuses, are input errors where they
   are found (someone's input: the admin's, the kernel's text), but for this
   container they are the host's failures: exit 1 when strict, never the exit 2
   that tells the user that what the container asked is wrong. */
static void
hook_failure_kind (cp_error_t err)
{
  if (cp_error_kind (err) == CP_ERR_INPUT)
    cp_error_reclassify (err, CP_ERR_RUNTIME);
}

/* Whether ERR is the host running out of something (descriptors, memory, file
   size or disk): a system failure wherever it happens, never the container's. */
static bool
exhausted (cp_error_t err)
{
  switch (cp_error_errno (err))
    {
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG:
    case ENOSPC:
    case EDQUOT:
      return true;
    default:
      return false;
    }
}

/* The state names the container's init; never this pid namespace's init, the hook
   itself or the runtime running it, whose cgroups are not the container's.  The
   state contradicts itself: the container (which asked) fails. */
static int
check_pid (const struct cp_oci_state *st, cp_error_t *err)
{
  if (st->pid == 1 || st->pid == getpid () || st->pid == getppid ())
    return cp_fail_input (err, "state: pid: %d is %s, not a container's init", (int) st->pid,
                          st->pid == 1 ? "the init of this pid namespace"
                          : st->pid == getpid () ? "this hook"
                                                 : "the runtime running this hook");
  return 0;
}

/* When config.json names the container's cgroup (an absolute cgroupfs
   linux.cgroupsPath), the pid's cgroup CG must be that one or below it; else the
   state and the bundle disagree about the container, and it fails as above. */
static int
check_pid_cgroup (const struct cp_oci_state *st, const struct cp_cgroup *cg, const struct cp_oci_config *cfg,
                  cp_error_t *err)
{
  if (cfg == NULL || cfg->cgroupfs_path == NULL || cp_cgroup_path_within (cg->path, cfg->cgroupfs_path))
    return 0;
  return cp_fail_input (err,
                        "state: pid: process %d is in cgroup %s, outside %s, the cgroup config.json's "
                        "linux.cgroupsPath names",
                        (int) st->pid, cg->path, cfg->cgroupfs_path);
}

/* cachepin.io/core-sched=true: a core-scheduling cookie for the container's
   init, which its threads and everything it starts inherit, so that no task of
   another container (or of the host) runs on its cores' other hardware threads
   at the same time.  Made before the sandbox (which allows no prctl).  Where the
   kernel cannot (no CONFIG_SCHED_CORE, no SMT, not allowed): a warning, and the
   container starts without it, or a refusal when it is strict.  *GOT says whether
   it has one. */
static int
core_sched_cookie (const struct cp_oci_state *st, bool strict, bool *got, cp_error_t *err)
{
  *got = false;
  if (cp_sched_core_create (st->pid, err) == 0)
    {
      *got = true;
      cp_log (CP_LOG_INFO, "%s: core-scheduling cookie for process %d", st->id, (int) st->pid);
      return 0;
    }
  int e = cp_error_errno (*err);
  const char *why = e == EINVAL   ? "this kernel has no core scheduling (CONFIG_SCHED_CORE)"
                    : e == ENODEV ? "this machine has no SMT (or it is off)"
                                  : NULL;
  if (strict && why)
    {
      cp_error_free (err);
      return cp_fail_unsatisfiable (err, "cachepin.io/core-sched: %s", why);
    }
  if (strict)
    return -1;
  cp_log (CP_LOG_WARNING, "%s asks cachepin.io/core-sched, started without it: %s", st->id,
          why ? why : cp_error_message (*err));
  cp_error_free (err);
  return 0;
}

/* The cgroup found from the pid must hold the container alone (its init and what
   that started): pinning a cgroup others share would pin them too. */
static int
check_cgroup_alone (const struct cp_oci_state *st, const struct cp_cgroup *cg, cp_error_t *err)
{
  pid_t foreign = 0;
  if (cp_cgroup_foreign_process (cg, st->pid, &foreign, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", cg->mount, cg->path);
  if (foreign)
    return cp_fail_runtime (err,
                            "cgroup %s%s also holds process %d, which is not the container's (not %d nor one of "
                            "its descendants); refusing to pin a shared cgroup",
                            cg->mount, cg->path, (int) foreign, (int) st->pid);
  return 0;
}

static int
place (const struct cp_hostconfig *hc, const struct cp_oci_state *st, const struct cp_annotations *ann,
       const struct cp_oci_config *cfg, cp_error_t *err)
{
  struct cp_container_request creq;
  if (cp_annotations_to_request (ann, &hc->defaults, cfg, &creq, err) < 0)
    return allow_or_fail (hc, true, st->id, CP_LOG_ERROR, err);
  if (check_pid (st, err) < 0)
    return allow_or_fail (hc, true, st->id, CP_LOG_ERROR, err);
  /* A rootless runtime runs its hooks in its user namespace: nothing there may
     write the host's cgroups or /run/cachepin.  Said up front, in one line, rather
     than as whichever EACCES comes first. */
  cleanup_free char *rootless = cp_proc_rootless_reason ();
  if (rootless)
    {
      cp_fail_unsatisfiable (err, "rootless: not supported (%s)", rootless);
      return allow_or_fail (hc, creq.req.strict, st->id, CP_LOG_WARNING, err);
    }

  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cleanup_plan struct cp_plan *plan = NULL;
  struct cp_target target = { .id = st->id, .pid = st->pid };
  int ret = cp_cgroup_from_pid (st->pid, &cg, err);
  if (ret < 0)
    cp_error_wrap (err, "container process %d", (int) st->pid);
  else if (check_pid_cgroup (st, cg, cfg, err) < 0)
    return allow_or_fail (hc, true, st->id, CP_LOG_ERROR, err);
  else
    {
      target.cgroup = cg;
      target.cgroup_mount = cg->mount;
      target.cgroup_path = cg->path;
      ret = check_cgroup_alone (st, cg, err);
      if (ret == 0 && creq.core_sched)
        ret = core_sched_cookie (st, creq.req.strict, &target.core_sched, err);
      if (ret == 0)
        ret = cp_placer_place (hc, &target, &creq, &plan, err);
    }
  if (ret < 0)
    {
      hook_failure_kind (*err);
      return allow_or_fail (hc, creq.req.strict, st->id, CP_LOG_WARNING, err);
    }
  log_plan (st->id, plan, &creq);
  return 0;
}

/* The cgroup config.json names for the release's identity: an absolute cgroupfs
   path, or a systemd "slice:prefix:name" expanded as the runtimes do; NULL when
   neither is known (then the pid, or else the id alone, tells). */
static const char *
release_cgroup (const struct cp_oci_config *cfg)
{
  if (cfg == NULL)
    return NULL;
  return cfg->cgroupfs_path ? cfg->cgroupfs_path : cfg->systemd_path;
}

/* The release of ST's entry, only if it is ST's container's: the state's pid when
   it names one (runc's poststop does not: the process is gone), else the cgroup
   config.json's linux.cgroupsPath names (CFG, NULL when the bundle could not be
   read), tells it from another container of the same id (cp_placer_release()). */
static int
release (const struct cp_hostconfig *hc, const struct cp_oci_state *st, const struct cp_oci_config *cfg,
         cp_error_t *err)
{
  cleanup_free char *rootless = cp_proc_rootless_reason ();
  if (rootless)
    {
      cp_log (CP_LOG_DEBUG, "release of %s: nothing to do, rootless (%s)", st->id, rootless);
      return 0;
    }
  struct cp_release rel = { .id = st->id, .pid = st->pid, .cgroup = release_cgroup (cfg) };
  enum cp_release_result result;
  if (cp_placer_release (hc, &rel, &result, err) < 0)
    {
      /* Nothing to fail at poststop: the next run's reconcile frees the CPUs. */
      cp_log (CP_LOG_WARNING, "release of %s: %s", st->id, cp_error_message (*err));
      cp_error_free (err);
      return 0;
    }
  if (result == CP_RELEASE_DONE)
    cp_log (CP_LOG_INFO, "released %s", st->id);
  return 0;
}

/* config.json at poststop, for the release's cgroup (release()): the bundle may be
   gone by then, and nothing fails at poststop; NULL when it cannot be read. */
static const struct cp_oci_config *
config_for_release (const struct cp_oci_state *st, struct cp_oci_config *cfg)
{
  cleanup_error cp_error_t why = NULL;
  if (st->bundle && cp_oci_config_load (st->bundle, cfg, &why) == 0)
    return cfg;
  cp_log (CP_LOG_DEBUG, "release of %s: its cgroup is not known: %s", st->id,
          why ? cp_error_message (why) : "no bundle");
  return NULL;
}

/* The bundle could not be read for want of resources (WHY): a system failure like
   any other past the annotations, so on_error and the container's strict decide,
   not the refusal a replaced bundle gets. */
static int
bundle_exhausted (const struct cp_hostconfig *hc, const struct cp_annotations *ann, const char *id, cp_error_t *why,
                  cp_error_t *err)
{
  struct cp_container_request creq;
  if (cp_annotations_to_request (ann, &hc->defaults, NULL, &creq, err) < 0)
    return allow_or_fail (hc, true, id, CP_LOG_ERROR, err);
  *err = cp_steal_pointer (why);
  hook_failure_kind (*err);
  return allow_or_fail (hc, creq.req.strict, id, CP_LOG_WARNING, err);
}

/* The host config could not be read: the container fails only if its own
   annotations ask for strict (there are no host defaults to consult). */
static int
broken_hostconfig (const struct cp_annotations *ann, const struct cp_oci_config *cfg, const char *id,
                   cp_error_t *err)
{
  struct cp_container_request creq;
  cp_error_t annotation_err = NULL;
  if (cp_annotations_to_request (ann, NULL, cfg, &creq, &annotation_err) < 0)
    {
      /* The annotations are wrong too: that is the error the user needs to see. */
      cp_error_free (err);
      *err = annotation_err;
      cp_log_syslog (CP_LOG_ERROR, "container %s not started: %s", id, cp_error_message (*err));
      return -1;
    }
  /* The host config's error is an input error (exit 2 when strict), but not the
     container's: without strict it starts, and the admin's mistake is logged as
     an error (every annotated container on the host is now unplaced). */
  bool strict = creq.req.strict;
  struct cp_hostconfig defaults;
  cp_hostconfig_init (&defaults);
  int ret = allow_or_fail (&defaults, strict, id, CP_LOG_ERROR, err);
  cp_hostconfig_free (&defaults);
  return ret;
}

/* For log lines about a state whose id may not be valid. */
static const char *
id_of (const struct cp_oci_state *st)
{
  return st->id ? st->id : "(no valid id)";
}

/* The state has no annotations (a runtime that does not copy them into it):
   config.json says whether the container asks.  1: CFG is loaded; 0: the hook is
   done (left alone, or released by id); < 0: a failure of the release. */
static int
annotations_from_bundle (const struct hook_args *a, struct cp_hostconfig *hc, struct cp_oci_state *st,
                         struct cp_oci_config *cfg, cp_error_t *err)
{
  cleanup_error cp_error_t why = NULL;
  if (cp_oci_state_parse_bundle (st, &why) == 0 && cp_oci_config_load (st->bundle, cfg, &why) == 0)
    return 1;
  enum hook_stage stage = a->stage;
  bool valid = cp_oci_state_parse_fields (st, NULL) == 0
               && (stage != STAGE_FROM_STATUS || stage_from_status (st, &stage, NULL) == 0);
  if (valid && stage == STAGE_RELEASE)
    {
      /* The bundle may be gone by poststop: release regardless, known by the
         state's pid alone. */
      if (cp_hostconfig_load (a->config, hc, NULL) < 0)
        return 0;
      cp_log_set_level (hc->log_level);
      return release (hc, st, NULL, err);
    }
  /* Cannot tell whether it asked.  A container that did not ask is never failed
     (runc and crun copy the annotations into the state, so this is a runtime that
     does not, with a config.json we refuse to read: a symlink, a FIFO, too big):
     leave it alone, and say so. */
  cp_log (CP_LOG_WARNING, "container %s left alone: its state has no annotations and %s", id_of (st),
          cp_error_message (why));
  return 0;
}

static int
run_hook (const struct hook_args *a, struct cp_hostconfig *hc, struct cp_oci_state *st,
          struct cp_oci_config *cfg, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t len;
  if (cp_oci_state_read_text (STDIN_FILENO, &text, &len, err) < 0
      || cp_oci_state_parse_annotations (text, len, st, err) < 0)
    return -1;

  /* Whether the container asks comes first: one that does not is never failed,
     whatever else its state holds (the JSON must be valid, or there is no telling).
     runc and crun copy the annotations into the state; config.json is read only
     when the state has none, or at placement, where its resources matter. */
  const struct cp_annotations *ann = &st->annotations;
  bool have_config = false;
  if (!st->has_annotations)
    {
      int r = annotations_from_bundle (a, hc, st, cfg, err);
      if (r <= 0)
        return r;
      have_config = true;
      ann = &cfg->annotations;
    }
  if (!cp_annotations_wants_cachepin (ann) || cp_annotations_is_sandbox (ann))
    return 0; /* not ours: nothing else judged, nothing written */

  /* It asks: from here on its state must be right. */
  enum hook_stage stage = a->stage;
  if (cp_oci_state_parse_fields (st, err) < 0
      || (stage == STAGE_FROM_STATUS && stage_from_status (st, &stage, err) < 0))
    return -1;
  cleanup_error cp_error_t no_bundle = NULL;
  if (stage == STAGE_PLACE && !have_config)
    {
      if (cp_oci_config_load (st->bundle, cfg, err) == 0)
        have_config = true;
      else if (exhausted (*err))
        no_bundle = cp_steal_pointer (err); /* the host's failure: judged below */
      else
        /* The state says it asked, and its bundle cannot be read (runc read it a
           moment ago): something replaced it; refuse. */
        return allow_or_fail (hc, true, st->id, CP_LOG_ERROR, err);
    }

  if (cp_hostconfig_load (a->config, hc, err) < 0)
    return stage == STAGE_RELEASE ? (cp_error_free (err), 0)
                                  : broken_hostconfig (ann, have_config ? cfg : NULL, st->id, err);
  cp_log_set_level (hc->log_level);
  if (stage == STAGE_RELEASE)
    return release (hc, st, have_config ? cfg : config_for_release (st, cfg), err);
  if (no_bundle)
    return bundle_exhausted (hc, ann, st->id, &no_bundle, err);
  return place (hc, st, ann, have_config ? cfg : NULL, err);
}

int
cp_cmd_hook (int argc, char **argv, cp_error_t *err)
{
  struct hook_args a = { 0 };
  if (parse_args (argc, argv, &a, err) < 0)
    return -1;
  if (a.help)
    {
      fputs (hook_usage, stdout);
      return 0;
    }
  cp_log_init ("cachepin", true);
  struct cp_hostconfig hc = { 0 };
  struct cp_oci_state st = { 0 };
  struct cp_oci_config cfg = { 0 };
  int ret = run_hook (&a, &hc, &st, &cfg, err);
  cp_oci_config_free (&cfg);
  cp_oci_state_free (&st);
  cp_hostconfig_free (&hc);
  return ret;
}
