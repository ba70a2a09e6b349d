/* cachepin: the subcommands and what they share (request options, output). */
#ifndef CP_CLI_H
#define CP_CLI_H

#include <getopt.h>
#include <hwloc.h>

#include "error.h"
#include "placement.h"
#include "request.h"

/* Exit statuses; only main() returns them. */
enum
{
  CP_EXIT_OK = 0,
  CP_EXIT_FAILURE = 1,       /* the system failed (I/O, cgroup, kernel) */
  CP_EXIT_USAGE = 2,         /* invalid input: option, annotation, configuration */
  CP_EXIT_UNSATISFIABLE = 3, /* a valid request this host cannot meet */
};

/* Every subcommand: returns 0, or < 0 with *err filled. */
typedef int (*cp_command_fn) (int argc, char **argv, cp_error_t *err);

int cp_cmd_plan (int argc, char **argv, cp_error_t *err);
int cp_cmd_hook (int argc, char **argv, cp_error_t *err);
int cp_cmd_apply (int argc, char **argv, cp_error_t *err);
int cp_cmd_release (int argc, char **argv, cp_error_t *err);
int cp_cmd_status (int argc, char **argv, cp_error_t *err);

/* Request options shared by `plan` and `apply`: --cpus --align --smt --mode --strict. */
enum
{
  CP_OPT_CPUS = 0x100,
  CP_OPT_ALIGN,
  CP_OPT_SMT,
  CP_OPT_MODE,
  CP_OPT_STRICT,
};

#define CP_REQUEST_LONG_OPTIONS                                      \
  { "cpus", required_argument, NULL, CP_OPT_CPUS },                  \
  { "align", required_argument, NULL, CP_OPT_ALIGN },                \
  { "smt", required_argument, NULL, CP_OPT_SMT },                    \
  { "mode", required_argument, NULL, CP_OPT_MODE },                  \
  { "strict", no_argument, NULL, CP_OPT_STRICT }

#define CP_REQUEST_OPTIONS_HELP                                                          \
  "  --cpus N            how many CPUs (1..allowed; optional in shared mode)\n"        \
  "  --align LEVEL       llc (default) | l2 | numa | package | none\n"                 \
  "  --smt POLICY        pe0-first (default) | pe0 | cores | any\n"                    \
  "  --mode MODE         exclusive (default) | shared\n"                               \
  "  --strict            fail instead of spilling over more than one domain\n"

/* Apply one request option; returns 1 when OPT was one, 0 when not, < 0 on a bad value. */
int cp_cli_request_option (int opt, const char *arg, struct cp_request *req, cp_error_t *err);

/* The error for what getopt_long returned that no case took: ':' (a value is
   missing) or an unknown option.  CMD names the subcommand for the help hint. */
int cp_cli_option_error (int opt, char **argv, const char *cmd, cp_error_t *err);

/* A strict cpulist option value, wrapped with the option's name. */
int cp_cli_cpulist_option (const char *name, const char *arg, hwloc_bitmap_t out, cp_error_t *err);

/* The plan as JSON (one line) on stdout. */
void cp_cli_print_plan_json (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan);

/* The plan for people: CPUs, domains, reason and a map of the machine's LLCs. */
void cp_cli_print_plan_human (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                              hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t occupied);

#endif
