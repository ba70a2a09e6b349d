/* Checks shared by the OCI fuzz targets: parsed annotations and the request
 * built from them (oci/annotations.h). */
#ifndef CP_FUZZ_OCI_CHECKS_H
#define CP_FUZZ_OCI_CHECKS_H

#include "common.h"
#include "annotations.h"
#include "config.h"
#include "request.h"

static inline bool
fuzz_is_ours (const char *key)
{
  return strncmp (key, CP_ANNOTATION_PREFIX, strlen (CP_ANNOTATION_PREFIX)) == 0;
}

/* cp_annotations_from_json()'s promises: bounded count and key length, keys
 * unique and non-NULL, cachepin.io/ values bounded; get() finds each one. */
static inline void
fuzz_check_annotations (const struct cp_annotations *a)
{
  /* Only ours (bounded in number) and the engine's keys are kept. */
  FUZZ_CHECK (a->n <= CP_ANNOTATIONS_MAX + CP_ANNOTATION_ENGINE_KEYS);
  FUZZ_CHECK (a->n == 0 || a->items != NULL);
  for (size_t i = 0; i < a->n; i++)
    {
      const struct cp_annotation *an = &a->items[i];
      FUZZ_CHECK (an->key != NULL && an->value != NULL);
      FUZZ_CHECK (fuzz_is_ours (an->key) || strcmp (an->key, CP_ANNOTATION_CRIO_NAME) == 0
                  || strcmp (an->key, CP_ANNOTATION_CONTAINERD_NAME) == 0
                  || strcmp (an->key, CP_ANNOTATION_CRIO_TYPE) == 0
                  || strcmp (an->key, CP_ANNOTATION_CONTAINERD_TYPE) == 0
                  || strcmp (an->key, CP_ANNOTATION_DOCKER_TYPE) == 0 || strcmp (an->key, CP_ANNOTATION_CRIO_POD) == 0
                  || strcmp (an->key, CP_ANNOTATION_CRIO_NAMESPACE) == 0
                  || strcmp (an->key, CP_ANNOTATION_CONTAINERD_POD) == 0
                  || strcmp (an->key, CP_ANNOTATION_CONTAINERD_NAMESPACE) == 0);
      FUZZ_CHECK (strlen (an->key) <= CP_ANNOTATION_KEY_MAX);
      if (fuzz_is_ours (an->key))
        FUZZ_CHECK (strlen (an->value) <= CP_ANNOTATION_VALUE_MAX);
      /* Unique keys: the first match is this very item. */
      FUZZ_CHECK (cp_annotations_get (a, an->key) == an->value);
    }
  const char *name = cp_annotations_container_name (a);
  FUZZ_CHECK (name == NULL || *name != '\0');
  (void) cp_annotations_is_sandbox (a);
}

static inline bool
fuzz_request_equal (const struct cp_container_request *x, const struct cp_container_request *y)
{
  return x->req.cpus == y->req.cpus && x->req.align == y->req.align && x->req.smt == y->req.smt
         && x->req.mode == y->req.mode && x->req.strict == y->req.strict && x->mems_keep == y->mems_keep
         && x->cpus_from_annotation == y->cpus_from_annotation && strcmp (x->cpus_source, y->cpus_source) == 0;
}

/* cp_annotations_to_request() with DEFAULTS and CFG: what its header promises on
 * success, an input error on failure, and a container that does not want
 * cachepin gets exactly what it would get with no annotations at all. */
static inline void
fuzz_check_request (const struct cp_annotations *a, const struct cp_request *defaults,
                    const struct cp_oci_config *cfg)
{
  struct cp_container_request out;
  cp_error_t err = NULL;
  struct cp_limits limits;
  const struct cp_limits *lim = cp_oci_config_limits (cfg, &limits);
  int r = cp_annotations_to_request (a, defaults, lim, &out, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NULL);
      cp_error_free (&err);
    }
  else
    {
      FUZZ_CHECK (r == 0 && err == NULL);
      const struct cp_request *q = &out.req;
      FUZZ_CHECK (q->cpus <= CP_REQUEST_MAX_CPUS);
      FUZZ_CHECK ((unsigned) q->align < CP_LEVEL_COUNT);
      FUZZ_CHECK ((unsigned) q->smt <= CP_SMT_ANY);
      FUZZ_CHECK (q->mode == CP_MODE_EXCLUSIVE || q->mode == CP_MODE_SHARED);
      /* The names parse back to the same values. */
      enum cp_level align;
      enum cp_smt smt;
      enum cp_mode mode;
      FUZZ_CHECK (cp_parse_align (cp_align_name (q->align), &align, NULL) == 0 && align == q->align);
      FUZZ_CHECK (cp_parse_smt (cp_smt_name (q->smt), &smt, NULL) == 0 && smt == q->smt);
      FUZZ_CHECK (cp_parse_mode (cp_mode_name (q->mode), &mode, NULL) == 0 && mode == q->mode);

      /* The same macro's literal need not have the same address in two files. */
      FUZZ_CHECK (out.cpus_source != NULL);
      bool from_annotation = strcmp (out.cpus_source, CP_CPUS_SOURCE_ANNOTATION) == 0;
      bool from_quota = strcmp (out.cpus_source, CP_CPUS_SOURCE_QUOTA) == 0;
      bool from_shared = strcmp (out.cpus_source, CP_CPUS_SOURCE_SHARED) == 0;
      FUZZ_CHECK_MSG (from_annotation + from_quota + from_shared == 1, "cpus_source \"%s\"",
                      out.cpus_source);
      FUZZ_CHECK (out.cpus_from_annotation == from_annotation);
      if (from_annotation || from_quota)
        FUZZ_CHECK (q->cpus >= 1);
      /* The spec's cpuset is a bound, carried as it is, never a count. */
      FUZZ_CHECK (out.bound_cpus == (cfg ? cfg->cpus : NULL));
      FUZZ_CHECK (out.bound_mems == (cfg ? cfg->mems : NULL));
      if (from_quota)
        {
          FUZZ_CHECK (cfg && cfg->quota > 0);
          /* ceil (quota / period): (cpus - 1) periods fall short of the quota,
             cpus periods cover it. */
          unsigned __int128 period = cfg->period ? cfg->period : CP_OCI_DEFAULT_CPU_PERIOD;
          unsigned __int128 quota = (uint64_t) cfg->quota;
          FUZZ_CHECK ((q->cpus - 1) * period < quota && quota <= q->cpus * period);
        }
      if (q->cpus == 0)
        FUZZ_CHECK (from_shared && q->mode == CP_MODE_SHARED);
      if (!cp_annotations_wants_cachepin (a))
        FUZZ_CHECK (!out.cpus_from_annotation);
    }

  if (!cp_annotations_wants_cachepin (a))
    {
      struct cp_annotations none = { 0 };
      struct cp_container_request plain;
      cp_error_t err2 = NULL;
      int r2 = cp_annotations_to_request (&none, defaults, lim, &plain, &err2);
      FUZZ_CHECK ((r2 == 0) == (r == 0));
      if (r == 0)
        FUZZ_CHECK (fuzz_request_equal (&out, &plain));
      cp_error_free (&err2);
    }
}

#endif
