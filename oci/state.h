/* cachepin: the OCI state a runtime writes to a hook's stdin.
 *
 * runtime-spec "State": {"ociVersion", "id", "status", "pid", "bundle",
 * "annotations"}.  At createRuntime runc says "creating" and crun "created".
 * Other members are ignored (runtimes add their own). */
#ifndef CP_OCI_STATE_H
#define CP_OCI_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "../policy/error.h"
#include "annotations.h"

/* Bounds on hostile input. */
#define CP_OCI_STATE_MAX_SIZE (1024 * 1024)
#define CP_OCI_ID_MAX 1024
#define CP_OCI_VERSION_MAX 256
#define CP_OCI_BUNDLE_MAX 4095 /* PATH_MAX - 1 */
#define CP_OCI_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT */

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
  struct cp_annotations annotations; /* empty when absent or null */
};

/* Read FD to its end (at most CP_OCI_STATE_MAX_SIZE bytes) and parse it. */
int cp_oci_state_read (int fd, struct cp_oci_state *out, cp_error_t *err);

/* Parse the state in BUF (LEN bytes).  Errors are input errors, one line naming
 * the field: "state: pid: expected an integer from 1 to 4194304, got -5". */
int cp_oci_state_parse (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err);

/* Free what ST holds (it is left zeroed); a zeroed struct is fine. */
void cp_oci_state_free (struct cp_oci_state *st);

const char *cp_oci_status_name (enum cp_oci_status status);

#endif
