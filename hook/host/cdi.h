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

#include "error.h"

#define CP_CDI_KIND "cachepin.io/claim"
#define CP_CDI_ENV "CACHEPIN_DRA_CLAIM"
#define CP_CDI_VERSION "0.6.0"

/* The spec's file name of claim UID ("cachepin.io-claim_<uid>.json"), and the fully
   qualified CDI device name the kubelet is told ("cachepin.io/claim=<uid>"); the
   caller frees.  UID is a checked claim uid (policy/dra_claim.h). */
char *cp_cdi_spec_name (const char *uid);
char *cp_cdi_device_name (const char *uid);

/* Write claim UID's spec into DIR (made, 0755, when missing; its parent must exist).
   *PATH (may be NULL): the spec's path, the caller's. */
int cp_cdi_write (const char *dir, const char *uid, char **path, cp_error_t *err);

/* Remove claim UID's spec from DIR: 1 removed, 0 there was none. */
int cp_cdi_remove (const char *dir, const char *uid, cp_error_t *err);

#endif
