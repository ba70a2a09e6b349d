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
#include "journal.h"
#include "sandbox.h"

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
int cp_cmd_metrics (int argc, char **argv, cp_error_t *err);

/* The status object (cp_status_gather(), status.h) as text on OUT (one screen for
 * a small host): lines of at most 80 columns (short ids and names, the rest
 * wrapped), or with WIDE every field in full.  Pure: reads STATUS only; a key
 * that is missing or of another type prints as "?". */
void cp_status_print_text (json_object *status, bool wide, FILE *out);

/* ---- the frame every subcommand shares (frontend.c) ---- */

/* The name of what this run places or releases, from RAW (an engine's
   annotations, `apply --name`: user text): kept cut to CP_LEDGER_MAX_NAME bytes
   and cleaned (policy/base/text.h) for its ledger entry and every journal record
   of its decisions.  Returns the kept name, NULL when RAW is NULL or nothing is
   left of it.  One process runs one command: one name. */
const char *cp_cli_set_name (const char *raw);

/* Options more than one subcommand takes, handled by cp_cli_begin(). */
enum
{
  CP_OPT_CONFIG = 0x180,
  CP_OPT_JSON,
};
#define CP_CONFIG_LONG_OPTION { "config", required_argument, NULL, CP_OPT_CONFIG }
#define CP_JSON_LONG_OPTION { "json", no_argument, NULL, CP_OPT_JSON }
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

/* ---- around the engine's steps (frontend.c) ---- */

/* Enter the sandbox keeping what SB says, unless HC says `sandbox: false`;
   logged at debug level (which kind of sandbox). */
int cp_cli_enter_sandbox (const struct cp_hostconfig *hc, const struct cp_sandbox *sb, cp_error_t *err);

/* How a front end judges a placement that failed (the hook:
   cp_admission_host_failure(), which starts the container unplaced or fails it);
   NULL: the failure stands (apply). */
typedef int (*cp_cli_judge_fn) (const struct cp_hostconfig *hc, bool strict, const char *id, cp_error_t *err);

/* A placement through the engine's steps (placer.h): open, the journal
   (journal.h, on the ledger's directory, before the sandbox), the sandbox,
   decide, apply; a failure judged by JUDGE; the decision recorded in the journal
   as FRONT's; the ledger is unlocked when it returns.  Returns 0 with *PLAN_OUT
   the plan applied, 1 when JUDGE let the target go unplaced (*PLAN_OUT NULL), < 0
   on a failure.  The sandbox stays after the call returns. */
int cp_cli_place (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *target,
                  const struct cp_container_request *creq, cp_cli_judge_fn judge, struct cp_plan **plan_out,
                  cp_error_t *err);

/* Many placements at once (the NRI plugin's Synchronize), through the engine's
   batch (placer.h: targets whose cgroup is named and not made yet): open, each
   placed as cp_cli_place() places (a failure judged by JUDGE; 0, 1 or < 0 as
   there), then committed once, the ledger first and then the journal's records of
   the placements; nothing of them is recorded when the ledger's commit fails
   (the caller then tells nobody of them).  Close unlocks, dropping what was not
   committed. */
struct cp_cli_batch;
int cp_cli_batch_open (const struct cp_hostconfig *hc, enum cp_journal_front front, struct cp_cli_batch **out,
                       cp_error_t *err);
int cp_cli_batch_place (struct cp_cli_batch *cb, const struct cp_target *target, const struct cp_container_request *creq,
                        cp_cli_judge_fn judge, struct cp_plan **plan_out, cp_error_t *err);
int cp_cli_batch_commit (struct cp_cli_batch *cb, cp_error_t *err);
/* /proc/self/cgroup and mountinfo as the batch read them at open (cgroup.h). */
const struct cp_cgroup_snapshot *cp_cli_batch_mounts (const struct cp_cli_batch *cb);
void cp_cli_batch_close (struct cp_cli_batch *cb);
static inline void
cp_cli_batch_closep (struct cp_cli_batch **cb)
{
  cp_cli_batch_close (*cb);
}
#define cleanup_cli_batch __attribute__ ((cleanup (cp_cli_batch_closep)))

/* A long-running front end (`cachepin nri`) places one container after another in
   one process: the sandbox a run enters before its decision would stay for the
   next ones, so cp_cli_place() and cp_cli_release() enter none after this is
   called (cp_cli_enter_plugin_sandbox() calls it: its profile covers them). */
void cp_cli_stay_unsandboxed (void);

/* The plugin's sandbox (sandbox.h, CP_SANDBOX_PLUGIN), entered once for the rest
   of the process, unless HC says `sandbox: false`: the state directory (made if
   missing) and the topology cache (discovered now if stale, so that requests
   read it) ready first, then the directories its requests read beneath: /proc,
   /sys (the cgroup mounts with it) and the kubelet state's.  The runtime's
   connection and syslog's socket are opened before.  Fails (*ERR) when the
   state directory cannot be had or the sandbox cannot be set up. */
int cp_cli_enter_plugin_sandbox (const struct cp_hostconfig *hc, cp_error_t *err);

/* A release through the engine's steps: open, the journal, the sandbox, commit;
   a release done is recorded as FRONT's. */
int cp_cli_release (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_release *rel,
                    enum cp_release_result *result, cp_error_t *err);

/* ---- the journal of decisions (frontend.c) ----

   One decision per run, recorded where it is made: into the journal the engine's
   steps opened before the sandbox when there is one, else (a run refused before
   it opened the ledger, whose lock timed out) with cp_journal_note() in
   STATE_DIR, never from inside the sandbox (no flock there).  Advisory: a
   failure is logged once and changes nothing else. */
void cp_cli_journal (const char *state_dir, const struct cp_journal_record *r);

/* The admission policy's decisions (admission.h) recorded as FRONT's in the
   journal of HC's state directory (HC must outlive the run). */
void cp_cli_journal_admissions (const struct cp_hostconfig *hc, enum cp_journal_front front);

#endif
