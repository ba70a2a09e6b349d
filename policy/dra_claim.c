/* cachepin: a ResourceClaim's allocation for this node (dra_claim.h). */
#define _GNU_SOURCE
#include "dra_claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "text.h"
#include "util.h"

void
cp_dra_claim_clear (struct cp_dra_claim *c)
{
  free (c->results);
  for (size_t i = 0; i < c->n_reserved; i++)
    free (c->reserved_for[i]);
  free (c->reserved_for);
  memset (c, 0, sizeof *c);
}

int
cp_dra_claim_check_uid (const char *what, const char *uid, cp_error_t *err)
{
  size_t n = strlen (uid);
  if (n == 0)
    return cp_fail_input (err, "%s: empty", what);
  if (n > CP_DRA_CLAIM_MAX_UID)
    return cp_fail_input (err, "%s: longer than %u bytes", what, CP_DRA_CLAIM_MAX_UID);
  if (strspn (uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != n)
    {
      cleanup_free char *got = cp_text_clean_copy (uid, 64);
      return cp_fail_input (err, "%s: `%s` is not a uid (letters, digits and '-')", what, got);
    }
  return 0;
}

/* A member that must be there (null counts as absent). */
static int
required (json_object *obj, const char *key, const char *field, json_object **out, cp_error_t *err)
{
  if (!cp_json_member (obj, key, true, out))
    return cp_fail_input (err, "%s: missing", field);
  return 0;
}

/* A string member into BUF (SIZE bytes, the string at most SIZE - 1). */
static int
string_into (json_object *obj, const char *key, const char *field, char *buf, size_t size, cp_error_t *err)
{
  json_object *v;
  const char *s;
  if (required (obj, key, field, &v, err) < 0 || cp_json_string (v, field, size - 1, false, &s, err) < 0)
    return -1;
  if (!cp_text_valid (s, strlen (s)))
    return cp_fail_input (err, "%s: not valid text (UTF-8 without control characters)", field);
  snprintf (buf, size, "%s", s);
  return 0;
}

/* A Quantity of whole CPUs, at least 1: "8", or in milli-units "8000m" (what the
   API server may write a whole quantity as).  Anything else (a fraction, an
   exponent, another suffix) is no CPU count a claim can be given. */
static int
whole_quantity (json_object *v, const char *field, unsigned *out, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, field, 32, false, &s, err) < 0)
    return -1;
  cleanup_free char *got = cp_text_clean_copy (s, 32);
  size_t digits = strspn (s, "0123456789");
  bool milli = digits > 0 && s[digits] == 'm' && s[digits + 1] == '\0';
  if (digits == 0 || (s[digits] != '\0' && !milli) || digits > 12)
    return cp_fail_input (err, "%s: not a whole quantity, got \"%.32s\"", field, got);
  unsigned long long n = strtoull (s, NULL, 10);
  if (milli && n % 1000)
    return cp_fail_input (err, "%s: not a whole quantity, got \"%s\"", field, got);
  if (milli)
    n /= 1000;
  if (n == 0)
    return cp_fail_input (err, "%s: expected at least 1 CPU, got \"%s\"", field, got);
  if (n > CP_DRA_CLAIM_MAX_CPUS)
    return cp_fail_input (err, "%s: more than %u CPUs, got \"%.32s\"", field, CP_DRA_CLAIM_MAX_CPUS, got);
  *out = (unsigned) n;
  return 0;
}

static int
read_metadata (json_object *root, struct cp_dra_claim *out, cp_error_t *err)
{
  json_object *md;
  if (required (root, "metadata", "metadata", &md, err) < 0 || cp_json_object (md, "metadata", err) < 0
      || string_into (md, "uid", "metadata.uid", out->uid, sizeof out->uid, err) < 0
      || cp_dra_claim_check_uid ("metadata.uid", out->uid, err) < 0
      || string_into (md, "name", "metadata.name", out->name, sizeof out->name, err) < 0
      || string_into (md, "namespace", "metadata.namespace", out->namespace_, sizeof out->namespace_, err) < 0)
    return -1;
  return 0;
}

static int
read_header (json_object *root, struct cp_dra_claim *out, cp_error_t *err)
{
  static const char *const versions[]
      = { "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1" };
  char kind[32];
  if (string_into (root, "apiVersion", "apiVersion", out->api_version, sizeof out->api_version, err) < 0)
    return -1;
  bool known = false;
  for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
    known |= strcmp (out->api_version, versions[i]) == 0;
  if (!known)
    return cp_fail_input (err, "apiVersion: expected resource.k8s.io/v1, v1beta2 or v1beta1, got \"%s\"",
                          out->api_version);
  if (string_into (root, "kind", "kind", kind, sizeof kind, err) < 0)
    return -1;
  if (strcmp (kind, "ResourceClaim") != 0)
    return cp_fail_input (err, "kind: expected ResourceClaim, got \"%s\"", kind);
  return 0;
}

/* Result I (FIELD names it): kept in OUT when it is NODE's and holds CPUs. */
static int
read_result (json_object *r, unsigned i, const char *field, const char *node, struct cp_dra_claim *out,
             cp_error_t *err)
{
  char f[96];
  const char *driver, *pool;
  json_object *v;
  if (cp_json_object (r, field, err) < 0)
    return -1;
  snprintf (f, sizeof f, "%s.driver", field);
  if (required (r, "driver", f, &v, err) < 0 || cp_json_string (v, f, CP_DRA_MAX_NODE_NAME, false, &driver, err) < 0)
    return -1;
  snprintf (f, sizeof f, "%s.pool", field);
  if (required (r, "pool", f, &v, err) < 0 || cp_json_string (v, f, CP_DRA_MAX_NODE_NAME, false, &pool, err) < 0)
    return -1;
  struct cp_dra_claim_result res = { .index = i };
  snprintf (f, sizeof f, "%s.request", field);
  if (string_into (r, "request", f, res.request, sizeof res.request, err) < 0)
    return -1;
  snprintf (f, sizeof f, "%s.device", field);
  if (string_into (r, "device", f, res.device, sizeof res.device, err) < 0)
    return -1;
  bool admin = false;
  if (cp_json_member (r, "adminAccess", true, &v))
    {
      snprintf (f, sizeof f, "%s.adminAccess", field);
      if (!json_object_is_type (v, json_type_boolean))
        return cp_fail_input (err, "%s: expected true or false", f);
      admin = json_object_get_boolean (v);
    }
  json_object *cc = NULL;
  if (cp_json_member (r, "consumedCapacity", true, &cc))
    {
      snprintf (f, sizeof f, "%s.consumedCapacity", field);
      if (cp_json_object (cc, f, err) < 0)
        return -1;
      json_object *q;
      if (cp_json_member (cc, CP_DRA_CAPACITY, true, &q))
        {
          snprintf (f, sizeof f, "%s.consumedCapacity.%s", field, CP_DRA_CAPACITY);
          if (whole_quantity (q, f, &res.cpus, err) < 0)
            return -1;
        }
    }
  if (strcmp (driver, CP_DRA_DRIVER) != 0 || strcmp (pool, node) != 0)
    {
      out->skipped_other++;
      return 0;
    }
  if (admin)
    {
      out->skipped_admin++;
      return 0;
    }
  out->results[out->n_results++] = res;
  return 0;
}

static int
read_allocation (json_object *status, const char *node, struct cp_dra_claim *out, cp_error_t *err)
{
  json_object *alloc, *devices, *results;
  if (required (status, "allocation", "status.allocation", &alloc, err) < 0
      || cp_json_object (alloc, "status.allocation", err) < 0)
    return cp_error_wrap (err, "the claim is not allocated");
  if (!cp_json_member (alloc, "devices", true, &devices))
    return 0; /* allocated nothing of devices */
  if (cp_json_object (devices, "status.allocation.devices", err) < 0)
    return -1;
  if (!cp_json_member (devices, "results", true, &results))
    return 0;
  if (!json_object_is_type (results, json_type_array))
    return cp_fail_input (err, "status.allocation.devices.results: expected an array");
  size_t n = json_object_array_length (results);
  if (n > CP_DRA_CLAIM_MAX_RESULTS)
    return cp_fail_input (err, "status.allocation.devices.results: %zu results, at most %u", n,
                          CP_DRA_CLAIM_MAX_RESULTS);
  out->results = cp_xcalloc (n ? n : 1, sizeof *out->results);
  for (size_t i = 0; i < n; i++)
    {
      char field[64];
      snprintf (field, sizeof field, "status.allocation.devices.results[%zu]", i);
      if (read_result (json_object_array_get_idx (results, i), (unsigned) i, field, node, out, err) < 0)
        return -1;
    }
  /* Two results of one request on one device would be one device given twice. */
  for (size_t i = 0; i < out->n_results; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp (out->results[i].device, out->results[j].device) == 0
          && strcmp (out->results[i].request, out->results[j].request) == 0)
        return cp_fail_input (err, "status.allocation.devices.results[%u]: device %s given twice to request %s",
                              out->results[i].index, out->results[i].device, out->results[i].request);
  return 0;
}

static int
read_reserved (json_object *status, struct cp_dra_claim *out, cp_error_t *err)
{
  json_object *rf;
  if (!cp_json_member (status, "reservedFor", true, &rf))
    return 0;
  if (!json_object_is_type (rf, json_type_array))
    return cp_fail_input (err, "status.reservedFor: expected an array");
  size_t n = json_object_array_length (rf);
  if (n > CP_DRA_CLAIM_MAX_RESERVED)
    return cp_fail_input (err, "status.reservedFor: %zu entries, at most %u", n, CP_DRA_CLAIM_MAX_RESERVED);
  out->reserved_for = cp_xcalloc (n ? n : 1, sizeof *out->reserved_for);
  for (size_t i = 0; i < n; i++)
    {
      char field[48];
      json_object *e = json_object_array_get_idx (rf, i), *v;
      const char *uid;
      snprintf (field, sizeof field, "status.reservedFor[%zu]", i);
      if (cp_json_object (e, field, err) < 0)
        return -1;
      snprintf (field, sizeof field, "status.reservedFor[%zu].uid", i);
      if (required (e, "uid", field, &v, err) < 0 || cp_json_string (v, field, CP_DRA_CLAIM_MAX_UID, false, &uid, err) < 0
          || cp_dra_claim_check_uid (field, uid, err) < 0)
        return -1;
      out->reserved_for[out->n_reserved++] = cp_xstrdup (uid);
    }
  return 0;
}

int
cp_dra_claim_parse (const char *json, size_t len, const char *node, struct cp_dra_claim *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  if (len > CP_DRA_CLAIM_MAX_BYTES)
    return cp_fail_input (err, "claim: %zu bytes, at most %u", len, CP_DRA_CLAIM_MAX_BYTES);
  if (cp_dra_check_node_name ("node", node, err) < 0)
    return -1;
  cleanup_json json_object *root = NULL;
  json_object *status;
  if (cp_json_parse_object (json, len, &root, err) < 0)
    return cp_error_wrap (err, "claim");
  if (read_header (root, out, err) < 0 || read_metadata (root, out, err) < 0)
    return -1;
  if (required (root, "status", "status", &status, err) < 0 || cp_json_object (status, "status", err) < 0)
    return cp_error_wrap (err, "the claim is not allocated");
  if (read_allocation (status, node, out, err) < 0 || read_reserved (status, out, err) < 0)
    return -1;
  return 0;
}
