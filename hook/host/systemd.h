/* cachepin: telling systemd about a placement, so that it does not undo it.
 *
 * With the systemd cgroup driver (runc --systemd-cgroup, podman's default on
 * cgroup v2, Kubernetes) a container's cgroup is a transient unit, a scope,
 * created with Delegate=yes.  systemd still owns the unit's own cpuset: it writes
 * the unit's AllowedCPUs= and AllowedMemoryNodes= (empty: everything the parent
 * has) into cpuset.cpus and cpuset.mems on `systemctl daemon-reload` and on any
 * property change of the unit, which silently undoes cachepin's direct write.
 * So, as runc does for a container's own cpuset, cachepin also sets those two
 * properties on the unit, at runtime (SetUnitProperties with runtime=true: they
 * go with the transient unit), and clears them (empty arrays) when it widens
 * the cgroup again.
 *
 * Only where it applies: PID 1 is systemd (/run/systemd/system exists), the
 * cgroup is on the unified hierarchy (systemd manages no cpuset on v1), the
 * cgroup's last component is a unit name (`*.scope` or `*.service`; a child
 * cgroup such as crun's `<unit>/container` is the payload's own, and systemd
 * leaves it alone), systemd is 244 or newer (AllowedCPUs= came in 244), and
 * the unit's ControlGroup is that very cgroup (so a cgroup merely named like a
 * unit never makes cachepin touch a unit it does not place).
 *
 * The hook's sandbox (sandbox.h) forbids socket() and connect(): the bus is
 * opened, authenticated and asked those questions before the sandbox is
 * entered; afterwards the connection's fd only needs sendmsg, recvmsg and poll.
 *
 * cachepin does not link libsystemd: it is loaded with dlopen("libsystemd.so.0")
 * once the conditions that need no bus hold, before the sandbox (most runs never
 * take this path, and would pay for the library and its own dependencies at every
 * start).  A library that cannot be loaded is the same as a bus that cannot be
 * reached: one warning, and the direct cgroup write stands. */
#ifndef CP_SYSTEMD_H
#define CP_SYSTEMD_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "cgroup.h"

/* The oldest systemd with AllowedCPUs= and AllowedMemoryNodes= (runc checks the same). */
#define CP_SYSTEMD_MIN_VERSION 244

/* The unit name at the end of cgroup PATH ("/system.slice/cachepin-x.scope" ->
 * "cachepin-x.scope"), or NULL when the last component is not a unit that can
 * hold processes (`.scope`, `.service`) with a name systemd accepts (at most
 * 255 bytes, ASCII letters, digits and ":-_.\\", a non-empty prefix).  Pure. */
const char *cp_systemd_unit_of_cgroup (const char *path);

/* The major version in systemd's Version property ("257.9-1", "252.39-1~deb12u1",
 * "v256"), -1 when there is none.  Pure. */
int cp_systemd_parse_version (const char *version);

/* SET as systemd wants AllowedCPUs=/AllowedMemoryNodes= over D-Bus (type "ay"):
 * byte i holds CPUs 8i..8i+7, bit j (the least significant first) CPU 8i+j, no
 * trailing zero bytes; an empty set is an empty array (which means "no
 * restriction" to systemd).  *OUT is malloc()ed (NULL when *LEN is 0).  Fails
 * (CP_ERR_INPUT) on an infinite set.  Pure. */
int cp_systemd_cpuset_bytes (hwloc_const_bitmap_t set, uint8_t **out, size_t *len, cp_error_t *err);

struct cp_systemd;

/* For cgroup CG: 0 with *OUT an open, authenticated connection to systemd for
 * CG's unit, or 0 with *OUT NULL when the conditions above do not hold (*WHY
 * says which, for a debug line); -1 when systemd should be told but cannot be
 * asked (the bus refuses, a call fails).  Run it before the sandbox. */
int cp_systemd_open (const struct cp_cgroup *cg, struct cp_systemd **out, const char **why, cp_error_t *err);

/* The connection's socket, for the sandbox (sandbox.h). */
int cp_systemd_fd (const struct cp_systemd *sd);

/* The unit's name. */
const char *cp_systemd_unit (const struct cp_systemd *sd);

/* SetUnitProperties(unit, runtime=true, AllowedCPUs=CPUS, AllowedMemoryNodes=MEMS).
 * MEMS NULL: AllowedMemoryNodes is left as it is.  Empty sets clear the
 * properties (what a release does). */
int cp_systemd_set_cpuset (struct cp_systemd *sd, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
                           cp_error_t *err);

/* The placer reaches all this through the managers' table (manager.h):
 * cp_manager_systemd's detect() is cp_systemd_open(), its report() a debug line
 * when systemd is not told and one warning when it cannot be asked, its apply()
 * and clear() cp_systemd_set_cpuset(), their failure one warning; none of it
 * fails the placement. */

void cp_systemd_close (struct cp_systemd *sd);

#ifdef CACHEPIN_FAULT_INJECTION
/* Tests only: load LIBRARY instead of libsystemd.so.0, and take BOOTED_DIR for
 * /run/systemd/system/ (NULL: the real one). */
void cp_systemd_set_test_paths (const char *library, const char *booted_dir);
#endif
void cp_systemd_closep (struct cp_systemd **sd);
#define cleanup_systemd __attribute__ ((cleanup (cp_systemd_closep)))

#endif
