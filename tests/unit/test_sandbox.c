/* The sandbox (hook/host/sandbox.c): what a sandboxed cachepin can still do, and what
 * it cannot.
 *
 * Every test forks: the child enters the sandbox on a scratch directory laid out
 * as the hook uses it (a state directory, opened as the ledger opens it, and a
 * stand-in for the cgroup hierarchy with a cpuset.cpus file and a/b below it,
 * opened O_PATH as cgroup.c opens a mount) and tries things; the parent reads
 * how it ended.  The child reports a failed check on stderr and exits 1.
 *   - allowed: the ledger commit (create ledger.json.tmp in the state directory,
 *     write, fsync, link ledger.json as ledger.json.prev, rename, unlink), cgroup file reads and writes through the
 *     dirfd, cgroup.c's directory walk (openat2 answers ENOSYS), /proc/<pid>/stat
 *     of the target, a pipe, malloc of small and large blocks, syslog, abort();
 *   - refused with EPERM (a bug elsewhere, or an unexpected glibc call, fails
 *     like an I/O error): socket (inet, inet6, unix, netlink), creating a file
 *     outside the state directory (openat O_CREAT, creat, O_TMPFILE), executable
 *     mappings, fork and clone3, kill, tgkill of another process, getppid,
 *     fcntl(F_SETFL), ioctl TIOCSTI, sendto an address, symlinkat, linkat
 *     from or to another directory fd or following a symlink, mkdirat, fchmodat, fchownat, prctl; openat2 answers ENOSYS;
 *   - refused by Landlock with EACCES (skipped where the kernel has none):
 *     opening a file anywhere else, even for reading, and creating one through
 *     the state directory's fd with an absolute path (what seccomp cannot see);
 *   - killed with SIGSYS: execve, execveat, ptrace, mount, umount2, pivot_root,
 *     chroot, unshare, setns, setuid, setresuid, setgroups, capset, init_module,
 *     finit_module, kexec_load, bpf, keyctl, open_by_handle_at, perf_event_open,
 *     userfaultfd, io_uring_setup, reboot, process_vm_writev, and (x86_64) a
 *     32-bit int $0x80 call.  Every one gets arguments that would do nothing
 *     harmful if the filter let it through (bad fds, NULL pointers, invalid flags).
 * The plugin's profile with an HTTP listener (the agent's metrics, nri_http.h): accept4
 * on its socket and epoll on its set, setsockopt at TCP's level, shutdown; accept4 on
 * another socket, epoll on another set, a socket option of SOL_SOCKET's, bind, listen
 * and a new TCP socket refused (EPERM), and accept4 and epoll refused without one.
 * The plugin's profile with the kubelet plugin's sockets (nri_kubelet.h): accept4 on
 * its two unix sockets, epoll on its set, the removal of files beneath its two
 * directories; accept4 on another socket, epoll on another set, bind, listen and
 * the removal of a file elsewhere refused.
 * The DRA publisher's profile (dra_publisher.h): reads beneath its directories, a TCP
 * connect to the API server's port, a socketpair, getrandom, a private futex wake,
 * syslog; a write, a creation, a removal, a rename, a link, mkdir, a socket of
 * AF_UNIX, netlink or packet, bind, listen, accept, fork and kill refused (EPERM),
 * a read elsewhere (Landlock) and a TCP connect to another port (Landlock ABI 4+)
 * refused (EACCES); execve and ptrace killed.
 * Skipped under valgrind (no seccomp or Landlock there); in a sanitizer build,
 * where the sandbox is not loaded (sandbox.h), only checks that it builds. */
#define _GNU_SOURCE
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cdi.h"
#include "cgroup_internal.h"
#include "ledger.h"
#include "proc.h"
#include "sandbox.h"
#include "util.h"

static struct
{
  char root[64];   /* /tmp/cachepin-sandbox-XXXXXX */
  char state[128]; /* root/state: the ledger's directory */
  char cg[128];    /* root/cg: stands for the cgroup mount (cpuset.cpus, a/b) */
  char outside[128]; /* root/outside.txt: covered by no rule */
  char sw[128];      /* root/kernel/enabled: stands for the cache-aware scheduling switch */
  char sw_sibling[128]; /* root/kernel/features: beside it, covered by no rule */
  char cdi[128];        /* root/cdi: stands for the CDI spec directory (the plugin's cdi_dirfd) */
  int cdi_fd;           /* the child's, opened before its sandbox */
} G;

/* ---- helpers -------------------------------------------------------------------- */

#define CHILD_CHECK(cond)                                                                                     \
  do                                                                                                          \
    {                                                                                                         \
      if (!(cond))                                                                                            \
        {                                                                                                     \
          fprintf (stderr, "child: %s:%d: check failed: %s (errno %d %s)\n", __FILE__, __LINE__, #cond, errno, \
                   strerror (errno));                                                                         \
          _exit (1);                                                                                          \
        }                                                                                                     \
    }                                                                                                         \
  while (0)

/* A call that must fail with ERRNO. */
#define CHILD_REFUSED(call, want)                                                                    \
  do                                                                                                 \
    {                                                                                                \
      errno = 0;                                                                                     \
      long r_ = (long) (call);                                                                       \
      if (r_ != -1 || errno != (want))                                                               \
        {                                                                                            \
          fprintf (stderr, "child: %s:%d: %s returned %ld (errno %d %s), expected -1 %s\n", __FILE__, \
                   __LINE__, #call, r_, errno, strerror (errno), strerror (want));                   \
          _exit (1);                                                                                 \
        }                                                                                            \
    }                                                                                                \
  while (0)

/* What the child gets: the fds a hook has at the sandbox point. */
struct child
{
  int state_dirfd;
  int cg_fd;
  int pipe_w;       /* a pipe opened before, read by nobody (the buffer takes it) */
  pid_t target;     /* the sandbox's pid: the parent, alive */
  int landlock_abi;
};

typedef void (*child_fn) (const struct child *c);

static void
reset_fatal_signals (void)
{
  static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS };
  for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
    signal (fatal[i], SIG_DFL);
}

/* Fork, enter the sandbox in the child as the placer does and run FN there (it
 * returns by _exit); returns the child's wait status. */
static int
run_sandboxed (child_fn fn)
{
  fflush (NULL);
  pid_t parent = getpid ();
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      /* cmocka catches SIGSEGV and friends to report a failed test; in this forked
         child its handler would go on running the remaining tests here.  The
         parent judges the child by how it ended, so let signals end it. */
      reset_fatal_signals ();
      struct child c;
      c.state_dirfd = open (G.state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      c.cg_fd = open (G.cg, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int p[2];
      CHILD_CHECK (c.state_dirfd >= 0 && c.cg_fd >= 0 && pipe2 (p, O_CLOEXEC) == 0);
      c.pipe_w = p[1];
      c.target = parent;
      openlog ("cachepin-test", LOG_PID | LOG_NDELAY, LOG_DAEMON);
      struct cp_sandbox sb = { .state_dirfd = c.state_dirfd, .cgroup_mountfd = c.cg_fd, .pid = parent };
      cp_error_t err = NULL;
      c.landlock_abi = cp_sandbox_enter (&sb, &err);
      if (c.landlock_abi < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter: %s\n", cp_error_message (err));
          _exit (2);
        }
      fn (&c);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  return status;
}

static void
expect_exit0 (int status)
{
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return;
  if (WIFSIGNALED (status))
    fail_msg ("the child was killed by signal %d (%s)", WTERMSIG (status), strsignal (WTERMSIG (status)));
  fail_msg ("the child exited %d (see its message above)", WEXITSTATUS (status));
}

static void
expect_sigsys (int status, const char *what)
{
  if (WIFSIGNALED (status) && WTERMSIG (status) == SIGSYS)
    return;
  if (WIFSIGNALED (status))
    fail_msg ("%s: killed by signal %d, expected SIGSYS", what, WTERMSIG (status));
  fail_msg ("%s: the child exited %d, expected to be killed by SIGSYS", what, WEXITSTATUS (status));
}

static void
write_file (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  assert_int_equal (fclose (f), 0);
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  remove (path);
  return 0;
}

static int
setup (void **state)
{
  (void) state;
  snprintf (G.root, sizeof G.root, "/tmp/cachepin-sandbox-XXXXXX");
  if (mkdtemp (G.root) == NULL)
    return -1;
  snprintf (G.state, sizeof G.state, "%s/state", G.root);
  snprintf (G.cg, sizeof G.cg, "%s/cg", G.root);
  snprintf (G.outside, sizeof G.outside, "%s/outside.txt", G.root);
  snprintf (G.sw, sizeof G.sw, "%s/kernel/enabled", G.root);
  snprintf (G.sw_sibling, sizeof G.sw_sibling, "%s/kernel/features", G.root);
  snprintf (G.cdi, sizeof G.cdi, "%s/cdi", G.root);
  char p[256];
  snprintf (p, sizeof p, "%s/kernel", G.root);
  if (mkdir (G.state, 0700) < 0 || mkdir (G.cg, 0755) < 0 || mkdir (p, 0755) < 0 || mkdir (G.cdi, 0755) < 0)
    return -1;
  write_file (G.sw, "0\n");
  write_file (G.sw_sibling, "NO_SCHED_CACHE\n");
  snprintf (p, sizeof p, "%s/a", G.cg);
  if (mkdir (p, 0755) < 0)
    return -1;
  snprintf (p, sizeof p, "%s/a/b", G.cg);
  if (mkdir (p, 0755) < 0)
    return -1;
  snprintf (p, sizeof p, "%s/cpuset.cpus", G.cg);
  write_file (p, "0-1\n");
  write_file (G.outside, "not for the hook\n");
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  nftw (G.root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* ---- what still works ------------------------------------------------------------- */

static void
child_allowed (const struct child *c)
{
  /* The ledger's commit, as cp_ledger_commit() does it. */
  CHILD_REFUSED (unlinkat (c->state_dirfd, CP_LEDGER_TMP_FILE, 0), ENOENT);
  int fd = openat (c->state_dirfd, CP_LEDGER_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  CHILD_CHECK (fd >= 0);
  CHILD_CHECK (write (fd, "{}\n", 3) == 3);
  CHILD_CHECK (fsync (fd) == 0);
  CHILD_CHECK (close (fd) == 0);
  CHILD_CHECK (renameat (c->state_dirfd, CP_LEDGER_TMP_FILE, c->state_dirfd, CP_LEDGER_FILE) == 0);
  CHILD_CHECK (linkat (c->state_dirfd, CP_LEDGER_FILE, c->state_dirfd, CP_LEDGER_PREV_FILE, 0) == 0);
  CHILD_CHECK (unlinkat (c->state_dirfd, CP_LEDGER_PREV_FILE, 0) == 0);
  CHILD_CHECK (fsync (c->state_dirfd) == 0);
  fd = openat (c->state_dirfd, CP_LEDGER_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  CHILD_CHECK (fd >= 0);
  struct stat st;
  CHILD_CHECK (fstat (fd, &st) == 0 && st.st_size == 3);
  close (fd);
  CHILD_CHECK (unlinkat (c->state_dirfd, CP_LEDGER_FILE, 0) == 0);

  /* The cgroup: write and read back through the dirfd, as cgroup.c does. */
  fd = openat (c->cg_fd, "cpuset.cpus", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  CHILD_CHECK (fd >= 0);
  CHILD_CHECK (write (fd, "1", 1) == 1);
  close (fd);
  fd = openat (c->cg_fd, "cpuset.cpus", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  char buf[16] = { 0 };
  CHILD_CHECK (fd >= 0 && read (fd, buf, sizeof buf - 1) >= 1 && buf[0] == '1');
  close (fd);
  /* cgroup.c's walk to an ancestor: openat2 answers ENOSYS, the openat walk works. */
  cp_error_t err = NULL;
  int dfd = cp_cgroup_open_dir (c->cg_fd, G.cg, "a/b", CP_CGROUP_OPEN_SAME_MOUNT, &err);
  if (dfd < 0)
    fprintf (stderr, "child: cp_cgroup_open_dir: %s\n", cp_error_message (err));
  CHILD_CHECK (dfd >= 0);
  close (dfd);

  /* The target's start time, as record() reads it. */
  unsigned long long start = 0;
  bool zombie = true;
  if (cp_proc_start_time (c->target, &start, &zombie, &err) < 0)
    fprintf (stderr, "child: proc start time: %s\n", cp_error_message (err));
  CHILD_CHECK (start > 0 && !zombie);

  /* Memory: small, large (mmap), grown (mremap), freed. */
  char *small = malloc (100);
  char *big = malloc (64 << 20);
  CHILD_CHECK (small && big);
  memset (big, 1, 64 << 20);
  big = realloc (big, 128 << 20);
  CHILD_CHECK (big != NULL);
  free (big);
  free (small);

  /* A pipe, stderr, syslog, getpid. */
  CHILD_CHECK (write (c->pipe_w, "ok", 2) == 2);
  CHILD_CHECK (write (STDERR_FILENO, "", 0) == 0);
  syslog (LOG_DEBUG, "cachepin sandbox test");
  CHILD_CHECK (getpid () > 0);
  _exit (0);
}

static void
test_allowed (void **state)
{
  (void) state;
  expect_exit0 (run_sandboxed (child_allowed));
}

/* abort() still raises SIGABRT (out of memory, _FORTIFY_SOURCE, stack protector). */
static void
child_abort (const struct child *c)
{
  (void) c;
  abort ();
}

static void
test_abort_still_aborts (void **state)
{
  (void) state;
  int status = run_sandboxed (child_abort);
  assert_true (WIFSIGNALED (status));
  assert_int_equal (WTERMSIG (status), SIGABRT);
}

/* ---- refused: EPERM ---------------------------------------------------------------- */

static void
child_eperm (const struct child *c)
{
  char path[256];
  /* No network, not even a new unix socket (syslog's is connected before). */
  CHILD_REFUSED (socket (AF_INET, SOCK_STREAM, 0), EPERM);
  CHILD_REFUSED (socket (AF_INET6, SOCK_DGRAM, 0), EPERM);
  CHILD_REFUSED (socket (AF_UNIX, SOCK_DGRAM, 0), EPERM);
  CHILD_REFUSED (socket (AF_NETLINK, SOCK_RAW, 0), EPERM);
  /* Creating a file: only relative to the state directory's fd. */
  snprintf (path, sizeof path, "%s/created", G.root);
  CHILD_REFUSED (open (path, O_CREAT | O_WRONLY, 0600), EPERM);
  CHILD_REFUSED (openat (c->cg_fd, "created", O_CREAT | O_WRONLY, 0600), EPERM);
  CHILD_REFUSED (creat (path, 0600), EPERM);
  CHILD_REFUSED (open (G.root, O_TMPFILE | O_WRONLY, 0600), EPERM);
  /* openat2: ENOSYS (its flags are out of seccomp's sight). */
  CHILD_REFUSED (syscall (SYS_openat2, c->cg_fd, "a", NULL, 0), ENOSYS);
  /* No executable memory, no new processes, no signals to others. */
  errno = 0;
  CHILD_CHECK (mmap (NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED
               && errno == EPERM);
  void *rw = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHILD_CHECK (rw != MAP_FAILED);
  CHILD_REFUSED (mprotect (rw, 4096, PROT_READ | PROT_EXEC), EPERM);
  CHILD_REFUSED (fork (), EPERM);
  CHILD_REFUSED (syscall (SYS_clone3, NULL, 0), EPERM);
  CHILD_REFUSED (kill (c->target, 0), EPERM);
  CHILD_REFUSED (syscall (SYS_tgkill, c->target, c->target, 0), EPERM);
  CHILD_REFUSED (syscall (SYS_getppid), EPERM);
  /* fcntl beyond F_DUPFD_CLOEXEC, ioctl beyond TCGETS, sendto an address. */
  CHILD_REFUSED (fcntl (c->pipe_w, F_SETFL, O_NONBLOCK), EPERM);
  char ch = 'x';
  CHILD_REFUSED (ioctl (STDIN_FILENO, TIOCSTI, &ch), EPERM);
  struct sockaddr_un addr = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };
  CHILD_REFUSED (sendto (c->pipe_w, "x", 1, 0, (struct sockaddr *) &addr, sizeof addr), EPERM);
  /* Other ways out of the filesystem rules. */
  CHILD_REFUSED (symlinkat ("/etc", c->state_dirfd, "l"), EPERM);
  CHILD_REFUSED (linkat (AT_FDCWD, "/etc/passwd", c->state_dirfd, "y", 0), EPERM);
  CHILD_REFUSED (linkat (c->state_dirfd, "x", AT_FDCWD, "y", 0), EPERM);
  CHILD_REFUSED (linkat (c->state_dirfd, "x", c->state_dirfd, "y", AT_SYMLINK_FOLLOW), EPERM);
  CHILD_REFUSED (mkdirat (c->state_dirfd, "d", 0700), EPERM);
  CHILD_REFUSED (fchmodat (c->state_dirfd, ".", 0777, 0), EPERM);
  CHILD_REFUSED (fchownat (c->state_dirfd, ".", 1000, 1000, 0), EPERM);
  CHILD_REFUSED (prctl (PR_SET_DUMPABLE, 1, 0, 0, 0), EPERM);
  _exit (0);
}

static void
test_refused_eperm (void **state)
{
  (void) state;
  expect_exit0 (run_sandboxed (child_eperm));
  /* Nothing was created. */
  char path[256];
  snprintf (path, sizeof path, "%s/created", G.root);
  assert_int_equal (access (path, F_OK), -1);
  snprintf (path, sizeof path, "%s/created", G.cg);
  assert_int_equal (access (path, F_OK), -1);
}

/* ---- refused: Landlock ----------------------------------------------------------------- */

static void
child_landlock (const struct child *c)
{
  if (c->landlock_abi == 0)
    _exit (77);
  char path[256];
  /* Reading anything outside the three trees. */
  CHILD_REFUSED (open ("/etc/passwd", O_RDONLY | O_CLOEXEC), EACCES);
  CHILD_REFUSED (open (G.outside, O_RDONLY | O_CLOEXEC), EACCES);
  CHILD_REFUSED (open ("/proc/self/status", O_RDONLY | O_CLOEXEC), EACCES);
  /* Writing an existing file outside: seccomp lets open(O_WRONLY) through, Landlock does not. */
  CHILD_REFUSED (open (G.outside, O_WRONLY | O_CLOEXEC), EACCES);
  /* Creating through the state directory's fd with an absolute path: seccomp sees
     the allowed fd, not the path; Landlock sees the path. */
  snprintf (path, sizeof path, "%s/created-abs", G.root);
  CHILD_REFUSED (openat (c->state_dirfd, path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
  CHILD_REFUSED (openat (c->state_dirfd, "../created-rel", O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
  /* Renaming the ledger out of its directory. */
  int fd = openat (c->state_dirfd, "x", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  CHILD_CHECK (fd >= 0);
  close (fd);
  snprintf (path, sizeof path, "%s/renamed", G.root);
  errno = 0;
  CHILD_CHECK (renameat (c->state_dirfd, "x", AT_FDCWD, path) == -1 && (errno == EACCES || errno == EXDEV));
  CHILD_CHECK (unlinkat (c->state_dirfd, "x", 0) == 0);
  _exit (0);
}

static void
test_landlock_bounds_paths (void **state)
{
  (void) state;
  int status = run_sandboxed (child_landlock);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    tu_skip ();
  expect_exit0 (status);
  char path[256];
  snprintf (path, sizeof path, "%s/created-abs", G.root);
  assert_int_equal (access (path, F_OK), -1);
  snprintf (path, sizeof path, "%s/created-rel", G.root);
  assert_int_equal (access (path, F_OK), -1);
  snprintf (path, sizeof path, "%s/renamed", G.root);
  assert_int_equal (access (path, F_OK), -1);
  FILE *f = fopen (G.outside, "r");
  char line[64] = { 0 };
  assert_non_null (f);
  assert_non_null (fgets (line, sizeof line, f));
  fclose (f);
  assert_string_equal (line, "not for the hook\n");
}

/* ---- killed: SIGSYS -------------------------------------------------------------------- */

/* Each forbidden call in a child of its own: the first one kills it.  The
 * arguments would do nothing harmful were the call let through. */
static void
call_forbidden (int which)
{
  static char *const argv[] = { "/bin/true", NULL };
  static char *const envp[] = { NULL };
  switch (which)
    {
    case 0: execve ("/bin/true", argv, envp); break;
    case 1: syscall (SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0); break;
    case 2: syscall (SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0); break;
    case 3: syscall (SYS_mount, "none", "/nonexistent-cachepin", "tmpfs", 0, NULL); break;
    case 4: syscall (SYS_umount2, "/nonexistent-cachepin", 0); break;
    case 5: syscall (SYS_pivot_root, "/nonexistent-a", "/nonexistent-b"); break;
    case 6: syscall (SYS_chroot, "/nonexistent-cachepin"); break;
    case 7: syscall (SYS_unshare, 0); break;
    case 8: syscall (SYS_setns, -1, 0); break;
    case 9: syscall (SYS_setuid, getuid ()); break;
    case 10: syscall (SYS_setresuid, -1, -1, -1); break;
    case 11: syscall (SYS_setgroups, 0, NULL); break;
    case 12: syscall (SYS_capset, NULL, NULL); break;
    case 13: syscall (SYS_init_module, NULL, 0, ""); break;
    case 14: syscall (SYS_finit_module, -1, "", 0); break;
    case 15: syscall (SYS_kexec_load, 0, 0, NULL, 0xffffffffUL); break;
    case 16: syscall (SYS_bpf, -1, NULL, 0); break;
    case 17: syscall (SYS_keyctl, -1, 0, 0, 0, 0); break;
    case 18: syscall (SYS_open_by_handle_at, -1, NULL, 0); break;
    case 19: syscall (SYS_perf_event_open, NULL, -1, -1, -1, 0); break;
    case 20: syscall (SYS_userfaultfd, -1); break;
    case 21: syscall (SYS_io_uring_setup, 0, NULL); break;
    case 22: syscall (SYS_reboot, 0, 0, 0, NULL); break; /* bad magic: EINVAL if let through */
    case 23: syscall (SYS_process_vm_writev, 0, NULL, 0, NULL, 0, 0); break;
    default: break;
    }
}

static const char *const forbidden_names[] = {
  "execve", "execveat", "ptrace", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "setuid",
  "setresuid", "setgroups", "capset", "init_module", "finit_module", "kexec_load", "bpf", "keyctl",
  "open_by_handle_at", "perf_event_open", "userfaultfd", "io_uring_setup", "reboot", "process_vm_writev",
};

static int forbidden_which;

static void
child_forbidden (const struct child *c)
{
  (void) c;
  call_forbidden (forbidden_which);
  fprintf (stderr, "child: %s returned (errno %d %s)\n", forbidden_names[forbidden_which], errno, strerror (errno));
  _exit (3);
}

static void
test_killed_sigsys (void **state)
{
  (void) state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (forbidden_names); i++)
    {
      forbidden_which = (int) i;
      expect_sigsys (run_sandboxed (child_forbidden), forbidden_names[i]);
    }
}

#if defined(__x86_64__)
/* A 32-bit syscall (getpid through int $0x80) from a 64-bit process: another ABI. */
static void
child_int80 (const struct child *c)
{
  (void) c;
  long r;
  __asm__ volatile ("int $0x80" : "=a"(r) : "a"(20L) : "memory");
  fprintf (stderr, "child: int $0x80 getpid returned %ld\n", r);
  _exit (3);
}

/* Whether this kernel takes 32-bit system calls at all: kernels built without
   CONFIG_IA32_EMULATION, or booted with ia32_emulation=0 (the default of some
   distribution and cloud kernels), answer int $0x80 with SIGSEGV before any
   seccomp filter sees it.  Probed outside the sandbox. */
static bool
kernel_has_ia32 (void)
{
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      long r;
      __asm__ volatile ("int $0x80" : "=a"(r) : "a"(20L) : "memory");
      _exit (r == (long) getpid () ? 0 : 3);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
    return true;
  if (WIFSIGNALED (status) && WTERMSIG (status) == SIGSEGV)
    return false;
  fail_msg ("int $0x80 without the sandbox: unexpected wait status 0x%x", status);
  return false;
}

static void
test_other_abi_killed (void **state)
{
  (void) state;
  if (!kernel_has_ia32 ())
    {
      printf ("test_other_abi_killed: skipped: this kernel has no 32-bit system call entry "
              "(int $0x80 raises SIGSEGV without the sandbox), so there is nothing to filter\n");
      tu_skip ();
    }
  expect_sigsys (run_sandboxed (child_int80), "int $0x80");
}
#endif

/* ---- setup failures --------------------------------------------------------------------- */

/* Nothing to allow at all (no state directory, no cgroup, no pid) still works:
   only the filter, with no O_CREAT anywhere. */
static void
test_empty_spec (void **state)
{
  (void) state;
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      struct cp_sandbox sb = { .state_dirfd = -1, .cgroup_mountfd = -1, .pid = 0 };
      cp_error_t err = NULL;
      if (cp_sandbox_enter (&sb, &err) < 0)
        _exit (2);
      CHILD_REFUSED (openat (AT_FDCWD, "/tmp/cachepin-sandbox-never", O_CREAT | O_WRONLY, 0600), EPERM);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  expect_exit0 (status);
}

/* A placement on a systemd unit (hook/host/systemd.h): sendmsg and recvmsg on the bus
   connection opened before, and poll; not on another socket, and still no new
   socket or connect. */
static void
test_bus_fd (void **state)
{
  (void) state;
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      int bus[2], other[2];
      CHILD_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bus) == 0);
      CHILD_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, other) == 0);
      /* The peer's answer, waiting before the sandbox (the peer is systemd). */
      CHILD_CHECK (write (bus[1], "reply", 5) == 5);
      struct cp_sandbox sb = { .state_dirfd = -1, .cgroup_mountfd = -1, .pid = 0, .bus = true, .bus_fd = bus[0] };
      cp_error_t err = NULL;
      if (cp_sandbox_enter (&sb, &err) < 0)
        _exit (2);
      char buf[8] = "call";
      struct iovec iov = { .iov_base = buf, .iov_len = 4 };
      struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
      CHILD_CHECK (sendmsg (bus[0], &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == 4);
      struct pollfd pfd = { .fd = bus[0], .events = POLLIN };
      CHILD_CHECK (poll (&pfd, 1, 1000) == 1);
      CHILD_CHECK (ppoll (&pfd, 1, &(struct timespec){ .tv_sec = 1 }, NULL) == 1);
      iov.iov_len = sizeof buf;
      CHILD_CHECK (recvmsg (bus[0], &mh, MSG_DONTWAIT) == 5);
      iov.iov_len = 4;
      CHILD_REFUSED (sendmsg (other[0], &mh, MSG_DONTWAIT | MSG_NOSIGNAL), EPERM);
      CHILD_REFUSED (recvmsg (other[0], &mh, MSG_DONTWAIT), EPERM);
      CHILD_REFUSED (socket (AF_UNIX, SOCK_STREAM, 0), EPERM);
      struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/dbus/system_bus_socket" };
      CHILD_REFUSED (connect (bus[0], (struct sockaddr *) &sa, sizeof sa), EPERM);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  expect_exit0 (status);
}

/* Without a bus, sendmsg and recvmsg stay refused. */
static void
test_no_bus_no_sendmsg (void **state)
{
  (void) state;
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      int sv[2];
      CHILD_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
      struct cp_sandbox sb = { .state_dirfd = -1, .cgroup_mountfd = -1, .pid = 0 };
      cp_error_t err = NULL;
      if (cp_sandbox_enter (&sb, &err) < 0)
        _exit (2);
      char buf[4] = "call";
      struct iovec iov = { .iov_base = buf, .iov_len = 4 };
      struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
      CHILD_REFUSED (sendmsg (sv[0], &mh, MSG_DONTWAIT | MSG_NOSIGNAL), EPERM);
      CHILD_REFUSED (recvmsg (sv[0], &mh, MSG_DONTWAIT), EPERM);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  expect_exit0 (status);
}

/* ---- the plugin's profile (CP_SANDBOX_PLUGIN) --------------------------------------- */

/* Fork; the child binds a unix socket (standing for the runtime's NRI socket)
   under the scratch root, enters the plugin's profile on the state directory with
   the stand-in cgroup tree and /proc as its read directories, and runs FN with
   the socket's path.  Returns the child's wait status. */
typedef void (*plugin_fn) (int abi, const char *sock, pid_t target);

static int
run_plugin_sandboxed (plugin_fn fn)
{
  fflush (NULL);
  pid_t parent = getpid ();
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      struct sockaddr_un sa = { .sun_family = AF_UNIX };
      snprintf (sa.sun_path, sizeof sa.sun_path, "%.64s/nri-%d.sock", G.root, (int) getpid ());
      const char *sock = sa.sun_path;
      int l = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      CHILD_CHECK (l >= 0 && bind (l, (struct sockaddr *) &sa, sizeof sa) == 0 && listen (l, 4) == 0);
      int dirfd = open (G.state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      CHILD_CHECK (dirfd >= 0);
      openlog ("cachepin-test", LOG_PID | LOG_NDELAY, LOG_DAEMON);
      cp_error_t cdi_err = NULL;
      G.cdi_fd = cp_cdi_open_dir (G.cdi, false, &cdi_err);
      CHILD_CHECK (G.cdi_fd >= 0);
      struct cp_sandbox sb = {
        .profile = CP_SANDBOX_PLUGIN, .state_dirfd = dirfd, .cgroup_mountfd = -1, .read_dirs = { "/proc", G.cg },
        .write_files = { G.sw }, .cdi = true, .cdi_dirfd = G.cdi_fd,
      };
      cp_error_t err = NULL;
      int abi = cp_sandbox_enter (&sb, &err);
      if (abi < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter (plugin): %s\n", cp_error_message (err));
          _exit (2);
        }
      close (dirfd); /* the plugin opens the state directory anew per request */
      fn (abi, sock, parent);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  return status;
}

/* One request's steps: the state directory opened by path and checked as ours,
   the ledger's lock taken, the ledger committed (tmp, rename, link, unlink), /proc
   and cgroup files read, a container's process checked alive, the runtime's
   socket connected again, polled and written, a back-off sleep, syslog. */
static void
plugin_allowed (int abi, const char *sock, pid_t target)
{
  CHILD_REFUSED (mkdir (G.state, 0700), EEXIST);
  int dirfd = open (G.state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  CHILD_CHECK (dirfd >= 0);
  CHILD_CHECK (geteuid () == getuid ());
  int lock = openat (dirfd, CP_LEDGER_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  CHILD_CHECK (lock >= 0 && flock (dirfd, LOCK_EX | LOCK_NB) == 0 && flock (lock, LOCK_EX | LOCK_NB) == 0);
  int fd = openat (dirfd, CP_LEDGER_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  CHILD_CHECK (fd >= 0 && write (fd, "{}\n", 3) == 3 && fsync (fd) == 0 && close (fd) == 0);
  CHILD_CHECK (renameat (dirfd, CP_LEDGER_TMP_FILE, dirfd, CP_LEDGER_FILE) == 0);
  CHILD_CHECK (linkat (dirfd, CP_LEDGER_FILE, dirfd, CP_LEDGER_PREV_FILE, 0) == 0);
  CHILD_CHECK (unlinkat (dirfd, CP_LEDGER_PREV_FILE, 0) == 0 && unlinkat (dirfd, CP_LEDGER_FILE, 0) == 0);
  CHILD_CHECK (unlinkat (dirfd, CP_LEDGER_LOCK_FILE, 0) == 0);
  close (lock);
  close (dirfd);

  char path[256], buf[64] = { 0 };
  snprintf (path, sizeof path, "/proc/%d/stat", (int) target);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && read (fd, buf, sizeof buf - 1) > 0);
  close (fd);
  snprintf (path, sizeof path, "%s/cpuset.cpus", G.cg);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && read (fd, buf, sizeof buf - 1) > 0);
  close (fd);
  /* Signal 0 passes seccomp; Landlock from ABI 6 scopes signals to the sandbox,
     and answers EPERM for a live process outside it, which the ledger's check
     (ESRCH: gone) reads as alive, as it should. */
  CHILD_CHECK (kill (getpid (), 0) == 0);
  CHILD_CHECK (kill (target, 0) == 0 || (abi >= 6 && errno == EPERM));

  int s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%.100s", sock);
  CHILD_CHECK (s >= 0 && connect (s, (struct sockaddr *) &sa, sizeof sa) == 0);
  struct pollfd pfd = { .fd = s, .events = POLLOUT };
  CHILD_CHECK (poll (&pfd, 1, 1000) == 1);
  CHILD_CHECK (send (s, "x", 1, MSG_NOSIGNAL) == 1);
  close (s);
  struct timespec nap = { 0, 1000000 };
  CHILD_CHECK (nanosleep (&nap, NULL) == 0);
  syslog (LOG_DEBUG, "plugin sandbox test: syslog still works");

  /* A prepared claim's CDI spec written (a temporary file renamed) and removed in
     the CDI directory it was given. */
  cp_error_t err = NULL;
  char spec[256];
  snprintf (spec, sizeof spec, "%s/cachepin.io-claim_u-1.json", G.cdi);
  CHILD_CHECK (cp_cdi_write_at (G.cdi_fd, G.cdi, "u-1", (unsigned[]) { 0 }, 1, NULL, &err) == 0);
  fd = open (spec, O_RDONLY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && close (fd) == 0);
  CHILD_CHECK (cp_cdi_remove_at (G.cdi_fd, G.cdi, "u-1", &err) == 1);

  /* The switch: opened as sched_cas.c opens it, written, read back. */
  fd = open (G.sw, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && write (fd, "1", 1) == 1);
  memset (buf, 0, sizeof buf);
  CHILD_CHECK (pread (fd, buf, sizeof buf - 1, 0) > 0 && buf[0] == '1');
  close (fd);
}

static void
test_plugin_allowed (void **state)
{
  (void) state;
  expect_exit0 (run_plugin_sandboxed (plugin_allowed));
}

/* No network, no other signal, no cgroup write, nothing outside its directories. */
static void
plugin_refused (int abi, const char *sock, pid_t target)
{
  (void) sock;
  CHILD_REFUSED (socket (AF_INET, SOCK_STREAM, 0), EPERM);
  CHILD_REFUSED (socket (AF_INET6, SOCK_DGRAM, 0), EPERM);
  CHILD_REFUSED (socket (AF_NETLINK, SOCK_RAW, 0), EPERM);
  CHILD_REFUSED (kill (target, SIGTERM), EPERM);
  CHILD_REFUSED (syscall (SYS_fork), EPERM);
  CHILD_REFUSED (syscall (SYS_sched_setaffinity, 0, 0, NULL), EPERM);
  /* No listener in this profile: no accept, no epoll. */
  CHILD_REFUSED (accept4 (0, NULL, NULL, SOCK_CLOEXEC), EPERM);
  CHILD_REFUSED (epoll_ctl (0, EPOLL_CTL_DEL, 1, NULL), EPERM);
  if (abi == 0)
    return; /* what only Landlock refuses */
  char path[256];
  snprintf (path, sizeof path, "%s/cpuset.cpus", G.cg);
  CHILD_REFUSED (open (path, O_WRONLY | O_CLOEXEC), EACCES);
  CHILD_REFUSED (open (G.outside, O_RDONLY | O_CLOEXEC), EACCES);
  snprintf (path, sizeof path, "%s/new.txt", G.root);
  CHILD_REFUSED (open (path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
  /* The switch's rule is that file's alone: not its neighbour, not a new file beside it. */
  CHILD_REFUSED (open (G.sw_sibling, O_WRONLY | O_CLOEXEC), EACCES);
  snprintf (path, sizeof path, "%s/kernel/new", G.root);
  CHILD_REFUSED (open (path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
  if (abi >= 3)
    CHILD_REFUSED (open (G.sw, O_WRONLY | O_TRUNC | O_CLOEXEC), EACCES);
}

static void
test_plugin_refused (void **state)
{
  (void) state;
  expect_exit0 (run_plugin_sandboxed (plugin_refused));
}

static void
plugin_execve (int abi, const char *sock, pid_t target)
{
  (void) abi, (void) sock, (void) target;
  char *argv[] = { "/bin/true", NULL };
  execve ("/bin/true", argv, NULL);
  _exit (3); /* refused instead of killed: the test sees exit 3 */
}

static void
test_plugin_execve_killed (void **state)
{
  (void) state;
  expect_sigsys (run_plugin_sandboxed (plugin_execve), "plugin profile: execve");
}

/* A TCP socket listening on 127.0.0.1 (a free port), and a client connected to it
   (in its backlog, not accepted yet). */
static int
tcp_listener (int *client)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof sa;
  int l = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  CHILD_CHECK (l >= 0 && bind (l, (struct sockaddr *) &sa, sizeof sa) == 0 && listen (l, 4) == 0);
  CHILD_CHECK (getsockname (l, (struct sockaddr *) &sa, &len) == 0);
  *client = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHILD_CHECK (*client >= 0 && connect (*client, (struct sockaddr *) &sa, sizeof sa) == 0);
  return l;
}

/* The listener's rules hold for its socket and its set, and for nothing else. */
static void
test_plugin_listener (void **state)
{
  (void) state;
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      int client, other_client;
      int l = tcp_listener (&client), other = tcp_listener (&other_client);
      int efd = epoll_create1 (EPOLL_CLOEXEC), other_efd = epoll_create1 (EPOLL_CLOEXEC);
      CHILD_CHECK (efd >= 0 && other_efd >= 0);
      int dirfd = open (G.state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      CHILD_CHECK (dirfd >= 0);
      struct cp_sandbox sb = {
        .profile = CP_SANDBOX_PLUGIN, .state_dirfd = dirfd, .cgroup_mountfd = -1, .read_dirs = { "/proc" },
        .listener = true, .listen_fd = l, .epoll_fd = efd,
      };
      cp_error_t err = NULL;
      if (cp_sandbox_enter (&sb, &err) < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter (plugin, listener): %s\n", cp_error_message (err));
          _exit (2);
        }
      int c = accept4 (l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      CHILD_CHECK (c >= 0);
      struct epoll_event ev = { .events = EPOLLIN, .data.fd = c };
      CHILD_CHECK (epoll_ctl (efd, EPOLL_CTL_ADD, c, &ev) == 0);
      CHILD_CHECK (send (client, "GET", 3, MSG_NOSIGNAL) == 3);
      CHILD_CHECK (epoll_wait (efd, &ev, 1, 1000) == 1 && ev.data.fd == c);
      char buf[8];
      CHILD_CHECK (recv (c, buf, sizeof buf, 0) == 3 && send (c, "200", 3, MSG_NOSIGNAL) == 3);
      int one = 1;
      CHILD_CHECK (setsockopt (c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
      CHILD_CHECK (shutdown (c, SHUT_RDWR) == 0 && close (c) == 0);
      CHILD_REFUSED (accept4 (other, NULL, NULL, SOCK_CLOEXEC), EPERM);
      CHILD_REFUSED (epoll_ctl (other_efd, EPOLL_CTL_ADD, client, &ev), EPERM);
      CHILD_REFUSED (epoll_wait (other_efd, &ev, 1, 0), EPERM);
      CHILD_REFUSED (setsockopt (client, SOL_SOCKET, SO_RCVBUF, &one, sizeof one), EPERM);
      struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
      CHILD_REFUSED (bind (other_client, (struct sockaddr *) &sa, sizeof sa), EPERM);
      CHILD_REFUSED (listen (other_client, 1), EPERM);
      CHILD_REFUSED (socket (AF_INET, SOCK_STREAM, 0), EPERM);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  expect_exit0 (status);
}

/* A unix socket listening at DIR/NAME, and a client connected to it (in its
   backlog, not accepted yet). */
static int
unix_listener (const char *dir, const char *name, int *client)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s/%s", dir, name);
  int l = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  CHILD_CHECK (l >= 0 && bind (l, (struct sockaddr *) &sa, sizeof sa) == 0 && listen (l, 4) == 0);
  *client = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHILD_CHECK (*client >= 0 && connect (*client, (struct sockaddr *) &sa, sizeof sa) == 0);
  return l;
}

/* The kubelet plugin's rules (nri_kubelet.h): accept on its two sockets, epoll on
   its set, the removal of files beneath its two directories; nothing else. */
static void
test_plugin_grpc (void **state)
{
  (void) state;
  char reg[256], dra[256], elsewhere[256], keep[300];
  snprintf (reg, sizeof reg, "%s/plugins_registry", G.root);
  snprintf (dra, sizeof dra, "%s/dra", G.root);
  snprintf (elsewhere, sizeof elsewhere, "%s/elsewhere", G.root);
  snprintf (keep, sizeof keep, "%s/keep.sock", elsewhere);
  assert_int_equal (mkdir (reg, 0700), 0);
  assert_int_equal (mkdir (dra, 0700), 0);
  assert_int_equal (mkdir (elsewhere, 0700), 0);
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      int c1, c2, c3;
      int l1 = unix_listener (reg, "reg.sock", &c1), l2 = unix_listener (dra, "dra.sock", &c2);
      int other = unix_listener (elsewhere, "keep.sock", &c3);
      int efd = epoll_create1 (EPOLL_CLOEXEC), other_efd = epoll_create1 (EPOLL_CLOEXEC);
      CHILD_CHECK (efd >= 0 && other_efd >= 0);
      int dirfd = open (G.state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      CHILD_CHECK (dirfd >= 0);
      struct cp_sandbox sb = {
        .profile = CP_SANDBOX_PLUGIN, .state_dirfd = dirfd, .cgroup_mountfd = -1, .read_dirs = { "/proc" },
        .grpc = true, .grpc_listen_fds = { l1, l2 }, .grpc_epoll_fd = efd, .remove_dirs = { reg, dra },
      };
      cp_error_t err = NULL;
      int abi = cp_sandbox_enter (&sb, &err);
      if (abi < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter (plugin, grpc): %s\n", cp_error_message (err));
          _exit (2);
        }
      int a = accept4 (l1, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      int b = accept4 (l2, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      CHILD_CHECK (a >= 0 && b >= 0);
      struct epoll_event ev = { .events = EPOLLIN, .data.fd = a };
      CHILD_CHECK (epoll_ctl (efd, EPOLL_CTL_ADD, a, &ev) == 0);
      CHILD_CHECK (send (c1, "PRI", 3, MSG_NOSIGNAL) == 3);
      CHILD_CHECK (epoll_wait (efd, &ev, 1, 1000) == 1 && ev.data.fd == a);
      char buf[8];
      CHILD_CHECK (read (a, buf, sizeof buf) == 3 && write (a, "ok", 2) == 2);
      CHILD_CHECK (close (a) == 0 && close (b) == 0);
      CHILD_REFUSED (accept4 (other, NULL, NULL, SOCK_CLOEXEC), EPERM);
      CHILD_REFUSED (epoll_ctl (other_efd, EPOLL_CTL_ADD, c3, &ev), EPERM);
      CHILD_REFUSED (epoll_wait (other_efd, &ev, 1, 0), EPERM);
      CHILD_REFUSED (bind (c3, (struct sockaddr *) &(struct sockaddr_un) { .sun_family = AF_UNIX }, sizeof (sa_family_t)),
                     EPERM);
      CHILD_REFUSED (listen (c3, 1), EPERM);
      /* The sockets go at the end; a file elsewhere stays (Landlock: where it is). */
      char path[300];
      snprintf (path, sizeof path, "%s/reg.sock", reg);
      CHILD_CHECK (unlinkat (AT_FDCWD, path, 0) == 0);
      snprintf (path, sizeof path, "%s/dra.sock", dra);
      CHILD_CHECK (unlinkat (AT_FDCWD, path, 0) == 0);
      snprintf (path, sizeof path, "%s/keep.sock", elsewhere);
      if (abi > 0)
        CHILD_REFUSED (unlinkat (AT_FDCWD, path, 0), EACCES);
      _exit (abi > 0 ? 0 : 77);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    tu_skip (); /* no Landlock: the removal rule is not there to check */
  else
    expect_exit0 (status);
  assert_int_equal (access (keep, F_OK), 0); /* the refused removal left it */
}

/* ---- the DRA publisher's profile (CP_SANDBOX_PUBLISHER) ------------------------------ */

/* A TCP listener on 127.0.0.1 (a port the kernel picks): its fd, its port in *PORT. */
static int
port_listener (unsigned *port)
{
  int l = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof sa;
  if (l < 0 || bind (l, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (l, 4) < 0
      || getsockname (l, (struct sockaddr *) &sa, &len) < 0)
    return -1;
  *port = ntohs (sa.sin_port);
  return l;
}

static int
tcp_connect (unsigned port)
{
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  if (s < 0)
    return -1;
  int r = connect (s, (struct sockaddr *) &sa, sizeof sa);
  int e = errno;
  close (s);
  errno = e;
  return r;
}

typedef void (*publisher_fn) (int abi, unsigned api_port, unsigned other_port);

/* Fork; the child opens two TCP listeners (the API server's, another), enters the
   publisher's profile with the stand-in cgroup tree (standing for /sys) and the
   state directory as its read directories and the first listener's port as the
   API server's, and runs FN.  Returns the child's wait status. */
static int
run_publisher_sandboxed (publisher_fn fn)
{
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      reset_fatal_signals ();
      unsigned api = 0, other = 0;
      CHILD_CHECK (port_listener (&api) >= 0 && port_listener (&other) >= 0);
      openlog ("cachepin-test", LOG_PID | LOG_NDELAY, LOG_DAEMON);
      struct cp_sandbox sb = { .profile = CP_SANDBOX_PUBLISHER, .state_dirfd = -1, .cgroup_mountfd = -1,
                               .read_dirs = { "/proc", G.cg, G.state }, .connect_port = api };
      cp_error_t err = NULL;
      int abi = cp_sandbox_enter (&sb, &err);
      if (abi < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter (publisher): %s\n", cp_error_message (err));
          _exit (2);
        }
      fn (abi, api, other);
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  return status;
}

/* What a round and a fetch do: read beneath the read directories, a TCP
   connection to the API server, the multi handle's wakeup, random bytes, a
   private futex wake, syslog. */
static void
publisher_allowed (int abi, unsigned api, unsigned other)
{
  (void) abi, (void) other;
  char path[256], buf[64] = { 0 };
  snprintf (path, sizeof path, "%s/cpuset.cpus", G.cg);
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && read (fd, buf, sizeof buf - 1) > 0 && close (fd) == 0);
  fd = open ("/proc/self/status", O_RDONLY | O_CLOEXEC);
  CHILD_CHECK (fd >= 0 && read (fd, buf, sizeof buf - 1) > 0 && close (fd) == 0);
  CHILD_CHECK (tcp_connect (api) == 0);
  int sp[2];
  CHILD_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0 && write (sp[0], "x", 1) == 1);
  struct pollfd pfd = { .fd = sp[1], .events = POLLIN };
  CHILD_CHECK (poll (&pfd, 1, 1000) == 1 && recv (sp[1], buf, 1, 0) == 1);
  CHILD_CHECK (syscall (SYS_getrandom, buf, 16, 0) == 16);
  int futex_word = 0;
  CHILD_CHECK (syscall (SYS_futex, &futex_word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0) == 0);
  syslog (LOG_DEBUG, "cachepin test: the publisher's sandbox logs");
}

static void
test_publisher_allowed (void **state)
{
  (void) state;
  expect_exit0 (run_publisher_sandboxed (publisher_allowed));
}

/* No write anywhere, no socket but TCP's, no bind or listen, and (Landlock) no
   read outside its directories, no TCP connect to another port (ABI 4+). */
static void
publisher_refused (int abi, unsigned api, unsigned other)
{
  (void) api;
  char path[256];
  snprintf (path, sizeof path, "%s/cpuset.cpus", G.cg);
  CHILD_REFUSED (open (path, O_WRONLY | O_CLOEXEC), EPERM);
  CHILD_REFUSED (open (path, O_RDWR | O_CLOEXEC), EPERM);
  CHILD_REFUSED (open (path, O_RDONLY | O_TRUNC | O_CLOEXEC), EPERM);
  snprintf (path, sizeof path, "%s/new.json", G.state);
  CHILD_REFUSED (open (path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600), EPERM);
  CHILD_REFUSED (unlinkat (AT_FDCWD, G.outside, 0), EPERM);
  CHILD_REFUSED (renameat (AT_FDCWD, G.outside, AT_FDCWD, path), EPERM);
  CHILD_REFUSED (linkat (AT_FDCWD, G.outside, AT_FDCWD, path, 0), EPERM);
  CHILD_REFUSED (mkdir (path, 0700), EPERM);
  CHILD_REFUSED (socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), EPERM);
  CHILD_REFUSED (socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), EPERM);
  CHILD_REFUSED (socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), EPERM);
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  CHILD_CHECK (s >= 0);
  CHILD_REFUSED (bind (s, (struct sockaddr *) &sa, sizeof sa), EPERM);
  CHILD_REFUSED (listen (s, 1), EPERM);
  CHILD_REFUSED (accept4 (s, NULL, NULL, 0), EPERM);
  close (s);
  CHILD_REFUSED (fork (), EPERM);
  CHILD_REFUSED (kill (1, 0), EPERM);
  if (abi > 0)
    CHILD_REFUSED (open (G.outside, O_RDONLY | O_CLOEXEC), EACCES);
  if (abi >= 4)
    CHILD_REFUSED (tcp_connect (other), EACCES);
}

static void
test_publisher_refused (void **state)
{
  (void) state;
  expect_exit0 (run_publisher_sandboxed (publisher_refused));
}

static void
publisher_execve (int abi, unsigned api, unsigned other)
{
  (void) abi, (void) api, (void) other;
  char *const argv[] = { (char *) "/bin/true", NULL };
  execve ("/bin/true", argv, NULL);
  _exit (0); /* not killed: the test fails */
}

static void
publisher_ptrace (int abi, unsigned api, unsigned other)
{
  (void) abi, (void) api, (void) other;
  syscall (SYS_ptrace, 0L, 0L, 0L, 0L);
  _exit (0);
}

static void
test_publisher_killed (void **state)
{
  (void) state;
  expect_sigsys (run_publisher_sandboxed (publisher_execve), "execve in the publisher's sandbox");
  expect_sigsys (run_publisher_sandboxed (publisher_ptrace), "ptrace in the publisher's sandbox");
}

/* Where the sandbox cannot be tested: a sanitizer build (it is not loaded there,
   see sandbox.h) and valgrind (which implements neither seccomp nor Landlock). */
static const char *
why_not_here (void)
{
  if (CP_SANDBOX_SANITIZER_BUILD)
    return "a sanitizer build, where the sandbox is built but not loaded (hook/host/sandbox.h)";
  if (tu_under_valgrind ())
    return "valgrind, which implements neither seccomp() nor Landlock";
  return NULL;
}

/* A sanitizer build still builds the filter and returns 0. */
static void
test_sanitizer_build_builds (void **state)
{
  (void) state;
  if (!CP_SANDBOX_SANITIZER_BUILD)
    tu_skip ();
  struct cp_sandbox sb = { .state_dirfd = -1, .cgroup_mountfd = -1, .pid = 0 };
  cp_error_t err = NULL;
  int r = cp_sandbox_enter (&sb, &err);
  if (r < 0)
    fail_msg ("cp_sandbox_enter: %s", cp_error_message (err));
  assert_int_equal (r, 0);
}

int
main (void)
{
  const char *why = why_not_here ();
  if (why && !CP_SANDBOX_SANITIZER_BUILD)
    {
      printf ("test_sandbox: skipped: %s\n", why);
      return 77; /* reported as skipped (SKIP_RETURN_CODE), not as passed */
    }
  if (why)
    {
      printf ("test_sandbox: %s; only checking that it builds\n", why);
      const struct CMUnitTest tests[] = { cmocka_unit_test (test_sanitizer_build_builds) };
      return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
    }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_allowed),
    cmocka_unit_test (test_abort_still_aborts),
    cmocka_unit_test (test_refused_eperm),
    cmocka_unit_test (test_landlock_bounds_paths),
    cmocka_unit_test (test_killed_sigsys),
#if defined(__x86_64__)
    cmocka_unit_test (test_other_abi_killed),
#endif
    cmocka_unit_test (test_empty_spec),
    cmocka_unit_test (test_bus_fd),
    cmocka_unit_test (test_no_bus_no_sendmsg),
    cmocka_unit_test (test_plugin_allowed),
    cmocka_unit_test (test_plugin_refused),
    cmocka_unit_test (test_plugin_execve_killed),
    cmocka_unit_test (test_plugin_listener),
    cmocka_unit_test (test_plugin_grpc),
    cmocka_unit_test (test_publisher_allowed),
    cmocka_unit_test (test_publisher_refused),
    cmocka_unit_test (test_publisher_killed),
  };
  return tu_exit (cmocka_run_group_tests (tests, setup, teardown));
}
