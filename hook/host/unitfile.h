/* cachepin: a systemd unit's drop-in and systemctl, for `cachepin apply --unit`.
 *
 * What it writes is a drop-in (systemd.unit(5), "drop-in directories"): one file,
 * /etc/systemd/system/NAME.service.d/50-cachepin.conf (or under /run/systemd/system
 * for one that a reboot forgets), whose ExecStartPre= and ExecStopPost= run cachepin
 * at each start and stop of the service (hook/engine/unitpin.h says why).  What it
 * asks of systemd (whether the unit exists, its cgroup, a daemon-reload) goes
 * through systemctl, the administrator's own client: a reload waits for systemd
 * to finish, and a refusal comes back in systemd's words.  No bus of our own here:
 * `apply --unit` is a command an administrator runs, never in a sandbox.
 *
 * Knows nothing of placements: it writes and runs what it is told. */
#ifndef CP_UNITFILE_H
#define CP_UNITFILE_H

#include <stdbool.h>

#include "error.h"

/* Where a drop-in goes: persistent (/etc) or until the next reboot (/run). */
#define CP_UNITFILE_DIR_ETC "/etc/systemd/system"
#define CP_UNITFILE_DIR_RUN "/run/systemd/system"
#define CP_UNITFILE_DROPIN "50-cachepin.conf"

/* UNIT is a service's name as systemd spells one: "NAME.service" (an instance
 * "NAME@INST.service" too), at most 255 bytes of ASCII letters, digits and
 * ":-_.\\@".  CP_ERR_INPUT naming what is wrong, for the caller to prefix. */
int cp_unitfile_check_name (const char *unit, cp_error_t *err);

/* Whether PID 1 is systemd (sd_booted(): /run/systemd/system exists). */
bool cp_unitfile_systemd_booted (void);

/* Whether /sys/fs/cgroup is the unified hierarchy (cgroup v2): the only one where
 * systemd gives each service a cgroup with a cpuset. */
bool cp_unitfile_unified (void);

/* ARG as one word of an Exec= line: double-quoted, with `\` and `"` escaped, `%`
 * doubled (a specifier otherwise) and `$` doubled (a variable otherwise).  Pure;
 * the caller frees. */
char *cp_unitfile_quote (const char *arg);

/* The drop-in's path for UNIT under DIR (CP_UNITFILE_DIR_*); the caller frees. */
char *cp_unitfile_dropin_path (const char *dir, const char *unit);

/* The drop-in's text: a comment naming COMMAND (what wrote it) and how to undo
 * it, then [Service] with `ExecStartPre=+START` and `ExecStopPost=+STOP` (the `+`:
 * with full privileges whatever the unit's own sandboxing, User= or
 * ProtectSystem=).  START and STOP are whole Exec= command lines (their words
 * quoted with cp_unitfile_quote()).  Pure; the caller frees. */
char *cp_unitfile_dropin_text (const char *command, const char *start, const char *stop);

/* Write TEXT to PATH (its directory made when missing, mode 0755; the file 0644),
 * through a temporary file renamed over it, so that systemd never reads half. */
int cp_unitfile_write (const char *path, const char *text, cp_error_t *err);

/* Remove UNIT's drop-in from both places (and their directories when left empty).
 * Returns how many were removed (0: none was there), < 0 on a failure. */
int cp_unitfile_remove (const char *unit, cp_error_t *err);

/* Run `systemctl ARGS...` (ARGS NULL-terminated, without "systemctl"), waiting for
 * it.  *OUT (may be NULL: not kept) its standard output with the last newline cut.
 * Fails (CP_ERR_SYSTEM) when it cannot run or exits non-zero, with the first line
 * it printed on standard error. */
int cp_unitfile_systemctl (const char *const *args, char **out, cp_error_t *err);

/* Make sure UNIT's cgroup CGROUP (systemd's ControlGroup, below /sys/fs/cgroup) can
 * have a cpuset: systemd enables the cpuset controller on a slice only while one of
 * its units has a cpuset property, and takes it away again at its next realize
 * when none has (so writing +cpuset into the slice's cgroup.subtree_control
 * ourselves would not last).  When the parent has no cpuset.cpus.effective,
 * `systemctl set-property --runtime UNIT AllowedMemoryNodes=<every online node>`
 * (no restriction: the placement narrows it) asks systemd for it.  1: asked; 0:
 * there already. */
int cp_unitfile_want_cpuset (const char *unit, const char *cgroup, cp_error_t *err);

/* This program's own path (/proc/self/exe), for the Exec= lines; the caller frees. */
int cp_unitfile_self (char **out, cp_error_t *err);

#endif
