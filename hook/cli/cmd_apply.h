/* cachepin: what `apply`/`release` (cmd_apply.c) and their --unit form (cmd_unit.c)
 * share: the parsed command line and the placement of one cgroup. */
#ifndef CP_CMD_APPLY_H
#define CP_CMD_APPLY_H

#include <stdbool.h>

#include "cli.h"

enum
{
  OPT_CGROUP = 0x300,
  OPT_MEMS,
  OPT_NAME,
  OPT_DRY_RUN,
  OPT_ISOLATE,
  OPT_UNIT,       /* --unit NAME.service: pin a service (cmd_unit.c) */
  OPT_UNIT_START, /* --unit-start NAME.service: the drop-in's ExecStartPre= */
  OPT_UNIT_STOP,  /* --unit-stop NAME.service: the drop-in's ExecStopPost= */
  OPT_RUNTIME,    /* --runtime: the drop-in under /run (forgotten at reboot) */
};

struct apply_args
{
  struct cp_cli_common c;
  const char *cgroup;
  const char *name; /* --name, NULL: the cgroup's path (a unit's: its name) */
  const char *unit; /* --unit, --unit-start or --unit-stop's value (unit_how says which) */
  int unit_how;     /* OPT_UNIT, OPT_UNIT_START, OPT_UNIT_STOP; 0: no unit */
  bool runtime;
  bool mems_keep;
  bool dry_run;
  bool isolate;
  unsigned given; /* CP_CLI_GIVEN bits of the request options given */
  struct cp_request req;
};

/* Place cgroup PATH for A's request under ledger id ID (NULL: "apply:<cgroup>")
 * and say so; with HC loaded.  The process is in the engine's sandbox afterwards. */
int cp_cli_apply_cgroup (const struct apply_args *a, struct cp_hostconfig *hc, const char *path, const char *id,
                         cp_error_t *err);

/* Whether A's request can be met now for cgroup PATH, writing nothing (the
 * preview `--dry-run` prints): 0, or the refusal `apply` would give. */
int cp_cli_apply_check (const struct apply_args *a, struct cp_hostconfig *hc, const char *path, const char *id,
                        cp_error_t *err);

/* The --unit forms (cmd_unit.c): the request options given go into the drop-in. */
int cp_cli_apply_unit (const struct apply_args *a, cp_error_t *err);
int cp_cli_release_unit (const struct apply_args *a, cp_error_t *err);

#endif
