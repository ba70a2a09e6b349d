/* cachepin: core-scheduling cookies made by a helper process, for a sandboxed
 * process that lives long (the NRI plugin).
 *
 * prctl(PR_SCHED_CORE_CREATE) on another process asks ptrace_may_access()
 * (kernel/sched/core_sched.c), and Landlock refuses that for any process outside
 * the caller's domain (security/landlock/task.c): once the plugin has entered its
 * sandbox (sandbox.h) it cannot give a container a cookie, and it has no fork
 * left to start something that could.  So the helper is forked before: it keeps
 * no descriptor but its end of a socket pair, loads a seccomp filter that allows
 * reading and writing that socket, the one prctl (PR_SCHED_CORE, _CREATE, any pid,
 * PIDTYPE_TGID) and exiting, keeps of its capabilities CAP_SYS_PTRACE alone (runc's
 * init is not dumpable when the cookie is made), and answers each pid with the
 * prctl's errno.  It is
 * not in a Landlock domain, so the kernel judges its prctl as root's.  It dies
 * with its parent (PR_SET_PDEATHSIG) or when the socket closes. */
#ifndef CP_SCHED_CORE_HELPER_H
#define CP_SCHED_CORE_HELPER_H

#include <sys/types.h>

#include "error.h"

struct cp_sched_core_helper
{
  int fd;    /* -1: not started */
  pid_t pid; /* the helper process */
};

#define CP_SCHED_CORE_HELPER_INIT { .fd = -1, .pid = 0 }

/* Fork the helper into *H.  A runtime error when the socket pair or the fork
 * fails; a helper whose filter does not load exits, and its first answer says so
 * (EPIPE). */
int cp_sched_core_helper_start (struct cp_sched_core_helper *h, cp_error_t *err);

/* cp_sched_core_create() for PID, made by the helper: the same error and errno
 * (EINVAL: no CONFIG_SCHED_CORE; ENODEV: no SMT; ESRCH; EPERM), or EPIPE when the
 * helper is gone. */
int cp_sched_core_helper_create (const struct cp_sched_core_helper *h, pid_t pid, cp_error_t *err);

/* Close the socket (the helper exits) and reap it where that is allowed. */
void cp_sched_core_helper_stop (struct cp_sched_core_helper *h);

#endif
