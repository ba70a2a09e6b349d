/* cachepin-isolate-crash: `cachepin ARGS` run in this process with SIGKILL raised
 * at one of cachepin.io/isolate's fault points (hook/engine/isolation.h), for the
 * VM crash test (tests/vm: a kill between the partition's writes, repaired by the
 * next run).  Built against the fault-injection libraries (cachepin_core_fault,
 * tests/stress/CMakeLists.txt); not installed, not built by default:
 *   cmake --build build --target cachepin-isolate-crash
 *
 *   cachepin-isolate-crash --list                 the points' names, one a line
 *   cachepin-isolate-crash POINT[:N] -- ARGS...   ARGS as `cachepin` takes them
 *                                                 (apply, release, hook), killed at
 *                                                 the Nth time POINT is reached (1)
 *
 * Killed: the shell sees 137.  When the point is never reached the command ends
 * as cachepin would (its exit status), with a line on stderr saying so. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "isolation.h"

static enum cp_isolate_fault_point target;
static unsigned remaining = 1;

static void
at_point (enum cp_isolate_fault_point point, void *data)
{
  (void) data;
  if (point == target && --remaining == 0)
    raise (SIGKILL);
}

static int
usage (void)
{
  fprintf (stderr, "usage: cachepin-isolate-crash --list | POINT[:N] -- apply|release|hook ARGS...\n");
  return CP_EXIT_USAGE;
}

int
main (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--list") == 0)
    {
      for (int p = 0; p < CP_ISOLATE_FAULT_COUNT; p++)
        printf ("%s\n", cp_isolate_fault_name ((enum cp_isolate_fault_point) p));
      return 0;
    }
  if (argc < 4 || strcmp (argv[2], "--") != 0)
    return usage ();
  char *name = strdup (argv[1]);
  char *colon = strchr (name, ':');
  if (colon)
    {
      *colon = '\0';
      remaining = (unsigned) strtoul (colon + 1, NULL, 10);
    }
  int found = -1;
  for (int p = 0; p < CP_ISOLATE_FAULT_COUNT; p++)
    if (strcmp (name, cp_isolate_fault_name ((enum cp_isolate_fault_point) p)) == 0)
      found = p;
  free (name);
  if (found < 0 || remaining == 0)
    return usage ();
  target = (enum cp_isolate_fault_point) found;
  cp_isolate_set_fault_hook (at_point, NULL);

  static const struct
  {
    const char *name;
    int (*fn) (int argc, char **argv, cp_error_t *err);
  } commands[] = { { "apply", cp_cmd_apply }, { "release", cp_cmd_release }, { "hook", cp_cmd_hook } };
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp (argv[3], commands[i].name) == 0)
      {
        cp_error_t err = NULL;
        int r = commands[i].fn (argc - 3, argv + 3, &err);
        fprintf (stderr, "cachepin-isolate-crash: fault point %s was not reached\n", argv[1]);
        if (r == 0)
          return CP_EXIT_OK;
        fprintf (stderr, "cachepin %s: %s\n", argv[3], cp_error_message (err));
        return cp_error_kind (err) == CP_ERR_INPUT           ? CP_EXIT_USAGE
               : cp_error_kind (err) == CP_ERR_UNSATISFIABLE ? CP_EXIT_UNSATISFIABLE
                                                             : CP_EXIT_FAILURE;
      }
  return usage ();
}
