/* cachepin: `cachepin why`: one container's fate from the journal of decisions
 * (hook/state/journal.h) and the ledger, and the containers that need attention
 * (`cachepin status` leads with them).  Read-only, without a lock, as status is.
 *
 * Which container a word names (cp_why_gather()), in this order:
 *   1. the id of a journal record or a ledger entry equal to it;
 *   2. a name equal to it (the engine's `namespace/pod/container`, `apply --name`
 *      or the cgroup's path; podman gives the hook none): the newest container of
 *      that name, the others listed;
 *   3. ids that begin with it (podman's and crictl's 12 characters): one is the
 *      container; several are refused, naming them.
 * docs/status.md ("cachepin why") lists the JSON's keys. */
#ifndef CP_WHY_H
#define CP_WHY_H

#include <json-c/json.h>

#include "error.h"
#include "journal.h"

/* The "format" of `why --json` (and of status's and plan's JSON): raised when a
   key changes meaning or goes; new keys do not raise it. */
#define CP_WHY_FORMAT 1
/* How far back `status` looks for what needs attention. */
#define CP_WHY_ATTENTION_SECONDS 3600
/* How many candidates an ambiguous prefix's error names. */
#define CP_WHY_MAX_CANDIDATES 5

/* R as status's "recent" and why's "records" show it. */
json_object *cp_why_record_json (const struct cp_journal_record *r);

/* The records of L (oldest first) that need attention at NOW (unix seconds): a
 * container whose newest decision, within CP_WHY_ATTENTION_SECONDS, is that it
 * started unplaced, was refused, or drifted (a drift back onto the CPUs its
 * placement gave is none); a later placement or release settles it.  One record
 * per container, oldest first, as a JSON array. */
json_object *cp_why_attention (const struct cp_journal_list *l, long long now);

/* The container QUERY names (above), from the host config at CONFIG (NULL: the
 * default): its journal records and its ledger entry now, into *OUT.  Nothing
 * matches, or a prefix of several ids: CP_ERR_INPUT, one line (the candidates
 * named); a journal or host config that cannot be read: as they fail. */
int cp_why_gather (const char *config, const char *query, json_object **out, cp_error_t *err);

#endif
