/* What the subcommands share: their command line's frame (options, help, the
 * host config), and around the engine's steps the sandbox they enter between
 * opening and deciding, and a placement and a release run through the steps
 * (hook/engine/placer.h). */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>

#include "util.h"
#include "log.h"
#include "sandbox.h"

/* One option or operand: the shared ones, else the subcommand's. */
static int
take_option (const struct cp_cli_spec *spec, int opt, char **argv, struct cp_cli_common *common, void *args,
             cp_error_t *err)
{
  switch (opt)
    {
    case CP_OPT_CONFIG:
      common->config = optarg;
      return 1;
    case CP_OPT_JSON:
      common->json = true;
      return 1;
    case 'h':
      common->help = true;
      return 1;
    case ':':
    case '?':
      return cp_cli_option_error (opt, argv, spec->name, err);
    default:
      break;
    }
  int r = spec->option ? spec->option (opt, optarg, args, err) : 0;
  if (r != 0)
    return r;
  if (opt == 1)
    return cp_fail_input (err, "`%.64s`: unexpected argument (see `cachepin %s --help`)", optarg, spec->name);
  return cp_cli_option_error (opt, argv, spec->name, err);
}

int
cp_cli_begin (const struct cp_cli_spec *spec, int argc, char **argv, struct cp_cli_common *common, void *args,
              cp_error_t *err)
{
  optind = 1;
  opterr = 0;
  int opt;
  /* "-": operands come back in order as option 1, so that options may follow an
     operand (`hook createRuntime --config F`, as hook files in the wild write
     it), whatever POSIXLY_CORRECT says. */
  while ((opt = getopt_long (argc, argv, spec->shortopts, spec->options, NULL)) != -1)
    if (take_option (spec, opt, argv, common, args, err) < 0)
      return -1;
  /* After "--" (or the first operand with "+"), the rest are operands. */
  for (; optind < argc; optind++)
    {
      optarg = argv[optind];
      if (take_option (spec, 1, argv, common, args, err) < 0)
        return -1;
    }
  if (!common->help)
    return 1;
  fputs (spec->usage, stdout);
  return 0;
}

int
cp_cli_load_config (const struct cp_cli_common *common, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (cp_hostconfig_load (common->config, hc, err) < 0)
    return -1;
  cp_log_set_level (hc->log_level);
  return 0;
}

int
cp_cli_enter_sandbox (const struct cp_hostconfig *hc, const struct cp_sandbox *sb, cp_error_t *err)
{
  if (!hc->sandbox)
    return 0;
  int abi = cp_sandbox_enter (sb, err);
  if (abi < 0)
    return -1;
  if (CP_SANDBOX_SANITIZER_BUILD)
    cp_log (CP_LOG_DEBUG, "sandbox: no_new_privs only (a sanitizer build: see hook/host/sandbox.h)");
  else if (abi > 0)
    cp_log (CP_LOG_DEBUG, "sandbox: no_new_privs, Landlock ABI %d, seccomp", abi);
  else
    cp_log (CP_LOG_DEBUG, "sandbox: no_new_privs, seccomp (this kernel has no Landlock)");
  return 0;
}

/* Everything is read and the ledger is locked: from here on the run only decides,
   commits the ledger and writes into the target's cgroup hierarchy, and reads
   /proc/<pid>.  See sandbox.h. */
static int
sandbox_placer (const struct cp_hostconfig *hc, const struct cp_placer *p, cp_error_t *err)
{
  struct cp_sandbox sb;
  if (cp_placer_sandbox (p, &sb, err) < 0)
    return -1;
  return cp_cli_enter_sandbox (hc, &sb, err);
}

int
cp_cli_place (const struct cp_hostconfig *hc, const struct cp_target *target, const struct cp_container_request *creq,
              struct cp_plan **plan_out, cp_error_t *err)
{
  cleanup_placer struct cp_placer *p = NULL;
  if (cp_placer_open (hc, target, creq, &p, err) < 0 || sandbox_placer (hc, p, err) < 0
      || cp_placer_decide (p, err) < 0 || cp_placer_apply (p, err) < 0)
    return -1;
  *plan_out = cp_placer_take_plan (p);
  return 0;
}

int
cp_cli_release (const struct cp_hostconfig *hc, const struct cp_release *rel, enum cp_release_result *result,
                cp_error_t *err)
{
  cleanup_placer struct cp_placer *p = NULL;
  if (cp_placer_open_release (hc, rel, &p, err) < 0 || sandbox_placer (hc, p, err) < 0)
    return -1;
  return cp_placer_release_commit (p, result, err);
}
