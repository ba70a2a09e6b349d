/* cachepin: places containers on LLC-aligned, PE0-preferred CPUs.
 *
 * main() alone turns errors into messages and exit statuses. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "version.h"

struct command
{
  const char *name;
  cp_command_fn fn;
  const char *summary;
};

static const struct command commands[] = {
  { "plan", cp_cmd_plan, "compute a placement for a request and print it (writes nothing)" },
  { "hook", cp_cmd_hook, "run as an OCI hook (createRuntime/prestart: place; poststop: release)" },
  { "apply", cp_cmd_apply, "place a cgroup no runtime manages, and record it" },
  { "release", cp_cmd_release, "forget a cgroup placed with apply" },
};

static void
usage (FILE *out)
{
  fprintf (out, "Usage: cachepin COMMAND [OPTIONS]\n\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\n  --help     this text (COMMAND --help for a command's options)\n"
                "  --version  the version\n");
}

static int
exit_status (const struct cp_error *e)
{
  switch (e->kind)
    {
    case CP_ERR_INPUT:
      return CP_EXIT_USAGE;
    case CP_ERR_UNSATISFIABLE:
      return CP_EXIT_UNSATISFIABLE;
    case CP_ERR_RUNTIME:
    default:
      return CP_EXIT_FAILURE;
    }
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      usage (stderr);
      return CP_EXIT_USAGE;
    }
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0)
    {
      usage (stdout);
      return CP_EXIT_OK;
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("cachepin %s\n", CACHEPIN_VERSION);
      return CP_EXIT_OK;
    }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      {
        cp_error_t err = NULL;
        if (commands[i].fn (argc - 1, argv + 1, &err) == 0)
          return CP_EXIT_OK;
        fprintf (stderr, "cachepin %s: %s\n", commands[i].name, cp_error_message (err));
        int status = exit_status (err);
        cp_error_free (&err);
        return status;
      }
  fprintf (stderr, "cachepin: `%.64s`: unknown command (see `cachepin --help`)\n", argv[1]);
  return CP_EXIT_USAGE;
}
