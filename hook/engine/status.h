/* cachepin: `cachepin status`: what cachepin sees on this host, read-only.
 *
 * cp_status_gather() gathers everything into one JSON object (the `--json` output,
 * whose keys are stable: a part that could not be read keeps its keys, with null
 * values and an "error" string); status_text.c renders that same object for
 * people, so the two outputs cannot disagree.  docs/status.md lists the keys. */
#ifndef CP_STATUS_H
#define CP_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

/* The "format" of `status --json`: raised when a key changes meaning or goes;
   new keys do not raise it (docs/status.md). */
#define CP_STATUS_FORMAT 1

/* How many of the journal's records "recent" shows (hook/state/journal.h). */
#define CP_STATUS_RECENT 10

/* Everything, read-only and without the ledger's lock, into *OUT, from the host
 * config at CONFIG (NULL: CP_HOSTCONFIG_DEFAULT_PATH); each part that cannot be
 * read says so in its own "error" (and "errno") and does not stop the others.
 * Fails only when no part could be read at all. */
int cp_status_gather (const char *config, json_object **out, cp_error_t *err);

/* The same from HC, a host config already loaded (a long-running agent's, whose
   file may not be readable inside its sandbox). */
struct cp_hostconfig;
int cp_status_gather_hc (const struct cp_hostconfig *hc, json_object **out, cp_error_t *err);

/* Whether a part of STATUS (a part at its top, a kernel feature, the journal's
   "recent") could not be read for a permission refused: its "errno" is EACCES
   or EPERM.  Decided on the errnos, never on the messages' text. */
bool cp_status_denied (json_object *status);

#endif
