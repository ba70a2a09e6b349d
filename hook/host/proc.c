/* cachepin: process start times from /proc/<pid>/stat (see proc.h). */
#define _GNU_SOURCE
#include "proc.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "util.h"

/* "pid (comm) state ppid ...": comm is up to 15 bytes of anything a process
 * chose with prctl(PR_SET_NAME), ')' and spaces included, so the fields are only
 * counted from the last ')'.  *STATE is field 3; *FIELD4 points at field 4. */
static int
after_comm (const char *buf, size_t len, char *state, const char **field4, cp_error_t *err)
{
  *state = 0; /* defined on failure too: GCC -O3 cannot tell that no caller reads them then */
  *field4 = NULL;
  const char *paren = memrchr (buf, ')', len);
  if (paren == NULL)
    return cp_fail_input (err, "/proc stat: no `)` after the command name");
  const char *p = paren + 1, *end = buf + len;
  if (end - p < 3 || p[0] != ' ' || p[2] != ' ')
    return cp_fail_input (err, "/proc stat: no state after the command name");
  *state = p[1];
  *field4 = p + 3;
  return 0;
}

int
cp_proc_parse_stat (const char *buf, size_t len, unsigned long long *start_time, char *state, cp_error_t *err)
{
  const char *p, *end = buf + len;
  char st;
  if (after_comm (buf, len, &st, &p, err) < 0)
    return -1;
  /* p is at field 4; skip to field 22. */
  for (int field = 4; field < 22; field++)
    {
      const char *sp = memchr (p, ' ', (size_t) (end - p));
      if (sp == NULL || sp == p)
        return cp_fail_input (err, "/proc stat: field %d is missing", field);
      p = sp + 1;
    }
  unsigned long long v = 0;
  const char *digits = p;
  while (p < end && *p >= '0' && *p <= '9')
    {
      if (v > (ULLONG_MAX - 9) / 10)
        return cp_fail_input (err, "/proc stat: start time out of range");
      v = v * 10 + (unsigned) (*p - '0');
      p++;
    }
  if (p == digits || (p < end && *p != ' ' && *p != '\n'))
    return cp_fail_input (err, "/proc stat: field 22 (start time) is not a number");
  *start_time = v;
  if (state)
    *state = st;
  return 0;
}

#define STAT_PATH_SIZE 64

/* The text of /proc/PID/stat (*BUF, caller frees; *LEN bytes); PATH, of
   STAT_PATH_SIZE bytes, gets its name for the caller's messages. */
static int
read_stat (pid_t pid, char *path, char **buf, size_t *len, cp_error_t *err)
{
  snprintf (path, STAT_PATH_SIZE, "/proc/%d/stat", (int) pid);
  /* procfs files are regular files sized 0: cp_io_read_at reads to the end. */
  return cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, CP_PROC_STAT_MAX, 0, buf, len, err);
}

int
cp_proc_start_time (pid_t pid, unsigned long long *start_time, bool *zombie, cp_error_t *err)
{
  if (pid <= 0)
    return cp_fail_input (err, "invalid pid %d", (int) pid);
  char path[STAT_PATH_SIZE];
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_stat (pid, path, &buf, &len, err) < 0)
    return -1;
  char st;
  if (cp_proc_parse_stat (buf, len, start_time, &st, err) < 0)
    return cp_error_wrap (err, "%s", path);
  if (zombie)
    *zombie = st == 'Z' || st == 'X' || st == 'x';
  return 0;
}

bool
cp_proc_uid_map_is_initial (const char *uid_map)
{
  unsigned long inside, outside, count;
  char rest;
  return sscanf (uid_map, " %lu %lu %lu %c", &inside, &outside, &count, &rest) == 3 && inside == 0 && outside == 0
         && count == 4294967295UL;
}

char *
cp_proc_rootless_reason (void)
{
  uid_t uid = geteuid ();
  cleanup_free char *map = NULL;
  cleanup_error cp_error_t e = NULL;
  /* No uid_map: a kernel without user namespaces, so the initial one. */
  bool in_userns = cp_io_read_at (AT_FDCWD, "/proc/self/uid_map", 0, "/proc/self/uid_map", 65536, CP_IO_NO_NUL, &map,
                                  NULL, &e)
                       == 0
                   && !cp_proc_uid_map_is_initial (map);
  if (in_userns)
    return cp_xasprintf ("running as uid %u in a user namespace", (unsigned) uid);
  if (uid != 0)
    return cp_xasprintf ("running as uid %u, not root", (unsigned) uid);
  return NULL;
}

int
cp_proc_parse_ppid (const char *buf, size_t len, pid_t *ppid, cp_error_t *err)
{
  const char *p, *end = buf + len;
  char st;
  if (after_comm (buf, len, &st, &p, err) < 0)
    return -1;
  long v = 0;
  const char *digits = p;
  while (p < end && *p >= '0' && *p <= '9' && v <= INT_MAX / 10)
    v = v * 10 + (*p++ - '0');
  if (p == digits || v > INT_MAX || (p < end && *p != ' '))
    return cp_fail_input (err, "/proc stat: field 4 (parent pid) is not a pid");
  *ppid = (pid_t) v;
  return 0;
}

/* The parent of PID, from /proc/PID/stat. */
static int
parent_of (pid_t pid, pid_t *ppid, cp_error_t *err)
{
  char path[STAT_PATH_SIZE];
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_stat (pid, path, &buf, &len, err) < 0)
    return -1;
  if (cp_proc_parse_ppid (buf, len, ppid, err) < 0)
    return cp_error_wrap (err, "%s", path);
  return 0;
}

int
cp_proc_descends_from (pid_t pid, pid_t ancestor, cp_error_t *err)
{
  /* Deeper than any process tree a container builds before it starts; a loop
     (a pid reused while we walk) ends here too. */
  for (int depth = 0; depth < 256 && pid > 1; depth++)
    {
      if (pid == ancestor)
        return 1;
      pid_t ppid;
      if (parent_of (pid, &ppid, err) < 0)
        return -1;
      pid = ppid;
    }
  return pid == ancestor;
}
