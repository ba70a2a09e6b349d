/* OCI input: the state on a hook's stdin, the bundle's config.json, and the
 * cachepin.io/ annotations turned into a request. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "annotations.h"
#include "bitmap.h"
#include "config.h"
#include "json.h"
#include "state.h"
#include "util.h"

/* Fails the test, naming the case, unless ERR holds exactly EXPECTED. */
/* A fresh temporary directory; caller frees (the files are left for the OS). */
static char *
temp_dir (void)
{
  char *dir = cp_xstrdup ("/tmp/cachepin-test-oci-XXXXXX");
  if (mkdtemp (dir) == NULL)
    fail_msg ("mkdtemp: %s", strerror (errno));
  return dir;
}

/* ---- state -------------------------------------------------------------------- */

/* What runc 1.1 writes at createRuntime (one line, status "creating"). */
static const char runc_state[]
    = "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"7b4e8c0d1f2a\",\"status\":\"creating\",\"pid\":48213,"
      "\"bundle\":\"/run/containers/storage/overlay-containers/7b4e8c0d1f2a/userdata\","
      "\"annotations\":{\"io.kubernetes.container.name\":\"app\",\"cachepin.io/cpus\":\"4\","
      "\"io.kubernetes.cri-o.ContainerType\":\"container\"}}";

/* What crun writes (pretty, status "created", a trailing newline). */
static const char crun_state[] = "{\n"
                                 "  \"ociVersion\": \"1.0.0\",\n"
                                 "  \"id\": \"podman-test_1\",\n"
                                 "  \"status\": \"created\",\n"
                                 "  \"pid\": 4194304,\n"
                                 "  \"bundle\": \"/var/lib/containers/storage/overlay-containers/abc/userdata\",\n"
                                 "  \"annotations\": {\n"
                                 "    \"cachepin.io/mode\": \"shared\"\n"
                                 "  }\n"
                                 "}\n";

static void
test_state_runc (void **state)
{
  (void) state;
  struct cp_oci_state st;
  cp_error_t err = NULL;
  if (cp_oci_state_parse (runc_state, strlen (runc_state), &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_string_equal (st.oci_version, "1.0.2-dev");
  assert_string_equal (st.id, "7b4e8c0d1f2a");
  assert_int_equal (st.status, CP_OCI_CREATING);
  assert_string_equal (cp_oci_status_name (st.status), "creating");
  assert_int_equal (st.pid, 48213);
  assert_string_equal (st.bundle, "/run/containers/storage/overlay-containers/7b4e8c0d1f2a/userdata");
  assert_int_equal (st.annotations.n, 3);
  assert_string_equal (cp_annotations_get (&st.annotations, "cachepin.io/cpus"), "4");
  assert_string_equal (cp_annotations_container_name (&st.annotations), "app");
  assert_true (cp_annotations_wants_cachepin (&st.annotations));
  assert_false (cp_annotations_is_sandbox (&st.annotations));
  cp_oci_state_free (&st);
  assert_null (st.id);
}

static void
test_state_crun (void **state)
{
  (void) state;
  struct cp_oci_state st;
  cp_error_t err = NULL;
  if (cp_oci_state_parse (crun_state, strlen (crun_state), &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (st.status, CP_OCI_CREATED);
  assert_int_equal (st.pid, 4194304);
  assert_string_equal (st.id, "podman-test_1");
  assert_string_equal (cp_annotations_get (&st.annotations, "cachepin.io/mode"), "shared");
  cp_oci_state_free (&st);
}

static void
test_state_optional (void **state)
{
  (void) state;
  /* A stopped container has no pid (Go's omitempty), and annotations may be
     absent or null. */
  static const char *const ok[] = {
    "{\"ociVersion\":\"1.0.2\",\"id\":\"c\",\"status\":\"stopped\",\"bundle\":\"/b\"}",
    "{\"ociVersion\":\"1.0.2\",\"id\":\"c\",\"status\":\"stopped\",\"pid\":0,\"bundle\":\"/b\",\"annotations\":null}",
    "{\"ociVersion\":\"1.0.2\",\"id\":\"c\",\"status\":\"running\",\"pid\":1,\"bundle\":\"/b\",\"extra\":[1,{\"x\":null}]}",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ok); i++)
    {
      struct cp_oci_state st;
      cp_error_t err = NULL;
      if (cp_oci_state_parse (ok[i], strlen (ok[i]), &st, &err) < 0)
        fail_msg ("%s: %s", ok[i], cp_error_message (err));
      assert_int_equal (st.annotations.n, 0);
      assert_false (cp_annotations_wants_cachepin (&st.annotations));
      cp_oci_state_free (&st);
    }
}

#define STATE_WITH(id, status, pid, bundle, extra)                                                    \
  "{\"ociVersion\":\"1.0.2\",\"id\":" id ",\"status\":" status ",\"pid\":" pid ",\"bundle\":" bundle \
  extra "}"
#define STATE_PID(pid) STATE_WITH ("\"c\"", "\"created\"", pid, "\"/b\"", "")
#define STATE_ID(id) STATE_WITH (id, "\"created\"", "1", "\"/b\"", "")
#define STATE_EXTRA(extra) STATE_WITH ("\"c\"", "\"created\"", "1", "\"/b\"", "," extra)

static const struct bad_case
{
  const char *name;
  const char *text;
  const char *error;
} bad_states[] = {
  { "negative pid", STATE_PID ("-5"), "state: pid: expected an integer from 1 to 4194304, got -5" },
  { "zero pid", STATE_PID ("0"), "state: pid: expected an integer from 1 to 4194304, got 0" },
  { "pid above PID_MAX_LIMIT", STATE_PID ("4194305"),
    "state: pid: expected an integer from 1 to 4194304, got 4194305" },
  { "huge pid (json-c clamps it)", STATE_PID ("99999999999999999999"),
    "state: pid: expected an integer from 1 to 4194304, got 18446744073709551615" },
  { "pid above int64", STATE_PID ("9223372036854775808"),
    "state: pid: expected an integer from 1 to 4194304, got 9223372036854775808" },
  { "float pid", STATE_PID ("1.5"), "state: pid: expected an integer from 1 to 4194304, got 1.5" },
  { "integral float pid", STATE_PID ("42.0"), "state: pid: expected an integer from 1 to 4194304, got 42.0" },
  { "exponent pid", STATE_PID ("1e3"), "state: pid: expected an integer from 1 to 4194304, got 1e3" },
  { "string pid", STATE_PID ("\"42\""), "state: pid: expected an integer from 1 to 4194304, got \"42\"" },
  { "null pid", STATE_PID ("null"), "state: pid: expected an integer from 1 to 4194304, got null" },
  { "NaN pid", STATE_PID ("NaN"), "state: invalid JSON at byte 56: unexpected character" },
  { "leading zero pid", STATE_PID ("-01"), "state: invalid JSON at byte 56: number with a leading zero" },
  { "missing pid", "{\"ociVersion\":\"1.0.2\",\"id\":\"c\",\"status\":\"created\",\"bundle\":\"/b\"}",
    "state: pid: missing" },
  { "missing id", "{\"ociVersion\":\"1.0.2\",\"status\":\"created\",\"pid\":1,\"bundle\":\"/b\"}", "state: id: missing" },
  { "id with a slash", STATE_ID ("\"../etc\""), "state: id: contains a '/'" },
  { "id dot-dot", STATE_ID ("\"..\""), "state: id: `..` is not a container id" },
  { "id with a control character", STATE_ID ("\"a\\u001bb\""), "state: id: contains a control character" },
  { "id with a newline", STATE_ID ("\"a\\nb\""), "state: id: contains a control character" },
  { "id with NUL", STATE_ID ("\"a\\u0000b\""), "state: id: contains a NUL character" },
  { "empty id", STATE_ID ("\"\""), "state: id: empty" },
  { "id of `apply`", STATE_ID ("\"apply:x\""),
    "state: id: starts with `apply:`, which names the ledger's entries of `cachepin apply`" },
  { "id of a DRA claim", STATE_ID ("\"dra:claim:u:0\""),
    "state: id: starts with `dra:`, which names the ledger's entries of DRA claims" },
  { "id not a string", STATE_ID ("5"), "state: id: expected a string, got 5" },
  { "unknown status", STATE_WITH ("\"c\"", "\"paused\"", "1", "\"/b\"", ""),
    "state: status: expected creating|created|running|stopped, got \"paused\"" },
  { "missing ociVersion", "{\"id\":\"c\",\"status\":\"created\",\"pid\":1,\"bundle\":\"/b\"}",
    "state: ociVersion: missing" },
  { "relative bundle", STATE_WITH ("\"c\"", "\"created\"", "1", "\"run/b\"", ""),
    "state: bundle: expected an absolute path, got \"run/b\"" },
  { "bundle with NUL", STATE_WITH ("\"c\"", "\"created\"", "1", "\"/b\\u0000/x\"", ""),
    "state: bundle: contains a NUL character" },
  { "missing bundle", "{\"ociVersion\":\"1\",\"id\":\"c\",\"status\":\"created\",\"pid\":1}", "state: bundle: missing" },
  { "annotation value not a string", STATE_EXTRA ("\"annotations\":{\"cachepin.io/mode\":5}"),
    "state: annotations: cachepin.io/mode: expected a string, got 5" },
  { "annotation value null", STATE_EXTRA ("\"annotations\":{\"cachepin.io/mode\":null}"),
    "state: annotations: cachepin.io/mode: expected a string, got null" },
  { "annotation value with NUL", STATE_EXTRA ("\"annotations\":{\"cachepin.io/cpus\":\"4\\u00005\"}"),
    "state: annotations: cachepin.io/cpus: contains a NUL character" },
  { "duplicate key", STATE_EXTRA ("\"pid\":2"), "state: duplicate key \"pid\"" },
  { "duplicate key spelt with an escape", STATE_EXTRA ("\"\\u0070id\":2"), "state: duplicate key \"pid\"" },
  /* Inside the annotations a key may repeat (oci/annotations.h judges ours);
     the member itself may not: which of two counts, no reader can know. */
  { "annotations given twice",
    STATE_EXTRA ("\"annotations\":{\"cachepin.io/cpus\":\"1\"},\"annotations\":{}"),
    "state: duplicate key \"annotations\"" },
  { "duplicate key deep inside", STATE_EXTRA ("\"x\":[{},{\"y\":{\"z\":1,\"z\":1}}]"),
    "state: x[1].y: duplicate key \"z\"" },
  { "key cut by NUL", STATE_EXTRA ("\"annotations\":{\"cachepin.io/cpus\\u0000x\":\"4\"}"),
    "state: annotations: NUL character in key \"cachepin.io/cpus\"" },
  { "single-quoted key", "{'id':\"c\"}", "state: invalid JSON at byte 1: single-quoted string" },
  { "raw tab in a string", "{\"id\":\"a\tb\"}", "state: invalid JSON at byte 8: control character in a string" },
  { "invalid UTF-8", "{\"id\":\"\xff\"}", "state: invalid JSON at byte 7: invalid utf-8 string" },
  { "invalid JSON", "{\"id\":", "state: invalid JSON at byte 6: unexpected end of data" },
  { "trailing garbage", "{\"id\":\"a\"} x", "state: invalid JSON at byte 11: unexpected character" },
  { "two objects", "{\"id\":\"a\"}{}", "state: invalid JSON at byte 10: unexpected character" },
  { "trailing comma", "{\"id\":\"a\",}", "state: invalid JSON at byte 10: unexpected character" },
  { "comment", "/* x */{}", "state: expected a JSON object" },
  { "not an object", "[1]", "state: expected a JSON object" },
  { "empty input", " \n", "state: empty input" },
  { "nested too deeply", "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    "state: invalid JSON at byte 36: nesting too deep" },
};

static void
test_state_malformed (void **state)
{
  (void) state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad_states); i++)
    {
      struct cp_oci_state st;
      cp_error_t err = NULL;
      int r = cp_oci_state_parse (bad_states[i].text, strlen (bad_states[i].text), &st, &err);
      tu_check_error (bad_states[i].name, r, &err, bad_states[i].error);
      assert_int_equal (err->kind, CP_ERR_INPUT);
      assert_null (st.id); /* nothing left to free */
      cp_error_free (&err);
    }
}

/* A container that does not ask is never failed for what its state holds: the
 * annotations are decided first, and only cachepin.io/ keys are judged (and kept,
 * with the engine's name and type keys). */
static void
test_state_foreign_annotations (void **state)
{
  (void) state;
  static const struct
  {
    const char *text;
    size_t kept;
  } ok[] = {
    { STATE_EXTRA ("\"annotations\":[\"a\"]"), 0 },
    { STATE_EXTRA ("\"annotations\":\"cachepin.io/cpus=4\""), 0 },
    { STATE_EXTRA ("\"annotations\":{\"a\":5,\"b\":null,\"c\":{\"d\":[]},\"e\":\"x\\u0000y\"}"), 0 },
    /* Keys given twice, and a value that repeats a key of its own: not ours. */
    { STATE_EXTRA ("\"annotations\":{\"a\":\"1\",\"a\":\"2\",\"c\":{\"d\":1,\"d\":2},\"a\":3}"), 0 },
    { STATE_EXTRA ("\"annotations\":{\"io.kubernetes.container.name\":\"app\",\"io.kubernetes.cri.container-type\":"
                   "\"sandbox\",\"io.kubernetes.cri-o.ContainerType\":5,\"x\":\"y\"}"),
      2 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ok); i++)
    {
      struct cp_oci_state st;
      cp_error_t err = NULL;
      if (cp_oci_state_parse (ok[i].text, strlen (ok[i].text), &st, &err) < 0)
        fail_msg ("%s: %s", ok[i].text, cp_error_message (err));
      assert_true (st.has_annotations);
      assert_int_equal (st.annotations.n, ok[i].kept);
      assert_false (cp_annotations_wants_cachepin (&st.annotations));
      cp_oci_state_free (&st);
    }

  /* The first step judges nothing but the JSON and the cachepin.io/ keys. */
  static const char *const bad_fields[] = {
    "{\"pid\":\"x\",\"id\":\"..\",\"bundle\":\"b\",\"status\":5,\"annotations\":{\"k\":\"v\"}}",
    "{}",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad_fields); i++)
    {
      struct cp_oci_state st;
      cp_error_t err = NULL;
      if (cp_oci_state_parse_annotations (bad_fields[i], strlen (bad_fields[i]), &st, &err) < 0)
        fail_msg ("%s: %s", bad_fields[i], cp_error_message (err));
      assert_int_equal (st.has_annotations, i == 0);
      assert_int_equal (cp_oci_state_parse_fields (&st, &err), -1);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      cp_error_free (&err);
      cp_oci_state_free (&st);
    }

  /* An empty object is no annotations, as absent and null are: config.json decides. */
  {
    static const char empty[] = "{\"annotations\":{}}";
    struct cp_oci_state st;
    cp_error_t err = NULL;
    assert_int_equal (cp_oci_state_parse_annotations (empty, strlen (empty), &st, &err), 0);
    assert_false (st.has_annotations);
    cp_oci_state_free (&st);
  }

  /* The bundle alone. */
  static const char bundle_only[] = "{\"bundle\":\"/b\"}";
  struct cp_oci_state st;
  cp_error_t err = NULL;
  assert_int_equal (cp_oci_state_parse_annotations (bundle_only, strlen (bundle_only), &st, &err), 0);
  assert_int_equal (cp_oci_state_parse_bundle (&st, &err), 0);
  assert_string_equal (st.bundle, "/b");
  cp_oci_state_free (&st);
  static const char bundle_relative[] = "{\"bundle\":\"b\"}";
  assert_int_equal (cp_oci_state_parse_annotations (bundle_relative, strlen (bundle_relative), &st, &err), 0);
  tu_check_error ("relative bundle", cp_oci_state_parse_bundle (&st, &err), &err,
                  "state: bundle: expected an absolute path, got \"b\"");
  cp_error_free (&err);
  cp_oci_state_free (&st);
}

/* Inputs that need building: sizes, counts, raw NUL bytes. */
static void
test_state_bounds (void **state)
{
  (void) state;
  struct cp_oci_state st;
  cp_error_t err = NULL;

  char id[CP_OCI_ID_MAX + 2];
  memset (id, 'a', sizeof id - 1);
  id[sizeof id - 1] = '\0';
  cleanup_free char *long_id = cp_xasprintf (STATE_ID ("\"%s\""), id);
  tu_check_error ("id too long", cp_oci_state_parse (long_id, strlen (long_id), &st, &err), &err,
               "state: id: longer than 1024 bytes");
  id[sizeof id - 2] = '\0'; /* exactly 1024 */
  cleanup_free char *max_id = cp_xasprintf (STATE_ID ("\"%s\""), id);
  assert_int_equal (cp_oci_state_parse (max_id, strlen (max_id), &st, &err), 0);
  cp_oci_state_free (&st);

  /* A raw NUL after the object: json-c would stop there and report success. */
  static const char nul_tail[] = "{\"id\":\"a\"}\0{\"id\":\"b\"}";
  tu_check_error ("NUL byte after the object", cp_oci_state_parse (nul_tail, sizeof nul_tail - 1, &st, &err), &err,
               "state: invalid JSON at byte 10: NUL byte");

  /* Too many annotations: of ours only; other annotations are not counted. */
  size_t cap = 64 * (CP_ANNOTATIONS_MAX + 2), n = 0;
  cleanup_free char *many = cp_xmalloc0 (cap);
  n += (size_t) snprintf (many + n, cap - n, STATE_EXTRA ("\"annotations\":{"));
  n--; /* drop the closing brace */
  for (int i = 0; i <= CP_ANNOTATIONS_MAX; i++)
    n += (size_t) snprintf (many + n, cap - n, "%s\"cachepin.io/cpus.container.c%d\":\"1\"", i ? "," : "", i);
  n += (size_t) snprintf (many + n, cap - n, "}}");
  tu_check_error ("too many annotations", cp_oci_state_parse (many, n, &st, &err), &err,
               "state: annotations: 4097 cachepin.io/ annotations, more than the 4096 accepted");
  n = 0;
  n += (size_t) snprintf (many + n, cap - n, STATE_EXTRA ("\"annotations\":{"));
  n--;
  for (int i = 0; i <= CP_ANNOTATIONS_MAX; i++)
    n += (size_t) snprintf (many + n, cap - n, "%s\"k%d\":\"v\"", i ? "," : "", i);
  n += (size_t) snprintf (many + n, cap - n, "}}");
  assert_int_equal (cp_oci_state_parse (many, n, &st, &err), 0);
  assert_int_equal (st.annotations.n, 0);
  cp_oci_state_free (&st);

  /* Our values are short; other annotations may be long. */
  char value[CP_ANNOTATION_VALUE_MAX + 2];
  memset (value, '1', sizeof value - 1);
  value[sizeof value - 1] = '\0';
  cleanup_free char *long_ours = cp_xasprintf (STATE_EXTRA ("\"annotations\":{\"cachepin.io/align\":\"%s\"}"), value);
  tu_check_error ("cachepin.io value too long", cp_oci_state_parse (long_ours, strlen (long_ours), &st, &err), &err,
               "state: annotations: cachepin.io/align: longer than 256 bytes");
  cleanup_free char *long_other = cp_xasprintf (STATE_EXTRA ("\"annotations\":{\"other\":\"%s\"}"), value);
  assert_int_equal (cp_oci_state_parse (long_other, strlen (long_other), &st, &err), 0);
  cp_oci_state_free (&st);

  char key[CP_ANNOTATION_KEY_MAX + 2];
  memset (key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  cleanup_free char *long_key = cp_xasprintf (STATE_EXTRA ("\"annotations\":{\"cachepin.io/%s\":\"v\"}"), key);
  tu_check_error ("annotation key too long", cp_oci_state_parse (long_key, strlen (long_key), &st, &err), &err,
               "state: annotations: key `cachepin.io/kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...` longer "
               "than 1024 bytes");
  cleanup_free char *long_other_key = cp_xasprintf (STATE_EXTRA ("\"annotations\":{\"%s\":\"v\"}"), key);
  assert_int_equal (cp_oci_state_parse (long_other_key, strlen (long_other_key), &st, &err), 0);
  cp_oci_state_free (&st);
  cp_error_free (&err);
}

static void
test_state_read_fd (void **state)
{
  (void) state;
  struct cp_oci_state st;
  cp_error_t err = NULL;
  FILE *f = tmpfile ();
  assert_non_null (f);
  fputs (runc_state, f);
  fflush (f);
  lseek (fileno (f), 0, SEEK_SET);
  if (cp_oci_state_read (fileno (f), &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_int_equal (st.pid, 48213);
  cp_oci_state_free (&st);

  /* One byte over the cap: refused before any parsing. */
  assert_int_equal (ftruncate (fileno (f), 0), 0);
  lseek (fileno (f), 0, SEEK_SET);
  fputc ('{', f);
  for (size_t i = 1; i < CP_OCI_STATE_MAX_SIZE; i++)
    fputc (' ', f);
  fputc ('}', f);
  fflush (f);
  lseek (fileno (f), 0, SEEK_SET);
  tu_check_error ("oversized state", cp_oci_state_read (fileno (f), &st, &err), &err,
               "state: larger than 1048576 bytes");
  assert_int_equal (err->kind, CP_ERR_INPUT);
  fclose (f);

  /* A pipe, as runtimes give it, empty. */
  int p[2];
  assert_int_equal (pipe (p), 0);
  close (p[1]);
  tu_check_error ("empty stdin", cp_oci_state_read (p[0], &st, &err), &err, "state: empty input");
  close (p[0]);
  cp_error_free (&err);

  /* A writer that never closes the pipe: a whole object and a short silence end
     the read, long before the deadline. */
  assert_int_equal (pipe (p), 0);
  assert_int_equal (write (p[1], runc_state, strlen (runc_state)), (ssize_t) strlen (runc_state));
  time_t t0 = time (NULL);
  if (cp_oci_state_read (p[0], &st, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  assert_true (time (NULL) - t0 < CP_OCI_STATE_TIMEOUT_MS / 1000);
  assert_int_equal (st.pid, 48213);
  cp_oci_state_free (&st);
  close (p[0]);
  close (p[1]);
}

/* ---- config.json --------------------------------------------------------------- */

static const char good_config[]
    = "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"env\":[\"A=1\"]},"
      "\"annotations\":{\"cachepin.io/align\":\"l2\",\"io.kubernetes.container.name\":\"app\"},"
      "\"linux\":{\"cgroupsPath\":\"/kubepods/pod1/c1\",\"resources\":{\"memory\":{\"limit\":1073741824},"
      "\"cpu\":{\"shares\":1024,\"quota\":150000,\"period\":100000,\"cpus\":\"2-5,8\",\"mems\":\"0\"}},"
      "\"namespaces\":[{\"type\":\"pid\"}]}}";

static void
test_config_parse (void **state)
{
  (void) state;
  struct cp_oci_config cfg;
  cp_error_t err = NULL;
  if (cp_oci_config_parse (good_config, strlen (good_config), &cfg, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  tu_assert_set (cfg.cpus, "2-5,8");
  assert_int_equal (cfg.quota, 150000);
  assert_int_equal (cfg.period, 100000);
  assert_string_equal (cfg.cgroups_path, "/kubepods/pod1/c1");
  assert_string_equal (cp_annotations_get (&cfg.annotations, "cachepin.io/align"), "l2");
  cp_oci_config_free (&cfg);

  /* Everything optional; null is absent (Go); "" cpus is unset; quota -1 is none. */
  static const char *const minimal[] = {
    "{}",
    "{\"annotations\":null,\"linux\":null}",
    "{\"linux\":{\"resources\":null,\"cgroupsPath\":\"\"}}",
    "{\"linux\":{\"resources\":{\"cpu\":null}}}",
    "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"\",\"quota\":-1,\"period\":null}}}}",
    "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\" \\n\"}}}}", /* blank: the kernel's empty list */
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (minimal); i++)
    {
      if (cp_oci_config_parse (minimal[i], strlen (minimal[i]), &cfg, &err) < 0)
        fail_msg ("%s: %s", minimal[i], cp_error_message (err));
      assert_null (cfg.cpus);
      assert_true (cfg.quota <= 0);
      assert_int_equal (cfg.period, 0);
      assert_null (cfg.cgroups_path);
      assert_int_equal (cfg.annotations.n, 0);
      cp_oci_config_free (&cfg);
    }

  /* linux.resources.cpu.cpus as the kernel reads it when the runtime writes it
     into cpuset.cpus: decimal with leading zeros, a trailing newline. */
  static const struct
  {
    const char *text, *cpus;
  } kernel[] = {
    { "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"01\"}}}}", "1" },
    { "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"010\"}}}}", "10" },
    { "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-1\\n\"}}}}", "0-1" },
    { "{\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\" 02,04 \"}}}}", "2,4" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (kernel); i++)
    {
      if (cp_oci_config_parse (kernel[i].text, strlen (kernel[i].text), &cfg, &err) < 0)
        fail_msg ("%s: %s", kernel[i].text, cp_error_message (err));
      tu_assert_set (cfg.cpus, kernel[i].cpus);
      cp_oci_config_free (&cfg);
    }

  /* linux.cgroupsPath: an absolute cgroupfs path is kept cleaned for the hook's
     check; relative and systemd ones are not checked. */
  static const struct
  {
    const char *path, *cgroupfs, *systemd;
  } paths[] = {
    { "/kubepods/pod1/c1", "/kubepods/pod1/c1", NULL },
    { "//kubepods/./pod1//c1/", "/kubepods/pod1/c1", NULL },
    { "/a/../../b/..", "/", NULL },
    { "/", "/", NULL },
    { "kubepods/c1", NULL, NULL },
    /* systemd's form, expanded as runc's ExpandSlice() and getUnitName() do */
    { "system.slice:docker:abc", NULL, "/system.slice/docker-abc.scope" },
    { "machine.slice:libpod:abc", NULL, "/machine.slice/libpod-abc.scope" },
    { "kubepods-burstable-pod1.slice:cri-containerd:abc", NULL,
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-abc.scope" },
    { "-.slice:p:abc", NULL, "/p-abc.scope" },
    { "user.slice:p:sub.slice", NULL, "/user.slice/sub.slice" },
    { "/machine.slice:libpod:abc", NULL, NULL },
    { ":libpod:abc", NULL, NULL },
    { "machine.slice::abc", NULL, NULL },
    { "machine.slice:libpod:", NULL, NULL },
    { "machine:libpod:abc", NULL, NULL },
    { "a--b.slice:p:abc", NULL, NULL },
    { "-a.slice:p:abc", NULL, NULL },
    { "a-.slice:p:abc", NULL, NULL },
    { "machine.slice:libpod:a:b", NULL, NULL },
    { "machine.slice:lib/pod:abc", NULL, NULL },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (paths); i++)
    {
      cleanup_free char *text = cp_xasprintf ("{\"linux\":{\"cgroupsPath\":\"%s\"}}", paths[i].path);
      if (cp_oci_config_parse (text, strlen (text), &cfg, &err) < 0)
        fail_msg ("%s: %s", text, cp_error_message (err));
      assert_string_equal (cfg.cgroups_path, paths[i].path);
      if (paths[i].cgroupfs)
        assert_string_equal (cfg.cgroupfs_path, paths[i].cgroupfs);
      else
        assert_null (cfg.cgroupfs_path);
      if (paths[i].systemd)
        assert_string_equal (cfg.systemd_path, paths[i].systemd);
      else if (cfg.systemd_path)
        fail_msg ("%s: systemd path %s, expected none", paths[i].path, cfg.systemd_path);
      cp_oci_config_free (&cfg);
    }
}

#define CPU(json) "{\"linux\":{\"resources\":{\"cpu\":{" json "}}}}"

static const struct bad_case bad_configs[] = {
  { "quota as a string", CPU ("\"quota\":\"5\""), "config.json: linux.resources.cpu.quota: expected an integer, got \"5\"" },
  { "quota as a float", CPU ("\"quota\":1.5"), "config.json: linux.resources.cpu.quota: expected an integer, got 1.5" },
  { "quota above int64", CPU ("\"quota\":9223372036854775808"),
    "config.json: linux.resources.cpu.quota: expected an integer, got 9223372036854775808" },
  { "negative period", CPU ("\"period\":-1"),
    "config.json: linux.resources.cpu.period: expected an integer from 0 to 9223372036854775807, got -1" },
  { "period as a bool", CPU ("\"period\":true"),
    "config.json: linux.resources.cpu.period: expected an integer from 0 to 9223372036854775807, got true" },
  { "cpus open range", CPU ("\"cpus\":\"0-\""),
    "config.json: linux.resources.cpu.cpus: `0-`: a number is missing at the end" },
  { "cpus with a tab inside a number", CPU ("\"cpus\":\"1-\\t3\""),
    "config.json: linux.resources.cpu.cpus: `1-?3`: expected a number at `?3`" },
  { "cpus all (the kernel's, refused)", CPU ("\"cpus\":\"all\""),
    "config.json: linux.resources.cpu.cpus: `all`: expected a number at `all`" },
  { "cpus hex", CPU ("\"cpus\":\"0x3\""), "config.json: linux.resources.cpu.cpus: `0x3`: unexpected character at `x3`" },
  { "cpus reversed range", CPU ("\"cpus\":\"3-1\""),
    "config.json: linux.resources.cpu.cpus: `3-1`: range end 1 is before start 3" },
  { "cpus not a string", CPU ("\"cpus\":[0,1]"), "config.json: linux.resources.cpu.cpus: expected a string, got [0,1]" },
  { "cpus with NUL", CPU ("\"cpus\":\"0\\u0000-63\""), "config.json: linux.resources.cpu.cpus: contains a NUL character" },
  { "cpu not an object", "{\"linux\":{\"resources\":{\"cpu\":5}}}",
    "config.json: linux.resources.cpu: expected an object, got 5" },
  { "resources not an object", "{\"linux\":{\"resources\":\"x\"}}",
    "config.json: linux.resources: expected an object, got \"x\"" },
  { "linux not an object", "{\"linux\":[]}", "config.json: linux: expected an object, got []" },
  { "cgroupsPath not a string", "{\"linux\":{\"cgroupsPath\":1}}", "config.json: linux.cgroupsPath: expected a string, got 1" },
  { "duplicate cpu key", CPU ("\"quota\":100000,\"quota\":900000"),
    "config.json: linux.resources.cpu: duplicate key \"quota\"" },
  { "trailing garbage", "{}}", "config.json: invalid JSON at byte 2: unexpected character" },
};

static void
test_config_malformed (void **state)
{
  (void) state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad_configs); i++)
    {
      struct cp_oci_config cfg;
      cp_error_t err = NULL;
      int r = cp_oci_config_parse (bad_configs[i].text, strlen (bad_configs[i].text), &cfg, &err);
      tu_check_error (bad_configs[i].name, r, &err, bad_configs[i].error);
      assert_int_equal (err->kind, CP_ERR_INPUT);
      assert_null (cfg.cpus);
      cp_error_free (&err);
    }
}

static void
test_config_load (void **state)
{
  (void) state;
  struct cp_oci_config cfg;
  cp_error_t err = NULL;
  cleanup_free char *dir = temp_dir ();
  cleanup_free char *bundle = cp_xasprintf ("%s/bundle", dir);
  cleanup_free char *config = cp_xasprintf ("%s/config.json", bundle);
  assert_int_equal (mkdir (bundle, 0755), 0);

  cleanup_free char *missing = cp_xasprintf ("open %s/config.json: No such file or directory", bundle);
  tu_check_error ("missing config.json", cp_oci_config_load (bundle, &cfg, &err), &err, missing);
  assert_int_equal (cp_error_errno (err), ENOENT);

  tu_write_file (config, good_config, strlen (good_config));
  if (cp_oci_config_load (bundle, &cfg, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  tu_assert_set (cfg.cpus, "2-5,8");
  cp_oci_config_free (&cfg);

  /* A symlink in the bundle's path is fine... */
  cleanup_free char *link = cp_xasprintf ("%s/link", dir);
  assert_int_equal (symlink (bundle, link), 0);
  if (cp_oci_config_load (link, &cfg, &err) < 0)
    fail_msg ("%s", cp_error_message (err));
  cp_oci_config_free (&cfg);

  /* ...config.json itself being one is not. */
  cleanup_free char *other = cp_xasprintf ("%s/other", dir);
  assert_int_equal (mkdir (other, 0755), 0);
  cleanup_free char *other_config = cp_xasprintf ("%s/config.json", other);
  assert_int_equal (symlink (config, other_config), 0);
  cleanup_free char *is_link = cp_xasprintf ("%s/config.json: is a symbolic link", other);
  tu_check_error ("config.json a symlink", cp_oci_config_load (other, &cfg, &err), &err, is_link);

  /* A FIFO would block a plain open(); a directory is no file either. */
  assert_int_equal (unlink (other_config), 0);
  assert_int_equal (mkfifo (other_config, 0600), 0);
  cleanup_free char *not_regular = cp_xasprintf ("%s/config.json: not a regular file", other);
  tu_check_error ("config.json a FIFO", cp_oci_config_load (other, &cfg, &err), &err, not_regular);
  assert_int_equal (unlink (other_config), 0);
  assert_int_equal (mkdir (other_config, 0755), 0);
  tu_check_error ("config.json a directory", cp_oci_config_load (other, &cfg, &err), &err, not_regular);

  /* Over the size cap (a sparse file). */
  int fd = open (config, O_WRONLY | O_TRUNC | O_CLOEXEC);
  assert_true (fd >= 0);
  assert_int_equal (ftruncate (fd, CP_OCI_CONFIG_MAX_SIZE + 1), 0);
  close (fd);
  cleanup_free char *too_big = cp_xasprintf ("%s/config.json: larger than 4194304 bytes", bundle);
  tu_check_error ("config.json too large", cp_oci_config_load (bundle, &cfg, &err), &err, too_big);

  cleanup_free char *no_bundle = cp_xasprintf ("bundle %s/nope: open: No such file or directory", dir);
  cleanup_free char *nope = cp_xasprintf ("%s/nope", dir);
  tu_check_error ("missing bundle", cp_oci_config_load (nope, &cfg, &err), &err, no_bundle);
  cp_error_free (&err);
}

/* ---- annotations -> request ------------------------------------------------------- */

struct request_case
{
  const char *name;
  const char *config; /* config.json text: annotations and linux.resources.cpu */
  const struct cp_request *defaults;
  const char *error;  /* NULL: success, with the fields below */
  unsigned cpus;
  const char *source;
  const char *align; /* NULL: llc */
  enum cp_smt smt;
  enum cp_mode mode;
  bool strict;
  bool mems_keep;
  bool isolate;
};

#define ANN(json) "{\"annotations\":{" json "}}"
#define ANN_CPU(ann, cpu) "{\"annotations\":{" ann "},\"linux\":{\"resources\":{\"cpu\":{" cpu "}}}}"
#define NAME_APP "\"io.kubernetes.container.name\":\"app\""

static const struct cp_request numa_defaults = {
  .align = CP_LEVEL_NUMA, .smt = CP_SMT_CORES, .mode = CP_MODE_EXCLUSIVE, .strict = true, .cpus = 7,
};

static const struct cp_request shared_defaults = {
  .align = CP_LEVEL_LLC, .smt = CP_SMT_PE0_FIRST, .mode = CP_MODE_SHARED,
};

#define ISOLATE_NEEDS_EXCLUSIVE(key) "annotation " key ": needs cachepin.io/mode=exclusive (mode is shared)"

static const struct request_case request_cases[] = {
  { .name = "cpus annotation", .config = ANN ("\"cachepin.io/cpus\":\"4\""), .cpus = 4, .source = "annotation" },
  { .name = "all keys", .config = ANN ("\"cachepin.io/cpus\":\"8\",\"cachepin.io/align\":\"numa\","
                                       "\"cachepin.io/smt\":\"cores\",\"cachepin.io/mode\":\"shared\","
                                       "\"cachepin.io/strict\":\"true\",\"cachepin.io/mems\":\"keep\""),
    .cpus = 8, .source = "annotation", .align = "numa", .smt = CP_SMT_CORES, .mode = CP_MODE_SHARED,
    .strict = true, .mems_keep = true },
  { .name = "values in any case, l3 for llc (outputs say L3#0, PE0)",
    .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/align\":\"L3\",\"cachepin.io/smt\":\"PE0\","
                   "\"cachepin.io/mode\":\"Shared\""),
    .cpus = 2, .source = "annotation", .align = "llc", .smt = CP_SMT_PE0, .mode = CP_MODE_SHARED },
  { .name = "per-container key wins", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.app\":\"6\"," NAME_APP),
    .cpus = 6, .source = "annotation" },
  { .name = "per-container key wins, listed first",
    .config = ANN (NAME_APP ",\"cachepin.io/smt.container.app\":\"any\",\"cachepin.io/smt\":\"pe0\",\"cachepin.io/cpus\":\"1\""),
    .cpus = 1, .source = "annotation", .smt = CP_SMT_ANY },
  { .name = "containerd's name annotation",
    .config = ANN ("\"io.kubernetes.cri.container-name\":\"app\",\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.app\":\"3\""),
    .cpus = 3, .source = "annotation" },
  { .name = "another container's key is ignored",
    .config = ANN ("\"io.kubernetes.container.name\":\"sidecar\",\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.app\":\"6\","
                   "\"cachepin.io/smt.container.app\":\"not-checked-here\""),
    .cpus = 2, .source = "annotation" },
  { .name = "per-container key without a container name",
    .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.app\":\"6\""), .cpus = 2, .source = "annotation" },
  { .name = "quota/period rounds up", .config = ANN_CPU ("\"cachepin.io/align\":\"l2\"", "\"quota\":150000,\"period\":100000"),
    .cpus = 2, .source = "quota/period", .align = "l2" },
  { .name = "quota/period exact", .config = ANN_CPU ("\"cachepin.io/smt\":\"pe0\"", "\"quota\":400000,\"period\":100000"),
    .cpus = 4, .source = "quota/period", .smt = CP_SMT_PE0 },
  { .name = "quota/period just over", .config = ANN_CPU ("\"cachepin.io/smt\":\"pe0\"", "\"quota\":200001,\"period\":100000"),
    .cpus = 3, .source = "quota/period", .smt = CP_SMT_PE0 },
  { .name = "quota without period: the kernel's 100000", .config = ANN_CPU ("\"cachepin.io/mems\":\"local\"", "\"quota\":50000"),
    .cpus = 1, .source = "quota/period" },
  /* The spec's cpuset is a bound, not a count (a Kubernetes shared-pool container
     carries the whole pool): the quota gives the count. */
  { .name = "quota gives the count, the cpuset only bounds",
    .config = ANN_CPU ("\"cachepin.io/mode\":\"exclusive\"", "\"cpus\":\"0-3,8\",\"quota\":900000,\"period\":100000"),
    .cpus = 9, .source = "quota/period" },
  { .name = "a cpuset alone is no count", .config = ANN_CPU ("\"cachepin.io/align\":\"llc\"", "\"cpus\":\"0-7\""),
    .error = "cachepin.io/cpus: missing, and the spec sets no CPU quota (linux.resources.cpu.cpus bounds where it runs, "
             "it is not a count)" },
  { .name = "annotation wins over the spec", .config = ANN_CPU ("\"cachepin.io/cpus\":\"3\"", "\"cpus\":\"0-7\""),
    .cpus = 3, .source = "annotation" },
  { .name = "shared without cpus: one domain", .config = ANN ("\"cachepin.io/mode\":\"shared\""),
    .cpus = 0, .source = "shared: one domain", .mode = CP_MODE_SHARED },
  { .name = "host defaults apply, cpus not taken from them", .config = ANN_CPU ("\"cachepin.io/smt\":\"any\"", "\"quota\":100000"),
    .defaults = &numa_defaults, .cpus = 1, .source = "quota/period", .align = "numa", .smt = CP_SMT_ANY,
    .strict = true },
  { .name = "exclusive without any cpus", .config = ANN ("\"cachepin.io/align\":\"llc\""),
    .error = "cachepin.io/cpus: missing, and the spec sets no CPU quota (linux.resources.cpu.cpus bounds where it runs, "
             "it is not a count)" },
  { .name = "quota -1 is no quota", .config = ANN_CPU ("\"cachepin.io/align\":\"llc\"", "\"quota\":-1,\"period\":100000"),
    .error = "cachepin.io/cpus: missing, and the spec sets no CPU quota (linux.resources.cpu.cpus bounds where it runs, "
             "it is not a count)" },
  { .name = "quota beyond any machine", .config = ANN_CPU ("\"cachepin.io/align\":\"llc\"", "\"quota\":100000000000,\"period\":1000"),
    .error = "linux.resources.cpu.quota: 100000000000 per period 1000 is 100000000 CPUs, more than 8192" },
  { .name = "invalid smt", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/smt\":\"pe1\""),
    .error = "annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)" },
  { .name = "invalid align", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/align\":\"L4\""),
    .error = "annotation cachepin.io/align: invalid value `L4` (expected l2|llc|numa|package|none)" },
  { .name = "invalid mode", .config = ANN ("\"cachepin.io/mode\":\"Sharde\""),
    .error = "annotation cachepin.io/mode: invalid value `Sharde` (expected exclusive|shared)" },
  { .name = "invalid strict", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/strict\":\"yes\""),
    .error = "annotation cachepin.io/strict: invalid value `yes` (expected false|true)" },
  { .name = "invalid mems", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/mems\":\"remote\""),
    .error = "annotation cachepin.io/mems: invalid value `remote` (expected local|keep)" },
  { .name = "zero cpus", .config = ANN ("\"cachepin.io/cpus\":\"0\""),
    .error = "annotation cachepin.io/cpus: invalid value `0`: expected a number from 1 to 8192" },
  { .name = "cpus with a sign", .config = ANN ("\"cachepin.io/cpus\":\"+4\""),
    .error = "annotation cachepin.io/cpus: invalid value `+4`: expected a number from 1 to 8192" },
  { .name = "cpus too many", .config = ANN ("\"cachepin.io/cpus\":\"8193\""),
    .error = "annotation cachepin.io/cpus: invalid value `8193`: expected a number from 1 to 8192" },
  { .name = "invalid per-container value names its key",
    .config = ANN (NAME_APP ",\"cachepin.io/cpus.container.app\":\"four\""),
    .error = "annotation cachepin.io/cpus.container.app: invalid value `four`: expected a number from 1 to 8192" },
  { .name = "unknown key", .config = ANN ("\"cachepin.io/cpu\":\"4\""),
    .error = "annotation cachepin.io/cpu: unknown key (did you mean cachepin.io/cpus? expected "
             "cachepin.io/cpus|align|smt|mode|strict|mems|sched-cache|core-sched|isolate, optionally followed by .container.<name>)" },
  { .name = "unknown key, nothing near", .config = ANN ("\"cachepin.io/numa\":\"0\""),
    .error = "annotation cachepin.io/numa: unknown key (expected cachepin.io/cpus|align|smt|mode|strict|mems|sched-cache|core-sched|isolate, "
             "optionally followed by .container.<name>)" },
  { .name = "unknown key for another container",
    .config = ANN (NAME_APP ",\"cachepin.io/cpus\":\"1\",\"cachepin.io/alig.container.db\":\"llc\""),
    .error = "annotation cachepin.io/alig.container.db: unknown key (did you mean cachepin.io/align.container.db? expected "
             "cachepin.io/cpus|align|smt|mode|strict|mems|sched-cache|core-sched|isolate, optionally followed by .container.<name>)" },
  { .name = "isolate, exclusive by default", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/isolate\":\"true\""),
    .cpus = 2, .source = "annotation", .isolate = true },
  { .name = "isolate, exclusive said", .config = ANN ("\"cachepin.io/isolate\":\"true\",\"cachepin.io/mode\":\"exclusive\",\"cachepin.io/cpus\":\"1\""),
    .cpus = 1, .source = "annotation", .isolate = true },
  { .name = "isolate=false asks nothing, shared is fine",
    .config = ANN ("\"cachepin.io/isolate\":\"false\",\"cachepin.io/mode\":\"shared\""),
    .cpus = 0, .source = "shared: one domain", .mode = CP_MODE_SHARED },
  { .name = "isolate per container", .config = ANN (NAME_APP ",\"cachepin.io/cpus\":\"2\",\"cachepin.io/isolate.container.app\":\"true\""),
    .cpus = 2, .source = "annotation", .isolate = true },
  { .name = "isolate of another container", .config = ANN (NAME_APP ",\"cachepin.io/cpus\":\"2\",\"cachepin.io/isolate.container.db\":\"true\""),
    .cpus = 2, .source = "annotation" },
  { .name = "isolate in shared mode", .config = ANN ("\"cachepin.io/isolate\":\"true\",\"cachepin.io/mode\":\"shared\""),
    .error = ISOLATE_NEEDS_EXCLUSIVE ("cachepin.io/isolate") },
  { .name = "isolate in shared mode, the mode listed first",
    .config = ANN ("\"cachepin.io/mode\":\"shared\",\"cachepin.io/cpus\":\"2\",\"cachepin.io/isolate\":\"true\""),
    .error = ISOLATE_NEEDS_EXCLUSIVE ("cachepin.io/isolate") },
  { .name = "isolate in the host's default shared mode", .config = ANN ("\"cachepin.io/isolate\":\"true\""),
    .defaults = &shared_defaults, .error = ISOLATE_NEEDS_EXCLUSIVE ("cachepin.io/isolate") },
  { .name = "isolate in shared mode names the per-container key",
    .config = ANN (NAME_APP ",\"cachepin.io/isolate\":\"false\",\"cachepin.io/isolate.container.app\":\"true\","
                   "\"cachepin.io/mode.container.app\":\"shared\""),
    .error = ISOLATE_NEEDS_EXCLUSIVE ("cachepin.io/isolate.container.app") },
  { .name = "invalid isolate", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/isolate\":\"yes\""),
    .error = "annotation cachepin.io/isolate: invalid value `yes` (expected false|true)" },
  { .name = "empty container name", .config = ANN ("\"cachepin.io/cpus.container.\":\"4\""),
    .error = "annotation cachepin.io/cpus.container.: empty container name" },
  /* A key of ours given twice is ambiguous wherever it applies, even with one value. */
  { .name = "a key given twice", .config = ANN ("\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus\":\"2\""),
    .error = "annotation cachepin.io/cpus: given twice" },
  { .name = "a key given twice, once spelt with an escape",
    .config = ANN ("\"cachepin.io/smt\":\"pe0\",\"cachepin.io/cpus\":\"2\",\"cachepin.io/\\u0063pus\":\"3\""),
    .error = "annotation cachepin.io/cpus: given twice" },
  { .name = "a key given three times, the last one invalid",
    .config = ANN ("\"cachepin.io/mode\":\"shared\",\"cachepin.io/mode\":\"shared\",\"cachepin.io/mode\":\"x\""),
    .error = "annotation cachepin.io/mode: given twice" },
  { .name = "this container's key given twice",
    .config = ANN (NAME_APP ",\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.app\":\"1\","
                   "\"cachepin.io/cpus.container.app\":\"3\""),
    .error = "annotation cachepin.io/cpus.container.app: given twice" },
  { .name = "another container's key given twice is not this one's",
    .config = ANN (NAME_APP ",\"cachepin.io/cpus\":\"2\",\"cachepin.io/cpus.container.db\":\"1\","
                   "\"cachepin.io/cpus.container.db\":\"3\""),
    .cpus = 2, .source = "annotation" },
  { .name = "a foreign key given twice is not ours",
    .config = ANN ("\"io.example/x\":\"1\",\"cachepin.io/cpus\":\"2\",\"io.example/x\":\"2\""),
    .cpus = 2, .source = "annotation" },
  { .name = "the engine's name given twice: the last counts, as runc and the engines read it",
    .config = ANN ("\"io.kubernetes.container.name\":\"db\",\"cachepin.io/cpus\":\"2\","
                   "\"cachepin.io/cpus.container.app\":\"3\"," NAME_APP),
    .cpus = 3, .source = "annotation" },
};

static void
test_annotations_request (void **state)
{
  (void) state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (request_cases); i++)
    {
      const struct request_case *c = &request_cases[i];
      struct cp_oci_config cfg;
      cp_error_t err = NULL;
      if (cp_oci_config_parse (c->config, strlen (c->config), &cfg, &err) < 0)
        fail_msg ("%s: config: %s", c->name, cp_error_message (err));
      struct cp_container_request out;
      struct cp_limits limits;
      int r = cp_annotations_to_request (&cfg.annotations, c->defaults, cp_oci_config_limits (&cfg, &limits), &out,
                                         &err);
      if (c->error)
        {
          tu_check_error (c->name, r, &err, c->error);
          assert_int_equal (err->kind, CP_ERR_INPUT);
        }
      else
        {
          if (r < 0)
            fail_msg ("%s: %s", c->name, cp_error_message (err));
          if (out.req.cpus != c->cpus || strcmp (out.cpus_source, c->source) != 0)
            fail_msg ("%s: cpus %u from %s, expected %u from %s", c->name, out.req.cpus, out.cpus_source, c->cpus,
                      c->source);
          assert_int_equal (out.cpus_from_annotation, strcmp (c->source, "annotation") == 0);
          assert_string_equal (cp_align_name (out.req.align), c->align ? c->align : "llc");
          assert_int_equal (out.req.smt, c->smt);
          assert_int_equal (out.req.mode, c->mode);
          assert_int_equal (out.req.strict, c->strict);
          assert_int_equal (out.mems_keep, c->mems_keep);
          assert_int_equal (out.isolate, c->isolate);
        }
      cp_error_free (&err);
      cp_oci_config_free (&cfg);
    }
}

/* Without a config at all: the annotations alone. */
static void
test_annotations_no_config (void **state)
{
  (void) state;
  struct cp_annotation items[] = { { .key = "cachepin.io/mode", .value = "shared" } };
  struct cp_annotations a = { items, CP_ARRAY_SIZE (items) };
  struct cp_container_request out;
  cp_error_t err = NULL;
  assert_int_equal (cp_annotations_to_request (&a, NULL, NULL, &out, &err), 0);
  assert_int_equal (out.req.cpus, 0);
  assert_string_equal (out.cpus_source, CP_CPUS_SOURCE_SHARED);
  items[0].value = "exclusive";
  tu_check_error ("exclusive without config", cp_annotations_to_request (&a, NULL, NULL, &out, &err), &err,
               "cachepin.io/cpus: missing, and the spec sets no CPU quota (linux.resources.cpu.cpus bounds where "
               "it runs, it is not a count)");
  cp_error_free (&err);
}

static void
test_annotations_wants_and_sandbox (void **state)
{
  (void) state;
  static const struct
  {
    const char *config;
    bool wants, sandbox;
  } cases[] = {
    { ANN ("\"io.kubernetes.container.name\":\"app\""), false, false },
    { ANN ("\"cachepin.io\":\"x\",\"cachepin.iox/cpus\":\"1\""), false, false },
    { ANN ("\"cachepin.io/cpus\":\"1\""), true, false },
    { ANN ("\"io.kubernetes.container.name\":\"sidecar\",\"cachepin.io/cpus.container.app\":\"1\""), false, false },
    { ANN ("\"cachepin.io/cpus.container.app\":\"1\""), false, false },
    { ANN (NAME_APP ",\"cachepin.io/cpus.container.app\":\"1\""), true, false },
    { ANN ("\"io.kubernetes.container.name\":\"sidecar\",\"cachepin.io/cpsu.container.app\":\"1\""), true, false },
    { ANN ("\"cachepin.io/\":\"1\""), true, false },
    { ANN ("\"io.kubernetes.cri-o.ContainerType\":\"sandbox\",\"cachepin.io/cpus\":\"1\""), true, true },
    { ANN ("\"io.kubernetes.cri.container-type\":\"sandbox\""), false, true },
    { ANN ("\"io.kubernetes.cri.container-type\":\"container\""), false, false },
    { ANN ("\"io.kubernetes.cri-o.ContainerType\":\"Sandbox\""), false, false },
    /* Given twice: asks where it applies (to_request() then refuses it). */
    { ANN (NAME_APP ",\"cachepin.io/cpus.container.app\":\"1\",\"cachepin.io/cpus.container.app\":\"1\""), true, false },
    { ANN (NAME_APP ",\"cachepin.io/cpus.container.db\":\"1\",\"cachepin.io/cpus.container.db\":\"1\""), false, false },
    { ANN ("\"io.example/x\":\"1\",\"io.example/x\":\"1\""), false, false },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_oci_config cfg;
      cp_error_t err = NULL;
      if (cp_oci_config_parse (cases[i].config, strlen (cases[i].config), &cfg, &err) < 0)
        fail_msg ("%s: %s", cases[i].config, cp_error_message (err));
      if (cp_annotations_wants_cachepin (&cfg.annotations) != cases[i].wants
          || cp_annotations_is_sandbox (&cfg.annotations) != cases[i].sandbox)
        fail_msg ("%s: wants %d sandbox %d, expected %d %d", cases[i].config,
                  cp_annotations_wants_cachepin (&cfg.annotations), cp_annotations_is_sandbox (&cfg.annotations),
                  cases[i].wants, cases[i].sandbox);
      cp_oci_config_free (&cfg);
    }
}

/* The name a container is shown by: namespace/pod/container from one engine's
   keys, shorter forms when some are missing, none without a container name. */
static void
test_annotations_display_name (void **state)
{
  (void) state;
  static const struct
  {
    const char *config, *name;
  } cases[] = {
    { ANN ("\"io.kubernetes.container.name\":\"db\",\"io.kubernetes.pod.name\":\"pg-0\","
           "\"io.kubernetes.pod.namespace\":\"data\""), "data/pg-0/db" },
    { ANN ("\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.cri.sandbox-name\":\"shop\","
           "\"io.kubernetes.cri.sandbox-namespace\":\"prod\""), "prod/shop/web" },
    { ANN ("\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.cri.sandbox-name\":\"shop\""), "shop/web" },
    { ANN ("\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.cri.sandbox-namespace\":\"prod\""), "web" },
    /* One engine's keys, not a mix of two. */
    { ANN ("\"io.kubernetes.cri.container-name\":\"web\",\"io.kubernetes.pod.name\":\"p\""), "web" },
    { ANN ("\"io.kubernetes.container.name\":\"\",\"io.kubernetes.pod.name\":\"p\""), NULL },
    { ANN ("\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.pod.namespace\":\"n\""), NULL },
    { ANN ("\"io.podman.annotations.autoremove\":\"TRUE\",\"cachepin.io/cpus\":\"1\""), NULL },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_oci_config cfg;
      cp_error_t err = NULL;
      if (cp_oci_config_parse (cases[i].config, strlen (cases[i].config), &cfg, &err) < 0)
        fail_msg ("%s: %s", cases[i].config, cp_error_message (err));
      cleanup_free char *name = cp_annotations_display_name (&cfg.annotations);
      if (cases[i].name == NULL ? name != NULL : name == NULL || strcmp (name, cases[i].name) != 0)
        fail_msg ("%s: name `%s`, expected `%s`", cases[i].config, name ? name : "(none)",
                  cases[i].name ? cases[i].name : "(none)");
      cp_oci_config_free (&cfg);
    }
}

/* VALUE as a JSON string literal; caller frees. */
static char *
json_literal (const char *value)
{
  json_object *v = json_object_new_string (value);
  char *text = cp_xstrdup (json_object_to_json_string_ext (v, JSON_C_TO_STRING_PLAIN));
  json_object_put (v);
  return text;
}

/* cp_annotations_from_map() on the pairs KEYS[i]=VALUES[i] (NULL: JSON's null)
   gives what the state's text with those members gives (cp_oci_state_parse's
   route: cp_json_parse_object_twice(), then cp_annotations_from_json()): the same
   annotations kept, in order, with the same marks, or the same error line. */
static void
check_map_like_json (const char *name, const char *const *keys, const char *const *values, size_t n)
{
  cleanup_free char *text = cp_xstrdup ("{\"annotations\":{");
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *k = json_literal (keys[i]);
      cleanup_free char *v = values[i] ? json_literal (values[i]) : cp_xstrdup ("null");
      char *next = cp_xasprintf ("%s%s%s:%s", text, i ? "," : "", k, v);
      free (text);
      text = next;
    }
  char *whole = cp_xasprintf ("%s}}", text);
  free (text);
  text = whole;
  json_object *doc = NULL, *twice = NULL, *obj = NULL;
  struct cp_annotations from_json = { 0 }, from_map = { 0 };
  cp_error_t ej = NULL, em = NULL;
  if (cp_json_parse_object_twice (text, strlen (text), "annotations", &twice, &doc, &ej) < 0)
    fail_msg ("%s: %s", name, cp_error_message (ej));
  assert_true (json_object_object_get_ex (doc, "annotations", &obj));
  int rj = cp_annotations_from_json (obj, twice, "annotations", &from_json, &ej);
  int rm = cp_annotations_from_map (keys, values, n, "annotations", &from_map, &em);
  json_object_put (doc);
  json_object_put (twice);
  if (rj != rm)
    fail_msg ("%s: json %d (%s), map %d (%s)", name, rj, ej ? cp_error_message (ej) : "-", rm,
              em ? cp_error_message (em) : "-");
  if (rj < 0)
    {
      if (strcmp (cp_error_message (ej), cp_error_message (em)) != 0)
        fail_msg ("%s:\n json `%s`\n  map `%s`", name, cp_error_message (ej), cp_error_message (em));
      assert_int_equal (cp_error_kind (ej), CP_ERR_INPUT);
      assert_int_equal (cp_error_kind (em), CP_ERR_INPUT);
    }
  else
    {
      if (from_json.n != from_map.n)
        fail_msg ("%s: json kept %zu, map %zu", name, from_json.n, from_map.n);
      for (size_t i = 0; i < from_json.n; i++)
        {
          assert_string_equal (from_json.items[i].key, from_map.items[i].key);
          assert_string_equal (from_json.items[i].value, from_map.items[i].value);
          assert_int_equal (from_json.items[i].twice, from_map.items[i].twice);
        }
    }
  cp_error_free (&ej);
  cp_error_free (&em);
  cp_annotations_free (&from_json);
  cp_annotations_free (&from_map);
}

#define PAIRS(name, ...)                                                                                   \
  do                                                                                                       \
    {                                                                                                      \
      const char *const kv_[][2] = { __VA_ARGS__ };                                                        \
      const char *k_[CP_ARRAY_SIZE (kv_)], *v_[CP_ARRAY_SIZE (kv_)];                                       \
      for (size_t i_ = 0; i_ < CP_ARRAY_SIZE (kv_); i_++)                                                  \
        {                                                                                                  \
          k_[i_] = kv_[i_][0];                                                                             \
          v_[i_] = kv_[i_][1];                                                                             \
        }                                                                                                  \
      check_map_like_json (name, k_, v_, CP_ARRAY_SIZE (kv_));                                             \
    }                                                                                                      \
  while (0)

static void
test_annotations_from_map (void **state)
{
  (void) state;
  char long_value[CP_ANNOTATION_VALUE_MAX + 2];
  memset (long_value, '1', sizeof long_value - 1);
  long_value[sizeof long_value - 1] = '\0';
  char long_key[CP_ANNOTATION_KEY_MAX + 16];
  memset (long_key, 'k', sizeof long_key - 1);
  long_key[sizeof long_key - 1] = '\0';
  memcpy (long_key, "cachepin.io/", strlen ("cachepin.io/"));
  char *max_value = cp_xstrndup (long_value, CP_ANNOTATION_VALUE_MAX);

  /* Kept: ours and the engine keys (all of them at once), in order;
     someone else's dropped, even when not a string. */
  PAIRS ("ours and the engine's", { "cachepin.io/cpus", "2" }, { "example.com/x", "y" },
         { CP_ANNOTATION_CRIO_NAME, "app" }, { CP_ANNOTATION_CONTAINERD_NAME, "app" },
         { CP_ANNOTATION_CRIO_TYPE, "container" }, { CP_ANNOTATION_CONTAINERD_TYPE, "container" },
         { CP_ANNOTATION_DOCKER_TYPE, "container" }, { CP_ANNOTATION_CRIO_POD, "p" },
         { CP_ANNOTATION_CRIO_NAMESPACE, "n" }, { CP_ANNOTATION_CONTAINERD_POD, "p" },
         { CP_ANNOTATION_CONTAINERD_NAMESPACE, "n" }, { "cachepin.io/mode.container.app", "shared" },
         { "example.com/null", NULL });
  PAIRS ("an engine key's null is not kept", { CP_ANNOTATION_CRIO_NAME, NULL }, { "cachepin.io/cpus", "1" });
  PAIRS ("none", { "example.com/x", "y" });
  PAIRS ("an invalid value is kept (the request judges it)", { "cachepin.io/smt", "pe1" });
  PAIRS ("a value at the bound", { "cachepin.io/align", max_value });
  /* Refused, with the same line. */
  PAIRS ("ours null", { "cachepin.io/cpus", NULL });
  PAIRS ("a value too long", { "cachepin.io/cpus", long_value });
  PAIRS ("a key too long", { long_key, "1" });

  /* More of ours than accepted. */
  size_t n = CP_ANNOTATIONS_MAX + 1;
  char **keys = cp_xcalloc (n, sizeof *keys);
  const char **values = cp_xcalloc (n, sizeof *values);
  for (size_t i = 0; i < n; i++)
    {
      keys[i] = cp_xasprintf ("cachepin.io/cpus.container.c%zu", i);
      values[i] = "1";
    }
  check_map_like_json ("too many", (const char *const *) keys, values, n);
  check_map_like_json ("as many as accepted", (const char *const *) keys, values, n - 1);
  for (size_t i = 0; i < n; i++)
    free (keys[i]);
  free (keys);
  free (values);
  free (max_value);

  /* A key given twice, as an object's text may give it: kept once, its last value
     (checked) at its first place; ours marked, the engine's not ours to judge. */
  PAIRS ("ours twice", { "cachepin.io/cpus", "1" }, { "cachepin.io/smt", "pe0" }, { "cachepin.io/cpus", "2" });
  PAIRS ("ours twice, the first null", { "cachepin.io/cpus", NULL }, { "cachepin.io/cpus", "2" });
  PAIRS ("ours twice, the last null", { "cachepin.io/cpus", "1" }, { "cachepin.io/cpus", NULL });
  PAIRS ("the engine's twice", { CP_ANNOTATION_CRIO_NAME, "a" }, { "cachepin.io/cpus", "1" },
         { CP_ANNOTATION_CRIO_NAME, "b" });
  PAIRS ("the engine's twice, the last null", { CP_ANNOTATION_CRIO_NAME, "a" }, { CP_ANNOTATION_CRIO_NAME, NULL });
  PAIRS ("someone else's twice", { "example.com/x", "1" }, { "example.com/x", NULL });

  const char *const dk[] = { "cachepin.io/cpus", CP_ANNOTATION_CRIO_NAME, "cachepin.io/cpus", CP_ANNOTATION_CRIO_NAME };
  const char *const dv[] = { "1", "a", "2", "b" };
  struct cp_annotations a;
  cp_error_t err = NULL;
  assert_int_equal (cp_annotations_from_map (dk, dv, 4, "annotations", &a, &err), 0);
  assert_int_equal (a.n, 2);
  assert_string_equal (a.items[0].value, "2");
  assert_true (a.items[0].twice);
  assert_false (a.items[1].twice);
  assert_string_equal (cp_annotations_container_name (&a), "b");
  assert_true (cp_annotations_wants_cachepin (&a));
  struct cp_container_request out;
  tu_check_error ("twice", cp_annotations_to_request (&a, NULL, NULL, &out, &err), &err,
                  "annotation cachepin.io/cpus: given twice");
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  cp_error_free (&err);
  cp_annotations_free (&a);
}

/* The strict reader with one lenient member: its keys given twice are listed
   (its own, once each, in order), the rest of the document stays strict. */
static void
test_json_twice (void **state)
{
  (void) state;
  static const char text[] = "{\"a\":{\"x\":1},\"annotations\":{\"k\":1,\"j\":{\"y\":1,\"y\":2},\"k\":2,"
                             "\"l\":0,\"\\u006c\":1,\"k\":3},\"b\":[]}";
  json_object *doc = NULL, *twice = NULL, *v = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_json_parse_object_twice (text, strlen (text), "annotations", &twice, &doc, &err), 0);
  assert_int_equal (json_object_object_length (twice), 2);
  const char *want[] = { "k", "l" };
  size_t i = 0;
  json_object_object_foreach (twice, key, unused)
    {
      (void) unused;
      assert_string_equal (key, want[i++]);
    }
  /* json-c's value: the last one. */
  assert_true (json_object_object_get_ex (doc, "annotations", &v));
  assert_true (json_object_object_get_ex (v, "k", &v));
  assert_int_equal (json_object_get_int (v), 3);
  json_object_put (doc);
  json_object_put (twice);

  /* Nothing repeated: no set. */
  static const char once[] = "{\"annotations\":{\"k\":1}}";
  assert_int_equal (cp_json_parse_object_twice (once, strlen (once), "annotations", &twice, &doc, &err), 0);
  assert_null (twice);
  json_object_put (doc);

  static const struct
  {
    const char *text, *error;
  } strict[] = {
    { "{\"annotations\":{},\"annotations\":{}}", "duplicate key \"annotations\"" },
    { "{\"a\":{\"k\":1,\"k\":2},\"annotations\":{}}", "a: duplicate key \"k\"" },
    { "{\"x\":{\"annotations\":{\"k\":1,\"k\":2}}}", "x.annotations: duplicate key \"k\"" },
    { "{\"annotations\":{\"k\\u0000\":1}}", "annotations: NUL character in key \"k\"" },
  };
  for (size_t j = 0; j < CP_ARRAY_SIZE (strict); j++)
    {
      tu_check_error (strict[j].text,
                      cp_json_parse_object_twice (strict[j].text, strlen (strict[j].text), "annotations", &twice,
                                                  &doc, &err),
                      &err, strict[j].error);
      assert_null (twice);
      cp_error_free (&err);
    }
  /* Without a lenient member, as cp_json_parse_object(). */
  tu_check_error ("no member", cp_json_parse_object_twice (text, strlen (text), NULL, NULL, &doc, &err), &err,
                  "annotations.j: duplicate key \"y\"");
  cp_error_free (&err);
}

/* The request from a map's annotations and plain limits: what the same
   config.json gives. */
static void
test_request_from_map_and_limits (void **state)
{
  (void) state;
  static const char config[]
      = "{\"annotations\":{\"cachepin.io/mode\":\"shared\",\"cachepin.io/smt\":\"cores\"},"
        "\"linux\":{\"resources\":{\"cpu\":{\"quota\":250000,\"period\":100000,\"cpus\":\"2-7\",\"mems\":\"0\"}}}}";
  struct cp_oci_config cfg;
  cp_error_t err = NULL;
  assert_int_equal (cp_oci_config_parse (config, strlen (config), &cfg, &err), 0);
  struct cp_limits from_cfg;
  assert_ptr_equal (cp_oci_config_limits (&cfg, &from_cfg), &from_cfg);
  assert_null (cp_oci_config_limits (NULL, &from_cfg));
  cp_oci_config_limits (&cfg, &from_cfg);

  const char *const keys[] = { "cachepin.io/mode", "cachepin.io/smt" };
  const char *const values[] = { "shared", "cores" };
  struct cp_annotations a;
  assert_int_equal (cp_annotations_from_map (keys, values, 2, "annotations", &a, &err), 0);
  cleanup_bitmap hwloc_bitmap_t cpus = tu_set ("2-7");
  cleanup_bitmap hwloc_bitmap_t mems = tu_set ("0");
  struct cp_limits plain = { .quota = 250000, .period = 100000, .cpus = cpus, .mems = mems };
  struct cp_container_request x, y;
  assert_int_equal (cp_annotations_to_request (&cfg.annotations, NULL, &from_cfg, &x, &err), 0);
  assert_int_equal (cp_annotations_to_request (&a, NULL, &plain, &y, &err), 0);
  assert_int_equal (x.req.cpus, 3);
  assert_int_equal (y.req.cpus, 3);
  assert_string_equal (y.cpus_source, CP_CPUS_SOURCE_QUOTA);
  assert_int_equal (x.req.mode, y.req.mode);
  assert_int_equal (x.req.smt, CP_SMT_CORES);
  assert_int_equal (y.req.smt, CP_SMT_CORES);
  assert_true (hwloc_bitmap_isequal (x.bound_cpus, y.bound_cpus));
  assert_true (hwloc_bitmap_isequal (x.bound_mems, y.bound_mems));
  assert_ptr_equal (y.bound_cpus, cpus);
  /* No period: the kernel's default. */
  plain.period = 0;
  assert_int_equal (cp_annotations_to_request (&a, NULL, &plain, &y, &err), 0);
  assert_int_equal (y.req.cpus, 3);
  cp_annotations_free (&a);
  cp_oci_config_free (&cfg);
}

/* A plugin's map (the NRI plugin's pod and container annotations) asks isolate as
   config.json does, under the same rule. */
static void
test_isolate_from_map (void **state)
{
  (void) state;
  const char *const keys[] = { "cachepin.io/cpus", "cachepin.io/isolate", "cachepin.io/mode" };
  const char *values[] = { "2", "true", "exclusive" };
  struct cp_annotations a;
  struct cp_container_request out;
  cp_error_t err = NULL;
  assert_int_equal (cp_annotations_from_map (keys, values, 3, "annotations", &a, &err), 0);
  assert_int_equal (cp_annotations_to_request (&a, NULL, NULL, &out, &err), 0);
  assert_true (out.isolate);
  cp_annotations_free (&a);
  values[2] = "shared";
  assert_int_equal (cp_annotations_from_map (keys, values, 3, "annotations", &a, &err), 0);
  tu_check_error ("isolate shared from a map", cp_annotations_to_request (&a, NULL, NULL, &out, &err), &err,
                  "annotation cachepin.io/isolate: needs cachepin.io/mode=exclusive (mode is shared)");
  assert_int_equal (err->kind, CP_ERR_INPUT);
  cp_error_free (&err);
  cp_annotations_free (&a);
}

/* The NRI plugin's values read as config.json's fields are: the same config as the
   JSON text with those values, and the same refusals naming the field. */
static void
test_config_from_values (void **state)
{
  (void) state;
  int64_t quota = 150000;
  uint64_t period = 100000, huge = (uint64_t) INT64_MAX + 1;
  struct cp_oci_values v = { .cgroups_path = "//kubepods/./pod1/ctr/", .cpus = " 0-3, 8 ", .mems = "0", .quota = &quota,
                             .period = &period };
  struct cp_oci_config got, want;
  cp_error_t err = NULL;
  const char *text = "{\"linux\": {\"cgroupsPath\": \"//kubepods/./pod1/ctr/\", \"resources\": {\"cpu\": "
                     "{\"cpus\": \" 0-3, 8 \", \"mems\": \"0\", \"quota\": 150000, \"period\": 100000}}}}";
  assert_int_equal (cp_oci_config_from_values (&v, &got, &err), 0);
  assert_int_equal (cp_oci_config_parse (text, strlen (text), &want, &err), 0);
  assert_string_equal (got.cgroupfs_path, want.cgroupfs_path);
  assert_string_equal (got.cgroups_path, want.cgroups_path);
  assert_true (hwloc_bitmap_isequal (got.cpus, want.cpus) && hwloc_bitmap_isequal (got.mems, want.mems));
  assert_true (got.quota == want.quota && got.period == want.period);
  cp_oci_config_free (&got);
  cp_oci_config_free (&want);

  struct cp_oci_values empty = { .cpus = "", .mems = "  " };
  assert_int_equal (cp_oci_config_from_values (&empty, &got, &err), 0);
  assert_null (got.cpus);
  assert_null (got.mems);
  assert_null (got.cgroups_path);
  cp_oci_config_free (&got);

  struct cp_oci_values bad_cpus = { .cpus = "0-" };
  assert_int_equal (cp_oci_config_from_values (&bad_cpus, &got, &err), -1);
  assert_non_null (strstr (cp_error_message (err), "linux.resources.cpu.cpus"));
  cp_error_free (&err);
  struct cp_oci_values bad_period = { .period = &huge };
  assert_int_equal (cp_oci_config_from_values (&bad_period, &got, &err), -1);
  assert_non_null (strstr (cp_error_message (err), "linux.resources.cpu.period"));
  cp_error_free (&err);
  char *long_path = cp_xmalloc0 (CP_OCI_PATH_MAX + 2);
  memset (long_path, 'a', CP_OCI_PATH_MAX + 1);
  long_path[0] = '/';
  struct cp_oci_values bad_path = { .cgroups_path = long_path };
  assert_int_equal (cp_oci_config_from_values (&bad_path, &got, &err), -1);
  assert_non_null (strstr (cp_error_message (err), "linux.cgroupsPath"));
  cp_error_free (&err);
  free (long_path);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_state_runc),
    cmocka_unit_test (test_state_crun),
    cmocka_unit_test (test_state_optional),
    cmocka_unit_test (test_state_malformed),
    cmocka_unit_test (test_state_bounds),
    cmocka_unit_test (test_state_foreign_annotations),
    cmocka_unit_test (test_state_read_fd),
    cmocka_unit_test (test_config_parse),
    cmocka_unit_test (test_config_malformed),
    cmocka_unit_test (test_config_load),
    cmocka_unit_test (test_annotations_request),
    cmocka_unit_test (test_annotations_no_config),
    cmocka_unit_test (test_annotations_from_map),
    cmocka_unit_test (test_json_twice),
    cmocka_unit_test (test_request_from_map_and_limits),
    cmocka_unit_test (test_isolate_from_map),
    cmocka_unit_test (test_annotations_wants_and_sandbox),
    cmocka_unit_test (test_annotations_display_name),
    cmocka_unit_test (test_config_from_values),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
