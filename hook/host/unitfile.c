/* cachepin: a systemd unit's drop-in and systemctl (unitfile.h). */
#define _GNU_SOURCE
#include "unitfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "util.h"

extern char **environ;

/* systemd's limit on a unit name (UNIT_NAME_MAX). */
#define UNIT_NAME_MAX 255
/* What a systemctl's answer may hold: a property's value, a line of error. */
#define SYSTEMCTL_OUT_MAX (64 * 1024)
#define SYSTEMCTL_TIMEOUT_MS (120 * 1000)

int
cp_unitfile_check_name (const char *unit, cp_error_t *err)
{
  static const char suffix[] = ".service";
  size_t len = strlen (unit), n = sizeof suffix - 1;
  if (len <= n || strcmp (unit + len - n, suffix) != 0)
    return cp_fail_input (err, "`%.64s` is not a service's name (NAME.service)", unit);
  if (len > UNIT_NAME_MAX)
    return cp_fail_input (err, "a unit name is at most %d bytes", UNIT_NAME_MAX);
  for (const char *c = unit; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
          || strchr (":-_.\\@", *c) != NULL))
      return cp_fail_input (err, "`%.64s` holds a character no unit name has (letters, digits, \":-_.\\@\")",
                            unit);
  if (unit[0] == '@' || unit[0] == '.')
    return cp_fail_input (err, "`%.64s` is not a service's name (NAME.service)", unit);
  return 0;
}

bool
cp_unitfile_systemd_booted (void)
{
  return access ("/run/systemd/system/", F_OK) == 0;
}

bool
cp_unitfile_unified (void)
{
  struct statfs fs;
  return statfs ("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

char *
cp_unitfile_quote (const char *arg)
{
  size_t len = strlen (arg);
  char *out = cp_xcalloc (2 * len + 3, 1), *o = out;
  *o++ = '"';
  for (const char *c = arg; *c; c++)
    {
      if (*c == '\\' || *c == '"')
        *o++ = '\\';
      else if (*c == '%' || *c == '$')
        *o++ = *c;
      *o++ = *c;
    }
  *o = '"';
  return out;
}

char *
cp_unitfile_dropin_path (const char *dir, const char *unit)
{
  return cp_xasprintf ("%s/%s.d/" CP_UNITFILE_DROPIN, dir, unit);
}

char *
cp_unitfile_dropin_text (const char *command, const char *start, const char *stop)
{
  return cp_xasprintf ("# Written by `%s`: each start of the service is placed\n"
                       "# before it runs, and its CPUs held for it between a stop and the next start.\n"
                       "# `cachepin release --unit` removes this file (docs/apply.md).\n"
                       "[Service]\n"
                       "ExecStartPre=+%s\n"
                       "ExecStopPost=+%s\n",
                       command, start, stop);
}

int
cp_unitfile_write (const char *path, const char *text, cp_error_t *err)
{
  cleanup_free char *dir = cp_xstrdup (path);
  *strrchr (dir, '/') = '\0';
  if (mkdir (dir, 0755) < 0 && errno != EEXIST)
    return cp_fail_errno (err, errno, "mkdir %s", dir);
  cleanup_free char *tmp = cp_xasprintf ("%s.tmp", path);
  cleanup_close int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", tmp);
  if (cp_io_write_all (fd, text, strlen (text)) < 0 || fsync (fd) < 0)
    {
      int e = errno;
      unlink (tmp);
      return cp_fail_errno (err, e, "write %s", tmp);
    }
  if (rename (tmp, path) < 0)
    {
      int e = errno;
      unlink (tmp);
      return cp_fail_errno (err, e, "rename %s to %s", tmp, path);
    }
  return 0;
}

/* Remove UNIT's drop-in under DIR: 1 removed, 0 none there. */
static int
remove_in (const char *dir, const char *unit, cp_error_t *err)
{
  cleanup_free char *path = cp_unitfile_dropin_path (dir, unit);
  if (unlink (path) < 0)
    return errno == ENOENT || errno == ENOTDIR ? 0 : cp_fail_errno (err, errno, "remove %s", path);
  /* The directory was ours unless something else is in it. */
  *strrchr (path, '/') = '\0';
  (void) rmdir (path);
  return 1;
}

int
cp_unitfile_remove (const char *unit, cp_error_t *err)
{
  int a = remove_in (CP_UNITFILE_DIR_ETC, unit, err);
  if (a < 0)
    return -1;
  int b = remove_in (CP_UNITFILE_DIR_RUN, unit, err);
  return b < 0 ? -1 : a + b;
}

/* The first line of TEXT (cut in place), or "" when it has none. */
static const char *
first_line (char *text)
{
  if (text == NULL)
    return "";
  text[strcspn (text, "\n")] = '\0';
  return text;
}

static void
close_pipe (int p[2])
{
  if (p[0] >= 0)
    close (p[0]);
  if (p[1] >= 0)
    close (p[1]);
}

int
cp_unitfile_systemctl (const char *const *args, char **out, cp_error_t *err)
{
  size_t n = 0;
  while (args[n])
    n++;
  cleanup_free char **argv = cp_xcalloc (n + 2, sizeof *argv);
  argv[0] = (char *) "systemctl";
  memcpy (argv + 1, args, n * sizeof *argv);
  int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
  if (pipe2 (po, O_CLOEXEC) < 0 || pipe2 (pe, O_CLOEXEC) < 0)
    {
      int e = errno;
      close_pipe (po);
      close_pipe (pe);
      return cp_fail_errno (err, e, "pipe");
    }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, po[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2 (&fa, pe[1], STDERR_FILENO);
  pid_t pid;
  int r = posix_spawnp (&pid, "systemctl", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  close (po[1]);
  close (pe[1]);
  if (r != 0)
    {
      close (po[0]);
      close (pe[0]);
      return cp_fail_errno (err, r, "run systemctl");
    }
  /* Its answers are short: the standard output read to its end first, then
     standard error, which holds a line or two. */
  cleanup_free char *text = NULL, *errtext = NULL;
  cleanup_error cp_error_t rerr = NULL;
  (void) cp_io_read_fd (po[0], "systemctl's output", SYSTEMCTL_OUT_MAX, 0, SYSTEMCTL_TIMEOUT_MS, &text, NULL, &rerr);
  cp_error_free (&rerr);
  (void) cp_io_read_fd (pe[0], "systemctl's errors", SYSTEMCTL_OUT_MAX, 0, 1000, &errtext, NULL, &rerr);
  close (po[0]);
  close (pe[0]);
  int status = 0;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return cp_fail_errno (err, errno, "wait for systemctl %s", args[0]);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return cp_fail_runtime (err, "systemctl %s failed (%s %d): %s", args[0],
                            WIFEXITED (status) ? "exit" : "signal",
                            WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status), first_line (errtext));
  if (out)
    {
      size_t len = text ? strlen (text) : 0;
      if (len && text[len - 1] == '\n')
        text[len - 1] = '\0';
      *out = text ? cp_steal_pointer (&text) : cp_xstrdup ("");
    }
  return 0;
}

int
cp_unitfile_want_cpuset (const char *unit, const char *cgroup, cp_error_t *err)
{
  cleanup_free char *parent = cp_xasprintf ("/sys/fs/cgroup%s", cgroup);
  *strrchr (parent, '/') = '\0';
  cleanup_free char *probe = cp_xasprintf ("%s/cpuset.cpus.effective", parent);
  if (access (probe, F_OK) == 0)
    return 0;
  cleanup_free char *nodes = NULL;
  cleanup_error cp_error_t ignored = NULL;
  if (cp_io_read_at (AT_FDCWD, "/sys/devices/system/node/online", 0, "online nodes", 4096, CP_IO_NO_NUL, &nodes,
                     NULL, &ignored) < 0)
    nodes = cp_xstrdup ("0"); /* no NUMA support in the kernel: one node */
  nodes[strcspn (nodes, "\n")] = '\0';
  cleanup_free char *prop = cp_xasprintf ("AllowedMemoryNodes=%s", nodes);
  const char *args[] = { "set-property", "--runtime", "--", unit, prop, NULL };
  if (cp_unitfile_systemctl (args, NULL, err) < 0)
    return cp_error_wrap (err, "%s: ask systemd for a cpuset", unit);
  return 1;
}

int
cp_unitfile_self (char **out, cp_error_t *err)
{
  char buf[PATH_MAX];
  ssize_t n = readlink ("/proc/self/exe", buf, sizeof buf - 1);
  if (n < 0)
    return cp_fail_errno (err, errno, "readlink /proc/self/exe");
  buf[n] = '\0';
  *out = cp_xstrdup (buf);
  return 0;
}
