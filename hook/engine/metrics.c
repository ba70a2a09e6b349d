/* cachepin: the text exposition of status.h's object and an agent's counters
 * (metrics.h).  The families are tables of names, help and labels below; the
 * values come from the status object as `cachepin status --json` prints it
 * (docs/status.md), read defensively: it is an input, and what is missing is
 * not read rather than zero. */
#define _GNU_SOURCE
#include "metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "util.h"

/* ------------------------------------------------------------------ the agent */

struct cp_metrics_agent
{
  atomic_bool registered;
  atomic_ullong reconnects;
  /* Per call: how many fell in each bucket (not cumulative: one add per call),
     the last one past every bound; and the sum of their times. */
  atomic_ullong bucket[CP_METRICS_N_CALLS][CP_METRICS_N_BUCKETS + 1];
  atomic_ullong sum_ns[CP_METRICS_N_CALLS];
};

static const double bounds[CP_METRICS_N_BUCKETS] = CP_METRICS_BUCKETS;

struct cp_metrics_agent *
cp_metrics_agent_new (void)
{
  struct cp_metrics_agent *a = cp_xmalloc0 (sizeof *a);
  atomic_init (&a->registered, false);
  atomic_init (&a->reconnects, 0);
  for (unsigned c = 0; c < CP_METRICS_N_CALLS; c++)
    {
      atomic_init (&a->sum_ns[c], 0);
      for (unsigned b = 0; b <= CP_METRICS_N_BUCKETS; b++)
        atomic_init (&a->bucket[c][b], 0);
    }
  return a;
}

void
cp_metrics_agent_free (struct cp_metrics_agent *a)
{
  free (a);
}

void
cp_metrics_agent_set_registered (struct cp_metrics_agent *a, bool registered)
{
  atomic_store_explicit (&a->registered, registered, memory_order_relaxed);
}

void
cp_metrics_agent_reconnected (struct cp_metrics_agent *a)
{
  atomic_fetch_add_explicit (&a->reconnects, 1, memory_order_relaxed);
}

void
cp_metrics_agent_observe (struct cp_metrics_agent *a, enum cp_metrics_call call, uint64_t ns)
{
  if ((unsigned) call >= CP_METRICS_N_CALLS)
    return;
  unsigned b = 0;
  /* Compared in nanoseconds: a bound of 0.001 s is 1000000 ns exactly, and a
     call of that length is in its bucket ("le"). */
  while (b < CP_METRICS_N_BUCKETS && (double) ns > bounds[b] * 1e9 + 0.5)
    b++;
  atomic_fetch_add_explicit (&a->bucket[call][b], 1, memory_order_relaxed);
  atomic_fetch_add_explicit (&a->sum_ns[call], ns, memory_order_relaxed);
}

static const char *const call_names[CP_METRICS_N_CALLS] = {
  [CP_METRICS_CREATE_CONTAINER] = "CreateContainer",
  [CP_METRICS_UPDATE_CONTAINER] = "UpdateContainer",
  [CP_METRICS_SYNCHRONIZE] = "Synchronize",
};

const char *
cp_metrics_call_name (enum cp_metrics_call call)
{
  return (unsigned) call < CP_METRICS_N_CALLS ? call_names[call] : "?";
}

/* ------------------------------------------------------------------ writing */

char *
cp_metrics_escape_label (const char *s)
{
  char *out = cp_xmalloc0 (2 * strlen (s) + 1), *o = out;
  for (; *s; s++)
    if (*s == '\\' || *s == '"')
      {
        *o++ = '\\';
        *o++ = *s;
      }
    else if (*s == '\n')
      o = stpcpy (o, "\\n");
    else
      *o++ = *s;
  return out;
}

/* A family's HELP and TYPE lines (HELP texts are ours: nothing to escape). */
static void
family (FILE *f, const char *name, const char *type, const char *help)
{
  fprintf (f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: NAME, its labels (KEYS[i]="VALUES[i]" for the N given) and VALUE. */
static void
sample (FILE *f, const char *name, size_t n, const char *const *keys, const char *const *values, const char *value)
{
  fputs (name, f);
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *v = cp_metrics_escape_label (values[i]);
      fprintf (f, "%s%s=\"%s\"", i ? "," : "{", keys[i], v);
    }
  fprintf (f, "%s %s\n", n ? "}" : "", value);
}

static void
sample_u (FILE *f, const char *name, size_t n, const char *const *keys, const char *const *values,
          unsigned long long v)
{
  char text[32];
  snprintf (text, sizeof text, "%llu", v);
  sample (f, name, n, keys, values, text);
}

/* A sample with one label. */
static void
sample1 (FILE *f, const char *name, const char *key, const char *value, unsigned long long v)
{
  sample_u (f, name, 1, &key, &value, v);
}

/* ------------------------------------------------------------------ the status */

/* OBJ's member KEY, NULL when OBJ is no object, KEY is missing or null. */
static json_object *
get (json_object *obj, const char *key)
{
  json_object *v = NULL;
  if (!json_object_is_type (obj, json_type_object) || !json_object_object_get_ex (obj, key, &v))
    return NULL;
  return v;
}

static json_object *
get_array (json_object *obj, const char *key)
{
  json_object *v = get (obj, key);
  return json_object_is_type (v, json_type_array) ? v : NULL;
}

static const char *
get_string (json_object *obj, const char *key)
{
  json_object *v = get (obj, key);
  return json_object_is_type (v, json_type_string) ? json_object_get_string (v) : NULL;
}

/* Whether a part was read: it is an object and its ERROR_KEY is null. */
static bool
part_read (json_object *part, const char *error_key)
{
  return json_object_is_type (part, json_type_object) && get (part, error_key) == NULL
         && json_object_object_get_ex (part, error_key, NULL);
}

static void
readable (FILE *f, json_object *status)
{
  json_object *features = get (status, "features");
  const struct
  {
    const char *name;
    json_object *part;
    const char *error_key;
  } parts[] = {
    { "cgroup", get (status, "cgroup"), "error" },
    { "topology", get (status, "topology"), "error" },
    { "ledger", get (status, "ledger"), "error" },
    { "journal", status, "recent_error" },
    { "cache_aware_scheduling", get (features, "cache_aware_scheduling"), "error" },
    { "core_scheduling", get (features, "core_scheduling"), "error" },
    { "config", get (status, "config"), "error" },
  };
  family (f, "cachepin_status_readable", "gauge",
          "Whether a part of cachepin status could be read (1) or not (0: its families have no samples).");
  for (size_t i = 0; i < CP_ARRAY_SIZE (parts); i++)
    sample1 (f, "cachepin_status_readable", "part", parts[i].name, part_read (parts[i].part, parts[i].error_key));
}

/* ---- the journal's counts */

/* A family of the journal's counts: its KIND, whether it has a reason label, and
   the routes (fronts) whose samples are written even at zero. */
struct decision_family
{
  const char *name;
  const char *help;
  enum cp_journal_kind kind;
  unsigned routes; /* 1 << front */
};

#define ROUTE(front) (1u << (front))
static const struct decision_family decision_families[] = {
  { "cachepin_placements_total", "Containers and cgroups placed, by route (the front end that placed them).",
    CP_JOURNAL_PLACED, ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_APPLY) | ROUTE (CP_JOURNAL_NRI) },
  { "cachepin_refusals_total",
    "Requests refused (the container not started, or apply failed), by route and reason: invalid (what it asked "
    "is wrong), unsatisfiable (the host cannot meet it), failure (the host failed).",
    CP_JOURNAL_REFUSED, ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_APPLY) | ROUTE (CP_JOURNAL_NRI) },
  { "cachepin_unplaced_starts_total",
    "Containers that asked and started where the runtime put them, by route and reason (as refusals).",
    CP_JOURNAL_UNPLACED, ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_NRI) },
  { "cachepin_releases_total", "Placements released (their CPUs given back), by route.", CP_JOURNAL_RELEASED,
    ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_RELEASE) | ROUTE (CP_JOURNAL_NRI) },
  { "cachepin_drifts_total", "Placed cpusets found rewritten by another manager, by the route that saw it.",
    CP_JOURNAL_DRIFT,
    ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_APPLY) | ROUTE (CP_JOURNAL_RELEASE) | ROUTE (CP_JOURNAL_NRI) },
  { "cachepin_sched_cache_writes_total",
    "Writes of the kernel's cache-aware scheduling switch, by the route that wrote it.", CP_JOURNAL_SWITCH,
    ROUTE (CP_JOURNAL_HOOK) | ROUTE (CP_JOURNAL_APPLY) | ROUTE (CP_JOURNAL_RELEASE) | ROUTE (CP_JOURNAL_NRI) },
};

/* STATUS's "decisions" into C; false when the journal was not read. */
static bool
decisions_read (json_object *status, struct cp_journal_counts *c)
{
  json_object *a = get_array (status, "decisions");
  if (a == NULL)
    return false;
  for (size_t i = 0; i < json_object_array_length (a); i++)
    {
      json_object *d = json_object_array_get_idx (a, i), *n = get (d, "n");
      enum cp_journal_front front;
      enum cp_journal_kind kind;
      enum cp_journal_cause cause;
      const char *fs = get_string (d, "front"), *ks = get_string (d, "kind"), *cs = get_string (d, "cause");
      if (fs && ks && cs && json_object_is_type (n, json_type_int) && json_object_get_int64 (n) > 0
          && cp_journal_front_parse (fs, &front) && cp_journal_kind_parse (ks, &kind)
          && cp_journal_cause_parse (cs, &cause))
        c->n[front][kind][cp_journal_cause_for (kind, cause)] = (unsigned long long) json_object_get_int64 (n);
    }
  return true;
}

static void
decision_family (FILE *f, const struct decision_family *fam, const struct cp_journal_counts *c)
{
  family (f, fam->name, "counter", fam->help);
  if (c == NULL)
    return;
  bool reasons = cp_journal_kind_has_cause (fam->kind);
  for (unsigned front = 0; front < CP_JOURNAL_N_FRONTS; front++)
    for (unsigned cause = reasons ? 1 : 0; cause < (reasons ? CP_JOURNAL_N_CAUSES : 1u); cause++)
      {
        unsigned long long n = c->n[front][fam->kind][cause];
        if (n == 0 && !(fam->routes & ROUTE (front)))
          continue;
        static const char *const keys[] = { "route", "reason" };
        const char *values[] = { cp_journal_front_name ((enum cp_journal_front) front),
                                 cp_journal_cause_name ((enum cp_journal_cause) cause) };
        sample_u (f, fam->name, reasons ? 2 : 1, keys, values, n);
      }
}

static void
decisions (FILE *f, json_object *status)
{
  struct cp_journal_counts c = { 0 };
  bool read = decisions_read (status, &c);
  for (size_t i = 0; i < CP_ARRAY_SIZE (decision_families); i++)
    decision_family (f, &decision_families[i], read ? &c : NULL);
}

/* ---- the ledger */

/* The entries by state: the four status.md names, each written, then any other
   it may hold (escaped, as every label value is). */
static void
entries (FILE *f, json_object *ledger)
{
  static const char *const known[] = { "ok", "pending", "drifted", "gone" };
  family (f, "cachepin_ledger_entries", "gauge",
          "Placements the ledger holds, by state: ok, pending (decided, its cgroup not seen yet), drifted "
          "(another manager moved it), gone (its cgroup or process is gone; dropped by the next placement).");
  json_object *a = get_array (ledger, "entries");
  if (a == NULL)
    return;
  size_t n = json_object_array_length (a);
  unsigned long long counts[CP_ARRAY_SIZE (known)] = { 0 };
  for (size_t i = 0; i < n; i++)
    {
      const char *state = get_string (json_object_array_get_idx (a, i), "state");
      for (size_t k = 0; state && k < CP_ARRAY_SIZE (known); k++)
        if (strcmp (state, known[k]) == 0)
          counts[k]++;
    }
  for (size_t k = 0; k < CP_ARRAY_SIZE (known); k++)
    sample1 (f, "cachepin_ledger_entries", "state", known[k], counts[k]);
  /* A state this renderer does not know (a newer status): its own sample, once. */
  for (size_t i = 0; i < n; i++)
    {
      const char *state = get_string (json_object_array_get_idx (a, i), "state");
      bool seen = state == NULL;
      for (size_t k = 0; !seen && k < CP_ARRAY_SIZE (known); k++)
        seen = strcmp (state, known[k]) == 0;
      for (size_t j = 0; !seen && j < i; j++)
        {
          const char *before = get_string (json_object_array_get_idx (a, j), "state");
          seen = before && strcmp (before, state) == 0;
        }
      if (seen)
        continue;
      unsigned long long same = 0;
      for (size_t j = i; j < n; j++)
        {
          const char *s = get_string (json_object_array_get_idx (a, j), "state");
          same += s && strcmp (s, state) == 0;
        }
      sample1 (f, "cachepin_ledger_entries", "state", state, same);
    }
}

/* Per LLC, its occupancy map's marks counted: # held, s shared, . free, -
   not to be handed out (status_ledger.c's cpu_mark()). */
static void
llcs (FILE *f, json_object *ledger)
{
  static const struct
  {
    char mark;
    const char *state;
  } marks[] = { { '#', "held" }, { 's', "shared" }, { '.', "free" }, { '-', "unavailable" } };
  family (f, "cachepin_llc_cpus", "gauge",
          "CPUs of each last-level cache (llc: its index, as cachepin status numbers them) by state: held (by "
          "an exclusive placement, with the siblings it keeps idle), shared (used by shared placements), free, "
          "unavailable (reserved, outside the host config's cpus, or not allowed).");
  json_object *a = get_array (ledger, "occupancy");
  for (size_t i = 0; a && i < json_object_array_length (a); i++)
    {
      json_object *o = json_object_array_get_idx (a, i), *index = get (o, "index");
      const char *map = get_string (o, "map");
      if (map == NULL || !json_object_is_type (index, json_type_int))
        continue;
      char llc[24];
      snprintf (llc, sizeof llc, "%d", json_object_get_int (index));
      for (size_t m = 0; m < CP_ARRAY_SIZE (marks); m++)
        {
          unsigned long long n = 0;
          for (const char *p = map; *p; p++)
            n += *p == marks[m].mark;
          static const char *const keys[] = { "llc", "state" };
          const char *values[] = { llc, marks[m].state };
          sample_u (f, "cachepin_llc_cpus", 2, keys, values, n);
        }
    }
  json_object *held = get (ledger, "held_count");
  family (f, "cachepin_held_cpus", "gauge",
          "CPUs held by exclusive placements in all, those outside this topology included.");
  if (json_object_is_type (held, json_type_int))
    sample (f, "cachepin_held_cpus", 0, NULL, NULL, json_object_get_string (held));
}

/* The isolated placements' partitions (docs/isolation.md): valid (root or
   isolated), invalid (the kernel says why), unknown (not readable now). */
static void
partitions (FILE *f, json_object *ledger)
{
  family (f, "cachepin_isolated_partitions", "gauge",
          "Placements isolated as cgroup v2 partitions (cachepin.io/isolate), by the partition's state as read "
          "now: valid, invalid (the kernel made it a member again), unknown (unreadable).");
  json_object *a = get_array (ledger, "entries");
  if (a == NULL)
    return;
  unsigned long long valid = 0, invalid = 0, unknown = 0;
  for (size_t i = 0; i < json_object_array_length (a); i++)
    {
      json_object *iso = get (json_object_array_get_idx (a, i), "isolate");
      if (!json_object_is_type (iso, json_type_object))
        continue;
      const char *p = get_string (iso, "partition");
      if (p == NULL)
        unknown++;
      else if (strstr (p, "invalid") || strncmp (p, "member", 6) == 0)
        invalid++;
      else
        valid++;
    }
  sample1 (f, "cachepin_isolated_partitions", "state", "valid", valid);
  sample1 (f, "cachepin_isolated_partitions", "state", "invalid", invalid);
  sample1 (f, "cachepin_isolated_partitions", "state", "unknown", unknown);
}

/* ---- the kernel's switches */

static void
sched_cache (FILE *f, json_object *status)
{
  static const char *const states[] = { "on", "off", "unsupported", "debugfs-not-mounted", "denied", "unknown" };
  json_object *features = get (status, "features"), *ledger = get (status, "ledger");
  json_object *cas = get (features, "cache_aware_scheduling");
  const char *state = get_string (cas, "state");
  family (f, "cachepin_sched_cache_state", "gauge",
          "The kernel's cache-aware scheduling switch: 1 for its state now (on, off, unsupported, "
          "debugfs-not-mounted, denied, unknown), 0 for the others.");
  bool known = false;
  for (size_t i = 0; state && i < CP_ARRAY_SIZE (states); i++)
    {
      known |= strcmp (state, states[i]) == 0;
      sample1 (f, "cachepin_sched_cache_state", "state", states[i], strcmp (state, states[i]) == 0);
    }
  if (state && !known)
    sample1 (f, "cachepin_sched_cache_state", "state", state, 1);
  json_object *asked = get_array (cas, "asked_by");
  family (f, "cachepin_sched_cache_references", "gauge",
          "Placed containers asking cache-aware scheduling on (the count that keeps the switch on under "
          "sched_cache on-demand).");
  if (asked)
    sample_u (f, "cachepin_sched_cache_references", 0, NULL, NULL, json_object_array_length (asked));
  family (f, "cachepin_sched_cache_held", "gauge",
          "Whether cachepin holds the switch (1: it turned it on and keeps the value to give back).");
  if (part_read (ledger, "error"))
    sample (f, "cachepin_sched_cache_held", 0, NULL, NULL, get (cas, "restore") ? "1" : "0");
  json_object *cookies = get_array (get (features, "core_scheduling"), "asked_by");
  family (f, "cachepin_core_sched_cookies", "gauge",
          "Placed containers that got a core-scheduling cookie (cachepin.io/core-sched).");
  if (cookies)
    sample_u (f, "cachepin_core_sched_cookies", 0, NULL, NULL, json_object_array_length (cookies));
}

/* ------------------------------------------------------------------ the agent's */

static void
agent_families (FILE *f, const struct cp_metrics_agent *a)
{
  family (f, "cachepin_nri_registered", "gauge", "Whether the NRI plugin is registered with its runtime (1) or not (0).");
  sample (f, "cachepin_nri_registered", 0, NULL, NULL,
          atomic_load_explicit (&a->registered, memory_order_relaxed) ? "1" : "0");
  family (f, "cachepin_nri_reconnects_total", "counter",
          "Times the NRI plugin connected to its runtime again after losing the connection.");
  sample_u (f, "cachepin_nri_reconnects_total", 0, NULL, NULL,
            atomic_load_explicit (&a->reconnects, memory_order_relaxed));
  static const char *const name = "cachepin_nri_request_duration_seconds";
  family (f, name, "histogram",
          "Seconds the NRI plugin took to answer a call of its runtime, from the request read to the answer "
          "written, by method.");
  for (unsigned c = 0; c < CP_METRICS_N_CALLS; c++)
    {
      unsigned long long cumulative = 0;
      for (unsigned b = 0; b <= CP_METRICS_N_BUCKETS; b++)
        {
          cumulative += atomic_load_explicit (&a->bucket[c][b], memory_order_relaxed);
          char le[32];
          if (b < CP_METRICS_N_BUCKETS)
            snprintf (le, sizeof le, "%g", bounds[b]);
          else
            strcpy (le, "+Inf");
          static const char *const keys[] = { "method", "le" };
          const char *values[] = { call_names[c], le };
          sample_u (f, "cachepin_nri_request_duration_seconds_bucket", 2, keys, values, cumulative);
        }
      unsigned long long ns = atomic_load_explicit (&a->sum_ns[c], memory_order_relaxed);
      char sum[48];
      snprintf (sum, sizeof sum, "%llu.%09llu", ns / 1000000000ULL, ns % 1000000000ULL);
      sample (f, "cachepin_nri_request_duration_seconds_sum", 1, (const char *const[]){ "method" }, &call_names[c],
              sum);
      sample1 (f, "cachepin_nri_request_duration_seconds_count", "method", call_names[c], cumulative);
    }
}

char *
cp_metrics_render (json_object *status, const struct cp_metrics_agent *agent)
{
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream (&text, &size);
  if (f == NULL)
    cp_oom ();
  if (status)
    {
      json_object *ledger = get (status, "ledger");
      readable (f, status);
      decisions (f, status);
      entries (f, ledger);
      llcs (f, ledger);
      partitions (f, ledger);
      sched_cache (f, status);
    }
  if (agent)
    agent_families (f, agent);
  if (fclose (f) != 0)
    cp_oom ();
  return text;
}
