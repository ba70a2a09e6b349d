/* cachepin: helper processes (helper.h). */
#define _GNU_SOURCE
#include "helper.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t
cp_helper_fork (const char *what, int *fd, cp_error_t *err)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return cp_fail_errno (err, errno, "%s: the socket pair", what);
  pid_t parent = getpid ();
  pid_t pid = fork ();
  if (pid < 0)
    {
      int e = errno;
      close (sv[0]);
      close (sv[1]);
      return cp_fail_errno (err, e, "%s: fork", what);
    }
  if (pid == 0)
    {
      close (sv[0]);
      if (prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid () != parent)
        _exit (1); /* the parent is gone already */
      *fd = sv[1];
      return 0;
    }
  close (sv[1]);
  *fd = sv[0];
  return pid;
}

void
cp_helper_stop (int *fd, pid_t *pid)
{
  if (*fd >= 0)
    close (*fd);
  if (*pid > 0)
    waitpid (*pid, NULL, 0);
  *fd = -1;
  *pid = 0;
}
