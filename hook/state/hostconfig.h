/* cachepin: the host configuration, /etc/cachepin/config.json.
 *
 *   {"cpus": "0-63",          CPUs the hook may hand out (default: all)
 *    "reserved": "0,32",      CPUs never handed out, for housekeeping (default: none)
 *    "defaults": {"align": "llc", "smt": "pe0-first", "mode": "exclusive",
 *                 "strict": false},   what annotations do not say; same spellings
 *                                     (strict: a JSON boolean or "true"/"false")
 *    "state_dir": "/run/cachepin",    absolute
 *    "on_error": "allow",     or "deny": whether a container starts when the hook fails
 *    "log_level": "info",     error | warning | info | debug
 *    "lock_timeout_ms": 5000, 1..60000
 *    "topology": "host",      or the absolute path of an hwloc XML file, or "sysfs:" and
 *                             the absolute path of a Linux sysfs/procfs dump (hwloc's
 *                             Linux discovery with that directory as its root: for
 *                             benchmarks and tests; hook/state/topocache.h)
 *    "sandbox": true,         false: no seccomp/Landlock sandbox (debugging only)
 *    "sched_cache": "leave",  the kernel's cache-aware scheduling switch (host-wide):
 *                             leave (never written), on-demand (on while a placed
 *                             container asks cachepin.io/sched-cache=on, then back to
 *                             what it was), always, never (hook/engine/schedctl.h)
 *    "isolate": "allow",      or "deny": whether a container asking cachepin.io/isolate
 *                             gets a cgroup v2 partition (deny: placed without one,
 *                             a warning; strict: refused before anything is written)
 *    "kernel_root": "/",      where /sys and /proc are found for the kernel features
 *                             (tests point it at a fake tree)
 *    "kubelet_state": "/var/lib/kubelet/cpu_manager_state",
 *                             the kubelet CPU manager's state file: when it names the
 *                             static policy, the hook and `status` warn that the
 *                             kubelet rewrites cpusets (hook/host/kubelet.h); "" = never look
 *    "cdi_dir": "/var/run/cdi"}  absolute: where a prepared DRA claim's CDI spec is
 *                             written (hook/host/cdi.h), the runtime's CDI spec directory
 * Every key is optional; an unknown key is an error, as is any malformed value,
 * in one line naming the file and the field:
 *   /etc/cachepin/config.json: on_error: expected "allow" or "deny", got "maybe"
 * The file may be a symlink (admins manage /etc that way) but must be a regular
 * file of at most CP_HOSTCONFIG_MAX_SIZE bytes. */
#ifndef CP_HOSTCONFIG_H
#define CP_HOSTCONFIG_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "request.h"
#include "log.h"

#define CP_HOSTCONFIG_DEFAULT_PATH "/etc/cachepin/config.json"
#define CP_HOSTCONFIG_MAX_SIZE (1024 * 1024)
#define CP_HOSTCONFIG_PATH_MAX 4095
#define CP_HOSTCONFIG_LOCK_TIMEOUT_DEFAULT 5000
#define CP_HOSTCONFIG_LOCK_TIMEOUT_MAX 60000
#define CP_HOSTCONFIG_KUBELET_STATE "/var/lib/kubelet/cpu_manager_state"
#define CP_HOSTCONFIG_CDI_DIR "/var/run/cdi"

enum cp_on_error
{
  CP_ON_ERROR_ALLOW = 0, /* log, and let the container start unplaced */
  CP_ON_ERROR_DENY,      /* fail the hook, so the runtime fails the container */
};

/* The host setting `sched_cache` (hook/engine/schedctl.h says what each does). */
enum cp_sched_cache_setting
{
  CP_SCHED_CACHE_LEAVE = 0,
  CP_SCHED_CACHE_ON_DEMAND,
  CP_SCHED_CACHE_ALWAYS,
  CP_SCHED_CACHE_NEVER,
};

/* The host setting `isolate`: may a container's CPUs become a cgroup v2 partition
   (cachepin.io/isolate, `--isolate`)? */
enum cp_isolate_setting
{
  CP_ISOLATE_ALLOW = 0,
  CP_ISOLATE_DENY,
};

struct cp_hostconfig
{
  char *path;               /* the file read; NULL when none was (defaults) */
  hwloc_bitmap_t cpus;      /* may be handed out; the default is the full (infinite)
                               set: and it with the topology's CPUs */
  hwloc_bitmap_t reserved;  /* never handed out; empty by default */
  struct cp_request defaults; /* cpus is always 0 */
  char *state_dir;
  enum cp_on_error on_error;
  enum cp_log_level log_level;
  unsigned lock_timeout_ms;
  char *topology;           /* "host", an absolute path, or "sysfs:" + an absolute path */
  bool sandbox;             /* enter hook/host/sandbox.h once inputs are read (default true) */
  enum cp_sched_cache_setting sched_cache;
  char *kernel_root;        /* "/" unless a test says otherwise */
  char *kubelet_state;      /* the kubelet's cpu_manager_state; "": not looked at */
  char *cdi_dir;            /* the CDI spec directory prepared DRA claims are written to */
  enum cp_isolate_setting isolate;
};

/* The defaults, as if from an empty file. */
void cp_hostconfig_init (struct cp_hostconfig *hc);

/* Load PATH, or CP_HOSTCONFIG_DEFAULT_PATH when PATH is NULL.  A missing file at
 * the default path gives the defaults; at a path given explicitly it is an error
 * (errnum ENOENT).  On failure *OUT holds nothing to free. */
int cp_hostconfig_load (const char *path, struct cp_hostconfig *out, cp_error_t *err);

/* Parse BUF (LEN bytes) read from NAME (used in the messages and kept as path). */
int cp_hostconfig_parse (const char *buf, size_t len, const char *name, struct cp_hostconfig *out,
                         cp_error_t *err);

/* Free what HC holds (it is left zeroed); a zeroed struct is fine. */
void cp_hostconfig_free (struct cp_hostconfig *hc);

const char *cp_on_error_name (enum cp_on_error on_error);
const char *cp_sched_cache_setting_name (enum cp_sched_cache_setting setting);
const char *cp_isolate_setting_name (enum cp_isolate_setting setting);

#endif
