/* The API server's answers read strictly (hook/kube/kube_json.h) and the client's
 * configuration (kube.h): what a list, a watch event and a Status must be, and
 * what is refused with one line (duplicate keys, trailing bytes, wrong kinds,
 * items without names, unknown event types, an answer over the cap).  The shapes
 * are apimachinery's (metav1.List, metav1.WatchEvent, metav1.Status). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "kube.h"
#include "kube_json.h"
#include "util.h"

static json_object *
parse_ok (const char *s)
{
  json_object *o = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_kube_json_parse ("test", s, strlen (s), &o, &err), 0);
  return o;
}

static void
parse_refused (const char *s, const char *needle)
{
  json_object *o = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_kube_json_parse ("list", s, strlen (s), &o, &err) < 0);
  assert_null (o);
  assert_non_null (strstr (cp_error_message (err), needle));
  assert_null (strchr (cp_error_message (err), '\n'));
}

static void
test_strict (void **state)
{
  (void) state;
  parse_refused ("{\"kind\":\"A\",\"kind\":\"B\"}", "duplicate key");
  parse_refused ("{\"kind\":\"A\"} x", "list");
  parse_refused ("{\"a\":NaN}", "list");
  parse_refused ("[1]", "list");
  parse_refused ("{\"a\":1", "list");
  json_object_put (parse_ok ("{\"a\":1}\n"));
  /* the cap */
  size_t n = CP_KUBE_MAX_ANSWER + 1;
  char *big = cp_xmalloc0 (n + 1);
  memset (big, ' ', n);
  big[0] = '{';
  big[n - 1] = '}';
  json_object *o = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_kube_json_parse ("list", big, n, &o, &err) < 0);
  assert_non_null (strstr (cp_error_message (err), "more than"));
  free (big);
}

static void
test_list (void **state)
{
  (void) state;
  cleanup_json json_object *l = parse_ok (
    "{\"kind\":\"ResourceSliceList\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"42\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"40\"},\"spec\":{}},"
    "{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"41\"}}]}");
  json_object *items = NULL;
  const char *rv = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_kube_json_list (l, "ResourceSliceList", &items, &rv, &err), 0);
  assert_string_equal (rv, "42");
  assert_int_equal (json_object_array_length (items), 2);
  const char *name, *orv;
  assert_int_equal (cp_kube_json_meta (json_object_array_get_idx (items, 1), &name, &orv, &err), 0);
  assert_string_equal (name, "b");
  assert_string_equal (orv, "41");

  /* Go's nil slice: "items": null, an empty list */
  cleanup_json json_object *e = parse_ok ("{\"kind\":\"ResourceSliceList\",\"metadata\":{},\"items\":null}");
  assert_int_equal (cp_kube_json_list (e, "ResourceSliceList", &items, &rv, &err), 0);
  assert_int_equal (json_object_array_length (items), 0);
  assert_string_equal (rv, "");

  static const struct
  {
    const char *json, *needle;
  } bad[] = {
    { "{\"kind\":\"Status\",\"items\":[]}", "kind: expected ResourceSliceList, got Status" },
    { "{\"items\":[]}", "without its kind" },
    { "{\"kind\":\"ResourceSliceList\",\"items\":{}}", "items: expected an array" },
    { "{\"kind\":\"ResourceSliceList\",\"items\":[{\"spec\":{}}]}", "items[0]: object: no metadata" },
    { "{\"kind\":\"ResourceSliceList\",\"items\":[{\"metadata\":{\"name\":\"\"}}]}", "items[0]: metadata.name: empty" },
    { "{\"kind\":\"ResourceSliceList\",\"items\":[{\"metadata\":{\"name\":5}}]}", "metadata.name: expected a string" },
    { "{\"kind\":\"ResourceSliceList\",\"items\":[7]}", "items[0]" },
    { "{\"kind\":\"ResourceSliceList\",\"metadata\":{\"resourceVersion\":1},\"items\":[]}",
      "metadata.resourceVersion: expected a string" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      cleanup_json json_object *b = parse_ok (bad[i].json);
      cleanup_error cp_error_t e2 = NULL;
      assert_true (cp_kube_json_list (b, "ResourceSliceList", &items, &rv, &e2) < 0);
      if (strstr (cp_error_message (e2), bad[i].needle) == NULL)
        fail_msg ("%s: got `%s`, expected `%s`", bad[i].json, cp_error_message (e2), bad[i].needle);
    }
}

static void
test_status_message (void **state)
{
  (void) state;
  const char *s = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                  "\"message\":\"resourceslices \\\"x\\\" already exists\\nsecond line\",\"reason\":\"AlreadyExists\",\"code\":409}";
  char *m = cp_kube_json_status_message (s, strlen (s));
  assert_non_null (m);
  assert_string_equal (m, "resourceslices \"x\" already exists?second line");
  free (m);
  assert_null (cp_kube_json_status_message ("{\"kind\":\"ResourceSlice\",\"message\":\"x\"}", 38));
  assert_null (cp_kube_json_status_message ("not json", 8));
  assert_null (cp_kube_json_status_message (NULL, 0));
  /* a long message is cut */
  char *longm = cp_xasprintf ("{\"kind\":\"Status\",\"message\":\"%0500d\"}", 0);
  m = cp_kube_json_status_message (longm, strlen (longm));
  assert_int_equal (strlen (m), 200);
  free (m);
  free (longm);
}

static void
test_events (void **state)
{
  (void) state;
  enum cp_kube_event t;
  json_object *o = NULL;
  int code = -1;
  cleanup_error cp_error_t err = NULL;
  const char *add = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"a\","
                    "\"resourceVersion\":\"7\"}}}";
  assert_int_equal (cp_kube_json_event (add, strlen (add), &t, &o, &code, &err), 0);
  assert_int_equal (t, CP_KUBE_ADDED);
  assert_int_equal (code, 0);
  json_object_put (o);
  /* a bookmark's object has its resourceVersion and no name (apiserver's watch cache) */
  const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ResourceSlice\",\"metadata\":{"
                   "\"resourceVersion\":\"9\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}";
  assert_int_equal (cp_kube_json_event (bm, strlen (bm), &t, &o, &code, &err), 0);
  assert_int_equal (t, CP_KUBE_BOOKMARK);
  json_object_put (o);
  const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}";
  assert_int_equal (cp_kube_json_event (gone, strlen (gone), &t, &o, &code, &err), 0);
  assert_int_equal (t, CP_KUBE_ERROR);
  assert_int_equal (code, 410);
  json_object_put (o);
  static const struct
  {
    const char *json, *needle;
  } bad[] = {
    { "{\"type\":\"UPSERTED\",\"object\":{}}", "unknown `UPSERTED`" },
    { "{\"object\":{}}", "no type" },
    { "{\"type\":\"ADDED\"}", "ADDED: no object" },
    { "{\"type\":\"ADDED\",\"object\":[]}", "no object" },
    { "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}", "no metadata.resourceVersion" },
    { "{\"type\":\"ERROR\",\"object\":{\"code\":\"410\"}}", "watch error code" },
    { "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}", "BOOKMARK: no metadata.resourceVersion" },
    { "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "duplicate key" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      cleanup_error cp_error_t e2 = NULL;
      o = NULL;
      assert_true (cp_kube_json_event (bad[i].json, strlen (bad[i].json), &t, &o, &code, &e2) < 0);
      assert_null (o);
      if (strstr (cp_error_message (e2), bad[i].needle) == NULL)
        fail_msg ("%s: got `%s`, expected `%s`", bad[i].json, cp_error_message (e2), bad[i].needle);
    }
}

static void
test_config (void **state)
{
  (void) state;
  struct cp_kube_config c = { 0 };
  cleanup_error cp_error_t err = NULL;
  struct cp_kube_options o = { .api = "https://10.0.0.1:6443/", .ca = "/ca", .token_file = "/tok" };
  assert_int_equal (cp_kube_config_resolve (&o, &c, &err), 0);
  assert_string_equal (c.server, "https://10.0.0.1:6443");
  assert_string_equal (c.ca, "/ca");
  cp_kube_config_clear (&c);
  static const struct
  {
    const char *api, *needle;
  } bad[] = {
    { "http://10.0.0.1", "https only" },  { "https://", "no host" },
    { "https://u:p@h", "a URL of a host" }, { "https://h/?x=1", "a URL of a host" },
    { "ftp://h", "https only" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      cleanup_error cp_error_t e2 = NULL;
      struct cp_kube_options b = { .api = bad[i].api };
      assert_true (cp_kube_config_resolve (&b, &c, &e2) < 0);
      assert_non_null (strstr (cp_error_message (e2), "--kube-api"));
      assert_non_null (strstr (cp_error_message (e2), bad[i].needle));
    }
  /* in-cluster */
  struct cp_kube_options none = { 0 };
  setenv ("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv ("KUBERNETES_SERVICE_PORT", "443", 1);
  assert_int_equal (cp_kube_config_resolve (&none, &c, &err), 0);
  assert_string_equal (c.server, "https://[fd00::1]:443");
  assert_string_equal (c.token_file, CP_KUBE_SA_DIR "/token");
  assert_string_equal (c.ca, CP_KUBE_SA_DIR "/ca.crt");
  cp_kube_config_clear (&c);
  setenv ("KUBERNETES_SERVICE_PORT", "99999", 1);
  assert_true (cp_kube_config_resolve (&none, &c, &err) < 0);
  assert_non_null (strstr (cp_error_message (err), "KUBERNETES_SERVICE_PORT"));
  setenv ("KUBERNETES_SERVICE_HOST", "h/x", 1);
  assert_true (cp_kube_config_resolve (&none, &c, &err) < 0);
  assert_non_null (strstr (cp_error_message (err), "KUBERNETES_SERVICE_HOST"));
  unsetenv ("KUBERNETES_SERVICE_HOST");
  assert_true (cp_kube_config_resolve (&none, &c, &err) < 0);
  assert_non_null (strstr (cp_error_message (err), "no API server"));
  /* the server's port (the publisher's Landlock rule): named, IPv6, none (443), a path after it */
  static const struct
  {
    const char *server;
    unsigned port;
  } ports[] = {
    { "https://10.0.0.1:6443", 6443 },   { "https://[fd00::1]:443", 443 }, { "https://[fd00::1]", 443 },
    { "https://api.example", 443 },      { "https://h:8443/prefix", 8443 }, { "https://h:", 0 },
    { "https://h:99999", 0 },            { "https://h:8x", 0 },            { "http://h:80", 0 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ports); i++)
    {
      struct cp_kube_config pc = { .server = (char *) ports[i].server };
      assert_int_equal (cp_kube_config_port (&pc), ports[i].port);
    }
  /* named by an address (the publisher's sandbox resolves no names) */
  static const struct
  {
    const char *server;
    bool address;
  } hosts[] = {
    { "https://10.0.0.1:6443", true }, { "https://10.0.0.1", true },       { "https://[fd00::1]:443", true },
    { "https://[fd00::1]/p", true },   { "https://api.example", false },    { "https://kubernetes:443", false },
    { "https://[fd00::1", false },     { "https://10.0.0.256:1", false },   { "https://[10.0.0.1]", false },
    { "http://10.0.0.1", false },      { "https://fd00::1", false },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (hosts); i++)
    {
      struct cp_kube_config pc = { .server = (char *) hosts[i].server };
      assert_true (cp_kube_config_host_is_address (&pc) == hosts[i].address);
    }
  /* escaping a query value */
  char *e = cp_kube_escape ("spec.nodeName=a b&c");
  assert_string_equal (e, "spec.nodeName%3Da%20b%26c");
  free (e);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_strict), cmocka_unit_test (test_list),   cmocka_unit_test (test_status_message),
    cmocka_unit_test (test_events), cmocka_unit_test (test_config),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
