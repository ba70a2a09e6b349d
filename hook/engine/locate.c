/* A container's cgroup from what its runtime says of it (locate.h). */
#include "locate.h"

/* The path CFG names in either manager's form, or NULL (*ERR). */
static const char *
named (const char *id, const struct cp_oci_config *cfg, cp_error_t *err)
{
  const char *path = cfg->cgroupfs_path ? cfg->cgroupfs_path : cfg->systemd_path;
  if (path == NULL)
    cp_fail_runtime (err, "container %s: its linux.cgroupsPath (`%s`) names no cgroup", id,
                     cfg->cgroups_path ? cfg->cgroups_path : "");
  return path;
}

int
cp_locate_cgroup (const char *id, const struct cp_oci_config *cfg, const struct cp_cgroup_snapshot *mounts,
                  char **mount, char **cgroup, cp_error_t *err)
{
  const char *path = named (id, cfg, err);
  if (path == NULL)
    return -1;
  return cp_cgroup_locate_path_in (mounts, path, mount, cgroup, err);
}

int
cp_locate_cgroup_open (const char *id, const struct cp_oci_config *cfg, struct cp_cgroup **cg, cp_error_t *err)
{
  const char *path = named (id, cfg, err);
  if (path == NULL)
    return -1;
  if (cp_cgroup_from_path (path, cg, err) < 0)
    return cp_error_wrap (err, "container %s", id);
  return 0;
}
