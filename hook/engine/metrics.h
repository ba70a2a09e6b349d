/* cachepin: what cachepin knows, in Prometheus' text exposition format (version
 * 0.0.4), for `cachepin metrics` (a one-shot, for node_exporter's textfile
 * collector: hosts without a daemon) and for a long-running agent's listener (the
 * NRI plugin's, which serves the same families and its own): one renderer, so
 * that the two cannot disagree.  docs/metrics.md lists every family.
 *
 * What is rendered comes from two places:
 *   - `cachepin status`'s object (cp_status_gather(), status.h): the decisions the
 *     journal counted (its "decisions": placements, refusals, unplaced starts,
 *     releases, drifts, switch writes, by route and reason), the ledger's entries
 *     by state, the CPUs held, shared and free in each LLC (its occupancy map),
 *     the kernel switch's state and who asks for it, the isolated partitions, and
 *     which parts could be read at all.  A part that could not be read gives its
 *     families without samples (HELP and TYPE only) and
 *     cachepin_status_readable{part} 0: never a zero that would read as a reset;
 *   - an agent's own counters (struct cp_metrics_agent): whether it is registered
 *     with its runtime, how often it connected again, and how long it took to
 *     answer CreateContainer, UpdateContainer and Synchronize.
 *
 * The conventions (Prometheus' "Metric and label naming"): every name starts
 * with cachepin_, counters end in _total, times are seconds, CPUs are counted
 * (_cpus), each family has its HELP and TYPE lines before its samples, and label
 * values are escaped (cp_metrics_escape_label()).  A counter's label sets that
 * can happen are all written, zero until counted, so that rate() has a start. */
#ifndef CP_METRICS_H
#define CP_METRICS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* The calls of its runtime an agent times. */
enum cp_metrics_call
{
  CP_METRICS_CREATE_CONTAINER = 0,
  CP_METRICS_UPDATE_CONTAINER,
  CP_METRICS_SYNCHRONIZE,
  CP_METRICS_N_CALLS,
};

/* The histogram's upper bounds (seconds): from half a millisecond (a placement
 * from the cached topology) to 10 s (past the runtime's default timeout of 2 s,
 * a call that was too late), and +Inf. */
#define CP_METRICS_BUCKETS { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }
#define CP_METRICS_N_BUCKETS 14

/* An agent's own counters.  Written by its loop and read by its listener, which
 * the NRI agent serves from the same loop (nri_http.h); each is an atomic and
 * nothing takes a lock, so that a listener on a thread of its own could read them
 * at any time too (a scrape may then see one call counted in its bucket and not
 * yet in the sum: the next one sees both). */
struct cp_metrics_agent;

struct cp_metrics_agent *cp_metrics_agent_new (void);
void cp_metrics_agent_free (struct cp_metrics_agent *a);
#define cleanup_metrics_agent __attribute__ ((cleanup (cp_metrics_agent_freep)))
static inline void
cp_metrics_agent_freep (struct cp_metrics_agent **a)
{
  cp_metrics_agent_free (*a);
}

/* Registered with the runtime (true from its Configure until the connection
 * ends), and each time the agent connects again after losing it. */
void cp_metrics_agent_set_registered (struct cp_metrics_agent *a, bool registered);
void cp_metrics_agent_reconnected (struct cp_metrics_agent *a);

/* One CALL answered after NS nanoseconds (from its request read to its answer
 * written). */
void cp_metrics_agent_observe (struct cp_metrics_agent *a, enum cp_metrics_call call, uint64_t ns);

/* "CreateContainer", ...: the method label's value. */
const char *cp_metrics_call_name (enum cp_metrics_call call);

/* The exposition: STATUS's families (NULL: none of them) and AGENT's (NULL: none
 * of them), ending with a newline.  Never fails; parts of STATUS that are missing
 * or of another type are treated as not read.  Caller frees. */
char *cp_metrics_render (json_object *status, const struct cp_metrics_agent *agent);

/* S as a label value is written between its quotes: `\` as `\\`, `"` as `\"`, a
 * newline as `\n`.  Caller frees. */
char *cp_metrics_escape_label (const char *s);

#endif
