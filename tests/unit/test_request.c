/* Request defaults and the strict option-value parsers (policy/request.c). */
#include "testutil.h"

#include <string.h>

#include "request.h"
#include "util.h"

static void
test_defaults (void **state)
{
  (void) state;
  struct cp_request r;
  memset (&r, 0xa5, sizeof r);
  cp_request_init (&r);
  assert_int_equal (r.cpus, 0);
  assert_int_equal (r.align, CP_LEVEL_LLC);
  assert_int_equal (r.smt, CP_SMT_PE0_FIRST);
  assert_int_equal (r.mode, CP_MODE_EXCLUSIVE);
  assert_false (r.strict);
}

static void
check_refusal (int ret, cp_error_t *err, const char *value)
{
  assert_int_equal (ret, -1);
  assert_non_null (*err);
  assert_int_equal ((*err)->kind, CP_ERR_INPUT);
  const char *msg = cp_error_message (*err);
  assert_null (strchr (msg, '\n'));
  /* the message names the value, quoted */
  char *quoted = cp_xasprintf ("`%s`", value);
  tu_assert_contains (msg, quoted);
  free (quoted);
  cp_error_free (err);
}

static void
test_align (void **state)
{
  (void) state;
  static const struct
  {
    const char *s;
    enum cp_level v;
  } ok[] = {
    { "l2", CP_LEVEL_L2 }, { "llc", CP_LEVEL_LLC }, { "numa", CP_LEVEL_NUMA },
    { "package", CP_LEVEL_PACKAGE }, { "none", CP_LEVEL_MACHINE },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ok); i++)
    {
      enum cp_level v = CP_LEVEL_COUNT;
      cp_error_t err = NULL;
      assert_int_equal (cp_parse_align (ok[i].s, &v, &err), 0);
      assert_null (err);
      assert_int_equal (v, ok[i].v);
      assert_string_equal (cp_align_name (v), ok[i].s); /* the name parses back */
    }
  /* Any case, and l3 for llc: outputs say "L3#0" and "NUMA". */
  static const struct
  {
    const char *s;
    enum cp_level v;
  } spelled[] = {
    { "LLC", CP_LEVEL_LLC }, { "L2", CP_LEVEL_L2 },   { "l3", CP_LEVEL_LLC },     { "L3", CP_LEVEL_LLC },
    { "NUMA", CP_LEVEL_NUMA }, { "Package", CP_LEVEL_PACKAGE }, { "None", CP_LEVEL_MACHINE },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (spelled); i++)
    {
      enum cp_level v = CP_LEVEL_COUNT;
      cp_error_t err = NULL;
      if (cp_parse_align (spelled[i].s, &v, &err) != 0)
        fail_msg ("align `%s` refused: %s", spelled[i].s, cp_error_message (err));
      assert_int_equal (v, spelled[i].v);
    }
  static const char *const bad[] = { "", "llc ", " llc", "l4", "l3 ", "machine", "pkg", "llc\n", "nonee", "l\xc4\xb1" "c" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      enum cp_level v = CP_LEVEL_L2;
      cp_error_t err = NULL;
      int r = cp_parse_align (bad[i], &v, &err);
      if (r == 0)
        fail_msg ("align `%s` accepted", bad[i]);
      assert_int_equal (v, CP_LEVEL_L2); /* untouched */
      tu_assert_contains (cp_error_message (err), "l2|llc|numa|package|none");
      if (strchr (bad[i], '\n') == NULL)
        check_refusal (r, &err, bad[i]);
      else
        cp_error_free (&err);
    }
  assert_string_equal (cp_align_name (CP_LEVEL_COUNT), "?");
}

static void
test_labels (void **state)
{
  (void) state;
  assert_string_equal (cp_level_label (CP_LEVEL_L2), "L2");
  assert_string_equal (cp_level_label (CP_LEVEL_LLC), "LLC");
  assert_string_equal (cp_level_label (CP_LEVEL_NUMA), "NUMA");
  assert_string_equal (cp_level_label (CP_LEVEL_PACKAGE), "package");
  assert_string_equal (cp_level_label (CP_LEVEL_MACHINE), "machine");
  assert_string_equal (cp_level_label (CP_LEVEL_COUNT), "?");
}

static void
test_smt (void **state)
{
  (void) state;
  static const struct
  {
    const char *s;
    enum cp_smt v;
  } ok[] = {
    { "pe0-first", CP_SMT_PE0_FIRST }, { "pe0", CP_SMT_PE0 }, { "cores", CP_SMT_CORES }, { "any", CP_SMT_ANY },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ok); i++)
    {
      enum cp_smt v = (enum cp_smt) 99;
      cp_error_t err = NULL;
      assert_int_equal (cp_parse_smt (ok[i].s, &v, &err), 0);
      assert_null (err);
      assert_int_equal (v, ok[i].v);
      assert_string_equal (cp_smt_name (v), ok[i].s);
    }
  /* Any case: outputs say "PE0". */
  enum cp_smt any_case = CP_SMT_ANY;
  cp_error_t case_err = NULL;
  assert_int_equal (cp_parse_smt ("PE0", &any_case, &case_err), 0);
  assert_int_equal (any_case, CP_SMT_PE0);
  assert_int_equal (cp_parse_smt ("PE0-First", &any_case, &case_err), 0);
  assert_int_equal (any_case, CP_SMT_PE0_FIRST);
  assert_null (case_err);
  static const char *const bad[] = { "pe0 ", "", "pe0first", "pe0_first", "core", "all", "0", "bar" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      enum cp_smt v = CP_SMT_ANY;
      cp_error_t err = NULL;
      int r = cp_parse_smt (bad[i], &v, &err);
      if (r == 0)
        fail_msg ("smt `%s` accepted", bad[i]);
      assert_int_equal (v, CP_SMT_ANY);
      tu_assert_contains (cp_error_message (err), "pe0-first|pe0|cores|any");
      check_refusal (r, &err, bad[i]);
    }
  assert_string_equal (cp_smt_name ((enum cp_smt) 42), "?");
}

static void
test_mode (void **state)
{
  (void) state;
  enum cp_mode v = (enum cp_mode) 7;
  cp_error_t err = NULL;
  assert_int_equal (cp_parse_mode ("exclusive", &v, &err), 0);
  assert_int_equal (v, CP_MODE_EXCLUSIVE);
  assert_int_equal (cp_parse_mode ("shared", &v, &err), 0);
  assert_int_equal (v, CP_MODE_SHARED);
  assert_null (err);
  assert_string_equal (cp_mode_name (CP_MODE_EXCLUSIVE), "exclusive");
  assert_string_equal (cp_mode_name (CP_MODE_SHARED), "shared");
  assert_string_equal (cp_mode_name ((enum cp_mode) 5), "?");
  assert_int_equal (cp_parse_mode ("Shared", &v, &err), 0); /* any case */
  assert_int_equal (v, CP_MODE_SHARED);
  assert_int_equal (cp_parse_mode ("EXCLUSIVE", &v, &err), 0);
  assert_int_equal (v, CP_MODE_EXCLUSIVE);
  static const char *const bad[] = { "", "excl", "shared ", "baz", "0" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      v = CP_MODE_SHARED;
      int r = cp_parse_mode (bad[i], &v, &err);
      if (r == 0)
        fail_msg ("mode `%s` accepted", bad[i]);
      assert_int_equal (v, CP_MODE_SHARED);
      tu_assert_contains (cp_error_message (err), "exclusive|shared");
      check_refusal (r, &err, bad[i]);
    }
}

static void
test_bool (void **state)
{
  (void) state;
  bool v = true;
  cp_error_t err = NULL;
  assert_int_equal (cp_parse_bool ("false", &v, &err), 0);
  assert_false (v);
  assert_int_equal (cp_parse_bool ("true", &v, &err), 0);
  assert_true (v);
  assert_null (err);
  static const char *const bad[] = { "1", "0", "yes", "no", "True", "FALSE", "", "true ", "on" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      v = true;
      int r = cp_parse_bool (bad[i], &v, &err);
      if (r == 0)
        fail_msg ("bool `%s` accepted", bad[i]);
      assert_true (v);
      tu_assert_contains (cp_error_message (err), "false|true");
      check_refusal (r, &err, bad[i]);
    }
}

static void
test_count (void **state)
{
  (void) state;
  static const struct
  {
    const char *s;
    unsigned v;
  } ok[] = {
    { "1", 1 }, { "2", 2 }, { "9", 9 }, { "10", 10 }, { "20", 20 }, { "100", 100 }, { "8191", 8191 }, { "8192", 8192 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ok); i++)
    {
      unsigned v = 0;
      cp_error_t err = NULL;
      assert_int_equal (cp_parse_count (ok[i].s, CP_REQUEST_MAX_CPUS, &v, &err), 0);
      assert_null (err);
      assert_int_equal (v, ok[i].v);
    }
  static const char *const bad[] = {
    "0", "01", "+1", "8193", "-1", "1e3", "", " 1", "1 ", "abc", "99999", "0x10", "1.0", "00",
    "99999999999999999999999999", "4294967297", "1\n",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      unsigned v = 77;
      cp_error_t err = NULL;
      int r = cp_parse_count (bad[i], CP_REQUEST_MAX_CPUS, &v, &err);
      if (r == 0)
        fail_msg ("count `%s` accepted as %u", bad[i], v);
      assert_int_equal (v, 77);
      tu_assert_contains (cp_error_message (err), "from 1 to 8192");
      if (strchr (bad[i], '\n') == NULL)
        check_refusal (r, &err, bad[i]);
      else
        cp_error_free (&err);
    }
  /* The maximum is the caller's. */
  unsigned v = 0;
  cp_error_t err = NULL;
  assert_int_equal (cp_parse_count ("4", 4, &v, &err), 0);
  assert_int_equal (v, 4);
  assert_int_equal (cp_parse_count ("5", 4, &v, &err), -1);
  tu_assert_contains (cp_error_message (err), "from 1 to 4");
  cp_error_free (&err);
  assert_int_equal (cp_parse_count ("40", 4, &v, &err), -1);
  cp_error_free (&err);
}

/* Error plumbing the parsers rely on. */
/* One parser for cachepin.io/mems and `cachepin apply --mems`: the same spellings
 * and the same refusal (test_oci.c and cli.hostile hold each front end to it). */
static void
test_mems (void **state)
{
  (void) state;
  bool keep = true;
  cp_error_t err = NULL;
  assert_int_equal (cp_parse_mems ("local", &keep, &err), 0);
  assert_false (keep);
  assert_int_equal (cp_parse_mems ("keep", &keep, &err), 0);
  assert_true (keep);
  assert_null (err);
  assert_int_equal (cp_parse_mems ("Keep", &keep, &err), 0); /* any case */
  assert_true (keep);
  assert_int_equal (cp_parse_mems ("LOCAL", &keep, &err), 0);
  assert_false (keep);
  static const char *const bad[] = { "", "remote", "keep ", "local,keep", "1" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      keep = true;
      int r = cp_parse_mems (bad[i], &keep, &err);
      if (r == 0)
        fail_msg ("mems `%s` accepted", bad[i]);
      assert_true (keep);
      tu_assert_contains (cp_error_message (err), "(expected local|keep)");
      check_refusal (r, &err, bad[i]);
    }
  assert_int_equal (cp_parse_mems ("remote", &keep, &err), -1);
  assert_string_equal (cp_error_message (err), "invalid value `remote` (expected local|keep)");
  cp_error_free (&err);
}

static void
test_ask_names (void **state)
{
  (void) state;
  assert_string_equal (cp_ask_name (CP_ASK_NONE), "none");
  assert_string_equal (cp_ask_name (CP_ASK_ON), "on");
  assert_string_equal (cp_ask_name (CP_ASK_OFF), "off");
  assert_string_equal (cp_ask_name ((enum cp_ask) 3), "?");
}

static void
test_error_wrap (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  enum cp_smt v;
  assert_int_equal (cp_parse_smt ("bar", &v, &err), -1);
  assert_int_equal (cp_error_wrap (&err, "--smt"), -1);
  assert_string_equal (cp_error_message (err), "--smt: invalid value `bar` (expected pe0-first|pe0|cores|any)");
  cp_error_free (&err);
  assert_null (err);
  assert_string_equal (cp_error_message (NULL), "unknown error");
  assert_int_equal (cp_fail_errno (&err, 2, "open `%s`", "x"), -1);
  assert_int_equal (err->kind, CP_ERR_RUNTIME);
  assert_string_equal (cp_error_message (err), "open `x`: No such file or directory");
  cp_error_free (&err);
}

/* isolate only with an exclusive placement; asking nothing passes in any mode. */
static void
test_isolate_needs_exclusive (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_container_request creq = { 0 };
  cp_request_init (&creq.req);
  assert_int_equal (cp_request_check_isolate (&creq, "--mode exclusive", &err), 0);
  creq.isolate = true;
  assert_int_equal (cp_request_check_isolate (&creq, "--mode exclusive", &err), 0);
  creq.req.mode = CP_MODE_SHARED;
  tu_check_error ("isolate shared", cp_request_check_isolate (&creq, "--mode exclusive", &err), &err,
                  "needs --mode exclusive (mode is shared)");
  assert_int_equal (err->kind, CP_ERR_INPUT);
  cp_error_free (&err);
  creq.isolate = false;
  assert_int_equal (cp_request_check_isolate (&creq, "--mode exclusive", &err), 0);
  assert_null (err);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_defaults), cmocka_unit_test (test_align), cmocka_unit_test (test_labels),
    cmocka_unit_test (test_smt),      cmocka_unit_test (test_mode),  cmocka_unit_test (test_bool),
    cmocka_unit_test (test_count),    cmocka_unit_test (test_mems),  cmocka_unit_test (test_ask_names),
    cmocka_unit_test (test_error_wrap), cmocka_unit_test (test_isolate_needs_exclusive),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
