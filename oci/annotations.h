/* cachepin: OCI annotations, and the `cachepin.io/` ones turned into a request.
 *
 * Keys (values as for `cachepin plan`, policy/request.h):
 *   cachepin.io/cpus     how many CPUs: 1..8192
 *   cachepin.io/align    llc | l2 | numa | package | none
 *   cachepin.io/smt      pe0-first | pe0 | cores | any
 *   cachepin.io/mode     exclusive | shared
 *   cachepin.io/strict   true | false
 *   cachepin.io/mems     local (default: the NUMA nodes local to the CPUs) | keep
 *   cachepin.io/sched-cache  on | off: what the container asks of the kernel's
 *                        cache-aware scheduling (a host-wide switch: the host
 *                        setting `sched_cache` decides what is done, hook/engine/schedctl.h)
 *   cachepin.io/core-sched   true | false: a core-scheduling cookie for the
 *                        container's processes (no other task on its cores' siblings)
 *   cachepin.io/isolate  true | false: its CPUs made a cgroup v2 partition, so that
 *                        no other cgroup runs there (only with mode=exclusive: an
 *                        input error otherwise; the host setting `isolate` and the
 *                        host's one core per NUMA node, policy/isolate.h, decide)
 * Each may also be given for one container of a pod as
 * `cachepin.io/<key>.container.<name>`, which wins over the pod-wide key for the
 * container whose name (io.kubernetes.container.name under CRI-O,
 * io.kubernetes.cri.container-name under containerd) is <name>, and is ignored by
 * the others.  Any other key under cachepin.io/ is an error: a typo must not
 * silently leave a container unpinned.  So is a cachepin.io/ key given twice, for
 * the containers it applies to: which of its values was meant, no reader can
 * know.  Other keys given twice are not ours to judge (the last value counts, as
 * json-c and Go read it). */
#ifndef CP_ANNOTATIONS_H
#define CP_ANNOTATIONS_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "request.h"

#define CP_ANNOTATION_PREFIX "cachepin.io/"
#define CP_ANNOTATION_CONTAINER_INFIX ".container."

/* Bounds on hostile input, for cachepin.io/ keys only (the others are not ours to
 * judge, and are bounded by the document's size): how many, bytes per key, bytes
 * per value. */
#define CP_ANNOTATIONS_MAX 4096
#define CP_ANNOTATION_KEY_MAX 1024
#define CP_ANNOTATION_VALUE_MAX 256

/* How the runtime engines name the container, and tell a pod's sandbox (pause)
 * container. */
#define CP_ANNOTATION_CRIO_NAME "io.kubernetes.container.name"
#define CP_ANNOTATION_CONTAINERD_NAME "io.kubernetes.cri.container-name"
#define CP_ANNOTATION_CRIO_TYPE "io.kubernetes.cri-o.ContainerType"
#define CP_ANNOTATION_CONTAINERD_TYPE "io.kubernetes.cri.container-type"
#define CP_ANNOTATION_DOCKER_TYPE "io.kubernetes.docker.type" /* cri-dockerd: "podsandbox" */
/* The pod a container is in, for its name in the ledger and `cachepin status`. */
#define CP_ANNOTATION_CRIO_POD "io.kubernetes.pod.name"
#define CP_ANNOTATION_CRIO_NAMESPACE "io.kubernetes.pod.namespace"
#define CP_ANNOTATION_CONTAINERD_POD "io.kubernetes.cri.sandbox-name"
#define CP_ANNOTATION_CONTAINERD_NAMESPACE "io.kubernetes.cri.sandbox-namespace"
/* How many engine keys (the ones above) are kept besides the cachepin.io/ ones. */
#define CP_ANNOTATION_ENGINE_KEYS 9

struct cp_annotation
{
  char *key;
  char *value;
  bool twice; /* a cachepin.io/ key the input gave more than once (VALUE is the last):
                 refused where it applies (cp_annotations_to_request()) */
};

/* In document order; keys are unique: a key given more than once is kept once, at
 * its first place, with its last value.  Only the cachepin.io/ keys and the engine
 * keys below are kept. */
struct cp_annotations
{
  struct cp_annotation *items;
  size_t n;
};

/* Copy from the JSON object OBJ what cachepin reads: the cachepin.io/ keys, and the
 * engine's container name and type (CP_ANNOTATION_CRIO_* and _CONTAINERD_*) when
 * they are strings without NUL.  Every other annotation is neither checked nor
 * kept: a container that does not ask is never failed for what its annotations
 * hold (and OBJ not an object holds no key: no error either).  TWICE (NULL: none)
 * is the set of OBJ's keys its text gave more than once, as
 * cp_json_parse_object_twice() finds them (json-c kept the last value): a
 * cachepin.io/ one is marked (struct cp_annotation's twice), the others are not
 * ours.  FIELD names OBJ in errors, which are all about cachepin.io/ keys:
 * "annotations: cachepin.io/cpus: expected a string, got 5", "annotations:
 * cachepin.io/cpus: longer than 256 bytes", a NUL in the value, more than
 * CP_ANNOTATIONS_MAX of them, a key longer than CP_ANNOTATION_KEY_MAX. */
int cp_annotations_from_json (json_object *obj, json_object *twice, const char *field, struct cp_annotations *out,
                              cp_error_t *err);

void cp_annotations_free (struct cp_annotations *a);

/* The value of KEY, or NULL. */
const char *cp_annotations_get (const struct cp_annotations *a, const char *key);

/* The container's name as the engine gave it, or NULL (empty counts as none). */
const char *cp_annotations_container_name (const struct cp_annotations *a);

/* The name to show for the container: "namespace/pod/container" from one engine's
 * keys (CRI-O's io.kubernetes.pod.namespace, io.kubernetes.pod.name and
 * io.kubernetes.container.name; containerd's io.kubernetes.cri.sandbox-namespace,
 * -sandbox-name and -container-name), "pod/container" without a namespace, the
 * container's name alone without a pod; NULL without a container name (podman
 * 4.3 puts none in the state nor in config.json).  Raw annotation text: the
 * caller bounds and cleans it (text.h) before it keeps or shows it.  The caller
 * frees. */
char *cp_annotations_display_name (const struct cp_annotations *a);

/* Should the hook place this container?  True when a pod-wide cachepin.io/ key
 * is present, or a per-container one for this container (given twice or not), or
 * a cachepin.io/ key that is not valid (so that cp_annotations_to_request()
 * reports them).  Keys that
 * address other containers of the pod alone do not count: a sidecar is not
 * pinned because the pod's main container asked to be. */
bool cp_annotations_wants_cachepin (const struct cp_annotations *a);

/* A pod's sandbox (pause) container under CRI-O, containerd or cri-dockerd: not to be placed. */
bool cp_annotations_is_sandbox (const struct cp_annotations *a);

/* The CFS period the kernel uses when none is set, in microseconds. */
#define CP_DEFAULT_CPU_PERIOD 100000

/* The container's own limits, as its spec (oci/config.h: cp_oci_config_limits())
 * or its engine gives them. */
struct cp_limits
{
  int64_t quota;             /* CPU quota in us per period; <= 0: none */
  uint64_t period;           /* the period in us; 0: not set (CP_DEFAULT_CPU_PERIOD) */
  hwloc_const_bitmap_t cpus; /* its cpuset's CPUs: a bound on where it runs, never a count
                                (NULL: none) */
  hwloc_const_bitmap_t mems; /* its cpuset's nodes, the same way */
};

/* The same as cp_annotations_from_json() on the text of an object with these N
 * members, from a string map (what a plugin of the engine gets): KEYS[i] is
 * VALUES[i], a NULL value standing for JSON's null.  The same keys are kept, with
 * the same checks and the same errors; a key KEYS holds more than once is read as
 * that text's would be: kept once, with its last value, and marked twice when it
 * is a cachepin.io/ key. */
int cp_annotations_from_map (const char *const *keys, const char *const *values, size_t n, const char *field,
                             struct cp_annotations *out, cp_error_t *err);

/* The request for this container.  DEFAULTS (NULL: cp_request_init()) gives
 * align, smt, mode and strict where no annotation does (its cpus is ignored);
 * LIM (may be NULL: none known) supplies cpus when no cachepin.io/cpus applies:
 *   1. ceil(quota / period) when the quota is > 0 (a missing period is the
 *      kernel's default, CP_DEFAULT_CPU_PERIOD);
 *   2. else in shared mode 0 (one whole domain);
 *   3. else an input error "cachepin.io/cpus: missing, and the spec sets no CPU
 *      quota (...)".
 * LIM's cpus and mems are bounds (OUT->bound_cpus, bound_mems, pointing where
 * LIM's do), never a count.
 * Invalid values fail with an input error naming the key and the value:
 * "annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)";
 * so do unknown cachepin.io/ keys, whichever container they address, and a key
 * given twice that applies to this container: "annotation cachepin.io/cpus: given
 * twice". */
int cp_annotations_to_request (const struct cp_annotations *a, const struct cp_request *defaults,
                               const struct cp_limits *lim, struct cp_container_request *out, cp_error_t *err);

#endif
