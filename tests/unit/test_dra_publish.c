/* A publish round's plan (hook/engine/dra_publish.h): from the slices the node
 * wants and those the server lists, what is created, updated and deleted, and the
 * pool's generation: one past the greater of the server's and the publisher's
 * own when anything differs, the server's when nothing does (docs/dra.md
 * "Publishing").  Slices of another driver or node are never touched. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "dra_publish.h"
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

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_first_publish), cmocka_unit_test (test_unchanged),
    cmocka_unit_test (test_changed),       cmocka_unit_test (test_same_specs_two_generations),
    cmocka_unit_test (test_unpublish),     cmocka_unit_test (test_refused),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
