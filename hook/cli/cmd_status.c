/* `cachepin status`: the cgroup mode, the topology, the ledger with a per-LLC
 * occupancy map, the kernel's scheduler features and the configuration in effect.
 *
 * Read-only, and safe while hooks run: the ledger is read without its lock (a
 * commit renames a complete ledger.json into place, so a read sees the old one or
 * the new one), nothing is created, repaired or set aside, and each part that
 * cannot be read is reported in its own "error" and does not stop the others.
 * The parts are gathered by the engine (status.c, status_host.c and
 * status_ledger.c) and rendered for people by status_text.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hostconfig.h"
#include "status.h"

static const char status_usage[] =
  "Usage: cachepin status [--json | --wide] [--config PATH]\n"
  "Show the cgroup mode, the topology, the ledger and its per-LLC occupancy, the\n"
  "kernel's scheduler features and the configuration in effect; writes nothing.\n\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --json              print one JSON object (keys in docs/status.md)\n"
  "  -w, --wide          every field in full (ids, pid, placed time, cgroup), not\n"
  "                      fitted to 80 columns\n"
  "  -h, --help          this text\n";

enum
{
  OPT_WIDE = 'w',
};

struct status_args
{
  struct cp_cli_common c;
  bool wide;
};

static int
status_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  (void) arg;
  (void) err;
  struct status_args *a = args;
  if (opt != OPT_WIDE)
    return 0;
  a->wide = true;
  return 1;
}

static const struct option status_options[] = {
  { "wide", no_argument, NULL, OPT_WIDE },
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec status_spec = {
  .name = "status",
  .usage = status_usage,
  .shortopts = "+:hw",
  .options = status_options,
  .option = status_option,
};

/* Status reads what it can and reports each part it could not in that part,
   with its errno; when one of those is a permission refused to a user who is
   not root, one line on stderr says what to do about it (the output stays as
   it is). */
static void
hint_root (json_object *status)
{
  if (geteuid () != 0 && cp_status_denied (status))
    fprintf (stderr, "cachepin status: some parts could not be read (%s): run as root to see them\n",
             strerror (EACCES));
}

int
cp_cmd_status (int argc, char **argv, cp_error_t *err)
{
  struct status_args a = { 0 };
  int r = cp_cli_begin (&status_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  json_object *status = NULL;
  if (cp_status_gather (a.c.config, &status, err) < 0)
    return -1;
  if (a.c.json)
    puts (json_object_to_json_string_ext (status, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  else
    cp_status_print_text (status, a.wide, stdout);
  hint_root (status);
  json_object_put (status);
  return 0;
}

