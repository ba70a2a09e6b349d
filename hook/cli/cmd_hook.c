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
#include "admission.h"
#include "placer.h"
#include "proc.h"

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
  struct cp_cli_common c;
  enum hook_stage stage;
  bool have_stage;
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

/* The one operand, the stage (options may follow it). */
static int
hook_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct hook_args *a = args;
  if (opt != 1)
    return 0;
  if (a->have_stage)
    return cp_fail_input (err, "`%.64s`: unexpected argument", arg);
  if (parse_stage (arg, &a->stage, err) < 0)
    return -1;
  a->have_stage = true;
  return 1;
}

static const struct option hook_options[] = {
  CP_CONFIG_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec hook_spec = {
  .name = "hook",
  .usage = hook_usage,
  .shortopts = "-:h",
  .options = hook_options,
  .option = hook_option,
};

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

static void
log_plan (const char *id, const struct cp_plan *plan, const struct cp_container_request *creq)
{
  cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
  cleanup_free char *mems = cp_cpulist_format (plan->mems);
  cp_log (CP_LOG_INFO, "placed %s: cpus %s mems %s%s (cpus from %s); %s", id, cpus, mems,
          creq->mems_keep ? " (kept)" : "", creq->cpus_source, plan->reason);
}

/* The container's placement, once its annotations say it asked: its request
   (invalid annotations fail it), admission (engine/admission.h), then the
   engine's steps. */
static int
place (const struct cp_hostconfig *hc, const struct cp_oci_state *st, const struct cp_annotations *ann,
       const struct cp_oci_config *cfg, const char *name, cp_error_t *err)
{
  struct cp_container_request creq;
  struct cp_limits limits;
  if (cp_annotations_to_request (ann, &hc->defaults, cp_oci_config_limits (cfg, &limits), &creq, err) < 0)
    return cp_admission_refuse (st->id, err);
  struct cp_admission adm = {
    .id = st->id,
    .pid = st->pid,
    .cgroup = cfg ? cfg->cgroupfs_path : NULL,
    .creq = &creq,
  };
  cleanup_admitted struct cp_admitted in = { 0 };
  int r = cp_admit (hc, &adm, &in, err);
  if (r <= 0)
    return r;
  struct cp_target target = {
    .id = st->id,
    .name = name,
    .pid = st->pid,
    .cgroup = in.cgroup,
    .cgroup_mount = in.cgroup->mount,
    .cgroup_path = in.cgroup->path,
    .core_sched = in.core_sched,
  };
  cleanup_plan struct cp_plan *plan = NULL;
  r = cp_front_place (hc, CP_JOURNAL_HOOK, &target, &creq, cp_admission_host_failure, &plan, err);
  if (r != 0)
    return r < 0 ? -1 : 0; /* unplaced (1): logged and recorded by the policy */
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
   read), tells it from another container of the same id (cp_placer_release_commit()). */
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
  if (cp_front_release (hc, CP_JOURNAL_HOOK, &rel, &result, err) < 0)
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
    return cp_admission_refuse (id, err);
  *err = cp_steal_pointer (why);
  return cp_admission_host_failure (hc, creq.req.strict, id, err);
}

/* The host config could not be read: the container fails only if its own
   annotations ask for strict (there are no host defaults to consult). */
static int
broken_hostconfig (const struct cp_annotations *ann, const struct cp_oci_config *cfg, const char *id,
                   cp_error_t *err)
{
  struct cp_container_request creq;
  cp_error_t annotation_err = NULL;
  struct cp_limits limits;
  if (cp_annotations_to_request (ann, NULL, cp_oci_config_limits (cfg, &limits), &creq, &annotation_err) < 0)
    {
      /* The annotations are wrong too: that is the error the user needs to see. */
      cp_error_free (err);
      *err = annotation_err;
      return cp_admission_refuse (id, err);
    }
  /* The host config's error is an input error (exit 2 when strict), but not the
     container's: without strict it starts (the defaults allow), and the admin's
     mistake is logged as an error (every annotated container on the host is now
     unplaced). */
  return cp_admission_allow_or_fail (NULL, creq.req.strict, id, CP_LOG_ERROR, err);
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
      if (cp_cli_load_config (&a->c, hc, NULL) < 0)
        return 0;
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
  /* Its name, where the engine gave one, for the ledger and the journal. */
  cleanup_free char *raw_name = cp_annotations_display_name (ann);
  const char *name = cp_front_set_name (raw_name);

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
      else if (cp_admission_exhausted (*err))
        no_bundle = cp_steal_pointer (err); /* the host's failure: judged below */
      else
        /* The state says it asked, and its bundle cannot be read (runc read it a
           moment ago): something replaced it; refuse. */
        return cp_admission_refuse (st->id, err);
    }

  if (cp_cli_load_config (&a->c, hc, err) < 0)
    return stage == STAGE_RELEASE ? (cp_error_free (err), 0)
                                  : broken_hostconfig (ann, have_config ? cfg : NULL, st->id, err);
  if (stage == STAGE_RELEASE)
    return release (hc, st, have_config ? cfg : config_for_release (st, cfg), err);
  if (no_bundle)
    return bundle_exhausted (hc, ann, st->id, &no_bundle, err);
  return place (hc, st, ann, have_config ? cfg : NULL, name, err);
}

int
cp_cmd_hook (int argc, char **argv, cp_error_t *err)
{
  struct hook_args a = { 0 };
  int r = cp_cli_begin (&hook_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  cp_log_init ("cachepin", true);
  struct cp_hostconfig hc = { 0 };
  struct cp_oci_state st = { 0 };
  struct cp_oci_config cfg = { 0 };
  /* Every decision of the failure policy goes to the journal, with the state
     directory of HC once it is loaded. */
  cp_front_journal_admissions (&hc, CP_JOURNAL_HOOK);
  int ret = run_hook (&a, &hc, &st, &cfg, err);
  cp_oci_config_free (&cfg);
  cp_oci_state_free (&st);
  cp_hostconfig_free (&hc);
  return ret;
}
