/* cachepin: helper processes, forked before the sandbox for what the sandboxed NRI
 * plugin may not do itself (sched_core_helper.h: core-scheduling cookies;
 * partition_helper.h: cgroup v2 partitions).  Each talks with the plugin over one
 * SOCK_SEQPACKET socket pair, a request and its answer at a time, and dies with it. */
#ifndef CP_HELPER_H
#define CP_HELPER_H

#include <sys/types.h>

#include "error.h"

/* The socket pair made, then fork().  In the parent: the child's pid, *FD the
 * parent's end.  In the child: 0, *FD the child's end (the other closed: its EOF is
 * the child's signal to exit), PR_SET_PDEATHSIG SIGKILL set, and the child already
 * gone (_exit(1)) when the parent died before that.  -1 with *ERR, named by WHAT,
 * when the pair or the fork fails. */
pid_t cp_helper_fork (const char *what, int *fd, cp_error_t *err);

/* Close *FD (the helper exits at its end) and reap *PID where that is allowed (in a
 * sandbox wait4 is refused: a zombie till the parent exits); both reset. */
void cp_helper_stop (int *fd, pid_t *pid);

#endif
