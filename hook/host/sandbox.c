/* cachepin: the hook's own sandbox (see sandbox.h for what it allows and why). */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ---- Landlock ------------------------------------------------------------------
 *
 * Our own copies of the ABI: the installed <linux/landlock.h> may predate the
 * kernel (Debian 12's stops at ABI 2), and the kernel takes the shorter structs
 * of older ABIs. */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444 /* the same number on every architecture */
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_ABI1 ((1ULL << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ULL << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define LL_NET_ALL (3ULL)             /* ABI 4: BIND_TCP | CONNECT_TCP */
#define LL_SCOPE_ALL (3ULL)           /* ABI 6: ABSTRACT_UNIX_SOCKET | SIGNAL */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

struct ll_ruleset_attr
{
  uint64_t handled_access_fs;
  uint64_t handled_access_net; /* ABI 4 */
  uint64_t scoped;             /* ABI 6 */
};

struct __attribute__ ((packed)) ll_path_beneath_attr
{
  uint64_t allowed_access;
  int32_t parent_fd;
};

struct __attribute__ ((packed)) ll_net_port_attr
{
  uint64_t allowed_access;
  uint64_t port;
};

static int
ll_add (int ruleset, int dirfd, uint64_t access, uint64_t handled, const char *what, cp_error_t *err)
{
  struct ll_path_beneath_attr rule = { .allowed_access = access & handled, .parent_fd = dirfd };
  if (syscall (SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) < 0)
    return cp_fail_errno (err, errno, "landlock: rule for %s", what);
  return 0;
}

/* The plugin's READ_DIRS: read and list beneath each that exists now. */
static int
ll_add_read_dirs (int ruleset, const struct cp_sandbox *sb, uint64_t handled, cp_error_t *err)
{
  for (size_t i = 0; i < CP_SANDBOX_MAX_READ_DIRS && sb->read_dirs[i]; i++)
    {
      cleanup_close int fd = open (sb->read_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        continue; /* nothing there to read now (a host without a kubelet) */
      if (fd < 0)
        return cp_fail_errno (err, errno, "landlock: open %s", sb->read_dirs[i]);
      if (ll_add (ruleset, fd, LL_FS_READ_FILE | LL_FS_READ_DIR, handled, sb->read_dirs[i], err) < 0)
        return -1;
    }
  return 0;
}

/* The plugin's WRITE_FILES: read and write each that exists now.  A rule on a
   file carries only file rights; opened with O_PATH, never through a symlink. */
static int
ll_add_write_files (int ruleset, const struct cp_sandbox *sb, uint64_t handled, cp_error_t *err)
{
  for (size_t i = 0; i < CP_SANDBOX_MAX_WRITE_FILES && sb->write_files[i]; i++)
    {
      cleanup_close int fd = open (sb->write_files[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        continue; /* debugfs unmounted since the caller looked: the switch reads as missing */
      if (fd < 0)
        return cp_fail_errno (err, errno, "landlock: open %s", sb->write_files[i]);
      if (ll_add (ruleset, fd, LL_FS_READ_FILE | LL_FS_WRITE_FILE, handled, sb->write_files[i], err) < 0)
        return -1;
    }
  return 0;
}

/* The plugin's REMOVE_DIRS: files beneath each that exists now may be removed
   (the kubelet plugin's sockets, at its end). */
static int
ll_add_remove_dirs (int ruleset, const struct cp_sandbox *sb, uint64_t handled, cp_error_t *err)
{
  for (size_t i = 0; i < CP_SANDBOX_MAX_REMOVE_DIRS && sb->remove_dirs[i]; i++)
    {
      cleanup_close int fd = open (sb->remove_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
        continue; /* removed meanwhile: its socket with it */
      if (fd < 0)
        return cp_fail_errno (err, errno, "landlock: open %s", sb->remove_dirs[i]);
      if (ll_add (ruleset, fd, LL_FS_REMOVE_FILE, handled, sb->remove_dirs[i], err) < 0)
        return -1;
    }
  return 0;
}

/* Returns the ABI applied, 0 when the kernel has no Landlock. */
static int
enter_landlock (const struct cp_sandbox *sb, cp_error_t *err)
{
  long abi = syscall (SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0 && (errno == ENOSYS || errno == EOPNOTSUPP))
    return 0; /* not built, or not enabled (lsm=) */
  if (abi < 0)
    return cp_fail_errno (err, errno, "landlock: ABI version");

  struct ll_ruleset_attr attr = { .handled_access_fs = LL_FS_ABI1 };
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 2)
    attr.handled_access_fs |= LL_FS_REFER;
  if (abi >= 3)
    attr.handled_access_fs |= LL_FS_TRUNCATE;
  if (abi >= 4)
    {
      attr.handled_access_net = LL_NET_ALL;
      size = offsetof (struct ll_ruleset_attr, scoped);
    }
  if (abi >= 5)
    attr.handled_access_fs |= LL_FS_IOCTL_DEV;
  if (abi >= 6)
    {
      attr.scoped = LL_SCOPE_ALL;
      size = sizeof attr;
    }
  cleanup_close int ruleset = (int) syscall (SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0)
    return cp_fail_errno (err, errno, "landlock: create ruleset (ABI %ld)", abi);

  uint64_t fs = attr.handled_access_fs;
  /* The plugin opens the state directory itself at each request (O_RDONLY). */
  uint64_t state = LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_MAKE_REG | LL_FS_REMOVE_FILE | LL_FS_TRUNCATE
                   | (sb->profile == CP_SANDBOX_PLUGIN ? LL_FS_READ_DIR : 0);
  if (sb->state_dirfd >= 0 && ll_add (ruleset, sb->state_dirfd, state, fs, "the state directory", err) < 0)
    return -1;
  if (sb->profile == CP_SANDBOX_PUBLISHER && ll_add_read_dirs (ruleset, sb, fs, err) < 0)
    return -1;
  /* The publisher's one TCP connect: the API server's port. */
  struct ll_net_port_attr port = { .allowed_access = LL_NET_CONNECT_TCP, .port = sb->connect_port };
  if (sb->profile == CP_SANDBOX_PUBLISHER && abi >= 4 && sb->connect_port > 0
      && syscall (SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &port, 0) < 0)
    return cp_fail_errno (err, errno, "landlock: rule for TCP port %u", sb->connect_port);
  if (sb->profile == CP_SANDBOX_PLUGIN
      && (ll_add_read_dirs (ruleset, sb, fs, err) < 0 || ll_add_write_files (ruleset, sb, fs, err) < 0
          || ll_add_remove_dirs (ruleset, sb, fs, err) < 0))
    return -1;
  if (sb->cdi
      && ll_add (ruleset, sb->cdi_dirfd, LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE | LL_FS_MAKE_REG
                                             | LL_FS_REMOVE_FILE,
                 fs, "the CDI spec directory", err)
             < 0)
    return -1;
  if (sb->cgroup_mountfd >= 0
      && ll_add (ruleset, sb->cgroup_mountfd, LL_FS_READ_FILE | LL_FS_WRITE_FILE, fs, "the cgroup hierarchy", err)
             < 0)
    return -1;
  if (sb->pid > 0)
    {
      char proc[32];
      snprintf (proc, sizeof proc, "/proc/%d", (int) sb->pid);
      cleanup_close int fd = open (proc, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      /* A process already gone: no rule, and the caller's read of its stat
         fails as it would have anyway (ESRCH, EACCES).  Any other failure (out
         of descriptors: EMFILE) is ours: skipping the rule would turn it into a
         misleading EACCES on /proc/PID/stat later. */
      if (fd < 0 && errno != ENOENT && errno != ESRCH)
        return cp_fail_errno (err, errno, "landlock: open %s", proc);
      if (fd >= 0 && ll_add (ruleset, fd, LL_FS_READ_FILE, fs, proc, err) < 0)
        return -1;
    }
  if (syscall (SYS_landlock_restrict_self, ruleset, 0) < 0)
    return cp_fail_errno (err, errno, "landlock: restrict self");
  return (int) abi;
}

/* ---- seccomp -------------------------------------------------------------------- */

/* Calls that nothing in cachepin makes after the sandbox point; only a process
 * someone else now controls would.  Killed, not refused.  Names a given
 * architecture lacks (setuid32 on x86_64) are skipped. */
static const char *const CP_SANDBOX_KILLED[] = {
  "execve", "execveat",
  "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
  "mount", "umount", "umount2", "pivot_root", "chroot", "setns", "unshare",
  "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
  "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
  "bpf", "perf_event_open", "userfaultfd",
  "io_uring_setup", "io_uring_enter", "io_uring_register",
  "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
  "setgroups", "setuid32", "setgid32", "setreuid32", "setregid32", "setresuid32", "setresgid32",
  "setfsuid32", "setfsgid32", "setgroups32", "capset",
  "keyctl", "add_key", "request_key",
  "open_by_handle_at", "name_to_handle_at",
  "reboot", "swapon", "swapoff", "iopl", "ioperm", "acct", "quotactl", "syslog",
  "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "personality",
};

/* Allowed whatever their arguments.  What `strace -f` of runc and podman runs
 * shows after the sandbox point (getpid, sendto, write, openat, read, close,
 * unlinkat, fsync, renameat, fcntl, exit_group), plus what a larger input or
 * another glibc may take for the same steps: malloc growing (brk, mmap, mremap,
 * munmap, madvise), fstat (the cgroup walk, stdio; newfstatat on x86_64 and
 * arm64, statx where time is 64-bit on a 32-bit ABI), renameat2 (arm64 has no
 * renameat), clock_gettime (placed_at, syslog's stamp: a vDSO call where there
 * is one), gettid and rt_sigprocmask (abort()), and signal-return plumbing.
 * Left out on purpose: sleeping (the lock's back-off is over), futex (one
 * thread), getrandom (json-c seeds its hash when the inputs are parsed).
 * The writes (CP_SANDBOX_WRITES) are the hook's and the plugin's, not the
 * publisher's. */
static const char *const CP_SANDBOX_ALLOWED[] = {
  /* memory */
  "brk", "munmap", "mremap", "madvise",
  /* I/O on what is open, and the ledger's commit */
  "read", "pread64", "write", "close", "fstat", "newfstatat", "fstatat64", "fstat64", "statx",
  /* process */
  "clock_gettime", "clock_gettime64", "getpid", "gettid", "rt_sigprocmask", "rt_sigreturn", "sigreturn",
  "restart_syscall", "exit", "exit_group",
};

static const char *const CP_SANDBOX_WRITES[] = { "fsync", "renameat", "renameat2", "unlinkat" };

static int
rule (scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n, const struct scmp_arg_cmp *cmp,
      cp_error_t *err)
{
  int nr = seccomp_syscall_resolve_name (name);
  if (nr == __NR_SCMP_ERROR)
    return 0; /* not a syscall of this architecture */
  int r = seccomp_rule_add_array (ctx, action, nr, n, cmp);
  /* -EDOM: a pseudo-number libseccomp knows but this architecture has no such call. */
  if (r < 0 && r != -EDOM)
    return cp_fail_errno (err, -r, "seccomp: rule for %s", name);
  return 0;
}

/* Each of NAMES (N of them) allowed whatever its arguments. */
static int
allow_each (scmp_filter_ctx ctx, const char *const *names, size_t n, cp_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    if (rule (ctx, SCMP_ACT_ALLOW, names[i], 0, NULL, err) < 0)
      return -1;
  return 0;
}

/* rule() with argument comparisons written inline; reports into the caller's ERR. */
#define RULE(ctx, action, name, ...)                                                            \
  rule ((ctx), (action), (name), CP_ARRAY_SIZE (((struct scmp_arg_cmp[]){ __VA_ARGS__ })),     \
        ((struct scmp_arg_cmp[]){ __VA_ARGS__ }), err)

/* The plugin's, on top of the hook's: what one request's steps need, each one
 * seen in `strace -f` of the plugin under containerd (tests/cri/nri.sh), or taken
 * by the same steps elsewhere (the 32-bit and time64 names, readlink for
 * /proc).  See sandbox.h. */
static const char *const CP_SANDBOX_PLUGIN_ALLOWED[] = {
  /* the ledger's and the journal's locks, and their back-off */
  "flock", "nanosleep", "clock_nanosleep", "clock_nanosleep_time64",
  /* the state directory made if missing (EEXIST) and checked as ours */
  "mkdir", "mkdirat", "getuid", "geteuid", "getgid", "getegid", "getuid32", "geteuid32", "getgid32", "getegid32",
  /* the runtime's socket (and a new one after a restart), syslog's reconnect */
  "connect", "sendmsg", "recvmsg", "recvfrom", "poll", "ppoll", "ppoll_time64",
  /* reading /proc and /sys: a topology discovery when the cache is stale */
  "getdents64", "faccessat", "faccessat2", "access", "readlink", "readlinkat", "uname", "fstatfs", "fstatfs64",
  "statfs", "statfs64", "lseek", "_llseek", "sched_getaffinity", "getrandom",
};

static int
build_plugin_filter (scmp_filter_ctx ctx, cp_error_t *err)
{
  const uint32_t allow = SCMP_ACT_ALLOW;
  if (allow_each (ctx, CP_SANDBOX_PLUGIN_ALLOWED, CP_ARRAY_SIZE (CP_SANDBOX_PLUGIN_ALLOWED), err) < 0)
    return -1;
  /* Waking a futex, private to the process (nothing waits: one thread): what the
     libraries the DRA publisher loaded before the fork (libcurl's TLS library) do
     at exit, which glibc aborts on when refused. */
  if (RULE (ctx, allow, "futex", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) (FUTEX_WAKE | FUTEX_PRIVATE_FLAG))) < 0)
    return -1;
  /* Creating and linking through the directory fd of the request (Landlock says
     where); never following a symlink nor naming an fd (AT_EMPTY_PATH). */
  if (rule (ctx, allow, "openat", 0, NULL, err) < 0
      || RULE (ctx, allow, "linkat", SCMP_A4 (SCMP_CMP_EQ, 0)) < 0)
    return -1;
  /* Unix sockets only: no network. */
  if (RULE (ctx, allow, "socket", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) AF_UNIX)) < 0)
    return -1;
  /* Is a container's process still there: signal 0, no signal sent. */
  if (RULE (ctx, allow, "kill", SCMP_A1 (SCMP_CMP_EQ, 0)) < 0)
    return -1;
  /* opendir(): the flags asked and close-on-exec set. */
  static const int fcntl_cmds[] = { F_GETFL, F_GETFD, F_SETFD };
  for (size_t i = 0; i < CP_ARRAY_SIZE (fcntl_cmds); i++)
    if (RULE (ctx, allow, "fcntl", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) fcntl_cmds[i])) < 0
        || RULE (ctx, allow, "fcntl64", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) fcntl_cmds[i])) < 0)
      return -1;
  return 0;
}

/* The DRA publisher's, on top of the hook's reads (see sandbox.h). */
static const char *const CP_SANDBOX_PUBLISHER_ALLOWED[] = {
  /* a TCP connection and TLS over it (libcurl, its TLS library) */
  "connect", "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown", "sendmsg", "recvfrom",
  "recvmsg", "poll", "ppoll", "ppoll_time64", "getrandom",
  /* the multi handle's wakeup */
  "eventfd2", "pipe2",
  /* waiting between rounds, and the backoff */
  "nanosleep", "clock_nanosleep", "clock_nanosleep_time64",
  /* reading /proc and /sys: a topology discovery when the cache is stale; the token's
     and the CA's files looked at */
  "getdents64", "faccessat", "faccessat2", "access", "readlink", "readlinkat", "uname", "fstatfs", "fstatfs64",
  "statfs", "statfs64", "lseek", "_llseek", "sched_getaffinity", "getuid", "geteuid", "getgid", "getegid",
  "getuid32", "geteuid32", "getgid32", "getegid32",
};

static int
build_publisher_filter (scmp_filter_ctx ctx, cp_error_t *err)
{
  const uint32_t allow = SCMP_ACT_ALLOW;
  if (allow_each (ctx, CP_SANDBOX_PUBLISHER_ALLOWED, CP_ARRAY_SIZE (CP_SANDBOX_PUBLISHER_ALLOWED), err) < 0)
    return -1;
  /* IPv4 and IPv6 only: no netlink, no packet socket, no new unix socket (the
     socketpair of curl's wakeup is one). */
  if (RULE (ctx, allow, "socket", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) AF_INET)) < 0
      || RULE (ctx, allow, "socket", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) AF_INET6)) < 0
      || RULE (ctx, allow, "socketpair", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) AF_UNIX)) < 0)
    return -1;
  /* A lock of the TLS library's, private to the process (one thread: never
     contended, but taken and given back). */
  static const int ops[] = { FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAIT | FUTEX_PRIVATE_FLAG };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ops); i++)
    if (RULE (ctx, allow, "futex", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) ops[i])) < 0)
      return -1;
  /* Non-blocking sockets, close-on-exec, opendir(). */
  static const int fcntl_cmds[] = { F_GETFL, F_SETFL, F_GETFD, F_SETFD };
  for (size_t i = 0; i < CP_ARRAY_SIZE (fcntl_cmds); i++)
    if (RULE (ctx, allow, "fcntl", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) fcntl_cmds[i])) < 0
        || RULE (ctx, allow, "fcntl64", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) fcntl_cmds[i])) < 0)
      return -1;
  return 0;
}

/* The agent's HTTP listener (libmicrohttpd, external epoll): new connections on
   its one socket, its one epoll set, and what it does on a connection. */
static int
build_listener_filter (scmp_filter_ctx ctx, const struct cp_sandbox *sb, cp_error_t *err)
{
  const uint32_t allow = SCMP_ACT_ALLOW;
  const uint64_t lfd = (uint64_t) sb->listen_fd, efd = (uint64_t) sb->epoll_fd;
  if (RULE (ctx, allow, "accept4", SCMP_A0 (SCMP_CMP_EQ, lfd)) < 0
      || RULE (ctx, allow, "accept", SCMP_A0 (SCMP_CMP_EQ, lfd)) < 0
      || RULE (ctx, allow, "epoll_ctl", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_wait", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_pwait", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_pwait2", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0)
    return -1;
  /* On a connection: TCP_NODELAY and TCP_CORK (TCP's level only: no socket
     option of SOL_SOCKET's), and its end. */
  if (RULE (ctx, allow, "setsockopt", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) IPPROTO_TCP)) < 0
      || rule (ctx, allow, "shutdown", 0, NULL, err) < 0)
    return -1;
  return 0;
}

/* The kubelet plugin's gRPC servers (grpc_server.h): new connections on their
   sockets, their one epoll set; on a connection, reads and writes (allowed anyway). */
static int
build_grpc_filter (scmp_filter_ctx ctx, const struct cp_sandbox *sb, cp_error_t *err)
{
  const uint32_t allow = SCMP_ACT_ALLOW;
  for (size_t i = 0; i < CP_SANDBOX_MAX_GRPC_LISTEN; i++)
    {
      if (sb->grpc_listen_fds[i] < 0)
        continue;
      const uint64_t lfd = (uint64_t) sb->grpc_listen_fds[i];
      if (RULE (ctx, allow, "accept4", SCMP_A0 (SCMP_CMP_EQ, lfd)) < 0
          || RULE (ctx, allow, "accept", SCMP_A0 (SCMP_CMP_EQ, lfd)) < 0)
        return -1;
    }
  const uint64_t efd = (uint64_t) sb->grpc_epoll_fd;
  if (RULE (ctx, allow, "epoll_ctl", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_wait", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_pwait", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0
      || RULE (ctx, allow, "epoll_pwait2", SCMP_A0 (SCMP_CMP_EQ, efd)) < 0)
    return -1;
  return 0;
}

static void
seccomp_releasep (scmp_filter_ctx *ctx)
{
  if (*ctx)
    seccomp_release (*ctx);
}

static int
build_filter (scmp_filter_ctx ctx, const struct cp_sandbox *sb, cp_error_t *err)
{
  for (size_t i = 0; i < CP_ARRAY_SIZE (CP_SANDBOX_KILLED); i++)
    if (rule (ctx, SCMP_ACT_KILL_PROCESS, CP_SANDBOX_KILLED[i], 0, NULL, err) < 0)
      return -1;
  for (size_t i = 0; i < CP_ARRAY_SIZE (CP_SANDBOX_ALLOWED); i++)
    if (rule (ctx, SCMP_ACT_ALLOW, CP_SANDBOX_ALLOWED[i], 0, NULL, err) < 0)
      return -1;
  const bool publisher = sb->profile == CP_SANDBOX_PUBLISHER;
  for (size_t i = 0; i < CP_ARRAY_SIZE (CP_SANDBOX_WRITES) && !publisher; i++)
    if (rule (ctx, SCMP_ACT_ALLOW, CP_SANDBOX_WRITES[i], 0, NULL, err) < 0)
      return -1;

  const uint32_t allow = SCMP_ACT_ALLOW;
  /* Opening without creating (O_CREAT, or an unnamed O_TMPFILE): anywhere
     (Landlock, when there, says where).  The publisher: for reading only. */
  const uint64_t creating = (uint64_t) (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))
                            | (publisher ? (uint64_t) (O_ACCMODE | O_TRUNC) : 0);
  if (RULE (ctx, allow, "openat", SCMP_A2 (SCMP_CMP_MASKED_EQ, creating, 0)) < 0)
    return -1;
  /* Creating: relative to the state directory only (ledger.json.tmp). */
  if (sb->state_dirfd >= 0 && RULE (ctx, allow, "openat", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) sb->state_dirfd)) < 0)
    return -1;
  /* And relative to the CDI spec directory (a claim's spec, cdi.h). */
  if (sb->cdi && RULE (ctx, allow, "openat", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) sb->cdi_dirfd)) < 0)
    return -1;
  /* Linking: within the state directory only, never following a symlink
     (ledger.json kept as ledger.json.prev). */
  if (sb->state_dirfd >= 0
      && RULE (ctx, allow, "linkat", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) sb->state_dirfd),
               SCMP_A2 (SCMP_CMP_EQ, (uint64_t) sb->state_dirfd), SCMP_A4 (SCMP_CMP_EQ, 0))
             < 0)
    return -1;
  /* openat2's flags are behind a pointer seccomp cannot read: say the kernel has
     none, and cgroup_open.c walks the path with openat instead. */
  if (rule (ctx, SCMP_ACT_ERRNO (ENOSYS), "openat2", 0, NULL, err) < 0)
    return -1;
  /* malloc's mappings, never executable: nothing is loaded after this point
     (mprotect is not needed at all by a single-threaded malloc). */
  if (RULE (ctx, allow, "mmap", SCMP_A2 (SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0
      || RULE (ctx, allow, "mmap2", SCMP_A2 (SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0)
    return -1;
  /* cgroup_open.c duplicates the mount's fd to walk from it. */
  if (RULE (ctx, allow, "fcntl", SCMP_A1 (SCMP_CMP_EQ, F_DUPFD_CLOEXEC)) < 0
      || RULE (ctx, allow, "fcntl64", SCMP_A1 (SCMP_CMP_EQ, F_DUPFD_CLOEXEC)) < 0)
    return -1;
  /* stdio asks whether stdout is a terminal; TIOCSTI and friends stay out. */
  if (RULE (ctx, allow, "ioctl", SCMP_A1 (SCMP_CMP_EQ, (uint64_t) TCGETS)) < 0)
    return -1;
  /* syslog(3) send()s on the socket openlog(LOG_NDELAY) connected; no address. */
  if (RULE (ctx, allow, "sendto", SCMP_A4 (SCMP_CMP_EQ, 0)) < 0 || rule (ctx, allow, "send", 0, NULL, err) < 0)
    return -1;
  /* sd-bus on the connection systemd.c opened before the sandbox: no new
     socket, no address (the socket is connected), and waiting for the reply. */
  if (sb->bus
      && (RULE (ctx, allow, "sendmsg", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) sb->bus_fd)) < 0
          || RULE (ctx, allow, "recvmsg", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) sb->bus_fd)) < 0
          || rule (ctx, allow, "ppoll", 0, NULL, err) < 0 || rule (ctx, allow, "ppoll_time64", 0, NULL, err) < 0
          || rule (ctx, allow, "poll", 0, NULL, err) < 0))
    return -1;
  if (sb->profile == CP_SANDBOX_PLUGIN && build_plugin_filter (ctx, err) < 0)
    return -1;
  if (publisher && build_publisher_filter (ctx, err) < 0)
    return -1;
  if (sb->profile == CP_SANDBOX_PLUGIN && sb->listener && build_listener_filter (ctx, sb, err) < 0)
    return -1;
  if (sb->profile == CP_SANDBOX_PLUGIN && sb->grpc && build_grpc_filter (ctx, sb, err) < 0)
    return -1;
  /* raise(): abort() (out of memory, _FORTIFY_SOURCE, the stack protector) and
     the fault-injection builds' simulated kills.  To this process only. */
  if (RULE (ctx, allow, "tgkill", SCMP_A0 (SCMP_CMP_EQ, (uint64_t) getpid ())) < 0)
    return -1;
  return 0;
}

static int
enter_seccomp (const struct cp_sandbox *sb, cp_error_t *err)
{
  __attribute__ ((cleanup (seccomp_releasep))) scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ERRNO (EPERM));
  if (ctx == NULL)
    return cp_fail_errno (err, ENOMEM, "seccomp: init");
  int r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (r == 0)
    r = seccomp_attr_set (ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (r < 0)
    return cp_fail_errno (err, -r, "seccomp: attributes");
  if (build_filter (ctx, sb, err) < 0)
    return -1;
  if (CP_SANDBOX_SANITIZER_BUILD)
    return 0; /* see sandbox.h */
  r = seccomp_load (ctx);
  if (r < 0)
    return cp_fail_errno (err, -r, "seccomp: load");
  /* Check that it holds: getppid is harmless and not on the list. */
  errno = 0;
  if (syscall (SYS_getppid) != -1 || errno != EPERM)
    return cp_fail_runtime (err, "seccomp: loaded, but a call outside the allowlist was not refused");
  return 0;
}

int
cp_sandbox_enter (const struct cp_sandbox *sb, cp_error_t *err)
{
  /* syslog(3) stamps local time: read the zone file now, not under the sandbox. */
  tzset ();
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return cp_fail_errno (err, errno, "sandbox: no_new_privs");
  if (prctl (PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
    return cp_fail_errno (err, errno, "sandbox: no_new_privs did not stick");
  int abi = CP_SANDBOX_SANITIZER_BUILD ? 0 : enter_landlock (sb, err);
  if (abi < 0)
    return cp_error_wrap (err, "sandbox");
  if (enter_seccomp (sb, err) < 0)
    return cp_error_wrap (err, "sandbox");
  return abi;
}
