/* cachepin: the Kubernetes API server's JSON answers, read strictly (base's
 * cp_json_parse_object(): no duplicate keys, no NaN, no trailing bytes) and
 * bounded (CP_KUBE_MAX_ANSWER; watch events CP_KUBE_MAX_EVENT). */
#ifndef CP_KUBE_JSON_H
#define CP_KUBE_JSON_H

#include <stddef.h>

#include "json.h"
#include "error.h"

#define CP_KUBE_MAX_EVENT (4u << 20)
#define CP_KUBE_MAX_ITEMS 10000u

/* BODY (LEN bytes) as one JSON object, WHAT naming it in errors. */
int cp_kube_json_parse (const char *what, const char *body, size_t len, json_object **out, cp_error_t *err);

/* A list answer (KIND "ResourceSliceList"): *ITEMS its items (an array, borrowed
 * from LIST, at most CP_KUBE_MAX_ITEMS objects), *RESOURCE_VERSION its
 * metadata.resourceVersion (borrowed; may be empty). */
int cp_kube_json_list (json_object *list, const char *kind, json_object **items, const char **resource_version,
                       cp_error_t *err);

/* An object's metadata.name and metadata.resourceVersion (borrowed; the version
 * may be NULL when absent, as in an object we made). */
int cp_kube_json_meta (json_object *obj, const char **name, const char **resource_version, cp_error_t *err);

/* The message of a Status answer (kind "Status", "message"), for errors: NULL when
 * BODY is not one (caller frees). At most 200 bytes, control characters as '?'. */
char *cp_kube_json_status_message (const char *body, size_t len);

enum cp_kube_event
{
  CP_KUBE_ADDED,
  CP_KUBE_MODIFIED,
  CP_KUBE_DELETED,
  CP_KUBE_BOOKMARK,
  CP_KUBE_ERROR, /* *OBJECT a Status: 410 Gone means relist */
};

/* One line of a watch ({"type": ..., "object": {...}}): its type and object
 * (*OBJECT the caller's); an ERROR's code in *CODE (0 otherwise). */
int cp_kube_json_event (const char *line, size_t len, enum cp_kube_event *type, json_object **object, int *code,
                        cp_error_t *err);

#endif
