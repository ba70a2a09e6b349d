/* cachepin: the Kubernetes API server's JSON answers (kube_json.h). */
#define _GNU_SOURCE
#include "kube_json.h"

#include <string.h>

#include "kube.h"
#include "util.h"

int
cp_kube_json_parse (const char *what, const char *body, size_t len, json_object **out, cp_error_t *err)
{
  if (len > CP_KUBE_MAX_ANSWER)
    return cp_fail_runtime (err, "%s: an answer of %zu bytes, more than %u", what, len, CP_KUBE_MAX_ANSWER);
  if (cp_json_parse_object (body, len, out, err) < 0)
    return cp_error_wrap (err, "%s", what);
  return 0;
}

int
cp_kube_json_meta (json_object *obj, const char **name, const char **resource_version, cp_error_t *err)
{
  json_object *meta = NULL, *v = NULL;
  if (cp_json_object (obj, "object", err) < 0)
    return -1;
  if (!cp_json_member (obj, "metadata", true, &meta))
    return cp_fail_runtime (err, "object: no metadata");
  if (cp_json_object (meta, "metadata", err) < 0)
    return -1;
  if (!cp_json_member (meta, "name", true, &v))
    return cp_fail_runtime (err, "metadata: no name");
  if (cp_json_string (v, "metadata.name", 253, false, name, err) < 0)
    return -1;
  *resource_version = NULL;
  if (cp_json_member (meta, "resourceVersion", true, &v)
      && cp_json_string (v, "metadata.resourceVersion", 128, true, resource_version, err) < 0)
    return -1;
  return 0;
}

int
cp_kube_json_list (json_object *list, const char *kind, json_object **items, const char **resource_version,
                   cp_error_t *err)
{
  json_object *v = NULL, *meta = NULL;
  const char *k = NULL;
  if (!cp_json_member (list, "kind", true, &v) || cp_json_string (v, "kind", 64, false, &k, err) < 0)
    return cp_fail_runtime (err, "a list answer without its kind");
  if (strcmp (k, kind) != 0)
    return cp_fail_runtime (err, "kind: expected %s, got %.64s", kind, k);
  *resource_version = "";
  if (cp_json_member (list, "metadata", true, &meta))
    {
      if (cp_json_object (meta, "metadata", err) < 0)
        return -1;
      if (cp_json_member (meta, "resourceVersion", true, &v)
          && cp_json_string (v, "metadata.resourceVersion", 128, true, resource_version, err) < 0)
        return -1;
    }
  if (!cp_json_member (list, "items", true, &v))
    v = NULL; /* Go's empty slice as null, or omitted */
  if (v != NULL && !json_object_is_type (v, json_type_array))
    return cp_fail_runtime (err, "items: expected an array");
  if (v == NULL)
    {
      json_object_object_add (list, "items", json_object_new_array ());
      cp_json_member (list, "items", false, &v);
    }
  size_t n = json_object_array_length (v);
  if (n > CP_KUBE_MAX_ITEMS)
    return cp_fail_runtime (err, "items: %zu, more than %u", n, CP_KUBE_MAX_ITEMS);
  for (size_t i = 0; i < n; i++)
    {
      const char *name, *rv;
      if (cp_kube_json_meta (json_object_array_get_idx (v, i), &name, &rv, err) < 0)
        return cp_error_wrap (err, "items[%zu]", i);
    }
  *items = v;
  return 0;
}

char *
cp_kube_json_status_message (const char *body, size_t len)
{
  cleanup_json json_object *o = NULL;
  cleanup_error cp_error_t e = NULL;
  json_object *v = NULL;
  const char *kind = NULL, *msg = NULL;
  if (body == NULL || len == 0 || len > CP_KUBE_MAX_ANSWER || cp_json_parse_object (body, len, &o, &e) < 0)
    return NULL;
  if (!cp_json_member (o, "kind", true, &v) || cp_json_string (v, "kind", 64, false, &kind, &e) < 0
      || strcmp (kind, "Status") != 0)
    return NULL;
  if (!cp_json_member (o, "message", true, &v) || cp_json_string (v, "message", 1u << 20, true, &msg, &e) < 0)
    return NULL;
  size_t n = strnlen (msg, 200);
  char *out = cp_xstrndup (msg, n);
  for (char *p = out; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return out;
}

static const struct
{
  const char *name;
  enum cp_kube_event type;
} event_types[] = {
  { "ADDED", CP_KUBE_ADDED },       { "MODIFIED", CP_KUBE_MODIFIED }, { "DELETED", CP_KUBE_DELETED },
  { "BOOKMARK", CP_KUBE_BOOKMARK }, { "ERROR", CP_KUBE_ERROR },
};

int
cp_kube_json_event (const char *line, size_t len, enum cp_kube_event *type, json_object **object, int *code,
                    cp_error_t *err)
{
  if (len > CP_KUBE_MAX_EVENT)
    return cp_fail_runtime (err, "watch event: %zu bytes, more than %u", len, CP_KUBE_MAX_EVENT);
  cleanup_json json_object *o = NULL;
  if (cp_json_parse_object (line, len, &o, err) < 0)
    return cp_error_wrap (err, "watch event");
  json_object *t = NULL, *obj = NULL, *v = NULL;
  const char *name = NULL;
  if (!cp_json_member (o, "type", true, &t) || cp_json_string (t, "watch event type", 16, false, &name, err) < 0)
    return cp_fail_runtime (err, "watch event: no type");
  size_t i = 0;
  while (i < CP_ARRAY_SIZE (event_types) && strcmp (event_types[i].name, name) != 0)
    i++;
  if (i == CP_ARRAY_SIZE (event_types))
    return cp_fail_runtime (err, "watch event type: unknown `%.16s`", name);
  if (!cp_json_member (o, "object", true, &obj) || cp_json_object (obj, "watch event object", err) < 0)
    return cp_fail_runtime (err, "watch event %s: no object", name);
  *code = 0;
  if (event_types[i].type == CP_KUBE_ERROR)
    {
      int64_t c = 0;
      if (cp_json_member (obj, "code", true, &v) && cp_json_int (v, "watch error code", 0, 999, &c, err) < 0)
        return -1;
      *code = (int) c;
    }
  else if (event_types[i].type == CP_KUBE_BOOKMARK)
    {
      /* Only the version it marks (metadata.resourceVersion), no name. */
      json_object *meta = NULL;
      const char *rv = NULL;
      if (!cp_json_member (obj, "metadata", true, &meta) || cp_json_object (meta, "metadata", err) < 0
          || !cp_json_member (meta, "resourceVersion", true, &v)
          || cp_json_string (v, "metadata.resourceVersion", 128, false, &rv, err) < 0)
        return cp_fail_runtime (err, "watch event BOOKMARK: no metadata.resourceVersion");
    }
  else
    {
      const char *n, *rv;
      if (cp_kube_json_meta (obj, &n, &rv, err) < 0)
        return cp_error_wrap (err, "watch event %s", name);
      if (rv == NULL)
        return cp_fail_runtime (err, "watch event %s: no metadata.resourceVersion", name);
    }
  *type = event_types[i].type;
  *object = json_object_get (obj);
  return 0;
}
