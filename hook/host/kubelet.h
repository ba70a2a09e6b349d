/* cachepin: the other manager that cachepin cannot share a cgroup with: the
 * kubelet's CPU manager under its `static` policy.
 *
 * That policy's reconcile loop (pkg/kubelet/cm/cpumanager, every
 * --cpu-manager-reconcile-period, 10 s by default) writes every container's cpuset
 * to its own view: the shared pool for the Burstable and BestEffort containers and
 * for Guaranteed ones with fractional CPUs, whole CPUs of its choice for the others.
 * It undoes what cachepin writes within seconds, so the hook and `cachepin status`
 * say so (docs/managers.md).  The kubelet records its policy in its state file,
 * /var/lib/kubelet/cpu_manager_state:
 *   {"policyName":"static","defaultCpuSet":"0-3","entries":{...},"checksum":123}
 * Only policyName is read. */
#ifndef CP_KUBELET_H
#define CP_KUBELET_H

#include "error.h"

/* The largest state file read: the kubelet writes one entry per container. */
#define CP_KUBELET_STATE_MAX (4 * 1024 * 1024)

/* The policy named in the state file PATH: 1 and *POLICY (caller frees), 0 when
 * there is no such file (no kubelet, or PATH is ""), -1 when it cannot be read or
 * is not a state file (the error says which). */
int cp_kubelet_policy (const char *path, char **policy, cp_error_t *err);

/* The warning line for POLICY read from PATH, or NULL when that policy leaves
 * cpusets alone (`none`).  Caller frees. */
char *cp_kubelet_warning (const char *path, const char *policy);

#endif
