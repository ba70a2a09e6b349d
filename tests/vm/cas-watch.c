/* Count the writes into one file, for tests/vm/sched-tests.sh: every IN_MODIFY
 * inotify reports on FILE (the kernel's llc_balancing/enabled: debugfs, like any
 * file system, reports writes through fsnotify) appends a line to OUT, until the
 * program is killed.  So the guest can tell "never written" from "written with
 * the same value", which reading the switch cannot.  Built static on the host. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  if (argc != 3)
    {
      fprintf (stderr, "usage: cas-watch FILE OUT\n");
      return 2;
    }
  int in = inotify_init1 (IN_CLOEXEC);
  if (in < 0 || inotify_add_watch (in, argv[1], IN_MODIFY) < 0)
    {
      perror (argv[1]);
      return 1;
    }
  int out = open (argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0)
    {
      perror (argv[2]);
      return 1;
    }
  char ready[] = "ready\n";
  if (write (out, ready, sizeof ready - 1) < 0)
    return 1;
  char buf[4096];
  for (;;)
    {
      ssize_t n = read (in, buf, sizeof buf);
      if (n <= 0)
        return 1;
      for (char *p = buf; p < buf + n;)
        {
          const struct inotify_event *ev = (const struct inotify_event *) p;
          if ((ev->mask & IN_MODIFY) && write (out, "modify\n", 7) < 0)
            return 1;
          p += sizeof *ev + ev->len;
        }
    }
}
