/* cachepin: is a process still the one we saw?  Its start time from /proc/<pid>/stat.
 *
 * The ledger records a container's init pid with its start time (field 22 of
 * /proc/<pid>/stat, clock ticks after boot): a pid that is running with the same
 * start time is the same process, one with another start time is a reused pid. */
#ifndef CP_PROC_H
#define CP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Longest /proc/<pid>/stat we read: 52 numbers and a comm of at most 15 bytes
 * come well under 1 KiB. */
#define CP_PROC_STAT_MAX 4096

/* Parse the text of a /proc/<pid>/stat (LEN bytes, not necessarily NUL-terminated)
 * into its start time (field 22) and its state (field 3; STATE may be NULL).  The
 * comm field (2) may hold spaces and parentheses, so the fields are counted from
 * the LAST ')'.  Pure: for the tests and the fuzz target.  CP_ERR_INPUT. */
int cp_proc_parse_stat (const char *buf, size_t len, unsigned long long *start_time, char *state, cp_error_t *err);

/* Start time of PID from /proc/PID/stat, and whether it is a zombie (or dead;
 * ZOMBIE may be NULL).  Fails with errnum ENOENT or ESRCH when there is no such
 * process. */
int cp_proc_start_time (pid_t pid, unsigned long long *start_time, bool *zombie, cp_error_t *err);

/* The parent pid (field 4) in the text of a /proc/<pid>/stat.  Pure; CP_ERR_INPUT. */
int cp_proc_parse_ppid (const char *buf, size_t len, pid_t *ppid, cp_error_t *err);

/* 1 when PID is ANCESTOR or one of its descendants (by /proc's parent pids), 0 when
 * not, -1 when /proc could not tell (errnum ENOENT/ESRCH: a process of the chain
 * is gone). */
int cp_proc_descends_from (pid_t pid, pid_t ancestor, cp_error_t *err);

/* Whether UID_MAP (the text of /proc/<pid>/uid_map) is the initial user
 * namespace's identity map, "0 0 4294967295".  Pure. */
bool cp_proc_uid_map_is_initial (const char *uid_map);

/* Why this process cannot place containers, or NULL: it is not uid 0, or it runs
 * in a user namespace (a rootless runtime: its "root" cannot write the host's
 * cgroups nor /run/cachepin).  A phrase for messages; the caller frees it. */
char *cp_proc_rootless_reason (void);

#endif
