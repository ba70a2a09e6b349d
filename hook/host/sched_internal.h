/* cachepin: what the scheduler probe's two modules share (sched.h): sched_cas.c,
 * cache-aware scheduling's debugfs switch, and sched.c, core scheduling, the boot
 * option and the probe of everything; the tests may use it too. */
#ifndef CP_SCHED_INTERNAL_H
#define CP_SCHED_INTERNAL_H

#include "sched.h"

/* A kernel switch file holds one short line, but sysfs files claim a page
 * (st_size 4096) whatever they hold, and cp_io_read_at() refuses a file whose
 * size is over the bound: a page it is. */
#define CP_SCHED_SWITCH_MAX 4096

/* ROOT, opened O_PATH as the directory every probe's path is taken under. */
int cp_sched_open_root (const char *root, cp_error_t *err);

/* "0"/"1" (or debugfs bool's "N"/"Y"), one optional newline: 0 or 1, else -1. */
int cp_sched_parse_switch (const char *text);

#endif
