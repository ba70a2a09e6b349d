/* cachepin: where a cgroup is, from the kernel's texts alone.
 *
 * The pure half of the cgroup module (hook/host/cgroup.h): parsers of
 * /proc/self/mountinfo and /proc/<pid>/cgroup, and the checks on cgroup paths.
 * Nothing here opens, reads or stats a file; hook/host/cgroup.c reads the texts and
 * opens what these functions locate.  fuzz/fuzz_cgroup.c fuzzes all of it.
 *
 * Errors: what the kernel's text says (removed, outside our namespace, not
 * mounted, malformed) is CP_ERR_RUNTIME with no errno; what the user's path
 * says (cp_cgroup_resolve_from_text) is CP_ERR_INPUT. */
#ifndef CP_CGROUP_PARSE_H
#define CP_CGROUP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Longest mount point and longest cgroup path we accept (PATH_MAX - 1, as the ledger). */
#define CP_CGROUP_MAX_PATH 4095
/* Bounds on the kernel texts these parsers take: /proc/<pid>/cgroup (one line per
 * hierarchy, each path up to PATH_MAX), /proc/self/mountinfo (hosts running
 * thousands of containers have tens of thousands of mounts). */
#define CP_CGROUP_PROC_CGROUP_MAX (256 * 1024)
#define CP_CGROUP_MOUNTINFO_MAX (16 * 1024 * 1024)

/* Where a cgroup is, as mountinfo and /proc/<pid>/cgroup tell it.  Located or
 * resolved, MOUNT is absolute with no empty, "." or ".." component, PATH starts
 * with "/" and has none either, so MOUNT + PATH lies below MOUNT. */
struct cp_cgroup_where
{
  int version;      /* 1: cpuset v1 hierarchy, 2: unified */
  char *mount;      /* mount point */
  char *mount_root; /* what the mount shows of the hierarchy: "/" but for a mount of a subtree */
  char *path;       /* below the mount point, starting with "/" ("/" for the mount's root) */
  dev_t dev;        /* the mount's device number, checked against what we open */
};

void cp_cgroup_where_clear (struct cp_cgroup_where *w);
#define cleanup_where __attribute__ ((cleanup (cp_cgroup_where_clear)))

/* From the texts of /proc/self/mountinfo and /proc/<pid>/cgroup: where the cgroup
 * holding CONTROLLER ("cpuset" but for tests) of that process is.  Runtime errors
 * (CP_ERR_RUNTIME) for what the kernel text says: removed, outside our namespace,
 * hierarchy not mounted, malformed text.  On failure *OUT is untouched. */
int cp_cgroup_locate_from_text (const char *mountinfo, const char *proc_cgroup, const char *controller,
                                struct cp_cgroup_where *out, cp_error_t *err);

/* From the texts of /proc/self/mountinfo and /proc/self/cgroup (which says whether
 * CONTROLLER is on v1 or v2): where the user's PATH (see cp_cgroup_from_path())
 * points; never the root of the mount.  CP_ERR_INPUT for a bad PATH, CP_ERR_RUNTIME
 * for a bad kernel text.  On failure *OUT is untouched. */
int cp_cgroup_resolve_from_text (const char *mountinfo, const char *self_cgroup, const char *controller,
                                 const char *path, struct cp_cgroup_where *out, cp_error_t *err);

/* What is wrong with the components of P (a path without its leading "/"): an
 * empty, "." or ".." component or one longer than NAME_MAX, as a phrase for a
 * message ("`..` component refused"); NULL when nothing is ("" has no component).
 * The caller makes the error, of the kind that fits whose path it is. */
const char *cp_cgroup_path_problem (const char *p);

/* TOKEN is one of the SEP-separated items of the LEN bytes at LIST? */
bool cp_cgroup_has_token (const char *list, size_t len, const char *token, char sep);

#endif
