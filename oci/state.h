/* cachepin: the OCI state a runtime writes to a hook's stdin.
 *
 * runtime-spec "State": {"ociVersion", "id", "status", "pid", "bundle",
 * "annotations"}.  At createRuntime runc says "creating" and crun "created".
 * Other members are ignored (runtimes add their own). */
#ifndef CP_OCI_STATE_H
#define CP_OCI_STATE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "annotations.h"

/* Bounds on hostile input. */
#define CP_OCI_STATE_MAX_SIZE (1024 * 1024)
#define CP_OCI_ID_MAX 1024

#define CP_OCI_VERSION_MAX 256
#define CP_OCI_BUNDLE_MAX 4095 /* PATH_MAX - 1 */
#define CP_OCI_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT */

/* A container id as cachepin takes it, from a runtime's state (the hook) or its
 * NRI messages (the plugin): it names ledger entries, journal records and log
 * lines.  1 to CP_OCI_ID_MAX bytes, no control character, no `/`, not `.` nor
 * `..`, not starting with `apply:` (the ids of `cachepin apply`'s entries: a
 * container of that id would be released by `cachepin release --cgroup`) nor
 * `dra:` (a prepared DRA claim's entries, which reconcile never drops).
 * CP_ERR_INPUT naming the rule, never quoting the id. */
int cp_oci_id_check (const char *id, cp_error_t *err);

enum cp_oci_status
{
  CP_OCI_CREATING = 0,
  CP_OCI_CREATED,
  CP_OCI_RUNNING,
  CP_OCI_STOPPED,
};

struct cp_oci_state
{
  char *oci_version;
  char *id;      /* 1..1024 bytes, no control character, no '/', not "." or ".." */
  enum cp_oci_status status;
  pid_t pid;     /* 1..CP_OCI_PID_MAX; 0 only when stopped and absent */
  char *bundle;  /* absolute */
  struct cp_annotations annotations; /* cachepin.io/ and engine keys; empty when absent or null */
  bool has_annotations; /* the state has an "annotations" member, not null nor {} */
  json_object *doc;     /* the parsed state, for the steps after the annotations */
};

/* How long the hook waits for its state on stdin.  A runtime writes the state and
 * closes the pipe; one that never closes it must not hold the container (and the
 * ledger, under a runtime's own lock) forever: the read ends as soon as a complete
 * JSON object has arrived and nothing more came for CP_OCI_STATE_IDLE_MS, and
 * fails when no complete object has arrived after CP_OCI_STATE_TIMEOUT_MS. */
#define CP_OCI_STATE_TIMEOUT_MS 5000
#define CP_OCI_STATE_IDLE_MS 100

/* Read the state's text from FD (at most CP_OCI_STATE_MAX_SIZE bytes) into *OUT
 * (caller frees) of *LEN bytes, with the deadline above.  "state: larger than
 * 1048576 bytes", "state: no complete JSON object after 5 s on stdin (the runtime
 * did not close it)": input errors. */
int cp_oci_state_read_text (int fd, char **out, size_t *len, cp_error_t *err);

/* Parsing comes in steps, so that the hook decides whether the container asks
 * before it judges anything else the state holds (docs/security.md: a container
 * without a cachepin.io/ annotation is never failed, whatever its state holds):
 *   1. cp_oci_state_parse_annotations(): the JSON (strict, cp_json_parse_object)
 *      and its annotations (cp_annotations_from_json: only cachepin.io/ keys are
 *      judged);
 *   2. cp_oci_state_parse_bundle(): the bundle alone, for config.json;
 *   3. cp_oci_state_parse_fields(): ociVersion, id, status, pid and bundle.
 * Errors are input errors, one line naming the field: "state: pid: expected an
 * integer from 1 to 4194304, got -5".  After a failed step OUT still needs
 * cp_oci_state_free(). */
int cp_oci_state_parse_annotations (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err);
int cp_oci_state_parse_bundle (struct cp_oci_state *st, cp_error_t *err);
int cp_oci_state_parse_fields (struct cp_oci_state *st, cp_error_t *err);

/* All three steps; on failure OUT is left zeroed. */
int cp_oci_state_parse (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err);

/* cp_oci_state_read_text() then cp_oci_state_parse(). */
int cp_oci_state_read (int fd, struct cp_oci_state *out, cp_error_t *err);

/* Free what ST holds (it is left zeroed); a zeroed struct is fine. */
void cp_oci_state_free (struct cp_oci_state *st);

const char *cp_oci_status_name (enum cp_oci_status status);

#endif
