/* `cachepin metrics`: what `cachepin status` gathers and the journal counted, in
 * Prometheus' text format (hook/engine/metrics.h renders it; docs/metrics.md),
 * for node_exporter's textfile collector on a host without a long-running agent
 * (the hook's route, podman).  Read-only as status is, but for --output's file.
 *
 * --output writes the file whole or not at all: the textfile collector reads
 * every *.prom file of its directory at each scrape, and a file it catches half
 * written is an error on the node's every scrape until the next one.  So the text
 * goes to a temporary file beside it (a name not ending in .prom, which the
 * collector skips), synced, made readable by the collector's user (mode 0644),
 * and renamed over FILE. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "hostconfig.h"
#include "io.h"
#include "metrics.h"
#include "status.h"
#include "util.h"

static const char metrics_usage[] =
  "Usage: cachepin metrics [--output FILE] [--config PATH]\n"
  "Print what cachepin status shows and the journal counted (placements, refusals,\n"
  "unplaced starts, releases, drifts, CPUs per LLC, the kernel switch) in\n"
  "Prometheus' text format, for node_exporter's textfile collector; writes\n"
  "nothing but FILE.\n\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  -o, --output FILE   write FILE (replaced whole, mode 0644) instead of stdout,\n"
  "                      e.g. /var/lib/prometheus/node-exporter/cachepin.prom\n"
  "  -h, --help          this text\n";

enum
{
  OPT_OUTPUT = 'o',
};

struct metrics_args
{
  struct cp_cli_common c;
  const char *output;
};

static int
metrics_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct metrics_args *a = args;
  if (opt != OPT_OUTPUT)
    return 0;
  if (arg[0] == '\0')
    return cp_fail_input (err, "--output: empty file name");
  a->output = arg;
  return 1;
}

static const struct option metrics_options[] = {
  { "output", required_argument, NULL, OPT_OUTPUT },
  CP_CONFIG_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec metrics_spec = {
  .name = "metrics",
  .usage = metrics_usage,
  .shortopts = "+:ho:",
  .options = metrics_options,
  .option = metrics_option,
};

/* TEXT into PATH by a rename, from a temporary file beside it: PATH.XXXXXX,
   which the collector's *.prom does not match. */
static int
write_replacing (const char *path, const char *text, cp_error_t *err)
{
  cleanup_free char *tmp = cp_xasprintf ("%s.XXXXXX", path);
  int fd = mkostemp (tmp, O_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "--output: create `%s`", tmp);
  if (fchmod (fd, 0644) < 0 || cp_io_write_all (fd, text, strlen (text)) < 0 || fsync (fd) < 0)
    {
      int saved = errno;
      close (fd);
      unlink (tmp);
      return cp_fail_errno (err, saved, "--output: write `%s`", tmp);
    }
  if (close (fd) < 0 || rename (tmp, path) < 0)
    {
      int saved = errno;
      unlink (tmp);
      return cp_fail_errno (err, saved, "--output: replace `%s`", path);
    }
  return 0;
}

int
cp_cmd_metrics (int argc, char **argv, cp_error_t *err)
{
  struct metrics_args a = { 0 };
  int r = cp_cli_begin (&metrics_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  json_object *status = NULL;
  if (cp_status_gather (a.c.config, &status, err) < 0)
    return -1;
  cleanup_free char *text = cp_metrics_render (status, NULL);
  json_object_put (status);
  if (a.output)
    return write_replacing (a.output, text, err);
  fputs (text, stdout);
  return 0;
}
