/* A publish round's plan (hook/engine/dra_publish.h): from the slices the node
 * wants and those the server lists, what is created, updated and deleted, and the
 * pool's generation: one past the greater of the server's and the publisher's
 * own when anything differs, the server's when nothing does (docs/dra.md
 * "Publishing").  Slices of another driver or node are never touched.
 * And the agent's side of the publisher's socket (cp_dra_publisher_take(),
 * dra_publisher.h): a claim's answer in parts given whole; parts out of order, one
 * over the cap, an answer cut short by another, an answer to fetch 0 refused; an
 * error made one line; a report counted at its exact size only (fuzz_publisher
 * checks the same against any bytes). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "dra_publish.h"
#include "dra_publisher.h"
#include "log.h"
#include "json.h"
#include "util.h"

/* A slice of NODE named NAME, of DRIVER, at GENERATION, one device of CPUS. */
static json_object *
slice (const char *name, const char *node, const char *driver, int64_t generation, int cpus, const char *rv)
{
  char *s = cp_xasprintf (
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"%s\"%s%s%s},"
    "\"spec\":{\"driver\":\"%s\",\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":%lld,"
    "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"l3-0\",\"capacity\":{\"cpus\":{\"value\":\"%d\"}},"
    "\"allowMultipleAllocations\":true}]}}",
    name, rv ? ",\"resourceVersion\":\"" : "", rv ? rv : "", rv ? "\"" : "", driver, node, node, (long long) generation,
    cpus);
  json_object *o = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_json_parse_object (s, strlen (s), &o, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  free (s);
  return o;
}

/* What the server adds to what it stores: its metadata, a default in a device. */
static json_object *
served (json_object *o)
{
  json_object *meta = NULL, *spec = NULL, *devs = NULL;
  json_object_object_get_ex (o, "metadata", &meta);
  json_object_object_add (meta, "uid", json_object_new_string ("0b4c"));
  json_object_object_add (meta, "creationTimestamp", json_object_new_string ("2026-12-05T07:00:00Z"));
  json_object_object_get_ex (o, "spec", &spec);
  json_object_object_get_ex (spec, "devices", &devs);
  json_object_object_add (json_object_array_get_idx (devs, 0), "bindsToNode", json_object_new_boolean (false));
  return o;
}

static json_object *
array (json_object *a, json_object *b, json_object *c)
{
  json_object *arr = json_object_new_array ();
  json_object *v[] = { a, b, c };
  for (size_t i = 0; i < 3; i++)
    if (v[i])
      json_object_array_add (arr, v[i]);
  return arr;
}

static int64_t
generation_of (json_object *body)
{
  json_object *spec, *pool, *g;
  assert_true (json_object_object_get_ex (body, "spec", &spec));
  assert_true (json_object_object_get_ex (spec, "pool", &pool));
  assert_true (json_object_object_get_ex (pool, "generation", &g));
  return json_object_get_int64 (g);
}

static const struct cp_dra_publish_action *
find (const struct cp_dra_publish_plan *p, enum cp_dra_publish_op op, const char *name)
{
  for (size_t i = 0; i < p->n_actions; i++)
    if (p->actions[i].op == op && strcmp (p->actions[i].name, name) == 0)
      return &p->actions[i];
  return NULL;
}

static void
test_first_publish (void **state)
{
  (void) state;
  cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, NULL),
                                          slice ("w-cachepin.io-1", "w", "cachepin.io", 1, 8, NULL), NULL);
  cleanup_json json_object *listed = array (NULL, NULL, NULL);
  struct cp_dra_publish_plan p;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_publish_plan (want, listed, "w", 0, &p, &err), 0);
  assert_false (p.unchanged);
  assert_int_equal (p.generation, 1);
  assert_int_equal (p.n_actions, 2);
  assert_non_null (find (&p, CP_DRA_CREATE, "w-cachepin.io-0"));
  assert_int_equal (generation_of (find (&p, CP_DRA_CREATE, "w-cachepin.io-1")->body), 1);
  cp_dra_publish_plan_clear (&p);
  /* the publisher's own generation counts: it wrote 6 before the server lost them */
  assert_int_equal (cp_dra_publish_plan (want, listed, "w", 6, &p, &err), 0);
  assert_int_equal (p.generation, 7);
  cp_dra_publish_plan_clear (&p);
}

static void
test_unchanged (void **state)
{
  (void) state;
  cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, NULL), NULL, NULL);
  cleanup_json json_object *listed
    = array (served (slice ("w-cachepin.io-0", "w", "cachepin.io", 5, 8, "100")), NULL, NULL);
  struct cp_dra_publish_plan p;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_publish_plan (want, listed, "w", 0, &p, &err), 0);
  assert_true (p.unchanged);
  assert_int_equal (p.n_actions, 0);
  assert_int_equal (p.generation, 5);
  assert_int_equal (p.server_generation, 5);
  cp_dra_publish_plan_clear (&p);
}

static void
test_changed (void **state)
{
  (void) state;
  /* l3-0's capacity went from 8 to 6 (a container placed outside DRA); slice 1 is new;
     slice 2 is gone from what the node wants; another driver's and another node's stay */
  cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 6, NULL),
                                          slice ("w-cachepin.io-1", "w", "cachepin.io", 1, 8, NULL), NULL);
  cleanup_json json_object *listed = array (served (slice ("w-cachepin.io-0", "w", "cachepin.io", 5, 8, "100")),
                                            served (slice ("w-cachepin.io-2", "w", "cachepin.io", 5, 8, "101")),
                                            served (slice ("w-gpu", "w", "gpu.example.com", 40, 1, "102")));
  json_object_array_add (listed, served (slice ("v-cachepin.io-0", "v", "cachepin.io", 90, 8, "103")));
  struct cp_dra_publish_plan p;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_publish_plan (want, listed, "w", 3, &p, &err), 0);
  assert_false (p.unchanged);
  assert_int_equal (p.generation, 6); /* max(5, 3) + 1: other pools' generations are theirs */
  assert_int_equal (p.n_actions, 3);
  const struct cp_dra_publish_action *u = find (&p, CP_DRA_UPDATE, "w-cachepin.io-0");
  assert_non_null (u);
  assert_string_equal (u->resource_version, "100");
  json_object *meta, *rv;
  assert_true (json_object_object_get_ex (u->body, "metadata", &meta));
  assert_true (json_object_object_get_ex (meta, "resourceVersion", &rv));
  assert_string_equal (json_object_get_string (rv), "100");
  assert_int_equal (generation_of (u->body), 6);
  assert_int_equal (generation_of (find (&p, CP_DRA_CREATE, "w-cachepin.io-1")->body), 6);
  const struct cp_dra_publish_action *d = find (&p, CP_DRA_DELETE, "w-cachepin.io-2");
  assert_non_null (d);
  assert_string_equal (d->resource_version, "101");
  assert_null (d->body);
  cp_dra_publish_plan_clear (&p);
}

static void
test_same_specs_two_generations (void **state)
{
  (void) state;
  /* a round cut short left two generations: the pool is published again, whole */
  cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, NULL),
                                          slice ("w-cachepin.io-1", "w", "cachepin.io", 1, 8, NULL), NULL);
  cleanup_json json_object *listed = array (served (slice ("w-cachepin.io-0", "w", "cachepin.io", 4, 8, "1")),
                                            served (slice ("w-cachepin.io-1", "w", "cachepin.io", 3, 8, "2")), NULL);
  struct cp_dra_publish_plan p;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_publish_plan (want, listed, "w", 0, &p, &err), 0);
  assert_false (p.unchanged);
  assert_int_equal (p.generation, 5);
  assert_int_equal (p.n_actions, 2);
  cp_dra_publish_plan_clear (&p);
}

static void
test_unpublish (void **state)
{
  (void) state;
  cleanup_json json_object *none = array (NULL, NULL, NULL);
  cleanup_json json_object *listed = array (served (slice ("w-cachepin.io-0", "w", "cachepin.io", 4, 8, "1")),
                                            served (slice ("w-gpu", "w", "gpu.example.com", 4, 8, "2")), NULL);
  struct cp_dra_publish_plan p;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_publish_plan (none, listed, "w", 0, &p, &err), 0);
  assert_false (p.unchanged);
  assert_int_equal (p.n_actions, 1);
  assert_non_null (find (&p, CP_DRA_DELETE, "w-cachepin.io-0"));
  cp_dra_publish_plan_clear (&p);
  cleanup_json json_object *empty = array (NULL, NULL, NULL);
  assert_int_equal (cp_dra_publish_plan (none, empty, "w", 0, &p, &err), 0);
  assert_true (p.unchanged);
  assert_int_equal (p.n_actions, 0);
  cp_dra_publish_plan_clear (&p);
}

static void
test_refused (void **state)
{
  (void) state;
  struct cp_dra_publish_plan p;
  {
    cleanup_json json_object *want = array (slice ("v-cachepin.io-0", "v", "cachepin.io", 1, 8, NULL), NULL, NULL);
    cleanup_json json_object *listed = array (NULL, NULL, NULL);
    cleanup_error cp_error_t err = NULL;
    assert_true (cp_dra_publish_plan (want, listed, "w", 0, &p, &err) < 0);
    assert_non_null (strstr (cp_error_message (err), "not of node w's pool"));
  }
  {
    cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, NULL), NULL, NULL);
    json_object *bad = served (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, "5")), *spec, *pool;
    json_object_object_get_ex (bad, "spec", &spec);
    json_object_object_get_ex (spec, "pool", &pool);
    json_object_object_del (pool, "generation");
    cleanup_json json_object *listed = array (bad, NULL, NULL);
    cleanup_error cp_error_t err = NULL;
    assert_true (cp_dra_publish_plan (want, listed, "w", 0, &p, &err) < 0);
    assert_non_null (strstr (cp_error_message (err), "w-cachepin.io-0: no spec.pool.generation"));
  }
  {
    /* an answer that lists a name twice (the fuzzer's: an update and a delete of one slice) */
    cleanup_json json_object *want = array (slice ("w-cachepin.io-0", "w", "cachepin.io", 1, 8, NULL), NULL, NULL);
    cleanup_json json_object *listed = array (served (slice ("w-cachepin.io-0", "w", "cachepin.io", 2, 8, "5")),
                                              served (slice ("w-cachepin.io-0", "w", "cachepin.io", 3, 4, "6")), NULL);
    cleanup_error cp_error_t err = NULL;
    assert_true (cp_dra_publish_plan (want, listed, "w", 0, &p, &err) < 0);
    assert_non_null (strstr (cp_error_message (err), "w-cachepin.io-0: listed twice"));
  }
}

/* ---- the agent's side of the publisher's socket ---------------------------------- */

static struct
{
  unsigned calls;
  uint32_t id;
  char json[256], error[512];
  bool ok;
} T;

static void
got (void *ctx, uint32_t id, const char *json, size_t len, const char *error)
{
  (void) ctx;
  T.calls++;
  T.id = id;
  T.ok = json != NULL;
  snprintf (T.json, sizeof T.json, "%.*s", json ? (int) len : 0, json ? json : "");
  snprintf (T.error, sizeof T.error, "%s", error ? error : "");
}

/* A part of claim ID's answer: TOTAL bytes, these from OFF. */
static void
part (struct cp_dra_publisher *p, uint32_t id, bool ok, uint32_t total, uint32_t off, const char *bytes)
{
  char msg[512];
  struct cp_dra_claim_part h = { .type = CP_DRA_MSG_CLAIM, .id = id, .ok = ok, .total = total, .off = off };
  memcpy (msg, &h, sizeof h);
  memcpy (msg + sizeof h, bytes, strlen (bytes));
  cp_dra_publisher_take (p, msg, sizeof h + strlen (bytes));
}

static void
test_take_claim (void **state)
{
  (void) state;
  cp_log_set_level (CP_LOG_ERROR);
  struct cp_dra_publisher p = { .fd = -1, .node = "node-a", .claim = got };
  memset (&T, 0, sizeof T);
  part (&p, 7, true, 9, 0, "{\"a\":");
  assert_int_equal (T.calls, 0);
  part (&p, 7, true, 9, 5, "12}\n");
  assert_int_equal (T.calls, 1);
  assert_true (T.ok);
  assert_int_equal (T.id, 7);
  assert_string_equal (T.json, "{\"a\":12}\n");

  /* Out of order: the second part first, then the first and a part past its total. */
  part (&p, 8, true, 9, 5, "12}\n");
  assert_int_equal (T.calls, 2);
  assert_false (T.ok);
  assert_non_null (strstr (T.error, "out of order"));
  part (&p, 8, true, 4, 0, "{}");
  part (&p, 8, true, 4, 2, "}}}");
  assert_int_equal (T.calls, 3);
  assert_non_null (strstr (T.error, "past its 4 bytes"));
  assert_null (p.part);

  /* Over the cap: refused at its first part, nothing kept. */
  part (&p, 9, true, CP_DRA_PUBLISHER_MAX_CLAIM + 1, 0, "{");
  assert_int_equal (T.calls, 4);
  assert_non_null (strstr (T.error, "over the cap of 1048576"));
  assert_null (p.part);

  /* Cut short by another claim's first part: the first answered with an error. */
  part (&p, 10, true, 4, 0, "{");
  part (&p, 11, true, 2, 0, "{}");
  assert_int_equal (T.calls, 6);
  assert_true (T.ok);
  assert_int_equal (T.id, 11);
  assert_null (p.part);

  /* Fetch 0 is the front end's own: never answered from the publisher. */
  part (&p, 0, false, 3, 0, "bye");
  part (&p, 0, true, 2, 0, "{}");
  assert_int_equal (T.calls, 6);

  /* An error: one line, whatever it held. */
  char err[] = "GET x: line\nnext\0nul";
  char msg[128];
  struct cp_dra_claim_part h = { .type = CP_DRA_MSG_CLAIM, .id = 12, .ok = 0, .total = sizeof err - 1 };
  memcpy (msg, &h, sizeof h);
  memcpy (msg + sizeof h, err, sizeof err - 1);
  cp_dra_publisher_take (&p, msg, sizeof h + sizeof err - 1);
  assert_int_equal (T.calls, 7);
  assert_false (T.ok);
  assert_string_equal (T.error, "GET x: line next nul");
  free (p.part);
}

static void
test_take_report (void **state)
{
  (void) state;
  cp_log_set_level (CP_LOG_ERROR);
  struct cp_dra_publisher p = { .fd = -1, .node = "node-a" };
  struct
  {
    int32_t type, ok, wrote;
    int64_t generation;
    double when;
  } r = { .type = CP_DRA_MSG_REPORT, .ok = 1, .wrote = 1, .generation = 5, .when = 100.5 };
  cp_dra_publisher_take (&p, (const char *) &r, sizeof r);
  assert_int_equal (p.rounds, 1);
  assert_int_equal (p.writes, 1);
  assert_int_equal (p.generation, 5);
  cp_dra_publisher_take (&p, (const char *) &r, sizeof r - 1); /* not its size */
  cp_dra_publisher_take (&p, "\x09\0\0\0", 4);                /* no such type */
  cp_dra_publisher_take (&p, "", 0);
  assert_int_equal (p.rounds, 1);
  r.ok = 0;
  cp_dra_publisher_take (&p, (const char *) &r, sizeof r);
  assert_int_equal (p.rounds, 2);
  assert_int_equal (p.failures, 1);
  assert_int_equal (p.generation, 5);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_first_publish), cmocka_unit_test (test_unchanged),
    cmocka_unit_test (test_changed),       cmocka_unit_test (test_same_specs_two_generations),
    cmocka_unit_test (test_unpublish),     cmocka_unit_test (test_refused),
    cmocka_unit_test (test_take_claim),    cmocka_unit_test (test_take_report),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
