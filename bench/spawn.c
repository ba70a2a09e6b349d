/* bench-spawn: time one command for bench/hook-latency.sh.
 *
 *   bench-spawn INPUT CMD [ARG...]
 *
 * Runs CMD with stdin from INPUT (a file; /dev/null for none), stdout and stderr
 * to /dev/null, and prints one line: "WALL_US MAXRSS_KB STATUS", the wall time
 * from just before fork() to wait4()'s return (CLOCK_MONOTONIC), the child's
 * peak resident set from wait4()'s rusage (what `/usr/bin/time -f %M` prints),
 * and its exit status (128+N for a signal).  The fork/exec/wait cost is in the
 * time of every command measured, floor included, and taken out by nothing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long
now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: bench-spawn INPUT CMD [ARG...]\n");
      return 2;
    }
  int in = open (argv[1], O_RDONLY | O_CLOEXEC);
  int null = open ("/dev/null", O_WRONLY | O_CLOEXEC);
  if (in < 0 || null < 0)
    {
      perror ("bench-spawn: open");
      return 2;
    }
  long long t0 = now_us ();
  pid_t pid = fork ();
  if (pid < 0)
    {
      perror ("bench-spawn: fork");
      return 2;
    }
  if (pid == 0)
    {
      if (dup2 (in, 0) < 0 || dup2 (null, 1) < 0 || dup2 (null, 2) < 0)
        _exit (126);
      execvp (argv[2], argv + 2);
      _exit (127);
    }
  int status;
  struct rusage ru;
  if (wait4 (pid, &status, 0, &ru) < 0)
    {
      perror ("bench-spawn: wait4");
      return 2;
    }
  long long t1 = now_us ();
  int code = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
  printf ("%lld %ld %d\n", t1 - t0, ru.ru_maxrss, code);
  return 0;
}
