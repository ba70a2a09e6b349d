/* cachepin: the subcommands and what they share (request options, output). */
#ifndef CP_CLI_H
#define CP_CLI_H

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdbool.h>
#include <hwloc.h>

#include "error.h"
#include "placement.h"
#include "request.h"
#include "hostconfig.h"
#include "placer.h"
#include "front.h"

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
int cp_cmd_nri (int argc, char **argv, cp_error_t *err);
int cp_cmd_why (int argc, char **argv, cp_error_t *err);
int cp_cmd_metrics (int argc, char **argv, cp_error_t *err);
int cp_cmd_dra (int argc, char **argv, cp_error_t *err);
int cp_cmd_measure (int argc, char **argv, cp_error_t *err);

/* The status object (cp_status_gather(), status.h) as text on OUT (one screen for
 * a small host): lines of at most 80 columns (short ids and names, the rest
 * wrapped), or with WIDE every field in full.  Pure: reads STATUS only; a key
 * that is missing or of another type prints as "?". */
void cp_status_print_text (json_object *status, bool wide, FILE *out);

/* ---- the frame every subcommand shares (frontend.c) ---- */

/* Options more than one subcommand takes, handled by cp_cli_begin(). */
enum
{
  CP_OPT_CONFIG = 0x180,
  CP_OPT_JSON,
  CP_OPT_KUBE_API,
  CP_OPT_KUBE_CA,
  CP_OPT_KUBE_TOKEN_FILE,
};
#define CP_CONFIG_LONG_OPTION { "config", required_argument, NULL, CP_OPT_CONFIG }
#define CP_JSON_LONG_OPTION { "json", no_argument, NULL, CP_OPT_JSON }
/* The API server's options (`dra publish`, `nri --dra-node`): hook/kube/kube.h. */
#define CP_KUBE_LONG_OPTIONS                                                                                  \
  { "kube-api", required_argument, NULL, CP_OPT_KUBE_API },                                                   \
    { "kube-ca", required_argument, NULL, CP_OPT_KUBE_CA },                                                   \
    { "kube-token-file", required_argument, NULL, CP_OPT_KUBE_TOKEN_FILE }

/* OPT, if one of CP_KUBE_LONG_OPTIONS, into *K: 1; else 0. */
struct cp_kube_options;
int cp_cli_kube_option (int opt, const char *arg, struct cp_kube_options *k);
#define CP_HELP_LONG_OPTION { "help", no_argument, NULL, 'h' }

/* What those options say. */
struct cp_cli_common
{
  const char *config; /* --config PATH (NULL: CP_HOSTCONFIG_DEFAULT_PATH) */
  bool json;          /* --json */
  bool help;          /* -h, --help */
};

/* A subcommand's own option OPT (its value ARG), or an operand (OPT 1: with a
   "-" SHORTOPTS in order among the options, and every one past "--"), into
   ARGS: 1 when taken, 0 when not its own (an operand: "unexpected argument"),
   < 0 for an invalid value (*ERR). */
typedef int (*cp_cli_option_fn) (int opt, const char *arg, void *args, cp_error_t *err);

/* A subcommand's command line. */
struct cp_cli_spec
{
  const char *name;             /* the subcommand, for error hints */
  const char *usage;            /* its --help text */
  const char *shortopts;        /* "+:h" (options before operands) or "-:h" (operands in order) */
  const struct option *options; /* its long options, the shared ones among them */
  cp_cli_option_fn option;      /* its own options and operands (NULL: none) */
};

/* The error for what getopt_long returned that no case took: ':' (a value is
   missing) or an unknown option, with the closest of SPEC's long options when
   one is near (`--algin`: "did you mean `--align`?"); SPEC names the subcommand
   for the help hint. */
int cp_cli_option_error (int opt, char **argv, const struct cp_cli_spec *spec, cp_error_t *err);

/* When WORD is one of SPEC's options that take no value ("--strict", or
   "--strict=yes"), the input error for VALUE given to it, naming the option and
   what it takes (-1); otherwise 0 and nothing set: `--strict yes` is not an
   "unexpected argument" to a newcomer. */
int cp_cli_flag_value_error (const struct cp_cli_spec *spec, const char *word, const char *value, cp_error_t *err);

/* Parse ARGV as SPEC says: --config, --json and --help into *COMMON, the rest
   through SPEC->option into ARGS; a value missing, an unknown option or an
   operand nobody takes is an input error naming it.  Returns 1 when the
   subcommand is to run, 0 when --help was given (its usage is printed on
   stdout), < 0 on an error. */
int cp_cli_begin (const struct cp_cli_spec *spec, int argc, char **argv, struct cp_cli_common *common, void *args,
                  cp_error_t *err);

/* The host config *COMMON names, loaded into *HC, and its log level in effect. */
int cp_cli_load_config (const struct cp_cli_common *common, struct cp_hostconfig *hc, cp_error_t *err);

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

/* --cpus against the ALLOWED CPUs, BY what allows them ("--allowed gives"): more
   is unsatisfiable (exit 3 from every command, as apply's refusal: placer_limits.c),
   in the same words (cp_place_too_many()). */
int cp_cli_check_count (const struct cp_request *req, hwloc_const_bitmap_t allowed, const char *by, cp_error_t *err);

/* The bit of a request option (CP_OPT_CPUS ... CP_OPT_STRICT) in a "given" set. */
#define CP_CLI_GIVEN(opt) (1u << ((opt) - CP_OPT_CPUS))

/* *REQ: DEFAULTS (the host config's), with --cpus and each option in GIVEN
   (CP_CLI_GIVEN bits) from GIVEN_REQ: what the command line does not say, the
   host config does, as for the hook's annotations. */
void cp_cli_merge_defaults (struct cp_request *req, const struct cp_request *given_req, unsigned given,
                            const struct cp_request *defaults);

/* A strict cpulist option value, wrapped with the option's name. */
int cp_cli_cpulist_option (const char *name, const char *arg, hwloc_bitmap_t out, cp_error_t *err);

/* ---- a plan, printed (plan_text.c) ---- */

/* What a plan's text shows beside the plan: the map's other marks, and where
   its inputs came from. */
struct cp_cli_plan_view
{
  hwloc_const_bitmap_t allowed;  /* what it may get (outside: not allowed) */
  hwloc_const_bitmap_t held;     /* held by others (and --occupied) */
  hwloc_const_bitmap_t shared;   /* used by shared placements */
  hwloc_const_bitmap_t reserved; /* kept back by the host config */
  const char *inputs;            /* one line, or NULL */
  const char *isolate;           /* --isolate's verdict (cp_cli_isolate_line()), or NULL */
};

/* The "format" of `plan --json` and `apply --json` (docs/placement.md): raised
   when a key changes meaning or goes; new keys do not raise it. */
#define CP_PLAN_FORMAT 1

/* The plan as JSON (one line) on stdout; INPUTS (taken; NULL: none) as "inputs",
   ISOLATE (taken; NULL: not asked, no key) as "isolate". */
void cp_cli_print_plan_json (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                             json_object *inputs, json_object *isolate);

/* Would the CPUS of a plan made now be isolated (cachepin.io/isolate, --isolate)?
   In the engine's order: the host config's `isolate: deny`; then, with PROBE (the
   target's cgroup: apply --dry-run) or PROBE_HOST (this host's cpuset hierarchy:
   plan of this host now), the kernel's support (cp_partition_supported*()), and
   *KERNEL_CHECKED says whether it could be told; then CPUS holding a core the host
   keeps (the first of a NUMA node, policy/isolate.h).  0: granted, as far as a
   preview can tell; < 0 with *ERR the reason, unsatisfiable. */
int cp_cli_isolate_verdict (const struct cp_hostconfig *hc, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                            const struct cp_cgroup *probe, bool probe_host, bool *kernel_checked, cp_error_t *err);

/* The verdict (WHY: NULL when granted, else the reason; KERNEL_CHECKED as the
   verdict set it) as the plan's text line and as its JSON member. */
char *cp_cli_isolate_line (cp_error_t why, bool kernel_checked);
json_object *cp_cli_isolate_json (cp_error_t why, bool kernel_checked);

/* The plan for people: CPUs, domains, reason, inputs and the map (cpumap.h) of
   the domains its --align names (align=none: the LLCs). */
void cp_cli_print_plan_human (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                              const struct cp_cli_plan_view *view);

/* Where a preview's inputs came from (placer.h), as one line ("ledger PATH, 3
   entries; config PATH (reserved 0)") and as JSON.  CONFIG_READ: HC is a file's
   (or the defaults of the default path), not the built-in defaults; EMPTY_WHY:
   why the ledger was not read (NULL: it was). */
char *cp_cli_inputs_line (const struct cp_preview *pv, const struct cp_hostconfig *hc, bool config_read,
                          const char *empty_why);
json_object *cp_cli_inputs_json (const struct cp_preview *pv, const struct cp_hostconfig *hc, bool config_read,
                                 const char *empty_why);

#endif
