/* The kubelet plugin's services (hook/grpc/grpc_kubelet.c, grpc_dra.c), their
   methods called with requests packed here from the vendored protos' generated
   code, and their answers decoded with it: what the kubelet sends and reads. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "dra_v1.pb-c.h"
#include "dra_v1beta1.pb-c.h"
#include "grpc_dra.h"
#include "grpc_kubelet.h"
#include "pluginregistration_v1.pb-c.h"
#include "util.h"

static const struct cp_grpc_method *
find (const struct cp_grpc_method *m, size_t n, const char *path)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (m[i].path, path) == 0)
      return &m[i];
  fail_msg ("no method %s", path);
  return NULL;
}

/* Call M with message IN packed (NULL: RAW, N bytes). */
static struct cp_grpc_reply
call (const struct cp_grpc_method *m, const ProtobufCMessage *in, const uint8_t *raw, size_t n)
{
  uint8_t buf[4096];
  if (in)
    {
      n = protobuf_c_message_get_packed_size (in);
      assert_true (n <= sizeof buf);
      protobuf_c_message_pack (in, buf);
      raw = buf;
    }
  struct cp_grpc_reply r = { .code = CP_GRPC_OK };
  m->call (m->ctx, raw, n, &r);
  return r;
}

static void
reply_clear (struct cp_grpc_reply *r)
{
  free (r->body);
  free (r->message);
}

struct seen
{
  int calls;
  bool registered;
  char error[64];
};

static void
notified (void *ctx, bool registered, const char *error)
{
  struct seen *s = ctx;
  s->calls++;
  s->registered = registered;
  snprintf (s->error, sizeof s->error, "%s", error);
}

static void
test_get_info (void **state)
{
  (void) state;
  struct cp_grpc_kubelet k = { .endpoint = "/var/lib/kubelet/plugins/cachepin.io/dra.sock" };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_kubelet_methods (&k, &n);
  assert_int_equal (n, 2);
  Pluginregistration__InfoRequest req = PLUGINREGISTRATION__INFO_REQUEST__INIT;
  struct cp_grpc_reply r = call (find (m, n, "/pluginregistration.Registration/GetInfo"), &req.base, NULL, 0);
  assert_int_equal (r.code, CP_GRPC_OK);
  Pluginregistration__PluginInfo *info = pluginregistration__plugin_info__unpack (NULL, r.len, r.body);
  assert_non_null (info);
  assert_string_equal (info->type, "DRAPlugin");
  assert_string_equal (info->name, "cachepin.io");
  assert_string_equal (info->endpoint, "/var/lib/kubelet/plugins/cachepin.io/dra.sock");
  /* The kubelet takes the first of the plugin's list it supports: v1 first. */
  assert_int_equal (info->n_supported_versions, 2);
  assert_string_equal (info->supported_versions[0], "v1.DRAPlugin");
  assert_string_equal (info->supported_versions[1], "v1beta1.DRAPlugin");
  pluginregistration__plugin_info__free_unpacked (info, NULL);
  reply_clear (&r);
}

static void
test_notify (void **state)
{
  (void) state;
  struct seen seen = { 0 };
  struct cp_grpc_kubelet k = { .endpoint = "/x", .notified = notified, .ctx = &seen };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_kubelet_methods (&k, &n);
  const struct cp_grpc_method *notify = find (m, n, "/pluginregistration.Registration/NotifyRegistrationStatus");
  Pluginregistration__RegistrationStatus st = PLUGINREGISTRATION__REGISTRATION_STATUS__INIT;
  st.plugin_registered = 1;
  struct cp_grpc_reply r = call (notify, &st.base, NULL, 0);
  assert_int_equal (r.code, CP_GRPC_OK);
  assert_int_equal (seen.calls, 1);
  assert_true (seen.registered);
  assert_string_equal (seen.error, "");
  reply_clear (&r);
  st.plugin_registered = 0;
  st.error = (char *) "version not supported";
  r = call (notify, &st.base, NULL, 0);
  assert_int_equal (r.code, CP_GRPC_OK);
  assert_int_equal (seen.calls, 2);
  assert_false (seen.registered);
  assert_string_equal (seen.error, "version not supported");
  reply_clear (&r);
}

/* Bytes that are no protobuf message: INVALID_ARGUMENT, one line, nothing called. */
static void
test_malformed (void **state)
{
  (void) state;
  struct seen seen = { 0 };
  struct cp_grpc_kubelet k = { .endpoint = "/x", .notified = notified, .ctx = &seen };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_kubelet_methods (&k, &n);
  /* Field 1 as a length-delimited string of 100 bytes with 2 there; a truncated varint. */
  const uint8_t cut[] = { 0x12, 100, 'a', 'b' };
  const uint8_t varint[] = { 0x08, 0xff };
  for (size_t i = 0; i < n; i++)
    {
      struct cp_grpc_reply r = call (&m[i], NULL, i ? varint : cut, i ? sizeof varint : sizeof cut);
      assert_int_equal (r.code, CP_GRPC_INVALID_ARGUMENT);
      assert_non_null (r.message);
      assert_null (strchr (r.message, '\n'));
      assert_null (r.body);
      reply_clear (&r);
    }
  assert_int_equal (seen.calls, 0);
}

/* ---- the DRA service --------------------------------------------------------------- */

static void
canned_prepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out)
{
  int *calls = ctx;
  ++*calls;
  for (size_t i = 0; i < n; i++)
    if (strcmp (claims[i].name, "bad") == 0)
      out[i].error = cp_xstrdup ("cannot");
    else
      {
        /* Two results: request "a", and "b"'s subrequest "fast" (a prioritized list). */
        out[i].n_devices = 2;
        out[i].devices = cp_xcalloc (2, sizeof *out[i].devices);
        for (size_t j = 0; j < 2; j++)
          out[i].devices[j] = (struct cp_grpc_device) { .request = cp_xstrdup (j ? "b/fast" : "a"),
                                                        .pool = cp_xstrdup ("node-a"),
                                                        .device = cp_xasprintf ("l3-%zu", j),
                                                        .cdi_id = cp_xasprintf ("cachepin.io/claim=%s-%zu",
                                                                                claims[i].uid, j) };
      }
}

static void
canned_unprepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors)
{
  int *calls = ctx;
  ++*calls;
  for (size_t i = 0; i < n; i++)
    if (strcmp (claims[i].name, "bad") == 0)
      errors[i] = cp_xstrdup ("not released");
}

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__Claim BetaClaim;

static void
test_prepare_both_versions (void **state)
{
  (void) state;
  int calls = 0;
  struct cp_grpc_dra d = { .ops = { .ctx = &calls, .prepare = canned_prepare, .unprepare = canned_unprepare } };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_dra_methods (&d, &n);
  assert_int_equal (n, 4);
  /* v1beta1's messages, as a 1.32 kubelet packs them. */
  BetaClaim a = K8S__IO__KUBELET__PKG__APIS__DRA__V1BETA1__CLAIM__INIT, b = a;
  a.uid = (char *) "uid-a", a.namespace_ = (char *) "default", a.name = (char *) "good";
  b.uid = (char *) "uid-b", b.namespace_ = (char *) "default", b.name = (char *) "bad";
  BetaClaim *claims[] = { &a, &b };
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__NodePrepareResourcesRequest req
    = K8S__IO__KUBELET__PKG__APIS__DRA__V1BETA1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
  req.n_claims = 2;
  req.claims = claims;
  const char *paths[] = { "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
                          "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources" };
  for (size_t p = 0; p < 2; p++)
    {
      struct cp_grpc_reply r = call (find (m, n, paths[p]), &req.base, NULL, 0);
      assert_int_equal (r.code, CP_GRPC_OK);
      K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__NodePrepareResourcesResponse *resp
        = k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_response__unpack (NULL, r.len, r.body);
      assert_non_null (resp);
      assert_int_equal (resp->n_claims, 2);
      for (size_t i = 0; i < 2; i++)
        {
          const char *uid = resp->claims[i]->key;
          const K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__NodePrepareResourceResponse *one = resp->claims[i]->value;
          assert_non_null (one);
          if (strcmp (uid, "uid-a") == 0)
            {
              assert_string_equal (one->error, "");
              /* A device per result, each naming its request (a subrequest's: its
                 request, what a container names) and its own CDI device. */
              assert_int_equal (one->n_devices, 2);
              for (size_t j = 0; j < 2; j++)
                {
                  char want[64];
                  assert_string_equal (one->devices[j]->pool_name, "node-a");
                  snprintf (want, sizeof want, "l3-%zu", j);
                  assert_string_equal (one->devices[j]->device_name, want);
                  assert_int_equal (one->devices[j]->n_request_names, 1);
                  assert_string_equal (one->devices[j]->request_names[0], j ? "b" : "a");
                  assert_int_equal (one->devices[j]->n_cdi_device_ids, 1);
                  snprintf (want, sizeof want, "cachepin.io/claim=uid-a-%zu", j);
                  assert_string_equal (one->devices[j]->cdi_device_ids[0], want);
                }
            }
          else
            {
              assert_string_equal (uid, "uid-b");
              assert_string_equal (one->error, "cannot");
              assert_int_equal (one->n_devices, 0);
            }
        }
      k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_response__free_unpacked (resp, NULL);
      reply_clear (&r);
    }
  assert_int_equal (calls, 2);
}

static void
test_unprepare (void **state)
{
  (void) state;
  int calls = 0;
  struct cp_grpc_dra d = { .ops = { .ctx = &calls, .prepare = canned_prepare, .unprepare = canned_unprepare } };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_dra_methods (&d, &n);
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim a = K8S__IO__KUBELET__PKG__APIS__DRA__V1__CLAIM__INIT, b = a;
  a.uid = (char *) "uid-a", a.namespace_ = (char *) "ns", a.name = (char *) "good";
  b.uid = (char *) "uid-b", b.namespace_ = (char *) "ns", b.name = (char *) "bad";
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim *claims[] = { &a, &b };
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest req
    = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
  req.n_claims = 2;
  req.claims = claims;
  struct cp_grpc_reply r
    = call (find (m, n, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"), &req.base, NULL, 0);
  assert_int_equal (r.code, CP_GRPC_OK);
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse *resp
    = k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__unpack (NULL, r.len, r.body);
  assert_non_null (resp);
  /* Every claim of the request has its entry, even one that went well. */
  assert_int_equal (resp->n_claims, 2);
  for (size_t i = 0; i < 2; i++)
    assert_string_equal (resp->claims[i]->value->error, strcmp (resp->claims[i]->key, "uid-b") == 0 ? "not released" : "");
  k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__free_unpacked (resp, NULL);
  reply_clear (&r);
  assert_int_equal (calls, 1);
}

/* A claim without one of its REQUIRED references: the call refused, nothing prepared. */
static void
test_claim_fields_required (void **state)
{
  (void) state;
  int calls = 0;
  struct cp_grpc_dra d = { .ops = { .ctx = &calls, .prepare = canned_prepare, .unprepare = canned_unprepare } };
  size_t n;
  const struct cp_grpc_method *m = cp_grpc_dra_methods (&d, &n);
  const char *missing[] = { "uid", "namespace", "name" };
  for (size_t f = 0; f < 3; f++)
    {
      K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim a = K8S__IO__KUBELET__PKG__APIS__DRA__V1__CLAIM__INIT, b = a;
      a.uid = (char *) "u", a.namespace_ = (char *) "ns", a.name = (char *) "good";
      b = a;
      if (f == 0)
        b.uid = (char *) "";
      else if (f == 1)
        b.namespace_ = (char *) "";
      else
        b.name = (char *) "";
      K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim *claims[] = { &a, &b };
      K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest req
        = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
      req.n_claims = 2;
      req.claims = claims;
      for (size_t i = 0; i < n; i++)
        {
          struct cp_grpc_reply r = call (&m[i], &req.base, NULL, 0);
          assert_int_equal (r.code, CP_GRPC_INVALID_ARGUMENT);
          cleanup_free char *want = cp_xasprintf ("claim 2 has no %s", missing[f]);
          assert_non_null (strstr (r.message, want));
          reply_clear (&r);
        }
    }
  assert_int_equal (calls, 0);
}

/* The promise one codec rests on: v1's and v1beta1's messages are the same fields
   (name, number, label, type) in the same order. */
static void
test_versions_same_wire (void **state)
{
  (void) state;
  const ProtobufCMessageDescriptor *v1[] = {
    &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__device__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1__claim__descriptor,
  };
  const ProtobufCMessageDescriptor *v1beta1[] = {
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_request__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resources_response__claims_entry__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_prepare_resource_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__device__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_unprepare_resources_request__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_unprepare_resources_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_unprepare_resources_response__claims_entry__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__node_unprepare_resource_response__descriptor,
    &k8s__io__kubelet__pkg__apis__dra__v1beta1__claim__descriptor,
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (v1); i++)
    {
      assert_string_equal (v1[i]->short_name, v1beta1[i]->short_name);
      assert_int_equal (v1[i]->n_fields, v1beta1[i]->n_fields);
      for (unsigned j = 0; j < v1[i]->n_fields; j++)
        {
          const ProtobufCFieldDescriptor *a = &v1[i]->fields[j], *b = &v1beta1[i]->fields[j];
          assert_string_equal (a->name, b->name);
          assert_int_equal (a->id, b->id);
          assert_int_equal (a->label, b->label);
          assert_int_equal (a->type, b->type);
          if (a->type == PROTOBUF_C_TYPE_MESSAGE)
            assert_string_equal (((const ProtobufCMessageDescriptor *) a->descriptor)->short_name,
                                 ((const ProtobufCMessageDescriptor *) b->descriptor)->short_name);
        }
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_get_info),
    cmocka_unit_test (test_notify),
    cmocka_unit_test (test_malformed),
    cmocka_unit_test (test_prepare_both_versions),
    cmocka_unit_test (test_unprepare),
    cmocka_unit_test (test_claim_fields_required),
    cmocka_unit_test (test_versions_same_wire),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
