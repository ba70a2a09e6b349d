/* `cachepin plan`: where a request would land now, on this host (its host config
 * and live ledger, as the hook would decide it: hook/engine/placer.h's preview),
 * on the empty machine, or on any captured topology. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bitmap.h"
#include "cpulist.h"
#include "topo.h"
#include "util.h"
#include "placer.h"

static const char plan_usage[] =
  "Usage: cachepin plan [OPTIONS]\n"
  "Compute a placement and print it; writes nothing.  On this host (the default)\n"
  "it is the placement the hook would make now: the host config's cpus, reserved\n"
  "and defaults, and the CPUs the live ledger's containers hold, read as the hook\n"
  "reads them.\n\n"
  "  --topology SRC      host (default), an hwloc XML file, or an hwloc synthetic\n"
  "                      description (not this host: no ledger, no host config\n"
  "                      unless --config names one)\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --empty             the empty machine: no ledger, no host config unless\n"
  "                      --config names one\n"
  "  --allowed CPULIST   narrow the CPUs the container may use\n"
  "  --occupied CPULIST  CPUs held by others, besides the ledger's\n"
  "  --json              print the plan as one JSON object\n" CP_REQUEST_OPTIONS_HELP
  "  --isolate           ask for the CPUs as a cgroup v2 partition (cachepin.io/isolate;\n"
  "                      exclusive mode only) and say whether it would be granted now,\n"
  "                      and if not, why (with --strict: refused, as the hook would)\n"
  "  -h, --help          this text\n";

enum
{
  OPT_TOPOLOGY = 0x200,
  OPT_ALLOWED,
  OPT_OCCUPIED,
  OPT_EMPTY,
  OPT_ISOLATE,
};

struct plan_args
{
  struct cp_cli_common c;
  const char *topology;
  const char *allowed;
  const char *occupied;
  bool empty;
  bool isolate;
  unsigned given; /* CP_CLI_GIVEN bits of the request options given */
  struct cp_request req;
};

static int
plan_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct plan_args *a = args;
  int r = cp_cli_request_option (opt, arg, &a->req, err);
  if (r > 0)
    a->given |= CP_CLI_GIVEN (opt);
  if (r != 0)
    return r;
  switch (opt)
    {
    case OPT_TOPOLOGY:
      a->topology = arg;
      return 1;
    case OPT_ALLOWED:
      a->allowed = arg;
      return 1;
    case OPT_OCCUPIED:
      a->occupied = arg;
      return 1;
    case OPT_EMPTY:
      a->empty = true;
      return 1;
    case OPT_ISOLATE:
      a->isolate = true;
      return 1;
    default:
      return 0;
    }
}

static const struct option plan_options[] = {
  { "topology", required_argument, NULL, OPT_TOPOLOGY },
  { "allowed", required_argument, NULL, OPT_ALLOWED },
  { "occupied", required_argument, NULL, OPT_OCCUPIED },
  { "empty", no_argument, NULL, OPT_EMPTY },
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  CP_REQUEST_LONG_OPTIONS,
  { "isolate", no_argument, NULL, OPT_ISOLATE },
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec plan_spec = {
  .name = "plan",
  .usage = plan_usage,
  .shortopts = "+:h",
  .options = plan_options,
  .option = plan_option,
};

/* --allowed: a list of online CPUs, which narrows what the limits allow. */
static int
narrow_allowed (const struct cp_topo *topo, const char *arg, hwloc_bitmap_t cpus, cp_error_t *err)
{
  cleanup_bitmap hwloc_bitmap_t allowed = cp_bitmap_new ();
  if (cp_cli_cpulist_option ("--allowed", arg, allowed, err) < 0)
    return -1;
  if (!hwloc_bitmap_isincluded (allowed, topo->online))
    {
      cleanup_bitmap hwloc_bitmap_t extra = cp_bitmap_new ();
      hwloc_bitmap_andnot (extra, allowed, topo->online);
      cleanup_free char *s = cp_cpulist_format (extra);
      return cp_fail_input (err, "--allowed: CPUs %s are not online in this topology", s);
    }
  if (hwloc_bitmap_iszero (allowed))
    return cp_fail_input (err, "--allowed: the list is empty");
  hwloc_bitmap_and (cpus, cpus, allowed);
  return 0;
}

/* A ledger plan cannot read: one line, and the ways out. */
static int
ledger_failed (const struct cp_preview *pv, cp_error_t *err)
{
  if (pv->ledger_path == NULL || pv->ledger != NULL)
    return -1;
  int e = cp_error_errno (*err);
  bool denied = e == EACCES || e == EPERM;
  cleanup_free char *why = cp_xstrdup (cp_error_message (*err));
  return cp_error_set (err, cp_error_kind (*err), 0, "%s; %s", why,
                       denied ? "plan reads the live ledger as the hook does: run it as root, or plan on the empty "
                                "machine with --empty"
                              : "the next hook run sets it aside and goes back to its previous generation; plan "
                                "does not guess: --empty plans on the empty machine");
}

static int
run_plan (struct plan_args *a, struct cp_hostconfig *hc, struct cp_preview *pv, cp_error_t *err)
{
  /* The host's own view unless a captured topology or --empty says otherwise:
     their ledger is not this host's (or none); a host config only when named. */
  bool host = a->topology == NULL || strcmp (a->topology, "host") == 0;
  bool with_ledger = host && !a->empty;
  bool with_config = with_ledger || a->c.config != NULL;
  const char *empty_why = with_ledger ? NULL : a->empty ? "the empty machine (--empty)"
                                                        : "a captured topology (not this host)";
  if (with_config && cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  if (!with_config)
    cp_hostconfig_init (hc);
  struct cp_topo *topo = NULL;
  /* The host's topology is the one the hook uses: the host config's, from its
     cache when valid (plan never writes the cache). */
  if (!host && cp_topo_load (a->topology, &topo, err) < 0)
    return cp_error_wrap (err, "--topology");

  struct cp_container_request creq = { .cpus_source = "--cpus", .isolate = a->isolate };
  cp_cli_merge_defaults (&creq.req, &a->req, a->given, &hc->defaults);
  if (cp_request_check_isolate (&creq, "--mode exclusive", err) < 0)
    return cp_error_wrap (err, "--isolate");
  struct cp_target target = { .id = "plan:" };
  if (cp_preview_open (hc, topo, with_ledger, &target, &creq, pv, err) < 0)
    return ledger_failed (pv, err);

  if (a->allowed && narrow_allowed (pv->topo, a->allowed, pv->cpus, err) < 0)
    return -1;
  cleanup_bitmap hwloc_bitmap_t occupied = cp_bitmap_new ();
  if (a->occupied && cp_cli_cpulist_option ("--occupied", a->occupied, occupied, err) < 0)
    return -1;
  unsigned n_allowed = (unsigned) hwloc_bitmap_weight (pv->cpus);
  if (creq.req.mode == CP_MODE_EXCLUSIVE && creq.req.cpus == 0)
    return cp_fail_input (err, "--cpus: required in exclusive mode (1..%u)", n_allowed);
  /* More than the limits allow is refused by cp_preview_place(), naming the
     limit (the topology, the host config); --allowed narrows it here. */
  if (a->allowed && !pv->too_many && cp_cli_check_count (&creq.req, pv->cpus, "--allowed gives", err) < 0)
    return -1;

  cleanup_plan struct cp_plan *plan = NULL;
  if (cp_preview_place (pv, &target, &creq, occupied, &plan, err) < 0)
    return -1;
  /* Not granted: the hook places it without isolation, or refuses it when strict. */
  cleanup_error cp_error_t why = NULL;
  bool kernel_checked = false;
  /* This host now (its topology and ledger): its kernel is judged too. */
  if (creq.isolate && cp_cli_isolate_verdict (hc, pv->topo, plan->cpus, NULL, with_ledger, &kernel_checked, &why) < 0
      && creq.req.strict)
    {
      *err = cp_steal_pointer (&why);
      return -1;
    }
  if (a->c.json)
    {
      cp_cli_print_plan_json (pv->topo, &creq.req, plan, cp_cli_inputs_json (pv, hc, with_config, empty_why),
                              creq.isolate ? cp_cli_isolate_json (why, kernel_checked) : NULL);
      return 0;
    }
  cleanup_free char *isolate = creq.isolate ? cp_cli_isolate_line (why, kernel_checked) : NULL;
  cleanup_free char *inputs = cp_cli_inputs_line (pv, hc, with_config, empty_why);
  cleanup_bitmap hwloc_bitmap_t held = cp_bitmap_dup (pv->held);
  hwloc_bitmap_or (held, held, occupied);
  struct cp_cli_plan_view view = {
    .allowed = pv->cpus, .held = held, .shared = pv->shared, .reserved = pv->kept_back, .inputs = inputs,
    .isolate = isolate,
  };
  cp_cli_print_plan_human (pv->topo, &creq.req, plan, &view);
  return 0;
}

int
cp_cmd_plan (int argc, char **argv, cp_error_t *err)
{
  struct plan_args a = { 0 };
  cp_request_init (&a.req);
  int r = cp_cli_begin (&plan_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  struct cp_hostconfig hc = { 0 };
  struct cp_preview pv = { 0 };
  int ret = run_plan (&a, &hc, &pv, err);
  cp_preview_clear (&pv);
  cp_hostconfig_free (&hc);
  return ret;
}
