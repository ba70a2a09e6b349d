#define _GNU_SOURCE
#include "annotations.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "util.h"
#include "json.h"
#include "text.h"

static bool
is_ours (const char *key)
{
  return strncmp (key, CP_ANNOTATION_PREFIX, strlen (CP_ANNOTATION_PREFIX)) == 0;
}

/* The keys an engine sets that cachepin reads besides its own: the container's
 * name (per-container keys) and whether it is a pod's sandbox. */
static const char *const engine_keys[] = { CP_ANNOTATION_CRIO_NAME,     CP_ANNOTATION_CONTAINERD_NAME,
                                            CP_ANNOTATION_CRIO_TYPE,     CP_ANNOTATION_CONTAINERD_TYPE,
                                            CP_ANNOTATION_DOCKER_TYPE,   CP_ANNOTATION_CRIO_POD,
                                            CP_ANNOTATION_CRIO_NAMESPACE, CP_ANNOTATION_CONTAINERD_POD,
                                            CP_ANNOTATION_CONTAINERD_NAMESPACE };
_Static_assert (CP_ARRAY_SIZE (engine_keys) == CP_ANNOTATION_ENGINE_KEYS, "CP_ANNOTATION_ENGINE_KEYS");

static bool
is_engine_key (const char *key)
{
  for (size_t i = 0; i < CP_ARRAY_SIZE (engine_keys); i++)
    if (strcmp (key, engine_keys[i]) == 0)
      return true;
  return false;
}

/* Room for OURS cachepin.io/ keys and each engine key once. */
static struct cp_annotation *
items_new (size_t ours)
{
  return cp_xcalloc (ours + CP_ARRAY_SIZE (engine_keys), sizeof (struct cp_annotation));
}

/* A cachepin.io/ key: bounded, its value a string without NUL, or an error (the
 * container asked, and what it asked is wrong). */
static int
check_ours (const char *field, const char *key, json_object *v, const char **value, cp_error_t *err)
{
  if (strlen (key) > CP_ANNOTATION_KEY_MAX)
    return cp_fail_input (err, "%s: key `%.64s...` longer than %d bytes", field, key, CP_ANNOTATION_KEY_MAX);
  cleanup_free char *name = cp_xasprintf ("%s: %s", field, key);
  return cp_json_string (v, name, CP_ANNOTATION_VALUE_MAX, true, value, err);
}

int
cp_annotations_from_json (json_object *obj, json_object *twice, const char *field, struct cp_annotations *out,
                          cp_error_t *err)
{
  out->items = NULL;
  out->n = 0;
  /* Not an object: no key at all, so none of ours (runtime-spec says a map; a
     container whose engine wrote something else did not ask in a way we read). */
  if (!json_object_is_type (obj, json_type_object))
    return 0;
  size_t ours = 0;
  json_object_object_foreach (obj, k, unused)
    {
      (void) unused;
      ours += is_ours (k);
    }
  if (ours > CP_ANNOTATIONS_MAX)
    return cp_fail_input (err, "%s: %zu " CP_ANNOTATION_PREFIX " annotations, more than the %d accepted", field, ours,
                          CP_ANNOTATIONS_MAX);
  struct cp_annotations a = { .items = items_new (ours) };
  json_object_object_foreach (obj, key, v)
    {
      const char *value;
      if (is_ours (key))
        {
          if (check_ours (field, key, v, &value, err) < 0)
            {
              cp_annotations_free (&a);
              return -1;
            }
        }
      else if (!is_engine_key (key) || cp_json_string (v, key, SIZE_MAX, true, &value, NULL) < 0)
        continue; /* someone else's: neither checked nor kept */
      a.items[a.n].key = cp_xstrdup (key);
      a.items[a.n].value = cp_xstrdup (value);
      a.items[a.n].twice = is_ours (key) && twice && json_object_object_get_ex (twice, key, NULL);
      a.n++;
    }
  *out = a;
  return 0;
}

/* The pairs as the object their JSON text would be (json-c keeps a repeated key's
   last value, at its first place), and the keys repeated: only ours and the
   engine's, the keys cp_annotations_from_json() reads. */
int
cp_annotations_from_map (const char *const *keys, const char *const *values, size_t n, const char *field,
                         struct cp_annotations *out, cp_error_t *err)
{
  cleanup_json json_object *obj = json_object_new_object ();
  cleanup_json json_object *twice = json_object_new_object ();
  if (obj == NULL || twice == NULL)
    cp_oom ();
  for (size_t i = 0; i < n; i++)
    {
      if (!is_ours (keys[i]) && !is_engine_key (keys[i]))
        continue; /* someone else's: never read */
      if (json_object_object_get_ex (obj, keys[i], NULL) && json_object_object_add (twice, keys[i], NULL) < 0)
        cp_oom ();
      json_object *v = values[i] ? json_object_new_string (values[i]) : NULL;
      if ((values[i] && v == NULL) || json_object_object_add (obj, keys[i], v) < 0)
        cp_oom ();
    }
  return cp_annotations_from_json (obj, twice, field, out, err);
}

void
cp_annotations_free (struct cp_annotations *a)
{
  for (size_t i = 0; i < a->n; i++)
    {
      free (a->items[i].key);
      free (a->items[i].value);
    }
  free (a->items);
  a->items = NULL;
  a->n = 0;
}

const char *
cp_annotations_get (const struct cp_annotations *a, const char *key)
{
  for (size_t i = 0; i < a->n; i++)
    if (strcmp (a->items[i].key, key) == 0)
      return a->items[i].value;
  return NULL;
}

const char *
cp_annotations_container_name (const struct cp_annotations *a)
{
  static const char *const keys[] = { CP_ANNOTATION_CRIO_NAME, CP_ANNOTATION_CONTAINERD_NAME };
  for (size_t i = 0; i < CP_ARRAY_SIZE (keys); i++)
    {
      const char *name = cp_annotations_get (a, keys[i]);
      if (name && *name)
        return name;
    }
  return NULL;
}

char *
cp_annotations_display_name (const struct cp_annotations *a)
{
  static const struct
  {
    const char *container, *pod, *ns;
  } engines[] = {
    { CP_ANNOTATION_CRIO_NAME, CP_ANNOTATION_CRIO_POD, CP_ANNOTATION_CRIO_NAMESPACE },
    { CP_ANNOTATION_CONTAINERD_NAME, CP_ANNOTATION_CONTAINERD_POD, CP_ANNOTATION_CONTAINERD_NAMESPACE },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (engines); i++)
    {
      const char *name = cp_annotations_get (a, engines[i].container);
      if (name == NULL || *name == '\0')
        continue;
      const char *pod = cp_annotations_get (a, engines[i].pod), *ns = cp_annotations_get (a, engines[i].ns);
      if (pod == NULL || *pod == '\0')
        return cp_xstrdup (name);
      if (ns == NULL || *ns == '\0')
        return cp_xasprintf ("%s/%s", pod, name);
      return cp_xasprintf ("%s/%s/%s", ns, pod, name);
    }
  return NULL;
}

bool
cp_annotations_is_sandbox (const struct cp_annotations *a)
{
  /* Each engine's key and its word for the sandbox: cri-dockerd says "podsandbox". */
  static const struct
  {
    const char *key, *sandbox;
  } engines[] = {
    { CP_ANNOTATION_CRIO_TYPE, "sandbox" },
    { CP_ANNOTATION_CONTAINERD_TYPE, "sandbox" },
    { CP_ANNOTATION_DOCKER_TYPE, "podsandbox" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (engines); i++)
    {
      const char *type = cp_annotations_get (a, engines[i].key);
      if (type && strcmp (type, engines[i].sandbox) == 0)
        return true;
    }
  return false;
}

/* ---- cachepin.io/ keys ---------------------------------------------------------- */

enum option
{
  OPT_CPUS = 0,
  OPT_ALIGN,
  OPT_SMT,
  OPT_MODE,
  OPT_STRICT,
  OPT_MEMS,
  OPT_SCHED_CACHE,
  OPT_CORE_SCHED,
  OPT_ISOLATE,
  OPT_COUNT
};

static const char *const option_names[OPT_COUNT] = {
  [OPT_CPUS] = "cpus", [OPT_ALIGN] = "align", [OPT_SMT] = "smt",
  [OPT_MODE] = "mode", [OPT_STRICT] = "strict", [OPT_MEMS] = "mems",
  [OPT_SCHED_CACHE] = "sched-cache", [OPT_CORE_SCHED] = "core-sched", [OPT_ISOLATE] = "isolate",
};

/* The options as an unknown key's error lists them, from the table: "cpus|align|...". */
static char *
option_list (void)
{
  size_t len = 0;
  for (int i = 0; i < OPT_COUNT; i++)
    len += strlen (option_names[i]) + 1;
  char *list = cp_xmalloc0 (len);
  for (int i = 0; i < OPT_COUNT; i++)
    {
      if (i)
        strcat (list, "|");
      strcat (list, option_names[i]);
    }
  return list;
}

/* Split a cachepin.io/ KEY into its option and, for a per-container key, the
 * container's name (*CONTAINER, pointing into KEY; NULL for a pod-wide key). */
static int
parse_key (const char *key, enum option *which, const char **container, cp_error_t *err)
{
  const char *base = key + strlen (CP_ANNOTATION_PREFIX);
  const char *infix = strstr (base, CP_ANNOTATION_CONTAINER_INFIX);
  size_t base_len = infix ? (size_t) (infix - base) : strlen (base);
  *container = infix ? infix + strlen (CP_ANNOTATION_CONTAINER_INFIX) : NULL;
  for (int i = 0; i < OPT_COUNT; i++)
    if (strlen (option_names[i]) == base_len && strncmp (base, option_names[i], base_len) == 0)
      {
        if (*container && **container == '\0')
          return cp_fail_input (err, "annotation %s: empty container name", key);
        *which = (enum option) i;
        return 0;
      }
  if (err == NULL)
    return -1;
  cleanup_free char *list = option_list ();
  /* A likely typo gets the key it meant, its container part kept, as the CLI's
     options do (cp_text_closest()). */
  cleanup_free char *word = cp_xstrndup (base, base_len);
  const char *near = cp_text_closest (word, option_names, OPT_COUNT);
  cleanup_free char *hint = near ? cp_xasprintf ("did you mean " CP_ANNOTATION_PREFIX "%s%s? ", near,
                                                 infix ? infix : "")
                                 : cp_xstrdup ("");
  return cp_fail_input (err,
                        "annotation %s: unknown key (%sexpected " CP_ANNOTATION_PREFIX
                        "%s, optionally followed by " CP_ANNOTATION_CONTAINER_INFIX "<name>)",
                        key, hint, list);
}

/* Does annotation AN apply to the container named NAME (NULL: unnamed)?  1 with
 * *WHICH and *OWN (a per-container key) set, 0 when it is not a cachepin.io/ key
 * or addresses another container, < 0 for an invalid cachepin.io/ key or one
 * that applies and was given twice. */
static int
applies (const struct cp_annotation *an, const char *name, enum option *which, bool *own, cp_error_t *err)
{
  if (!is_ours (an->key))
    return 0;
  const char *container;
  if (parse_key (an->key, which, &container, err) < 0)
    return -1;
  if (container && (name == NULL || strcmp (container, name) != 0))
    return 0;
  /* An ambiguous request, refused as an invalid value is: json-c and Go keep the
     last value, another reader may keep the first. */
  if (an->twice)
    return cp_fail_input (err, "annotation %s: given twice", an->key);
  *own = container != NULL;
  return 1;
}

bool
cp_annotations_wants_cachepin (const struct cp_annotations *a)
{
  const char *name = cp_annotations_container_name (a);
  for (size_t i = 0; i < a->n; i++)
    {
      enum option which;
      bool own;
      /* An invalid key counts, so that cp_annotations_to_request() reports it. */
      if (applies (&a->items[i], name, &which, &own, NULL) != 0)
        return true;
    }
  return false;
}

static int
apply_option (enum option which, const char *value, struct cp_container_request *out, cp_error_t *err)
{
  switch (which)
    {
    case OPT_CPUS:
      if (cp_parse_count (value, CP_REQUEST_MAX_CPUS, &out->req.cpus, err) < 0)
        return -1;
      out->cpus_from_annotation = true;
      out->cpus_source = CP_CPUS_SOURCE_ANNOTATION;
      return 0;
    case OPT_ALIGN:
      return cp_parse_align (value, &out->req.align, err);
    case OPT_SMT:
      return cp_parse_smt (value, &out->req.smt, err);
    case OPT_MODE:
      return cp_parse_mode (value, &out->req.mode, err);
    case OPT_STRICT:
      return cp_parse_bool (value, &out->req.strict, err);
    case OPT_MEMS:
      return cp_parse_mems (value, &out->mems_keep, err);
    case OPT_SCHED_CACHE:
      if (strcmp (value, "on") == 0 || strcmp (value, "off") == 0)
        {
          out->sched_cache = strcmp (value, "on") == 0 ? CP_ASK_ON : CP_ASK_OFF;
          return 0;
        }
      return cp_fail_input (err, "invalid value `%.64s` (expected on|off)", value);
    case OPT_CORE_SCHED:
      return cp_parse_bool (value, &out->core_sched, err);
    case OPT_ISOLATE:
      return cp_parse_bool (value, &out->isolate, err);
    case OPT_COUNT:
    default:
      abort ();
    }
}

/* cpus when no annotation gives it: from the spec's CPU quota, or one domain in
   shared mode.  Never from linux.resources.cpu.cpus: that says where the container
   may run (a Kubernetes shared-pool container's is the whole pool), not how many
   CPUs it needs; it bounds the placement instead (bound_cpus). */
static int
cpus_fallback (const struct cp_limits *lim, struct cp_container_request *out, cp_error_t *err)
{
  if (lim && lim->quota > 0)
    {
      uint64_t period = lim->period ? lim->period : CP_DEFAULT_CPU_PERIOD;
      uint64_t quota = (uint64_t) lim->quota;
      uint64_t n = quota / period + (quota % period != 0);
      if (n > CP_REQUEST_MAX_CPUS)
        return cp_fail_input (err,
                              "linux.resources.cpu.quota: %" PRIu64 " per period %" PRIu64
                              " is %" PRIu64 " CPUs, more than %d",
                              quota, period, n, CP_REQUEST_MAX_CPUS);
      out->req.cpus = (unsigned) n;
      out->cpus_source = CP_CPUS_SOURCE_QUOTA;
      return 0;
    }
  if (out->req.mode == CP_MODE_SHARED)
    {
      out->req.cpus = 0;
      out->cpus_source = CP_CPUS_SOURCE_SHARED;
      return 0;
    }
  return cp_fail_input (err, CP_ANNOTATION_PREFIX "cpus: missing, and the spec sets no CPU quota "
                             "(linux.resources.cpu.cpus bounds where it runs, it is not a count)");
}

int
cp_annotations_to_request (const struct cp_annotations *a, const struct cp_request *defaults,
                           const struct cp_limits *lim, struct cp_container_request *out, cp_error_t *err)
{
  /* For each option, the annotation that applies: this container's own key wins
     over the pod-wide one, whatever their order. */
  const struct cp_annotation *chosen[OPT_COUNT] = { NULL };
  bool chosen_own[OPT_COUNT] = { false };
  const char *name = cp_annotations_container_name (a);
  for (size_t i = 0; i < a->n; i++)
    {
      enum option which;
      bool own;
      int r = applies (&a->items[i], name, &which, &own, err);
      if (r < 0)
        return -1;
      if (r > 0 && (own || !chosen_own[which]))
        {
          chosen[which] = &a->items[i];
          chosen_own[which] = own;
        }
    }

  memset (out, 0, sizeof *out);
  if (defaults)
    out->req = *defaults;
  else
    cp_request_init (&out->req);
  out->req.cpus = 0;
  for (int i = 0; i < OPT_COUNT; i++)
    if (chosen[i] && apply_option ((enum option) i, chosen[i]->value, out, err) < 0)
      return cp_error_wrap (err, "annotation %s", chosen[i]->key);
  /* Once every key is read: the mode may come after isolate, or from the host's defaults. */
  if (cp_request_check_isolate (out, CP_ANNOTATION_PREFIX "mode=exclusive", err) < 0)
    return cp_error_wrap (err, "annotation %s", chosen[OPT_ISOLATE]->key);
  if (lim)
    {
      out->bound_cpus = lim->cpus;
      out->bound_mems = lim->mems;
    }
  if (!out->cpus_from_annotation)
    return cpus_fallback (lim, out, err);
  return 0;
}
