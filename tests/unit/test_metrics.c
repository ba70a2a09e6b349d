/* The text exposition (hook/engine/metrics.c): status objects in, the samples
 * docs/metrics.md promises out; the families' form (HELP and TYPE before the
 * samples, once each, the names' conventions); what is not read gives no sample;
 * label values escaped; an agent's counters and histograms, also from threads.
 *
 *   test_metrics --print-sample   print an exposition with every family (a status
 *                                 and an agent that answered calls), which
 *                                 tests/cli/metrics.sh gives `promtool check
 *                                 metrics` */
#define _GNU_SOURCE
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

/* A status as cp_status_gather() makes it (docs/status.md), the parts a metric
   reads: two LLCs, entries in each state, one isolated, cache-aware scheduling
   on and held for two containers, one core-scheduling cookie, and counted
   decisions of every kind. */
static const char sample_status[] =
  "{\"cgroup\": {\"mode\": \"v2\", \"error\": null},"
  " \"topology\": {\"source\": \"host\", \"error\": null},"
  " \"ledger\": {\"state\": \"ok\", \"held_count\": 3,"
  "  \"entries\": ["
  "   {\"id\": \"a\", \"state\": \"ok\", \"isolate\": {\"partition\": \"root\", \"exclusive_effective\": \"0-1\"}},"
  "   {\"id\": \"b\", \"state\": \"ok\", \"isolate\": {\"partition\": \"root invalid (Parent is not a partition root)\"}},"
  "   {\"id\": \"c\", \"state\": \"pending\", \"isolate\": {\"partition\": null}},"
  "   {\"id\": \"d\", \"state\": \"drifted\", \"isolate\": null},"
  "   {\"id\": \"e\", \"state\": \"gone\", \"isolate\": null},"
  "   {\"id\": \"f\", \"state\": \"gone\"},"
  "   {\"id\": \"g\", \"state\": \"odd \\\"one\\\"\\\\\\n\"}],"
  "  \"occupancy\": [{\"index\": 0, \"map\": \"##s.\"}, {\"index\": 1, \"map\": \"#...--\"}],"
  "  \"error\": null},"
  " \"features\": {\"cache_aware_scheduling\": {\"state\": \"on\", \"asked_by\": [\"a\", \"b\"], \"restore\": \"off\","
  "   \"error\": null},"
  "  \"core_scheduling\": {\"state\": \"supported\", \"asked_by\": [\"a\"], \"error\": null}},"
  " \"recent\": [], \"recent_error\": null,"
  " \"decisions\": ["
  "  {\"front\": \"hook\", \"kind\": \"placed\", \"cause\": \"\", \"n\": 7},"
  "  {\"front\": \"apply\", \"kind\": \"placed\", \"cause\": \"\", \"n\": 2},"
  "  {\"front\": \"nri\", \"kind\": \"refused\", \"cause\": \"invalid\", \"n\": 3},"
  "  {\"front\": \"hook\", \"kind\": \"unplaced\", \"cause\": \"unsatisfiable\", \"n\": 4},"
  "  {\"front\": \"release\", \"kind\": \"released\", \"cause\": \"\", \"n\": 5},"
  "  {\"front\": \"apply\", \"kind\": \"drift\", \"cause\": \"\", \"n\": 1},"
  "  {\"front\": \"hook\", \"kind\": \"switch\", \"cause\": \"\", \"n\": 2},"
  "  {\"front\": \"apply\", \"kind\": \"unplaced\", \"cause\": \"failure\", \"n\": 9007199254740992}],"
  " \"config\": {\"path\": \"/etc/cachepin/config.json\", \"error\": null}}";

static char *
render_json (const char *json, const struct cp_metrics_agent *agent)
{
  json_object *status = json ? json_tokener_parse (json) : NULL;
  if (json)
    assert_non_null (status);
  char *text = cp_metrics_render (status, agent);
  json_object_put (status);
  return text;
}

/* TEXT has the line LINE (whole). */
#define assert_line(text, line) tu_assert_contains (text, "\n" line "\n")

static void
test_escape (void **state)
{
  (void) state;
  cleanup_free char *e = cp_metrics_escape_label ("a\\b\"c\nd");
  assert_string_equal (e, "a\\\\b\\\"c\\nd");
  cleanup_free char *plain = cp_metrics_escape_label ("L3#0 é");
  assert_string_equal (plain, "L3#0 é");
}

static void
test_status_families (void **state)
{
  (void) state;
  cleanup_free char *t = render_json (sample_status, NULL);
  /* Every part read. */
  assert_line (t, "cachepin_status_readable{part=\"ledger\"} 1");
  assert_line (t, "cachepin_status_readable{part=\"journal\"} 1");
  /* The counts, by route and reason; what was not counted is 0 where it can happen. */
  assert_line (t, "cachepin_placements_total{route=\"hook\"} 7");
  assert_line (t, "cachepin_placements_total{route=\"apply\"} 2");
  assert_line (t, "cachepin_placements_total{route=\"nri\"} 0");
  assert_null (strstr (t, "cachepin_placements_total{route=\"release\"}"));
  assert_line (t, "cachepin_refusals_total{route=\"nri\",reason=\"invalid\"} 3");
  assert_line (t, "cachepin_refusals_total{route=\"hook\",reason=\"failure\"} 0");
  assert_line (t, "cachepin_unplaced_starts_total{route=\"hook\",reason=\"unsatisfiable\"} 4");
  /* A count where none was expected (apply never starts a container) still shows. */
  assert_line (t, "cachepin_unplaced_starts_total{route=\"apply\",reason=\"failure\"} 9007199254740992");
  assert_line (t, "cachepin_releases_total{route=\"release\"} 5");
  assert_line (t, "cachepin_drifts_total{route=\"apply\"} 1");
  assert_line (t, "cachepin_sched_cache_writes_total{route=\"hook\"} 2");
  /* The ledger. */
  assert_line (t, "cachepin_ledger_entries{state=\"ok\"} 2");
  assert_line (t, "cachepin_ledger_entries{state=\"pending\"} 1");
  assert_line (t, "cachepin_ledger_entries{state=\"drifted\"} 1");
  assert_line (t, "cachepin_ledger_entries{state=\"gone\"} 2");
  assert_line (t, "cachepin_ledger_entries{state=\"odd \\\"one\\\"\\\\\\n\"} 1");
  assert_line (t, "cachepin_llc_cpus{llc=\"0\",state=\"held\"} 2");
  assert_line (t, "cachepin_llc_cpus{llc=\"0\",state=\"shared\"} 1");
  assert_line (t, "cachepin_llc_cpus{llc=\"0\",state=\"free\"} 1");
  assert_line (t, "cachepin_llc_cpus{llc=\"0\",state=\"unavailable\"} 0");
  assert_line (t, "cachepin_llc_cpus{llc=\"1\",state=\"held\"} 1");
  assert_line (t, "cachepin_llc_cpus{llc=\"1\",state=\"free\"} 3");
  assert_line (t, "cachepin_llc_cpus{llc=\"1\",state=\"unavailable\"} 2");
  assert_line (t, "cachepin_held_cpus 3");
  assert_line (t, "cachepin_isolated_partitions{state=\"valid\"} 1");
  assert_line (t, "cachepin_isolated_partitions{state=\"invalid\"} 1");
  assert_line (t, "cachepin_isolated_partitions{state=\"unknown\"} 1");
  /* The kernel's switches. */
  assert_line (t, "cachepin_sched_cache_state{state=\"on\"} 1");
  assert_line (t, "cachepin_sched_cache_state{state=\"off\"} 0");
  assert_line (t, "cachepin_sched_cache_references 2");
  assert_line (t, "cachepin_sched_cache_held 1");
  assert_line (t, "cachepin_core_sched_cookies 1");
  /* No agent: none of its families. */
  assert_null (strstr (t, "cachepin_nri_"));
}

/* A part that was not read: its families without samples (no zero that would
   read as a reset or an empty host), and readable 0. */
static void
test_unread (void **state)
{
  (void) state;
  cleanup_free char *t = render_json (
    "{\"ledger\": {\"state\": \"invalid\", \"entries\": null, \"occupancy\": null, \"held_count\": null,"
    "  \"error\": \"ledger.json: invalid JSON\"},"
    " \"features\": {\"cache_aware_scheduling\": {\"state\": null, \"asked_by\": null, \"restore\": null,"
    "  \"error\": \"debugfs: denied\"}},"
    " \"recent\": null, \"decisions\": null, \"recent_error\": \"journal.json: invalid\","
    " \"config\": {\"error\": null}}",
    NULL);
  assert_line (t, "cachepin_status_readable{part=\"ledger\"} 0");
  assert_line (t, "cachepin_status_readable{part=\"journal\"} 0");
  assert_line (t, "cachepin_status_readable{part=\"cache_aware_scheduling\"} 0");
  assert_line (t, "cachepin_status_readable{part=\"cgroup\"} 0"); /* missing: not read */
  assert_line (t, "cachepin_status_readable{part=\"config\"} 1");
  static const char *const silent[] = { "cachepin_placements_total", "cachepin_refusals_total",
                                        "cachepin_ledger_entries", "cachepin_llc_cpus", "cachepin_held_cpus",
                                        "cachepin_isolated_partitions", "cachepin_sched_cache_state",
                                        "cachepin_sched_cache_references", "cachepin_sched_cache_held" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (silent); i++)
    {
      cleanup_free char *type = cp_xasprintf ("\n# TYPE %s ", silent[i]);
      cleanup_free char *sample = cp_xasprintf ("\n%s", silent[i]);
      tu_assert_contains (t, type);
      if (strstr (t, sample))
        fail_msg ("%s has a sample:\n%s", silent[i], t);
    }
  /* Garbage of every kind is not read either, and breaks nothing. */
  static const char *const garbage[] = { "[]", "{}", "{\"ledger\": 1, \"decisions\": {}, \"features\": []}",
                                         "{\"decisions\": [1, {\"front\": \"x\", \"kind\": \"placed\", \"cause\": \"\", "
                                         "\"n\": 1}, {\"front\": \"hook\", \"kind\": \"placed\", \"cause\": \"\", "
                                         "\"n\": -4}]}" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (garbage); i++)
    {
      cleanup_free char *g = render_json (garbage[i], NULL);
      assert_null (strstr (g, "cachepin_ledger_entries{"));
      assert_null (strstr (g, "} -"));
    }
  cleanup_free char *g = render_json (garbage[3], NULL);
  assert_line (g, "cachepin_placements_total{route=\"hook\"} 0");
}

/* The form: each family's HELP then TYPE once, before its samples and only
   there; names cachepin_..., a counter's ending in _total; every line a
   comment or "name[{labels}] value". */
static void
check_form (const char *text)
{
  char family[128] = "", type[16] = "";
  char *copy = cp_xstrdup (text), *save = NULL;
  size_t families = 0;
  for (char *line = strtok_r (copy, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char name[128];
      if (sscanf (line, "# HELP %127s ", name) == 1)
        {
          cleanup_free char *help = cp_xasprintf ("# HELP %s ", name);
          if (strstr (strstr (text, help) + 1, help) != NULL)
            fail_msg ("%s: HELP twice", name);
          strcpy (family, name);
          families++;
          continue;
        }
      if (sscanf (line, "# TYPE %127s %15s", name, type) == 2)
        {
          assert_string_equal (name, family);
          assert_true (strncmp (name, "cachepin_", 9) == 0);
          if (strcmp (type, "counter") == 0)
            assert_non_null (strstr (name, "_total"));
          else
            assert_null (strstr (name, "_total"));
          continue;
        }
      size_t n = strcspn (line, "{ ");
      assert_true (n > 0 && n < sizeof name);
      memcpy (name, line, n);
      name[n] = '\0';
      bool ok = strcmp (name, family) == 0;
      if (strcmp (type, "histogram") == 0)
        for (const char *sfx = "_bucket\0_sum\0_count\0"; *sfx; sfx += strlen (sfx) + 1)
          ok |= strlen (name) == strlen (family) + strlen (sfx) && strncmp (name, family, strlen (family)) == 0
                && strcmp (name + strlen (family), sfx) == 0;
      if (!ok)
        fail_msg ("sample `%s` outside its family `%s`", line, family);
      const char *value = strrchr (line, ' ');
      assert_non_null (value);
      char *end;
      strtod (value + 1, &end);
      assert_true (*end == '\0' && end != value + 1);
    }
  assert_true (families >= 15);
  free (copy);
}

static struct cp_metrics_agent *
busy_agent (void)
{
  struct cp_metrics_agent *a = cp_metrics_agent_new ();
  cp_metrics_agent_set_registered (a, true);
  cp_metrics_agent_reconnected (a);
  cp_metrics_agent_reconnected (a);
  cp_metrics_agent_observe (a, CP_METRICS_CREATE_CONTAINER, 400000);      /* 0.4 ms */
  cp_metrics_agent_observe (a, CP_METRICS_CREATE_CONTAINER, 1000000);     /* 1 ms: le 0.001 */
  cp_metrics_agent_observe (a, CP_METRICS_CREATE_CONTAINER, 1000001);     /* just past it */
  cp_metrics_agent_observe (a, CP_METRICS_SYNCHRONIZE, 3000000000ULL);    /* 3 s */
  cp_metrics_agent_observe (a, CP_METRICS_SYNCHRONIZE, 60000000000ULL);   /* past every bound */
  cp_metrics_agent_observe (a, (enum cp_metrics_call) 9, 1);              /* not a call: ignored */
  return a;
}

static void
test_form (void **state)
{
  (void) state;
  cleanup_metrics_agent struct cp_metrics_agent *a = busy_agent ();
  cleanup_free char *t = render_json (sample_status, a);
  check_form (t);
  assert_int_equal (t[strlen (t) - 1], '\n');
  cleanup_free char *none = render_json (NULL, NULL);
  assert_string_equal (none, "");
}

static void
test_agent (void **state)
{
  (void) state;
  cleanup_metrics_agent struct cp_metrics_agent *a = busy_agent ();
  cleanup_free char *t = render_json (NULL, a);
  assert_line (t, "# TYPE cachepin_nri_registered gauge\ncachepin_nri_registered 1");
  assert_line (t, "cachepin_nri_reconnects_total 2");
  assert_line (t, "# TYPE cachepin_nri_request_duration_seconds histogram");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"CreateContainer\",le=\"0.0005\"} 1");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"CreateContainer\",le=\"0.001\"} 2");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"CreateContainer\",le=\"0.0025\"} 3");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"CreateContainer\",le=\"+Inf\"} 3");
  assert_line (t, "cachepin_nri_request_duration_seconds_sum{method=\"CreateContainer\"} 0.002400001");
  assert_line (t, "cachepin_nri_request_duration_seconds_count{method=\"CreateContainer\"} 3");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"UpdateContainer\",le=\"+Inf\"} 0");
  assert_line (t, "cachepin_nri_request_duration_seconds_sum{method=\"UpdateContainer\"} 0.000000000");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"Synchronize\",le=\"2.5\"} 0");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"Synchronize\",le=\"5\"} 1");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"Synchronize\",le=\"10\"} 1");
  assert_line (t, "cachepin_nri_request_duration_seconds_bucket{method=\"Synchronize\",le=\"+Inf\"} 2");
  assert_line (t, "cachepin_nri_request_duration_seconds_sum{method=\"Synchronize\"} 63.000000000");
  assert_null (strstr (t, "cachepin_status_readable")); /* no status: none of its families */
  cp_metrics_agent_set_registered (a, false);
  cleanup_free char *after = render_json (NULL, a);
  assert_line (after, "cachepin_nri_registered 0");
  assert_string_equal (cp_metrics_call_name (CP_METRICS_UPDATE_CONTAINER), "UpdateContainer");
}

/* Calls counted from threads while another renders: none lost, and every
   render's buckets cumulative. */
#define THREADS 4
#define CALLS 20000

static void *
observe_many (void *arg)
{
  struct cp_metrics_agent *a = arg;
  for (unsigned i = 0; i < CALLS; i++)
    cp_metrics_agent_observe (a, CP_METRICS_UPDATE_CONTAINER, (uint64_t) (i % 7) * 1000000);
  return NULL;
}

static unsigned long long
bucket_value (const char *text, const char *le)
{
  cleanup_free char *key
      = cp_xasprintf ("cachepin_nri_request_duration_seconds_bucket{method=\"UpdateContainer\",le=\"%s\"} ", le);
  const char *p = strstr (text, key);
  assert_non_null (p);
  return strtoull (p + strlen (key), NULL, 10);
}

static void
test_threads (void **state)
{
  (void) state;
  cleanup_metrics_agent struct cp_metrics_agent *a = cp_metrics_agent_new ();
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    assert_int_equal (pthread_create (&th[i], NULL, observe_many, a), 0);
  for (int round = 0; round < 50; round++)
    {
      cleanup_free char *t = render_json (NULL, a);
      assert_true (bucket_value (t, "0.001") <= bucket_value (t, "0.005"));
      assert_true (bucket_value (t, "0.005") <= bucket_value (t, "+Inf"));
    }
  for (int i = 0; i < THREADS; i++)
    pthread_join (th[i], NULL);
  cleanup_free char *t = render_json (NULL, a);
  assert_int_equal (bucket_value (t, "+Inf"), THREADS * CALLS);
  /* i % 7 ms: 0 and 1 ms in le 0.001, 2 in 0.0025, 3-5 in 0.005, 6 in 0.01. */
  unsigned long long per = CALLS / 7, extra = CALLS % 7; /* the first EXTRA residues once more */
  unsigned long long le1 = THREADS * (2 * per + (extra > 0) + (extra > 1));
  assert_int_equal (bucket_value (t, "0.001"), le1);
}

int
main (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--print-sample") == 0)
    {
      cleanup_metrics_agent struct cp_metrics_agent *a = busy_agent ();
      cleanup_free char *t = render_json (sample_status, a);
      fputs (t, stdout);
      return 0;
    }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_escape), cmocka_unit_test (test_status_families), cmocka_unit_test (test_unread),
    cmocka_unit_test (test_form),   cmocka_unit_test (test_agent),           cmocka_unit_test (test_threads),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
