/* cachepin: the CDI specs of prepared DRA claims (Container Device Interface,
 * github.com/cncf-tags/container-device-interface, SPEC.md).
 *
 * One spec file per claim in the runtime's CDI spec directory (the host config's
 * `cdi_dir`): kind "cachepin.io/claim", one device named after the claim's uid,
 * whose only edit is the environment tag CACHEPIN_DRA_CLAIM=<uid>.  The runtime
 * (containerd 2.1, CRI-O) applies it to every container the kubelet gives the
 * device, before NRI's CreateContainer, where the plugin finds the claim from the
 * tag.  Written atomically (a temporary file, then renamed) in the directory opened
 * without following a symlink; removing a spec that is not there is no error. */
#ifndef CP_CDI_H
#define CP_CDI_H

#include <stdbool.h>

#include "error.h"

#define CP_CDI_KIND "cachepin.io/claim"
#define CP_CDI_ENV "CACHEPIN_DRA_CLAIM"
#define CP_CDI_VERSION "0.6.0"

/* The spec's file name of claim UID ("cachepin.io-claim_<uid>.json"), and the fully
   qualified CDI device name the kubelet is told ("cachepin.io/claim=<uid>"); the
   caller frees.  UID is a checked claim uid (policy/dra_claim.h). */
char *cp_cdi_spec_name (const char *uid);
char *cp_cdi_device_name (const char *uid);

/* DIR (absolute) opened without following a symlink, made (0755) when missing and
   CREATE (its parent must exist): the descriptor, or -1 (*ERR).  A front end that
   runs sandboxed opens it before (sandbox.h: cdi_dirfd). */
int cp_cdi_open_dir (const char *dir, bool create, cp_error_t *err);

/* Write claim UID's spec into DIRFD, the directory DIR (for the messages and *PATH).
   *PATH (may be NULL): the spec's path, the caller's. */
int cp_cdi_write_at (int dirfd, const char *dir, const char *uid, char **path, cp_error_t *err);

/* Remove claim UID's spec from DIRFD (DIR, for the messages): 1 removed, 0 there was none. */
int cp_cdi_remove_at (int dirfd, const char *dir, const char *uid, cp_error_t *err);

/* DIR opened (made when missing) and held for the process's life: cp_cdi_write()
   and cp_cdi_remove() of DIR use it, not the path (a sandboxed front end creates
   files relative to it only: sandbox.h's cdi_dirfd).  The descriptor, or -1. */
int cp_cdi_hold_dir (const char *dir, cp_error_t *err);

/* The same, DIR opened for the call (made when missing, to write; missing: nothing
   to remove). */
int cp_cdi_write (const char *dir, const char *uid, char **path, cp_error_t *err);
int cp_cdi_remove (const char *dir, const char *uid, cp_error_t *err);

#endif
