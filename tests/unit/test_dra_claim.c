/* A ResourceClaim's allocation for this node (policy/dra_claim.h).
 *
 * The promises: resource.k8s.io/v1, v1beta2 and v1beta1 claims read alike; only
 * the results of driver cachepin.io in the pool named after this node are kept,
 * adminAccess ones skipped; no consumedCapacity means the whole device (cpus 0);
 * caps of 1 MiB, 32 results and 256 reservedFor entries; every refusal one line
 * naming its field. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra_claim.h"
#include "util.h"

#define NODE "worker-1"
#define UID "0b5b4a5e-1f0e-4c1a-9a57-5d2a1c3e4f60"

/* A claim of VERSION with RESULTS (the JSON array's inside) and RESERVED (the same). */
static char *
claim (const char *version, const char *results, const char *reserved)
{
  return cp_xasprintf ("{\"apiVersion\": \"resource.k8s.io/%s\", \"kind\": \"ResourceClaim\","
                       " \"metadata\": {\"name\": \"c8\", \"namespace\": \"default\", \"uid\": \"" UID "\","
                       "  \"managedFields\": [{\"manager\": \"kube-scheduler\"}]},"
                       " \"spec\": {\"devices\": {\"requests\": [{\"name\": \"cpus\"}]}},"
                       " \"status\": {\"allocation\": {\"devices\": {\"results\": [%s]},"
                       "   \"nodeSelector\": {\"nodeSelectorTerms\": []}},"
                       "  \"reservedFor\": [%s]}}",
                       version, results, reserved);
}

#define RESULT(dev, cpus)                                                                                       \
  "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"" dev "\""     \
  ", \"consumedCapacity\": {\"cpus\": \"" cpus "\"}}"
#define POD "{\"resource\": \"pods\", \"name\": \"p\", \"uid\": \"11111111-2222-3333-4444-555555555555\"}"

static int
parse (const char *json, struct cp_dra_claim *c, cp_error_t *err)
{
  return cp_dra_claim_parse (json, strlen (json), NODE, c, err);
}

static void
test_versions (void **state)
{
  (void) state;
  const char *versions[] = { "v1", "v1beta2", "v1beta1" };
  for (size_t i = 0; i < 3; i++)
    {
      cleanup_free char *j = claim (versions[i], RESULT ("l3-2", "8") "," RESULT ("l3-5", "8000m"), POD);
      cleanup_dra_claim struct cp_dra_claim c = { 0 };
      cleanup_error cp_error_t err = NULL;
      assert_int_equal (parse (j, &c, &err), 0);
      assert_string_equal (c.uid, UID);
      assert_string_equal (c.name, "c8");
      assert_string_equal (c.namespace_, "default");
      assert_int_equal (c.n_results, 2);
      assert_string_equal (c.results[0].device, "l3-2");
      assert_string_equal (c.results[0].request, "cpus");
      assert_int_equal (c.results[0].cpus, 8);
      assert_int_equal (c.results[0].index, 0);
      assert_string_equal (c.results[1].device, "l3-5");
      assert_int_equal (c.results[1].cpus, 8);
      assert_int_equal (c.n_reserved, 1);
      assert_string_equal (c.reserved_for[0], "11111111-2222-3333-4444-555555555555");
    }
}

static void
test_skipped_results (void **state)
{
  (void) state;
  cleanup_free char *j = claim (
      "v1",
      "{\"request\": \"gpu\", \"driver\": \"gpu.example.com\", \"pool\": \"" NODE "\", \"device\": \"gpu-0\"},"
      "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"worker-2\", \"device\": \"l3-0\"},"
      "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-1\","
      " \"adminAccess\": true},"
      "{\"request\": \"whole\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-3\","
      " \"adminAccess\": false}",
      "");
  cleanup_dra_claim struct cp_dra_claim c = { 0 };
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (parse (j, &c, &err), 0);
  assert_int_equal (c.skipped_other, 2);
  assert_int_equal (c.skipped_admin, 1);
  assert_int_equal (c.n_results, 1);
  assert_string_equal (c.results[0].device, "l3-3");
  assert_int_equal (c.results[0].index, 3);
  assert_int_equal (c.results[0].cpus, 0); /* no consumedCapacity: the whole device */
  assert_int_equal (c.n_reserved, 0);
}

static void
test_not_for_this_node (void **state)
{
  (void) state;
  cleanup_free char *j = claim ("v1", RESULT ("l3-0", "4"), "");
  cleanup_dra_claim struct cp_dra_claim c = { 0 };
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_dra_claim_parse (j, strlen (j), "worker-9", &c, &err), 0);
  assert_int_equal (c.n_results, 0);
  assert_int_equal (c.skipped_other, 1);
}

static void
test_caps (void **state)
{
  (void) state;
  /* 32 results are read, 33 refused. */
  for (unsigned n = 32; n <= 33; n++)
    {
      cleanup_free char *rs = cp_xstrdup ("");
      for (unsigned i = 0; i < n; i++)
        {
          char *next = cp_xasprintf ("%s%s{\"request\": \"r%u\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE
                                     "\", \"device\": \"l3-%u\"}",
                                     rs, i ? "," : "", i, i);
          free (rs);
          rs = next;
        }
      cleanup_free char *j = claim ("v1", rs, "");
      cleanup_dra_claim struct cp_dra_claim c = { 0 };
      cleanup_error cp_error_t err = NULL;
      int r = parse (j, &c, &err);
      if (n == 32)
        assert_int_equal (r, 0), assert_int_equal (c.n_results, 32);
      else
        tu_check_error ("33 results", r, &err, "status.allocation.devices.results: 33 results, at most 32");
    }
  /* 256 reservedFor entries are read, 257 refused. */
  for (unsigned n = 256; n <= 257; n++)
    {
      cleanup_free char *rs = cp_xstrdup ("");
      for (unsigned i = 0; i < n; i++)
        {
          char *next = cp_xasprintf ("%s%s{\"resource\": \"pods\", \"name\": \"p%u\", \"uid\": \"u-%u\"}", rs,
                                     i ? "," : "", i, i);
          free (rs);
          rs = next;
        }
      cleanup_free char *j = claim ("v1", RESULT ("l3-0", "1"), rs);
      cleanup_dra_claim struct cp_dra_claim c = { 0 };
      cleanup_error cp_error_t err = NULL;
      int r = parse (j, &c, &err);
      if (n == 256)
        assert_int_equal (r, 0), assert_int_equal (c.n_reserved, 256), assert_string_equal (c.reserved_for[255], "u-255");
      else
        tu_check_error ("257 reservedFor", r, &err, "status.reservedFor: 257 entries, at most 256");
    }
  /* 1 MiB: one byte more is refused before it is parsed. */
  size_t big = CP_DRA_CLAIM_MAX_BYTES + 1;
  cleanup_free char *j = cp_xcalloc (big + 1, 1);
  memset (j, ' ', big);
  j[0] = '{', j[big - 1] = '}';
  cleanup_dra_claim struct cp_dra_claim c = { 0 };
  cleanup_error cp_error_t err = NULL;
  tu_check_error ("1 MiB", cp_dra_claim_parse (j, big, NODE, &c, &err), &err, "claim: 1048577 bytes, at most 1048576");
}

/* Each refusal: the claim's JSON and the exact line. */
static void
test_errors (void **state)
{
  (void) state;
  static const char *const rs = RESULT ("l3-0", "2");
  struct
  {
    const char *results, *reserved, *expected;
  } cases[] = {
    { RESULT ("l3-0", "2.5"), "",
      "status.allocation.devices.results[0].consumedCapacity.cpus: not a whole quantity, got \"2.5\"" },
    { RESULT ("l3-0", "1500m"), "",
      "status.allocation.devices.results[0].consumedCapacity.cpus: not a whole quantity, got \"1500m\"" },
    { RESULT ("l3-0", "2Ki"), "",
      "status.allocation.devices.results[0].consumedCapacity.cpus: not a whole quantity, got \"2Ki\"" },
    { RESULT ("l3-0", "0"), "",
      "status.allocation.devices.results[0].consumedCapacity.cpus: expected at least 1 CPU, got \"0\"" },
    { RESULT ("l3-0", "99999999"), "",
      "status.allocation.devices.results[0].consumedCapacity.cpus: more than 65536 CPUs, got \"99999999\"" },
    { "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-0\","
      " \"consumedCapacity\": {\"cpus\": 8}}",
      "", "status.allocation.devices.results[0].consumedCapacity.cpus: expected a string, got 8" },
    { "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-0\","
      " \"consumedCapacity\": []}",
      "", "status.allocation.devices.results[0].consumedCapacity: expected an object, got []" },
    { "{\"request\": \"cpus\", \"pool\": \"" NODE "\", \"device\": \"l3-0\"}", "",
      "status.allocation.devices.results[0].driver: missing" },
    { "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"device\": \"l3-0\"}", "",
      "status.allocation.devices.results[0].pool: missing" },
    { "{\"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-0\"}", "",
      "status.allocation.devices.results[0].request: missing" },
    { "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\"}", "",
      "status.allocation.devices.results[0].device: missing" },
    { "{\"request\": \"cpus\", \"driver\": \"cachepin.io\", \"pool\": \"" NODE "\", \"device\": \"l3-0\","
      " \"adminAccess\": \"yes\"}",
      "", "status.allocation.devices.results[0].adminAccess: expected true or false" },
    { RESULT ("l3-0", "2") ", 7", "", "status.allocation.devices.results[1]: expected an object, got 7" },
    { RESULT ("l3-0", "2") "," RESULT ("l3-0", "3"), "",
      "status.allocation.devices.results[1]: device l3-0 given twice to request cpus" },
    { rs, "7", "status.reservedFor[0]: expected an object, got 7" },
    { rs, "{\"name\": \"p\"}", "status.reservedFor[0].uid: missing" },
    { rs, "{\"uid\": \"a/b\"}", "status.reservedFor[0].uid: `a/b` is not a uid (letters, digits and '-')" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      cleanup_free char *j = claim ("v1", cases[i].results, cases[i].reserved);
      cleanup_dra_claim struct cp_dra_claim c = { 0 };
      cleanup_error cp_error_t err = NULL;
      tu_check_error (cases[i].expected, parse (j, &c, &err), &err, cases[i].expected);
    }
}

/* The claim's frame: version, kind, metadata, status. */
static void
test_frame_errors (void **state)
{
  (void) state;
  struct
  {
    const char *json, *expected;
  } cases[] = {
    { "[]", NULL },
    { "{\"apiVersion\": \"resource.k8s.io/v1alpha3\", \"kind\": \"ResourceClaim\"}",
      "apiVersion: expected resource.k8s.io/v1, v1beta2 or v1beta1, got \"resource.k8s.io/v1alpha3\"" },
    { "{\"kind\": \"ResourceClaim\"}", "apiVersion: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceSlice\"}",
      "kind: expected ResourceClaim, got \"ResourceSlice\"" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\"}", "metadata: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"name\": \"c\"}}",
      "metadata.uid: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"../x\"}}",
      "metadata.uid: `../x` is not a uid (letters, digits and '-')" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\"}}",
      "metadata.name: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\","
      " \"name\": \"c\"}}",
      "metadata.namespace: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\","
      " \"name\": \"c\", \"namespace\": \"d\"}}",
      "the claim is not allocated: status: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\","
      " \"name\": \"c\", \"namespace\": \"d\"}, \"status\": {}}",
      "the claim is not allocated: status.allocation: missing" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\","
      " \"name\": \"c\", \"namespace\": \"d\"}, \"status\": {\"allocation\": {\"devices\": {\"results\": {}}}}}",
      "status.allocation.devices.results: expected an array" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"ResourceClaim\", \"metadata\": {\"uid\": \"u\","
      " \"name\": \"c\", \"namespace\": \"d\"}, \"status\": {\"allocation\": {}, \"reservedFor\": {}}}",
      "status.reservedFor: expected an array" },
    { "{\"apiVersion\": \"resource.k8s.io/v1\", \"apiVersion\": \"resource.k8s.io/v1\"}", NULL },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      cleanup_dra_claim struct cp_dra_claim c = { 0 };
      cleanup_error cp_error_t err = NULL;
      int r = parse (cases[i].json, &c, &err);
      if (cases[i].expected)
        tu_check_error (cases[i].expected, r, &err, cases[i].expected);
      else
        {
          assert_true (r < 0);
          assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
          tu_assert_contains (cp_error_message (err), "claim: ");
        }
    }
  /* The node name is checked as the slices' is. */
  cleanup_free char *j = claim ("v1", RESULT ("l3-0", "1"), "");
  cleanup_dra_claim struct cp_dra_claim c = { 0 };
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_dra_claim_parse (j, strlen (j), "Worker_1", &c, &err) < 0);
  tu_assert_contains (cp_error_message (err), "node");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_versions),   cmocka_unit_test (test_skipped_results),
    cmocka_unit_test (test_not_for_this_node), cmocka_unit_test (test_caps),
    cmocka_unit_test (test_errors),     cmocka_unit_test (test_frame_errors),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
