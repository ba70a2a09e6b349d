/* cachepin: places containers on LLC-aligned, PE0-preferred CPUs.
 *
 * main() alone turns errors into messages and exit statuses. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "text.h"
#include "util.h"
#include "version.h"

struct command
{
  const char *name;
  cp_command_fn fn;
  const char *summary;
  /* What is done once the command has succeeded (it changed the ledger and a
     cgroup): a stdout that cannot take the result does not undo it.  NULL: the
     command changes nothing. */
  const char *done;
  bool scrub_env; /* see scrub_environment() */
  /* Works on root's files (the state directory, the ledger, cgroups): a
     permission refused to another user is told to run it as root. */
  bool as_root;
};

static const struct command commands[] = {
  { "plan", cp_cmd_plan, "compute a placement for a request and print it (writes nothing)", NULL, false, false },
  { "hook", cp_cmd_hook, "run as an OCI hook (createRuntime/prestart: place; poststop: release)", NULL, true, true },
  { "apply", cp_cmd_apply, "place a cgroup no runtime manages, and record it", "the placement was made", true, true },
  { "release", cp_cmd_release, "forget a cgroup placed with apply", "the release was made", true, true },
  { "nri", cp_cmd_nri, "run as an NRI plugin of containerd or CRI-O (place at CreateContainer)", NULL, true, true },
  { "status", cp_cmd_status, "show the topology, the ledger, kernel features, the config (writes nothing)", NULL, true,
    true },
  { "why", cp_cmd_why, "explain a container's placement from the journal (writes nothing)", NULL, true, true },
  { "metrics", cp_cmd_metrics, "print status and the decisions counted for Prometheus (textfile collector)", NULL,
    true, true },
  { "dra", cp_cmd_dra, "print the ResourceSlices this node publishes for Kubernetes DRA (writes nothing)", NULL, false,
    true },
  { "measure", cp_cmd_measure, "time a communicating workload on cachepin's choice and spread over the L3s",
    NULL, false, false },
};

/* The commands that run as root, change the ledger and cgroups, and hold the
   ledger's lock take nothing from the caller's environment that could change what
   they do or make them block (docs/security.md):
     TZ       glibc's tzset() (syslog's timestamps) opens the file it names: a FIFO
              blocks it, with the ledger's lock held;
     HWLOC_*  hwloc_topology_load() takes HWLOC_XMLFILE, HWLOC_SYNTHETIC,
              HWLOC_FSROOT, ... as the topology instead of the host's (and the host
              config's `topology`).
   Unset before anything calls tzset() or hwloc. */
static void
scrub_environment (void)
{
  unsetenv ("TZ");
  for (bool again = true; again;)
    {
      again = false;
      for (char **e = environ; *e; e++)
        if (strncmp (*e, "HWLOC_", 6) == 0)
          {
            cleanup_free char *name = cp_xstrndup (*e, strcspn (*e, "="));
            unsetenv (name); /* changes environ: start over */
            again = true;
            break;
          }
    }
}

/* stdout after a command that succeeded: everything it printed must have been
   written.  A reader that went away (EPIPE: `cachepin apply ... | head -0`) wanted
   none of it, and what the command did stands: not a failure.  Any other write
   error is one, but must not read as if the command had failed when it changed
   something: the line says what was done. */
static int
check_stdout (const struct command *cmd)
{
  if (fflush (stdout) == 0 && !ferror (stdout))
    return CP_EXIT_OK;
  int e = errno;
  if (e == EPIPE)
    return CP_EXIT_OK;
  if (cmd && cmd->done)
    fprintf (stderr, "cachepin %s: %s, but its result could not be printed: write stdout: %s\n", cmd->name, cmd->done,
             strerror (e));
  else
    fprintf (stderr, "cachepin%s%s: write stdout: %s\n", cmd ? " " : "", cmd ? cmd->name : "", strerror (e));
  return CP_EXIT_FAILURE;
}

static void
usage (FILE *out)
{
  fprintf (out, "Usage: cachepin COMMAND [OPTIONS]\n\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\n  --help     this text (COMMAND --help for a command's options)\n"
                "  --version  the version\n");
}

/* The command (or --help, --version) closest to the mistyped WORD, or NULL. */
static const char *
closest_command (const char *word)
{
  const char *names[CP_ARRAY_SIZE (commands) + 2];
  for (size_t i = 0; i < CP_ARRAY_SIZE (commands); i++)
    names[i] = commands[i].name;
  names[CP_ARRAY_SIZE (commands)] = "--help";
  names[CP_ARRAY_SIZE (commands) + 1] = "--version";
  return cp_text_closest (word, names, CP_ARRAY_SIZE (names));
}

static int
exit_status (cp_error_t e)
{
  switch (cp_error_kind (e))
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

/* What to add to the error line of CMD: " (run as root)" when the system
   refused a permission (EACCES, EPERM) to a user who is not root, for the
   commands that work on root's files; the cause is then who runs it, which
   "Permission denied" alone does not say. */
static const char *
root_hint (const struct command *cmd, cp_error_t e)
{
  int n = cp_error_errno (e);
  if (!cmd->as_root || geteuid () == 0 || (n != EACCES && n != EPERM))
    return "";
  return " (run as root)";
}

int
main (int argc, char **argv)
{
  /* A closed stdout is an EPIPE that check_stdout() judges, not a SIGPIPE that
     kills the process after a placement was committed (exit 141). */
  signal (SIGPIPE, SIG_IGN);
  /* A small RLIMIT_FSIZE: a write returns EFBIG, which the ledger's commit and the
     topology cache report (and clean up after) like any other failed write,
     instead of SIGXFSZ killing the hook with no message and a temporary file
     left (exit 153). */
  signal (SIGXFSZ, SIG_IGN);
  if (argc < 2)
    {
      usage (stderr);
      return CP_EXIT_USAGE;
    }
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0)
    {
      usage (stdout);
      return check_stdout (NULL);
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("cachepin %s\n", CACHEPIN_VERSION);
      return check_stdout (NULL);
    }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      {
        if (commands[i].scrub_env)
          scrub_environment ();
        cp_error_t err = NULL;
        if (commands[i].fn (argc - 1, argv + 1, &err) == 0)
          return check_stdout (&commands[i]);
        fprintf (stderr, "cachepin %s: %s%s\n", commands[i].name, cp_error_message (err), root_hint (&commands[i], err));
        int status = exit_status (err);
        cp_error_free (&err);
        return status;
      }
  /* The caller's text, shown as a terminal or a log cannot misread it. */
  cleanup_free char *name = cp_xasprintf ("%.64s", argv[1]);
  cp_text_sanitize (name);
  const char *near = closest_command (argv[1]);
  if (near)
    fprintf (stderr, "cachepin: unknown command `%s` (did you mean `%s`?)\n", name, near);
  else
    fprintf (stderr, "cachepin: unknown command `%s` (see `cachepin --help`)\n", name);
  return CP_EXIT_USAGE;
}
