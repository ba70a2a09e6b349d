/* cachepin: what the scheduler probe's two modules share (sched.h): sched_cas.c,
 * cache-aware scheduling's debugfs switch, and sched.c, core scheduling, the boot
 * option and the probe of everything; the tests may use it too. */
#ifndef CP_SCHED_INTERNAL_H
#define CP_SCHED_INTERNAL_H

#include "sched.h"

#include <sys/prctl.h>

/* PR_SCHED_CORE (sched.c, sched_core_helper.c), where older libc headers lack it
   (Debian 12's has it; musl's may not). */
#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif
#ifndef PR_SCHED_CORE_CREATE
#define PR_SCHED_CORE_CREATE 1
#endif
/* enum pid_type of the kernel, as PR_SCHED_CORE's scope argument. */
#define CP_PIDTYPE_PID 0
#define CP_PIDTYPE_TGID 1

/* A kernel switch file holds one short line, but sysfs files claim a page
 * (st_size 4096) whatever they hold, and cp_io_read_at() refuses a file whose
 * size is over the bound: a page it is. */
#define CP_SCHED_SWITCH_MAX 4096

/* ROOT, opened O_PATH as the directory every probe's path is taken under. */
int cp_sched_open_root (const char *root, cp_error_t *err);

/* "0"/"1" (or debugfs bool's "N"/"Y"), one optional newline: 0 or 1, else -1. */
int cp_sched_parse_switch (const char *text);

#endif
