/* `cachepin plan`: show where a request would land, on this host or any topology. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bitmap.h"
#include "cpulist.h"
#include "topo.h"
#include "util.h"

static const char plan_usage[] =
  "Usage: cachepin plan [OPTIONS]\n"
  "Compute a placement and print it; writes nothing.\n\n"
  "  --topology SRC      host (default), an hwloc XML file, or an hwloc synthetic description\n"
  "  --allowed CPULIST   CPUs the container may use (default: the topology's allowed CPUs)\n"
  "  --occupied CPULIST  CPUs already held by other containers\n"
  "  --json              print the plan as one JSON object\n" CP_REQUEST_OPTIONS_HELP
  "  -h, --help          this text\n";

enum
{
  OPT_TOPOLOGY = 0x200,
  OPT_ALLOWED,
  OPT_OCCUPIED,
};

struct plan_args
{
  struct cp_cli_common c;
  const char *topology;
  const char *allowed;
  const char *occupied;
  struct cp_request req;
};

static int
plan_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct plan_args *a = args;
  int r = cp_cli_request_option (opt, arg, &a->req, err);
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
    default:
      return 0;
    }
}

static const struct option plan_options[] = {
  { "topology", required_argument, NULL, OPT_TOPOLOGY },
  { "allowed", required_argument, NULL, OPT_ALLOWED },
  { "occupied", required_argument, NULL, OPT_OCCUPIED },
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  CP_REQUEST_LONG_OPTIONS,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec plan_spec = {
  .name = "plan",
  .usage = plan_usage,
  .shortopts = "+:h",
  .options = plan_options,
  .option = plan_option,
};

/* The allowed set: the option's, checked against what the topology has online. */
static int
resolve_allowed (const struct cp_topo *topo, const char *arg, hwloc_bitmap_t allowed, cp_error_t *err)
{
  if (arg == NULL)
    {
      hwloc_bitmap_copy (allowed, topo->allowed);
      return 0;
    }
  if (cp_cli_cpulist_option ("--allowed", arg, allowed, err) < 0)
    return -1;
  if (!hwloc_bitmap_isincluded (allowed, topo->online))
    {
      hwloc_bitmap_t extra = cp_bitmap_new ();
      hwloc_bitmap_andnot (extra, allowed, topo->online);
      cleanup_free char *s = cp_cpulist_format (extra);
      hwloc_bitmap_free (extra);
      return cp_fail_input (err, "--allowed: CPUs %s are not online in this topology", s);
    }
  if (hwloc_bitmap_iszero (allowed))
    return cp_fail_input (err, "--allowed: the list is empty");
  return 0;
}

static int
run_plan (struct plan_args *a, hwloc_bitmap_t allowed, hwloc_bitmap_t occupied, cp_error_t *err)
{
  struct cp_topo *topo = NULL;
  if (cp_topo_load (a->topology, &topo, err) < 0)
    return cp_error_wrap (err, "--topology");

  int ret = resolve_allowed (topo, a->allowed, allowed, err);
  if (ret == 0 && a->occupied)
    ret = cp_cli_cpulist_option ("--occupied", a->occupied, occupied, err);
  unsigned n_allowed = (unsigned) hwloc_bitmap_weight (allowed);
  if (ret == 0 && a->req.mode == CP_MODE_EXCLUSIVE && a->req.cpus == 0)
    ret = cp_fail_input (err, "--cpus: required in exclusive mode (1..%u)", n_allowed);
  if (ret == 0)
    ret = cp_cli_check_count (&a->req, allowed, a->allowed ? "--allowed gives" : "the topology allows", err);

  struct cp_plan *plan = NULL;
  if (ret == 0)
    {
      struct cp_usage usage = { .held = occupied };
      ret = cp_place (topo, allowed, NULL, &usage, &a->req, &plan, err);
    }
  if (ret == 0)
    {
      if (a->c.json)
        cp_cli_print_plan_json (topo, &a->req, plan);
      else
        cp_cli_print_plan_human (topo, &a->req, plan, allowed, occupied);
    }
  cp_plan_free (plan);
  cp_topo_free (topo);
  return ret;
}

int
cp_cmd_plan (int argc, char **argv, cp_error_t *err)
{
  struct plan_args a = { 0 };
  cp_request_init (&a.req);
  int r = cp_cli_begin (&plan_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  hwloc_bitmap_t allowed = cp_bitmap_new (), occupied = cp_bitmap_new ();
  int ret = run_plan (&a, allowed, occupied, err);
  hwloc_bitmap_free (allowed);
  hwloc_bitmap_free (occupied);
  return ret;
}
