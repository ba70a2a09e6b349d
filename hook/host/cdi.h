/* cachepin: the CDI specs of prepared DRA claims (Container Device Interface,
 * github.com/cncf-tags/container-device-interface, SPEC.md).
 *
 * One spec file per claim in the runtime's CDI spec directory (the host config's
 * `cdi_dir`), kind "cachepin.io/claim": a device per allocation result of the claim,
 * named "<uid>-<index>" (what the kubelet plugin answers, one per request), and one
 * named "<uid>" with every result (what `cachepin dra prepare` prints).  The runtime
 * (containerd 2.1, CRI-O) applies a device's edits to every container the kubelet
 * gives it, before NRI's CreateContainer, where the plugin finds the claim:
 *
 *  - the tag the plugin trusts: a read-only bind mount of the spec file itself at
 *    CP_CDI_MOUNT_DIR/<uid>/<index> for each result of the device.  Its source is a
 *    file of the host's CDI directory, which a pod cannot name without a hostPath
 *    volume (privileged): a container cannot claim another's CPUs by its own spec;
 *  - CACHEPIN_DRA_CLAIM=<uid> in the environment, for the workload to read; a pod
 *    can set any variable, so the plugin takes it for nothing by itself.
 *
 * Written atomically (a temporary file, then renamed) in the directory opened
 * without following a symlink; removing a spec that is not there is no error. */
#ifndef CP_CDI_H
#define CP_CDI_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define CP_CDI_KIND "cachepin.io/claim"
#define CP_CDI_ENV "CACHEPIN_DRA_CLAIM"
#define CP_CDI_VERSION "0.6.0"
/* Where a container finds its claims' tags: CP_CDI_MOUNT_DIR/<uid>/<index>. */
#define CP_CDI_MOUNT_DIR "/run/cachepin.io/claims"
#define CP_CDI_MAX_RESULTS 32u /* a result's index is below it (policy/dra_claim.h's cap) */

/* The spec's file name of claim UID ("cachepin.io-claim_<uid>.json"), and the fully
   qualified CDI device name the kubelet is told ("cachepin.io/claim=<uid>"); the
   caller frees.  UID is a checked claim uid (policy/dra_claim.h). */
char *cp_cdi_spec_name (const char *uid);
char *cp_cdi_device_name (const char *uid);
/* The device of result INDEX alone ("cachepin.io/claim=<uid>-<index>"). */
char *cp_cdi_result_device_name (const char *uid, unsigned index);

/* A mount of a container (SOURCE on the host, DESTINATION in the container) read as
   a claim's tag, the spec directory being DIR: 1 it is one (*UID, UID_SIZE bytes,
   and *INDEX filled), 0 it is not below CP_CDI_MOUNT_DIR, -1 it is below it but not
   what a spec of DIR mounts there (*ERR says what: forged, or a spec of another
   directory). */
int cp_cdi_mount_tag (const char *dir, const char *source, const char *destination, char *uid, size_t uid_size,
                      unsigned *index, cp_error_t *err);

/* DIR (absolute) opened without following a symlink, made (0755) when missing and
   CREATE (its parent must exist): the descriptor, or -1 (*ERR).  A front end that
   runs sandboxed opens it before (sandbox.h: cdi_dirfd). */
int cp_cdi_open_dir (const char *dir, bool create, cp_error_t *err);

/* Write claim UID's spec into DIRFD, the directory DIR (for the messages, *PATH and
   the mounts' source), its results' INDEXES (N, at least one).  *PATH (may be NULL):
   the spec's path, the caller's. */
int cp_cdi_write_at (int dirfd, const char *dir, const char *uid, const unsigned *indexes, size_t n, char **path,
                     cp_error_t *err);

/* Remove claim UID's spec from DIRFD (DIR, for the messages): 1 removed, 0 there was none. */
int cp_cdi_remove_at (int dirfd, const char *dir, const char *uid, cp_error_t *err);

/* DIR opened (made when missing) and held for the process's life: cp_cdi_write()
   and cp_cdi_remove() of DIR use it, not the path (a sandboxed front end creates
   files relative to it only: sandbox.h's cdi_dirfd).  The descriptor, or -1. */
int cp_cdi_hold_dir (const char *dir, cp_error_t *err);

/* The same, DIR opened for the call (made when missing, to write; missing: nothing
   to remove). */
int cp_cdi_write (const char *dir, const char *uid, const unsigned *indexes, size_t n, char **path,
                  cp_error_t *err);
int cp_cdi_remove (const char *dir, const char *uid, cp_error_t *err);

#endif
