/* `cachepin apply --cgroup PATH` and `cachepin release --cgroup PATH`: placement
 * for cgroups no runtime manages (a systemd slice, a batch job), recorded in the
 * same ledger as the containers under the id "apply:<cgroup directory>". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_apply.h"
#include "cpulist.h"
#include "text.h"
#include "topo.h"
#include "util.h"
#include "cgroup.h"
#include "hostconfig.h"
#include "log.h"
#include "placer.h"
#include "topocache.h"

static const char apply_usage[] =
  "Usage: cachepin apply --cgroup PATH [OPTIONS]\n"
  "       cachepin apply --unit NAME.service [--runtime] [OPTIONS]\n"
  "Place a cgroup (its cpuset.cpus and cpuset.mems) and record it in the ledger.\n\n"
  "  --cgroup PATH       /sys/fs/cgroup/... or a path inside the cpuset hierarchy\n"
  "  --unit NAME.service keep a systemd service placed across restarts, crashes and\n"
  "                      reboots: a drop-in places each start (docs/apply.md)\n"
  "  --runtime           with --unit: the drop-in under /run, forgotten at reboot\n"
  "  --mems MEMS         local (default: the NUMA nodes local to the CPUs) | keep\n"
  "  --name NAME         what `cachepin status` calls it (default: the cgroup's path)\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --dry-run           print the plan (as `cachepin plan` does) and write nothing\n"
  "  --isolate           keep every other cgroup off its CPUs (a cgroup v2 partition)\n"
  "  --json              print the plan as one JSON object\n" CP_REQUEST_OPTIONS_HELP
  "  -h, --help          this text\n";

static const char release_usage[] =
  "Usage: cachepin release --cgroup PATH [--config PATH]\n"
  "       cachepin release --unit NAME.service [--config PATH]\n"
  "Forget a cgroup placed with `cachepin apply`: its CPUs go back to the pool and\n"
  "its cpuset is widened again to what its parent allows.  --unit: the service's\n"
  "drop-in removed too (systemd reloaded), whether it runs or not.\n";


/* --cgroup, and apply's own: the request options and --mems. */
static int
apply_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct apply_args *a = args;
  int r = cp_cli_request_option (opt, arg, &a->req, err);
  if (r > 0)
    a->given |= CP_CLI_GIVEN (opt);
  if (r != 0)
    return r;
  switch (opt)
    {
    case OPT_CGROUP:
      a->cgroup = arg;
      return 1;
    case OPT_NAME:
      a->name = arg;
      return 1;
    case OPT_MEMS:
      if (cp_parse_mems (arg, &a->mems_keep, err) < 0)
        return cp_error_wrap (err, "--mems");
      return 1;
    case OPT_DRY_RUN:
      a->dry_run = true;
      return 1;
    case OPT_ISOLATE:
      a->isolate = true;
      return 1;
    case OPT_UNIT:
    case OPT_UNIT_START:
    case OPT_UNIT_STOP:
      a->unit = arg;
      a->unit_how = opt;
      return 1;
    case OPT_RUNTIME:
      a->runtime = true;
      return 1;
    default:
      return 0;
    }
}

static const struct option apply_options[] = {
  { "cgroup", required_argument, NULL, OPT_CGROUP },
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  { "mems", required_argument, NULL, OPT_MEMS },
  { "name", required_argument, NULL, OPT_NAME },
  { "dry-run", no_argument, NULL, OPT_DRY_RUN },
  { "isolate", no_argument, NULL, OPT_ISOLATE },
  { "unit", required_argument, NULL, OPT_UNIT },
  { "unit-start", required_argument, NULL, OPT_UNIT_START },
  { "runtime", no_argument, NULL, OPT_RUNTIME },
  CP_HELP_LONG_OPTION,
  CP_REQUEST_LONG_OPTIONS,
  { NULL, 0, NULL, 0 },
};

static const struct option release_options[] = {
  { "cgroup", required_argument, NULL, OPT_CGROUP },
  { "unit", required_argument, NULL, OPT_UNIT },
  { "unit-stop", required_argument, NULL, OPT_UNIT_STOP },
  CP_CONFIG_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec apply_spec = {
  .name = "apply",
  .usage = apply_usage,
  .shortopts = "+:h",
  .options = apply_options,
  .option = apply_option,
};

static const struct cp_cli_spec release_spec = {
  .name = "release",
  .usage = release_usage,
  .shortopts = "+:h",
  .options = release_options,
  .option = apply_option, /* its table has --cgroup and --unit alone */
};

/* The command line, and --cgroup, which both need. */
static int
parse_args (const struct cp_cli_spec *spec, int argc, char **argv, struct apply_args *a, cp_error_t *err)
{
  int r = cp_cli_begin (spec, argc, argv, &a->c, a, err);
  if (r > 0 && a->cgroup && a->unit)
    return cp_fail_input (err, "--unit: not with --cgroup (the unit's cgroup is systemd's to name)");
  if (r > 0 && a->cgroup == NULL && a->unit == NULL)
    return cp_fail_input (err, "--cgroup: required, or --unit NAME.service (see `cachepin %s --help`)", spec->name);
  if (r > 0 && a->runtime && a->unit_how != OPT_UNIT)
    return cp_fail_input (err, "--runtime: only with --unit");
  return r;
}

/* The ledger id of the cgroup PATH under MOUNT. */
static char *
apply_id_at (const char *mount, const char *path)
{
  return cp_xasprintf ("apply:%s%s", mount, path);
}

static char *
apply_id (const struct cp_cgroup *cg)
{
  return apply_id_at (cg->mount, cg->path);
}

/* --dry-run: the plan apply would make now, through the engine's preview
   (placer.h): the parent cgroup's CPUs, the host config, the live ledger read
   without its lock; no cgroup, ledger, journal or state directory written. */
static int
dry_run (const struct apply_args *a, const struct cp_hostconfig *hc, const struct cp_target *target,
         const struct cp_container_request *creq, cp_error_t *err)
{
  struct cp_preview pv;
  int ret = cp_preview_open (hc, NULL, true, target, creq, &pv, err);
  cleanup_plan struct cp_plan *plan = NULL;
  if (ret == 0)
    ret = cp_preview_place (&pv, target, creq, NULL, &plan, err);
  /* As plan says it: without isolation, or refused when strict. */
  cleanup_error cp_error_t why = NULL;
  bool kernel_checked = false;
  if (ret == 0 && creq->isolate
      && cp_cli_isolate_verdict (hc, pv.topo, plan->cpus, target->cgroup, false, &kernel_checked, &why) < 0
      && creq->req.strict)
    {
      *err = cp_steal_pointer (&why);
      ret = -1;
    }
  if (ret == 0 && a->c.json)
    cp_cli_print_plan_json (pv.topo, &creq->req, plan, cp_cli_inputs_json (&pv, hc, true, NULL),
                            creq->isolate ? cp_cli_isolate_json (why, kernel_checked) : NULL);
  else if (ret == 0)
    {
      cleanup_free char *isolate = creq->isolate ? cp_cli_isolate_line (why, kernel_checked) : NULL;
      cleanup_free char *inputs = cp_cli_inputs_line (&pv, hc, true, NULL);
      cleanup_free char *parent = cp_cpulist_format (pv.cpus);
      cleanup_free char *line = cp_xasprintf ("%s; the parent cgroup and the config allow CPUs %s", inputs, parent);
      struct cp_cli_plan_view view = {
        .allowed = pv.cpus, .held = pv.held, .shared = pv.shared, .reserved = pv.kept_back, .inputs = line,
        .isolate = isolate,
      };
      cp_cli_print_plan_human (pv.topo, &creq->req, plan, &view);
      /* The plan alone reads like a placement made: say it was not. */
      printf ("\ndry run: nothing was written (no cgroup file, ledger or journal); without --dry-run, apply "
              "places the cgroup\n");
    }
  cp_preview_clear (&pv);
  return ret;
}

/* A's request with HC's defaults, checked as every placement's is. */
static int
apply_request (const struct apply_args *a, const struct cp_hostconfig *hc, struct cp_container_request *creq,
               cp_error_t *err)
{
  *creq = (struct cp_container_request) { .mems_keep = a->mems_keep, .cpus_source = "--cpus",
                                          .isolate = a->isolate };
  cp_cli_merge_defaults (&creq->req, &a->req, a->given, &hc->defaults);
  if (creq->req.mode == CP_MODE_EXCLUSIVE && creq->req.cpus == 0)
    return cp_fail_input (err, "--cpus: required in exclusive mode");
  if (cp_request_check_isolate (creq, "--mode exclusive", err) < 0)
    return cp_error_wrap (err, "--isolate");
  return 0;
}

int
cp_cli_apply_check (const struct apply_args *a, struct cp_hostconfig *hc, const char *path, const char *id,
                    cp_error_t *err)
{
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  if (cp_cgroup_from_path (path, &cg, err) < 0)
    return -1;
  struct cp_container_request creq;
  if (apply_request (a, hc, &creq, err) < 0)
    return -1;
  struct cp_target target = { .id = id, .cgroup = cg, .cgroup_mount = cg->mount, .cgroup_path = cg->path };
  struct cp_preview pv;
  int ret = cp_preview_open (hc, NULL, true, &target, &creq, &pv, err);
  cleanup_plan struct cp_plan *plan = NULL;
  if (ret == 0)
    ret = cp_preview_place (&pv, &target, &creq, NULL, &plan, err);
  cp_preview_clear (&pv);
  return ret;
}

static int
run_apply (const struct apply_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  return cp_cli_apply_cgroup (a, hc, a->cgroup, NULL, err);
}

int
cp_cli_apply_cgroup (const struct apply_args *a, struct cp_hostconfig *hc, const char *path, const char *unit_id,
                     cp_error_t *err)
{
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  if (cp_cgroup_from_path (path, &cg, err) < 0)
    return cp_error_wrap (err, "--cgroup");

  struct cp_container_request creq;
  if (apply_request (a, hc, &creq, err) < 0)
    return -1;

  cleanup_free char *id = unit_id ? cp_xstrdup (unit_id) : apply_id (cg);
  struct cp_target target = {
    .id = id,
    .name = cp_front_set_name (a->name ? a->name : a->unit ? a->unit : cg->path),
    .cgroup = cg,
    .cgroup_mount = cg->mount,
    .cgroup_path = cg->path,
  };
  if (a->dry_run)
    return dry_run (a, hc, &target, &creq, err);
  /* --json names the domains: load the topology for it now, as placing leaves the
     process in its sandbox (no more /sys). */
  cleanup_topo struct cp_topo *topo = NULL;
  if (a->c.json && cp_topocache_load (hc, 0, &topo, err) < 0)
    return cp_error_wrap (err, "topology");
  cleanup_plan struct cp_plan *plan = NULL;
  if (cp_front_place (hc, CP_JOURNAL_APPLY, &target, &creq, NULL, &plan, err) < 0)
    return -1;
  cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
  cleanup_free char *mems = cp_cpulist_format (plan->mems);
  cp_log (CP_LOG_INFO, "placed %s: cpus %s mems %s; %s", id, cpus, mems, plan->reason);
  if (a->c.json)
    cp_cli_print_plan_json (topo, &creq.req, plan, NULL, NULL);
  else
    {
      /* The directory's name is the caller's text (policy/base/text.h). */
      cleanup_free char *where = cp_xasprintf ("%s%s", cg->mount, cg->path);
      cp_text_sanitize (where);
      /* "CPU 1 (1 CPU)": the list and the count, never a bare number that reads
         as either; --json has the machine-readable form. */
      unsigned n_cpus = (unsigned) hwloc_bitmap_weight (plan->cpus);
      unsigned n_mems = (unsigned) hwloc_bitmap_weight (plan->mems);
      cleanup_free char *memory = a->mems_keep ? cp_xstrdup ("memory nodes kept as they were")
                                               : cp_xasprintf ("memory %s %s", cp_plural (n_mems, "node", "nodes"), mems);
      printf ("placed %s on %s %s (%u %s), %s\n%s\n", where, cp_plural (n_cpus, "CPU", "CPUs"), cpus, n_cpus,
              cp_plural (n_cpus, "CPU", "CPUs"), memory, plan->reason);
    }
  return 0;
}

/* `release` of a cgroup that is gone (a service stopped, its cgroup removed):
   where it was names the entry, which is dropped; there is nothing to widen. */
static int
release_gone (const struct apply_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  cleanup_free char *mount = NULL, *path = NULL;
  if (cp_cgroup_locate_path (a->cgroup, &mount, &path, err) < 0)
    return cp_error_wrap (err, "--cgroup");
  cleanup_free char *id = apply_id_at (mount, path);
  struct cp_release rel = { .id = id };
  enum cp_release_result result;
  if (cp_front_release (hc, CP_JOURNAL_RELEASE, &rel, &result, err) < 0)
    return -1;
  if (result == CP_RELEASE_NONE)
    return cp_fail_input (err, "--cgroup: %s%s was not placed by `cachepin apply` (and no longer exists)", mount,
                          path);
  printf ("%s%s: released (the cgroup no longer exists)\n", mount, path);
  return 0;
}

static int
run_release (const struct apply_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cleanup_error cp_error_t open_err = NULL;
  if (cp_cgroup_from_path (a->cgroup, &cg, &open_err) < 0)
    {
      int e = cp_error_errno (open_err);
      if (e == ENOENT || e == ENOTDIR)
        return release_gone (a, hc, err);
      *err = cp_steal_pointer (&open_err);
      return cp_error_wrap (err, "--cgroup");
    }
  cleanup_free char *id = apply_id (cg);
  struct cp_release rel = { .id = id, .widen = cg };
  enum cp_release_result result;
  if (cp_front_release (hc, CP_JOURNAL_RELEASE, &rel, &result, err) < 0)
    return -1;
  if (result == CP_RELEASE_NONE)
    return cp_fail_input (err, "--cgroup: %s%s was not placed by `cachepin apply`", cg->mount, cg->path);
  if (result == CP_RELEASE_RECREATED)
    printf ("%s%s: released (the cgroup was removed and made again since it was placed; its cpuset is left as it "
            "is)\n", cg->mount, cg->path);
  else
    printf ("%s%s: released\n", cg->mount, cg->path);
  return 0;
}

int
cp_cmd_apply (int argc, char **argv, cp_error_t *err)
{
  struct apply_args a = { 0 };
  cp_request_init (&a.req);
  int r = parse_args (&apply_spec, argc, argv, &a, err);
  if (r <= 0)
    return r;
  cp_log_init ("cachepin", false);
  if (a.unit)
    return cp_cli_apply_unit (&a, err);
  struct cp_hostconfig hc = { 0 };
  int ret = run_apply (&a, &hc, err);
  cp_hostconfig_free (&hc);
  return ret;
}

int
cp_cmd_release (int argc, char **argv, cp_error_t *err)
{
  struct apply_args a = { 0 };
  int r = parse_args (&release_spec, argc, argv, &a, err);
  if (r <= 0)
    return r;
  cp_log_init ("cachepin", false);
  if (a.unit)
    return cp_cli_release_unit (&a, err);
  struct cp_hostconfig hc = { 0 };
  int ret = cp_hostconfig_load (a.c.config, &hc, err);
  if (ret == 0)
    ret = run_release (&a, &hc, err);
  cp_hostconfig_free (&hc);
  return ret;
}
