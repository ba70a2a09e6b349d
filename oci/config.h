/* cachepin: what the hook needs from the bundle's config.json (OCI runtime spec).
 *
 * Only a few fields are read and checked; the rest of the document must still be
 * well-formed JSON (cp_json_parse_object: no duplicate keys, no trailing data). */
#ifndef CP_OCI_CONFIG_H
#define CP_OCI_CONFIG_H

#include <hwloc.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "annotations.h"

/* Bound on config.json (real ones are a few KiB; annotations are at most 256 KiB
 * under Kubernetes). */
#define CP_OCI_CONFIG_MAX_SIZE (4 * 1024 * 1024)
/* Bound on linux.cgroupsPath (PATH_MAX - 1). */
#define CP_OCI_PATH_MAX 4095
/* The CFS period the kernel uses when linux.resources.cpu.period is not set. */
#define CP_OCI_DEFAULT_CPU_PERIOD CP_DEFAULT_CPU_PERIOD

struct cp_oci_config
{
  struct cp_annotations annotations; /* "annotations"; empty when absent */
  hwloc_bitmap_t cpus;               /* linux.resources.cpu.cpus as the kernel reads it
                                        (CP_CPULIST_KERNEL); NULL when absent, "" or blank.
                                        A bound on where the container may run, never a
                                        count (oci/annotations.h) */
  hwloc_bitmap_t mems;               /* linux.resources.cpu.mems, the same way */
  int64_t quota;                     /* linux.resources.cpu.quota in us; <= 0: none (absent, -1) */
  uint64_t period;                   /* linux.resources.cpu.period in us; 0: absent */
  char *cgroups_path;                /* linux.cgroupsPath; NULL when absent */
  char *cgroupfs_path;               /* the same when it is an absolute cgroupfs path, cleaned as the
                                        runtimes do ("//a/./b/" is "/a/b"); NULL when absent, relative
                                        (to the runtime's cgroup) or systemd's "slice:prefix:name" */
  char *systemd_path;                /* a systemd "slice:prefix:name" as the cgroup path runc and
                                        crun make of it ("/machine.slice/libpod-ID.scope"); NULL
                                        otherwise, or with an empty slice (the runtimes' defaults
                                        differ). Only the poststop's identity uses it */
};

/* Read BUNDLE/config.json.  BUNDLE may have symlinks in it; config.json itself
 * must not be one, and must be a regular file of at most CP_OCI_CONFIG_MAX_SIZE
 * bytes.  I/O errors name the file ("/b/config.json: open: No such file or
 * directory"); content errors name the field ("config.json:
 * linux.resources.cpu.quota: expected an integer, got \"5\""). */
int cp_oci_config_load (const char *bundle, struct cp_oci_config *out, cp_error_t *err);

/* Parse the text of a config.json (LEN bytes); errors as above. */
int cp_oci_config_parse (const char *buf, size_t len, struct cp_oci_config *out, cp_error_t *err);

/* What a runtime hands a plugin in place of a config.json (NRI's LinuxContainer):
 * the same fields, each NULL when absent. */
struct cp_oci_values
{
  const char *cgroups_path; /* linux.cgroupsPath */
  const char *cpus, *mems;  /* linux.resources.cpu.cpus and .mems */
  const int64_t *quota;     /* linux.resources.cpu.quota */
  const uint64_t *period;   /* linux.resources.cpu.period */
};

/* OUT from V, with config.json's rules and field names in the errors (no JSON in
 * between: the NRI plugin's request is built from the runtime's values). */
int cp_oci_config_from_values (const struct cp_oci_values *v, struct cp_oci_config *out, cp_error_t *err);

/* CFG's limits for cp_annotations_to_request(): linux.resources.cpu's quota,
 * period, cpus and mems (pointing into CFG).  Returns OUT, or NULL when CFG is
 * NULL (no config: no limits known). */
const struct cp_limits *cp_oci_config_limits (const struct cp_oci_config *cfg, struct cp_limits *out);

/* Free what OUT holds (it is left zeroed); a zeroed struct is fine. */
void cp_oci_config_free (struct cp_oci_config *cfg);

#endif
