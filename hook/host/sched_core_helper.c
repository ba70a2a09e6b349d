/* cachepin: the core-scheduling helper process (sched_core_helper.h). */
#define _GNU_SOURCE
#include "sched_core_helper.h"

#include <errno.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "helper.h"
#include "sandbox.h"
#include "sched_internal.h"
#include "util.h"

/* The helper's whole allowance: its socket, the one prctl, exiting. */
static int
helper_filter (int fd)
{
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ERRNO (EPERM));
  if (ctx == NULL)
    return -1;
  int r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  const uint32_t allow = SCMP_ACT_ALLOW;
  if (r == 0)
    r = seccomp_rule_add (ctx, allow, SCMP_SYS (read), 1, SCMP_A0 (SCMP_CMP_EQ, (uint64_t) fd));
  if (r == 0)
    r = seccomp_rule_add (ctx, allow, SCMP_SYS (write), 1, SCMP_A0 (SCMP_CMP_EQ, (uint64_t) fd));
  if (r == 0)
    r = seccomp_rule_add (ctx, allow, SCMP_SYS (prctl), 3, SCMP_A0 (SCMP_CMP_EQ, (uint64_t) PR_SCHED_CORE),
                          SCMP_A1 (SCMP_CMP_EQ, (uint64_t) PR_SCHED_CORE_CREATE),
                          SCMP_A3 (SCMP_CMP_EQ, (uint64_t) CP_PIDTYPE_TGID));
  if (r == 0)
    r = seccomp_rule_add (ctx, allow, SCMP_SYS (exit_group), 0);
  if (r == 0)
    r = seccomp_rule_add (ctx, allow, SCMP_SYS (exit), 0);
  /* A sanitizer build's runtime calls sigaltstack and more on the way out (a
     refused one spins in its CHECK): there the filter is built, not loaded, as
     sandbox.h says of the hook's and the plugin's. */
  if (r == 0 && !CP_SANDBOX_SANITIZER_BUILD)
    r = seccomp_load (ctx);
  seccomp_release (ctx);
  return r;
}

/* The child: one pid in, the prctl's errno out (0: made), until the socket closes. */
static _Noreturn void
helper_main (int fd)
{
  /* Nothing of the parent's but the socket: not the runtime's connection, not
     syslog's, not the ledger's directory. */
  if (close_range (3, (unsigned) fd - 1, 0) < 0 || close_range ((unsigned) fd + 1, ~0U, 0) < 0)
    _exit (1);
  /* Of root's capabilities the prctl needs one: ptrace_may_access() on runc's init,
     which is not dumpable (runc makes it so when it joins the pod's namespaces) until
     it execs the container's program, asks for CAP_SYS_PTRACE. */
  cp_error_t caps_err = NULL;
  if (cp_caps_keep_only (CAP_SYS_PTRACE, &caps_err) < 0)
    _exit (1);
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || helper_filter (fd) < 0)
    _exit (1);
  for (;;)
    {
      int32_t pid, e = 0;
      ssize_t n = read (fd, &pid, sizeof pid);
      if (n < 0 && errno == EINTR)
        continue;
      if (n != (ssize_t) sizeof pid)
        _exit (n == 0 ? 0 : 1);
      if (pid <= 0)
        e = ESRCH; /* not a process; pid 0 would be the helper itself */
      else if (prctl (PR_SCHED_CORE, PR_SCHED_CORE_CREATE, (unsigned long) pid, CP_PIDTYPE_TGID, 0UL) < 0)
        e = errno;
      if (write (fd, &e, sizeof e) != (ssize_t) sizeof e)
        _exit (1);
    }
}

int
cp_sched_core_helper_start (struct cp_sched_core_helper *h, cp_error_t *err)
{
  *h = (struct cp_sched_core_helper) CP_SCHED_CORE_HELPER_INIT;
  int fd;
  pid_t pid = cp_helper_fork ("core scheduling: the helper", &fd, err);
  if (pid < 0)
    return -1;
  if (pid == 0)
    helper_main (fd);
  h->fd = fd;
  h->pid = pid;
  return 0;
}

int
cp_sched_core_helper_create (const struct cp_sched_core_helper *h, pid_t pid, cp_error_t *err)
{
  int32_t p = (int32_t) pid, e = 0;
  ssize_t n;
  do
    n = send (h->fd, &p, sizeof p, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n == (ssize_t) sizeof p)
    do
      n = recv (h->fd, &e, sizeof e, 0);
    while (n < 0 && errno == EINTR);
  if (n != (ssize_t) sizeof e)
    return cp_fail_errno (err, n < 0 ? errno : EPIPE, "core scheduling: the helper process %ld", (long) h->pid);
  if (e != 0)
    return cp_fail_errno (err, e, "core scheduling: create a cookie for pid %ld", (long) pid);
  return 0;
}

void
cp_sched_core_helper_stop (struct cp_sched_core_helper *h)
{
  cp_helper_stop (&h->fd, &h->pid);
}
