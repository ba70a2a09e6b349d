/* What the subcommands share: their command line's frame (options, help, the
 * host config).  What they share around the engine's steps (the sandbox, the
 * journal, a placement and a release) is the engine's: hook/engine/front.h. */
#define _GNU_SOURCE
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "log.h"
#include "util.h"

/* One option or operand: the shared ones, else the subcommand's. */
static int
take_option (const struct cp_cli_spec *spec, int opt, char **argv, const char *prev, struct cp_cli_common *common,
             void *args, cp_error_t *err)
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
      return cp_cli_option_error (opt, argv, spec, err);
    default:
      break;
    }
  int r = spec->option ? spec->option (opt, optarg, args, err) : 0;
  if (r != 0)
    return r;
  if (opt == 1 && cp_cli_flag_value_error (spec, prev, optarg, err) < 0) /* PREV: the word before it */
    return -1;
  if (opt == 1)
    return cp_fail_input (err, "`%.64s`: unexpected argument (see `cachepin %s --help`)", optarg, spec->name);
  return cp_cli_option_error (opt, argv, spec, err);
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
    if (take_option (spec, opt, argv, optind >= 2 ? argv[optind - 2] : NULL, common, args, err) < 0)
      return -1;
  /* After "--" (or the first operand with "+"), the rest are operands. */
  for (; optind < argc; optind++)
    {
      optarg = argv[optind];
      if (take_option (spec, 1, argv, argv[optind - 1], common, args, err) < 0)
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
cp_cli_kube_option (int opt, const char *arg, struct cp_kube_options *k)
{
  switch (opt)
    {
    case CP_OPT_KUBE_API:
      k->api = arg;
      return 1;
    case CP_OPT_KUBE_CA:
      k->ca = arg;
      return 1;
    case CP_OPT_KUBE_TOKEN_FILE:
      k->token_file = arg;
      return 1;
    default:
      return 0;
    }
}
