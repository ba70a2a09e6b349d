/* cachepin: the partition helper process (partition_helper.h). */
#define _GNU_SOURCE
#include "partition_helper.h"

#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bitmap.h"
#include "caps.h"
#include "helper.h"
#include "cgroup_parse.h"
#include "cpulist.h"
#include "partition.h"
#include "sandbox.h"
#include "util.h"

/* ---- the rule -------------------------------------------------------------------------- */

/* PATH is GRANTED or one of its ancestors (both canonical). */
static bool
at_or_above (const char *path, const char *granted)
{
  size_t n = strlen (path);
  return strncmp (granted, path, n) == 0 && (granted[n] == '\0' || granted[n] == '/');
}

static bool
canonical (const char *path)
{
  return path[0] == '/' && path[1] != '\0' && strlen (path) < PATH_MAX && cp_cgroup_path_problem (path + 1) == NULL;
}

int
cp_partition_helper_judge (const char *granted, const char *path, const char *file, const char *value,
                           hwloc_const_bitmap_t current, cp_error_t *err)
{
  if (!canonical (path))
    return cp_fail_input (err, "partition helper: `%.64s` is not a cgroup below the root", path);
  bool takes_for_granted = granted && at_or_above (path, granted);
  if (strcmp (file, CP_PARTITION_EXCLUSIVE) == 0)
    {
      cleanup_bitmap hwloc_bitmap_t want = cp_bitmap_new ();
      if (cp_cpulist_parse (value, CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE, want, err) < 0)
        return cp_error_wrap (err, "partition helper: %s of %s", file, path);
      if (takes_for_granted || (current && hwloc_bitmap_isincluded (want, current)))
        return 0;
      return cp_fail_input (err, "partition helper: %s of %s would take CPUs %s, and no process of it or below it "
                                 "was shown", file, path, value);
    }
  if (strcmp (file, CP_PARTITION_FILE) == 0)
    {
      if (strcmp (value, "member") == 0)
        return 0;
      if (strcmp (value, "root") == 0 && granted && strcmp (path, granted) == 0)
        return 0;
      return cp_fail_input (err, "partition helper: `%.16s` into %s of %s refused (only `member`, or `root` for the "
                                 "cgroup whose process was shown)", value, file, path);
    }
  return cp_fail_input (err, "partition helper: %.64s is not a file it writes", file);
}

/* The files it reads: partition.c's, and what cp_partition_supported() looks at. */
static bool
readable (const char *file)
{
  static const char *const files[] = {
    CP_PARTITION_EXCLUSIVE, CP_PARTITION_EXCLUSIVE_EFFECTIVE, CP_PARTITION_FILE, CP_PARTITION_CPUS_EFFECTIVE,
    "cpuset.cpus",          "cpuset.cpus.isolated",
  };
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (strcmp (file, files[i]) == 0)
      return true;
  return false;
}

/* ---- the messages ------------------------------------------------------------------------ */

enum op
{
  OP_GRANT = 1,
  OP_READ,
  OP_WRITE,
};

struct request
{
  uint32_t op;
  int32_t pid;
  char path[PATH_MAX];
  char file[64];
  char value[CP_CPULIST_MAX_LEN]; /* an ancestor's exclusive list: every isolated CPU below it */
};

struct answer
{
  int32_t kind;   /* enum cp_error_kind, when errnum != 0 */
  int32_t errnum; /* 0: done; -1: failed without an errno; else the errno */
  char text[CP_CPULIST_MAX_LEN];
};

/* One request and its answer, a cpulist's size each: allocated per call. */
struct exchange
{
  struct request q;
  struct answer a;
};

/* E into A: its text without the errno's description, which the parent's
   cp_error_set() appends again. */
static void
answer_error (struct answer *a, cp_error_t e)
{
  a->kind = (int32_t) cp_error_kind (e);
  a->errnum = cp_error_errno (e) ? cp_error_errno (e) : -1;
  snprintf (a->text, sizeof a->text, "%s", cp_error_message (e));
  if (a->errnum > 0)
    {
      const char *desc = strerror (a->errnum);
      size_t n = strlen (a->text), d = strlen (desc);
      if (n >= d + 2 && strcmp (a->text + n - d, desc) == 0 && a->text[n - d - 2] == ':')
        a->text[n - d - 2] = '\0';
    }
}

/* ---- the child ----------------------------------------------------------------------------- */

struct served
{
  struct cp_partition_tree tree;
  char granted[PATH_MAX]; /* "": none */
};

/* Is PID one of cgroup PATH's processes? */
static int
holds (const struct served *s, const char *path, pid_t pid, cp_error_t *err)
{
  cleanup_free char *procs = NULL;
  if (cp_partition_read_file (&s->tree, path, "cgroup.procs", &procs, err) < 0)
    return -1;
  char *save = NULL;
  for (char *line = strtok_r (procs, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    if (strtol (line, NULL, 10) == (long) pid)
      return 1;
  return 0;
}

static void
serve_grant (struct served *s, const struct request *q, struct answer *a)
{
  cleanup_error cp_error_t e = NULL;
  s->granted[0] = '\0'; /* a refused grant leaves none */
  int r = 0;
  if (q->pid <= 0 || !canonical (q->path))
    r = cp_fail_input (&e, "partition helper: pid %d in `%.64s`: not a process in a cgroup below the root",
                       (int) q->pid, q->path);
  else if ((r = holds (s, q->path, q->pid, &e)) == 0)
    r = cp_fail_input (&e, "partition helper: process %d is not in cgroup %s%s", (int) q->pid, s->tree.mount,
                       q->path);
  if (r < 0)
    answer_error (a, e);
  else
    snprintf (s->granted, sizeof s->granted, "%s", q->path);
}

static void
serve_read (const struct served *s, const struct request *q, struct answer *a)
{
  cleanup_error cp_error_t e = NULL;
  cleanup_free char *text = NULL;
  if (!readable (q->file))
    cp_fail_input (&e, "partition helper: %.64s is not a file it reads", q->file);
  else if (cp_partition_read_file (&s->tree, q->path, q->file, &text, &e) == 0)
    {
      snprintf (a->text, sizeof a->text, "%s", text);
      return;
    }
  answer_error (a, e);
}

static void
serve_write (const struct served *s, const struct request *q, struct answer *a)
{
  cleanup_error cp_error_t e = NULL;
  cleanup_bitmap hwloc_bitmap_t current = NULL;
  if (strcmp (q->file, CP_PARTITION_EXCLUSIVE) == 0 && canonical (q->path))
    {
      current = cp_bitmap_new ();
      if (cp_partition_read_cpus (&s->tree, q->path, CP_PARTITION_EXCLUSIVE, current, &e) < 0)
        {
          answer_error (a, e);
          return;
        }
    }
  if (cp_partition_helper_judge (s->granted[0] ? s->granted : NULL, q->path, q->file, q->value, current, &e) < 0
      || cp_partition_write_file (&s->tree, q->path, q->file, q->value, &e) < 0)
    answer_error (a, e);
}

static _Noreturn void
helper_main (int fd, int mountfd, const char *mount)
{
  /* Nothing of the parent's but the socket and the mount. */
  unsigned lo = (unsigned) (fd < mountfd ? fd : mountfd), hi = (unsigned) (fd < mountfd ? mountfd : fd);
  if ((lo > 3 && close_range (3, lo - 1, 0) < 0) || (hi > lo + 1 && close_range (lo + 1, hi - 1, 0) < 0)
      || close_range (hi + 1, ~0U, 0) < 0)
    _exit (1);
  cp_partition_set_io (NULL); /* the kernel's files, here */
  cleanup_error cp_error_t e = NULL;
  const struct cp_sandbox sb = { .profile = CP_SANDBOX_HOOK, .state_dirfd = -1, .cgroup_mountfd = mountfd };
  if (cp_caps_keep_only (CAP_SYS_ADMIN, &e) < 0 || cp_sandbox_enter (&sb, &e) < 0)
    _exit (1);
  /* On the heap, as the parent's (call()): a cpulist's size each, not the binary's
     zero-fill pages. */
  struct served s = { 0 };
  struct exchange *x = cp_xmalloc0 (sizeof *x);
  struct request *const q = &x->q;
  struct answer *const a = &x->a;
  s.tree = (struct cp_partition_tree) { .mount = mount, .mountfd = mountfd };
  for (;;)
    {
      ssize_t n = read (fd, q, sizeof *q);
      if (n < 0 && errno == EINTR)
        continue;
      if (n != (ssize_t) sizeof *q)
        _exit (n == 0 ? 0 : 1);
      q->path[sizeof q->path - 1] = q->file[sizeof q->file - 1] = q->value[sizeof q->value - 1] = '\0';
      memset (a, 0, offsetof (struct answer, text) + 1);
      if (q->op == OP_GRANT)
        serve_grant (&s, q, a);
      else if (q->op == OP_READ)
        serve_read (&s, q, a);
      else if (q->op == OP_WRITE)
        serve_write (&s, q, a);
      else
        a->errnum = EINVAL;
      size_t len = offsetof (struct answer, text) + strlen (a->text) + 1;
      if (write (fd, a, len) != (ssize_t) len)
        _exit (1);
    }
}

/* ---- the parent -------------------------------------------------------------------------- */

int
cp_partition_helper_start (struct cp_partition_helper *h, const char *mount, cp_error_t *err)
{
  *h = (struct cp_partition_helper) CP_PARTITION_HELPER_INIT;
  cleanup_close int mountfd = cp_partition_open_mount (mount, err);
  if (mountfd < 0)
    return cp_error_wrap (err, "partition helper");
  int fd;
  pid_t pid = cp_helper_fork ("partition helper", &fd, err);
  if (pid < 0)
    return -1;
  if (pid == 0)
    helper_main (fd, mountfd, mount);
  h->fd = fd;
  h->pid = pid;
  h->mount = cp_xstrdup (mount);
  return 0;
}

/* One request, its answer in *A. */
static int
call (const struct cp_partition_helper *h, const struct request *q, struct answer *a, cp_error_t *err)
{
  ssize_t n;
  do
    n = send (h->fd, q, sizeof *q, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n == (ssize_t) sizeof *q)
    do
      n = recv (h->fd, a, sizeof *a, 0);
    while (n < 0 && errno == EINTR);
  if (n < (ssize_t) offsetof (struct answer, text) + 1 || a->text[n - (ssize_t) offsetof (struct answer, text) - 1])
    return cp_fail_errno (err, n < 0 ? errno : EPIPE, "partition helper (process %ld)", (long) h->pid);
  if (a->errnum == 0)
    return 0;
  enum cp_error_kind kind = a->kind == CP_ERR_INPUT || a->kind == CP_ERR_UNSATISFIABLE ? a->kind : CP_ERR_RUNTIME;
  return cp_error_set (err, kind, a->errnum > 0 ? a->errnum : 0, "%s", a->text);
}

static int
fill (struct request *q, enum op op, const char *path, const char *file, const char *value, cp_error_t *err)
{
  *q = (struct request) { .op = op };
  if (strlen (path) >= sizeof q->path || (file && strlen (file) >= sizeof q->file)
      || (value && strlen (value) >= sizeof q->value))
    return cp_fail_input (err, "partition helper: `%.64s` too long to ask", path);
  strcpy (q->path, path);
  if (file)
    strcpy (q->file, file);
  if (value)
    strcpy (q->value, value);
  return 0;
}

int
cp_partition_helper_grant (const struct cp_partition_helper *h, pid_t pid, const char *path, cp_error_t *err)
{
  cleanup_free struct exchange *x = cp_xmalloc0 (sizeof *x);
  if (fill (&x->q, OP_GRANT, path, NULL, NULL, err) < 0)
    return -1;
  x->q.pid = (int32_t) pid;
  return call (h, &x->q, &x->a, err);
}

static const struct cp_partition_helper *active;

static int
on_mount (const struct cp_partition_tree *t, cp_error_t *err)
{
  if (strcmp (t->mount, active->mount) == 0)
    return 0;
  return cp_fail_runtime (err, "partition helper: %s is not the mount it serves (%s)", t->mount, active->mount);
}

static int
helper_read (const struct cp_partition_tree *t, const char *path, const char *file, char **text, cp_error_t *err)
{
  cleanup_free struct exchange *x = cp_xmalloc0 (sizeof *x);
  if (on_mount (t, err) < 0 || fill (&x->q, OP_READ, path, file, NULL, err) < 0
      || call (active, &x->q, &x->a, err) < 0)
    return -1;
  *text = cp_xstrdup (x->a.text);
  return 0;
}

static int
helper_write (const struct cp_partition_tree *t, const char *path, const char *file, const char *value,
              cp_error_t *err)
{
  cleanup_free struct exchange *x = cp_xmalloc0 (sizeof *x);
  if (on_mount (t, err) < 0 || fill (&x->q, OP_WRITE, path, file, value, err) < 0)
    return -1;
  return call (active, &x->q, &x->a, err);
}

static const struct cp_partition_io helper_io = { .read = helper_read, .write = helper_write };

void
cp_partition_helper_use (const struct cp_partition_helper *h)
{
  active = h;
  cp_partition_set_io (h ? &helper_io : NULL);
}

void
cp_partition_helper_stop (struct cp_partition_helper *h)
{
  if (active == h)
    cp_partition_helper_use (NULL);
  cp_helper_stop (&h->fd, &h->pid);
  free (h->mount);
  *h = (struct cp_partition_helper) CP_PARTITION_HELPER_INIT;
}
