/* cachepin: the kernel's scheduler features: what this kernel offers and how.
 *
 *  - cache-aware scheduling (CAS, CONFIG_SCHED_CACHE): the load balancer packs
 *    the threads of one process onto one LLC.  A global on/off switch in debugfs,
 *    in one of three shapes (enum cp_sched_cas_iface);
 *  - core scheduling (CONFIG_SCHED_CORE): prctl(PR_SCHED_CORE) cookies, so that
 *    only tasks with the same cookie share a core's SMT siblings;
 *  - the `sched_smt_asym_packing=on` boot option (SMT sibling preference on cores
 *    with a single-thread mode): a boot option only, reported and never set.
 *
 * Every path is taken under a ROOT directory ("/" in production), so that tests
 * point it at a fake tree.  "Not there", "not mounted" and "not allowed" are
 * states of the result, not errors: a probe fails only when something it cannot
 * classify goes wrong (an unreadable mountinfo aside, an I/O error, a kernel file
 * whose text we cannot parse). */
#ifndef CP_SCHED_H
#define CP_SCHED_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Where CAS's switch is (paths under ROOT). */
#define CP_SCHED_DEBUGFS "sys/kernel/debug"
#define CP_SCHED_CAS_DIR "sys/kernel/debug/sched/llc_balancing" /* 7.2+: enabled, ... */
#define CP_SCHED_SCHED_DIR "sys/kernel/debug/sched"              /* llc_enabled, features */

enum cp_sched_cas_iface
{
  CP_SCHED_CAS_IFACE_NONE = 0,
  CP_SCHED_CAS_IFACE_DIR,         /* sched/llc_balancing/enabled (merged in 7.2) */
  CP_SCHED_CAS_IFACE_LLC_ENABLED, /* sched/llc_enabled (posted versions before 7.2) */
  CP_SCHED_CAS_IFACE_FEATURES,    /* SCHED_CACHE / NO_SCHED_CACHE in sched/features */
};

enum cp_sched_avail
{
  CP_SCHED_SUPPORTED = 0, /* there, and the value could be read */
  CP_SCHED_UNSUPPORTED,   /* this kernel has no such feature (or no SMT, for core scheduling) */
  CP_SCHED_NO_DEBUGFS,    /* CAS: debugfs is not mounted at ROOT/sys/kernel/debug */
  CP_SCHED_DENIED,        /* EACCES/EPERM: not root, kernel lockdown, a container's view */
};

struct cp_sched_cas
{
  enum cp_sched_avail avail;
  enum cp_sched_cas_iface iface; /* known for SUPPORTED, and for DENIED when the file was seen */
  int enabled;                   /* 0 or 1 when SUPPORTED, else -1 */
  int errnum;                    /* the errno behind DENIED, else 0 */
};

enum cp_sched_core_avail
{
  CP_SCHED_CORE_SUPPORTED = 0, /* PR_SCHED_CORE_GET on ourselves worked */
  CP_SCHED_CORE_NO_CONFIG,     /* EINVAL: no CONFIG_SCHED_CORE (prctl does not know the option) */
  CP_SCHED_CORE_NO_SMT,        /* ENODEV: built in, but this machine has no SMT (or it is off) */
  CP_SCHED_CORE_DENIED,        /* EPERM/EACCES (a seccomp filter, say) */
};

struct cp_sched_core
{
  enum cp_sched_core_avail avail;
  int errnum;     /* the prctl's errno, 0 when SUPPORTED */
  int smt_active; /* ROOT/sys/devices/system/cpu/smt/active: 1, 0, or -1 when absent */
};

enum cp_sched_boot
{
  CP_SCHED_BOOT_UNSET = 0, /* not on the command line */
  CP_SCHED_BOOT_ON,
  CP_SCHED_BOOT_OFF,
  CP_SCHED_BOOT_INVALID, /* given with a value the kernel's bool parser refuses */
  CP_SCHED_BOOT_UNKNOWN, /* ROOT/proc/cmdline cannot be read */
};

struct cp_sched_state
{
  struct cp_sched_cas cas;
  struct cp_sched_core core;
  enum cp_sched_boot smt_asym_packing;
};

/* What every error of cp_sched_cas_probe(), cp_sched_cas_open() and
 * cp_sched_cas_set() begins with (once: their callers do not add it again).
 * cp_sched_cas_read() and cp_sched_cas_write() leave it to their caller. */
#define CP_SCHED_CAS_PREFIX "cache-aware scheduling"

/* Probe everything: CAS under ROOT, core scheduling with a prctl on this process
 * (plus ROOT's smt/active), the boot option in ROOT/proc/cmdline.  Fails only on
 * errors that are none of the states above. */
int cp_sched_probe (const char *root, struct cp_sched_state *out, cp_error_t *err);

/* CAS alone (see cp_sched_probe). */
int cp_sched_cas_probe (const char *root, struct cp_sched_cas *out, cp_error_t *err);

/* What cp_sched_cas_set() did. */
struct cp_sched_cas_change
{
  enum cp_sched_cas_iface iface;
  int before;   /* 0 or 1 */
  int after;    /* 0 or 1, as read back after the write */
  bool written; /* false: it already was at the wanted value, nothing was written */
};

/* CAS's switch, open for reading and writing: the hook opens it before it enters
 * its sandbox (hook/host/sandbox.h), which allows no new file outside the state
 * directory and the cgroup, and reads and writes it afterwards. */
struct cp_sched_cas_handle
{
  enum cp_sched_cas_iface iface;
  int fd; /* -1: not open */
  char *name;
};

/* Probe CAS under ROOT into *CAS and, when it is supported, open its switch
 * (O_RDWR, never through a symlink) into *OUT.  A switch that reads but does not
 * open for writing turns *CAS into CP_SCHED_DENIED.  *OUT->fd is -1 unless *CAS
 * says CP_SCHED_SUPPORTED.  Errors as cp_sched_cas_probe(). */
int cp_sched_cas_open (const char *root, struct cp_sched_cas *cas, struct cp_sched_cas_handle *out,
                       cp_error_t *err);

/* The switch's value now: 0 or 1 (pread: works after the sandbox is entered). */
int cp_sched_cas_read (const struct cp_sched_cas_handle *h, int *value, cp_error_t *err);

/* cp_sched_cas_set() on an open switch. */
int cp_sched_cas_write (const struct cp_sched_cas_handle *h, bool on, struct cp_sched_cas_change *out,
                        cp_error_t *err);

/* The switch file this kernel has under ROOT (ROOT/sys/kernel/debug/sched/...),
 * as cp_sched_cas_probe() finds it, for a long-running process to be allowed it
 * before it enters its sandbox (hook/host/sandbox.h's WRITE_FILES); NULL when
 * there is none to name (unsupported, debugfs not mounted, denied before the
 * file could be seen).  The caller frees it. */
char *cp_sched_cas_switch_file (const char *root);

/* Close the switch; a closed or never-opened handle is fine. */
void cp_sched_cas_close (struct cp_sched_cas_handle *h);

/* Turn CAS on or off under ROOT, writing only when the value differs (one
 * write(2) of "0"/"1", or of SCHED_CACHE/NO_SCHED_CACHE to the features file),
 * then read it back: a value that does not read back as written is an error.
 * Unsupported, unmounted or denied CAS is an error here (the caller asked to
 * write); its errno is EOPNOTSUPP, ENOENT, or the EACCES/EPERM seen. */
int cp_sched_cas_set (const char *root, bool on, struct cp_sched_cas_change *out, cp_error_t *err);

/* Core scheduling from the outcome of PR_SCHED_CORE_GET on ourselves (RC, and
 * ERRNUM when RC < 0) and smt/active (1, 0, -1 unknown).  Pure; cp_sched_probe
 * feeds it the real prctl, tests every outcome.  Another errno is an error. */
int cp_sched_core_classify (int rc, int errnum, int smt_active, struct cp_sched_core *out, cp_error_t *err);

/* Core scheduling alone: PR_SCHED_CORE_GET on this process, classified with
 * ROOT's smt/active (see cp_sched_core_classify). */
int cp_sched_core_probe (const char *root, struct cp_sched_core *out, cp_error_t *err);

/* Give process PID (and every thread of its group, and what it forks later) a
 * new core-scheduling cookie: prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, PID,
 * PIDTYPE_TGID).  A runtime error with the prctl's errno on failure (EINVAL: no
 * CONFIG_SCHED_CORE; ENODEV: no SMT; ESRCH: no such process; EPERM: not allowed). */
int cp_sched_core_create (pid_t pid, cp_error_t *err);

/* The `sched_smt_asym_packing=` option in the text of /proc/cmdline (the last
 * occurrence wins, as the kernel parses it).  Pure. */
enum cp_sched_boot cp_sched_boot_parse (const char *cmdline);

/* The boot option alone, from ROOT/proc/cmdline (CP_SCHED_BOOT_UNKNOWN when it
 * cannot be read). */
enum cp_sched_boot cp_sched_boot_probe (const char *root);

/* Short names for messages and JSON ("dir", "supported", ...). */
const char *cp_sched_cas_iface_name (enum cp_sched_cas_iface iface);
const char *cp_sched_avail_name (enum cp_sched_avail avail);
const char *cp_sched_core_avail_name (enum cp_sched_core_avail avail);
const char *cp_sched_boot_name (enum cp_sched_boot boot);

#endif
