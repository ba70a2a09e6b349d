/* cachepin: a container's cgroup from what its runtime says of it (config.json's
 * linux.cgroupsPath, or the same value from NRI), in either manager's form
 * (cgroupfs, systemd's slice:prefix:name), for a front end that is told it rather
 * than placed inside it (the NRI agent). */
#ifndef CP_LOCATE_H
#define CP_LOCATE_H

#include "cgroup.h"
#include "config.h"
#include "error.h"

/* Where the cgroup CFG names for container ID lies, without opening it (it may not
   exist yet): its mount and its path below it (the caller frees both), located in
   MOUNTS (/proc/self/cgroup and mountinfo read once by the caller; NULL: now).  < 0
   (*ERR) when CFG names none. */
int cp_locate_cgroup (const char *id, const struct cp_oci_config *cfg, const struct cp_cgroup_snapshot *mounts,
                      char **mount, char **cgroup, cp_error_t *err);

/* The cgroup CFG names for container ID, opened (it exists once the container has
   started). */
int cp_locate_cgroup_open (const char *id, const struct cp_oci_config *cfg, struct cp_cgroup **cg, cp_error_t *err);

#endif
