/* cachepin: the hook's own sandbox, entered once everything has been read.
 *
 * The hook runs as root on every container start, on input the container's owner
 * controls.  By the time it decides a placement it has read all of it (the state,
 * config.json, the host config, the topology, the parent cgroup's limits) and
 * holds what it still writes (the ledger's directory, locked; the cgroup's
 * directory fds; syslog's socket, opened with LOG_NDELAY).  What is left is a
 * computation, one file written and renamed in the state directory, and a few
 * writes into the cgroup.  cp_sandbox_enter() then takes away the rest:
 *
 *  1. PR_SET_NO_NEW_PRIVS, checked with PR_GET_NO_NEW_PRIVS;
 *  2. Landlock, where the kernel has it (5.13+; best effort, seccomp alone
 *     otherwise): files may be opened only beneath the state directory (read,
 *     write, create, remove, truncate), beneath the cgroup hierarchy's mount
 *     (read, write) and beneath /proc/<pid> (read); from ABI 4 no TCP bind or
 *     connect, from ABI 6 no abstract unix socket or signal outside the sandbox.
 *     seccomp cannot look at paths; this is what bounds where openat() lands;
 *  3. a seccomp allowlist (below), checked by a call it must refuse.
 *
 * The seccomp filter.  Default: EPERM, so a syscall a future glibc makes where
 * this one did not fails like any I/O error, and the failure policy of the hook
 * (the container starts unplaced unless strict) applies; a SIGSYS would fail
 * every annotated container on the host.  Killed at once (SECCOMP_RET_KILL_PROCESS)
 * instead: calls no code path of cachepin makes after this point and that only
 * an attacker who has taken over the process would: execve, ptrace, mount and
 * the other mount/namespace calls, module and kexec loading, bpf, setuid and its
 * family, capset, keyrings, open_by_handle_at, userfaultfd, perf_event_open,
 * io_uring, reboot, swap, iopl (the list is CP_SANDBOX_KILLED in sandbox.c), and any
 * syscall from another ABI (i386 or x32 on x86_64).
 * Allowed: memory (brk, mmap without PROT_EXEC, munmap, mremap, madvise),
 * read/write/close on open fds, openat without O_CREAT or O_TMPFILE anywhere (Landlock bounds
 * where) and with O_CREAT only relative to the state directory's fd, fstat
 * (newfstatat, statx), fsync, renameat(2), unlinkat, fcntl F_DUPFD_CLOEXEC,
 * ioctl TCGETS (stdio asking whether stdout is a terminal), sendto without an
 * address (syslog's send() on the socket openlog(LOG_NDELAY) connected),
 * clock_gettime, getpid, gettid, rt_sigprocmask, rt_sigreturn, restart_syscall,
 * exit, exit_group, and tgkill to this process only (raise(): abort() still
 * dumps core).  openat2 answers ENOSYS (cgroup_open.c then walks with openat).
 * With `bus` set (a placement on a systemd unit, systemd.h): sendmsg and
 * recvmsg on that one connected socket, opened and authenticated before, and
 * ppoll/poll (sd-bus waits for the reply with them).
 * Everything else, socket() and connect() included (syslog(3) reconnecting
 * after a syslogd restart), answers EPERM.
 *
 * The plugin's profile (CP_SANDBOX_PLUGIN, `cachepin nri`).  A process that lives
 * for days and runs per request what the hook runs once: it opens the state
 * directory, takes the ledger's and the journal's flocks (polling them with
 * sleeps), reads and commits the ledger, the journal and the topology cache,
 * reads /proc/<pid> and the cgroup files of other containers (reconcile, drift),
 * the kubelet's state file, talks on its one connected socket and logs to syslog;
 * it may connect again to the runtime's socket after a restart.  It never execs,
 * never writes a cgroup (the runtime applies its adjustment), never needs a new
 * privilege.  So, entered once after start-up, before the first request:
 *  1. no_new_privs, as above;
 *  2. Landlock: beneath the state directory read, write, create, remove, truncate
 *     (and list); beneath each of READ_DIRS (/proc, /sys with the cgroup mounts,
 *     the kubelet state's directory) read and list; each of WRITE_FILES (the
 *     kernel's cache-aware scheduling switch, when this kernel has one) read and
 *     write; nothing else, nothing executed.
 *     A unix socket's path is not a file Landlock guards (up to ABI 6): connect()
 *     to the runtime's socket and to /dev/log still works.  /sys is read only
 *     but for that one file;
 *  3. seccomp: the hook's killed list, its allowlist, and what a request needs:
 *     openat with O_CREAT and linkat without AT_SYMLINK_FOLLOW through any
 *     directory fd (the state directory is opened anew per request; Landlock
 *     bounds where: without Landlock these are not bound to a path), mkdir (the
 *     state directory exists: EEXIST), flock, socket(AF_UNIX) only, connect,
 *     sendmsg/recvmsg/recvfrom, poll/ppoll, nanosleep/clock_nanosleep, kill with
 *     signal 0 (is a container's process alive), getuid and its family,
 *     sched_getaffinity, and what a topology discovery reads with (getdents64,
 *     faccessat, readlink, uname, fstatfs, lseek; sched_setaffinity is refused:
 *     hwloc then skips its cpuid pass).  No fork, no exec, no socket of another
 *     family: EPERM or killed as for the hook.
 *     With a listener (`cachepin nri --metrics-listen`): accept4 on its socket
 *     only, epoll_ctl and epoll_wait on its epoll set only, setsockopt at TCP's
 *     level (TCP_NODELAY) and shutdown: what libmicrohttpd does on a connection,
 *     seen with `strace -f` under tests/nri/http_tests.py.  No bind, no listen:
 *     the socket is bound before, as root.
 *     With the kubelet plugin (`cachepin nri --kubelet-plugin`): accept4 on its two
 *     unix sockets only, epoll_ctl and epoll_wait on its epoll set only, and
 *     (Landlock) the removal of files beneath the two directories its sockets
 *     are in, so that it takes them away when it ends.
 *
 * The DRA publisher's profile (CP_SANDBOX_PUBLISHER, dra_publisher.h).  The process
 * that holds the API connection: it parses what the network sends (the API
 * server's JSON, TLS records), so it is the part most exposed.  It reads the
 * node's devices (the topology beneath /proc and /sys, the ledger in the state
 * directory, unlocked), the service-account token (again when it rotates) and the
 * CA (libcurl reads it for each connection), speaks TLS over TCP to the API server
 * and answers the agent on its one socket.  It writes no file, runs nothing, needs
 * no privilege.  Entered in the forked child, its capabilities dropped, libcurl
 * and its TLS library loaded and the topology read once:
 *  1. no_new_privs;
 *  2. Landlock: beneath each of READ_DIRS (/proc, /sys, the state directory, the
 *     token's and the CA's directories) read and list; nothing written, created,
 *     removed or executed anywhere.  From ABI 4, no TCP bind, and TCP connect to
 *     CONNECT_PORT only (Landlock bounds the port, not the address); from ABI 6 no
 *     abstract unix socket or signal outside the sandbox;
 *  3. seccomp: the hook's killed list and its allowlist less the writes (fsync,
 *     rename, unlink, link, openat only read-only and never creating), and what
 *     libcurl and its TLS library do on a DNS-less HTTPS connection (the server is
 *     an address: a host name needs a resolver thread, refused), each seen in
 *     `strace -f` of tests/dra/agent.py: socket of AF_INET, AF_INET6 (and a unix
 *     socketpair, eventfd or pipe for the multi handle's wakeup), connect,
 *     getsockopt, setsockopt, getsockname, getpeername, shutdown, sendto,
 *     sendmsg, recvfrom, recvmsg, poll/ppoll, getrandom, private futex, fcntl
 *     F_GETFL/F_SETFL/F_GETFD/F_SETFD, the sleeps, and the topology discovery's
 *     reads as for the plugin.  No socket of another family (no netlink, no raw),
 *     no bind, no listen, no accept.  An unexpected call answers EPERM: the round
 *     fails, is logged, and the publisher backs off and tries again. */
#ifndef CP_SANDBOX_H
#define CP_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Sanitizer builds (scripts/sanitize.sh) cannot live in the sandbox: LeakSanitizer
 * ptraces the process from a clone()d thread at exit and reads /proc/self, reports
 * are symbolized by an execve()d llvm-symbolizer or addr2line, and the runtime
 * calls sigaltstack and prctl.  There cp_sandbox_enter() builds the filter (so the
 * code still runs under the sanitizer) but loads neither it nor Landlock. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CP_SANDBOX_SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CP_SANDBOX_SANITIZER_BUILD 1
#endif
#endif
#ifndef CP_SANDBOX_SANITIZER_BUILD
#define CP_SANDBOX_SANITIZER_BUILD 0
#endif

/* Which process the sandbox is for. */
enum cp_sandbox_profile
{
  CP_SANDBOX_HOOK = 0, /* one run: what its last steps need (the default) */
  CP_SANDBOX_PLUGIN,   /* `cachepin nri`: every request's steps, for as long as it runs */
  CP_SANDBOX_PUBLISHER, /* `cachepin nri --dra-node`'s publisher: reads, and TLS to the API server */
};

/* The plugin's directories to read beneath, and files to read and write, at most. */
#define CP_SANDBOX_MAX_READ_DIRS 8
#define CP_SANDBOX_MAX_WRITE_FILES 2
#define CP_SANDBOX_MAX_GRPC_LISTEN 2
#define CP_SANDBOX_MAX_REMOVE_DIRS 2

/* What the rest of the run still needs. */
struct cp_sandbox
{
  enum cp_sandbox_profile profile;
  int state_dirfd;    /* the ledger's directory: files in it may be created, replaced,
                         read, written and removed (-1: none) */
  int cgroup_mountfd; /* the mount of the cgroup hierarchy: files beneath it may be read
                         and written (-1: none) */
  pid_t pid;          /* files beneath /proc/<pid> may be read (0: none) */
  bool bus;           /* an established D-Bus connection (systemd.h) is used: */
  int bus_fd;         /* sendmsg and recvmsg on this socket, and poll/ppoll */
  /* CP_SANDBOX_PLUGIN and CP_SANDBOX_PUBLISHER: directories (absolute paths,
     NULL-terminated, NULL: none) beneath which files may be read and directories
     listed; one missing now gets no rule. */
  const char *read_dirs[CP_SANDBOX_MAX_READ_DIRS + 1];
  /* CP_SANDBOX_PLUGIN only: existing files (absolute paths, NULL-terminated) that may
     be read and written, never created or truncated: the kernel's cache-aware
     scheduling switch (sched_cas.c), which the plugin turns on and gives back as
     the hook does.  Opened now without following a symlink; one missing gets no
     rule. */
  const char *write_files[CP_SANDBOX_MAX_WRITE_FILES + 1];
  /* CP_SANDBOX_PLUGIN only: an HTTP listener bound before (the agent's metrics,
     libmicrohttpd in its external-epoll mode): accept4 on LISTEN_FD, epoll_ctl and
     epoll_wait on EPOLL_FD, and on the connections it accepts what a non-blocking
     HTTP server does (setsockopt at TCP's level, shutdown; reads and writes are
     allowed anyway). */
  bool listener;
  int listen_fd, epoll_fd;
  /* The CDI spec directory a prepared DRA claim's spec is written in (cdi.h,
     opened by cp_cdi_open_dir()): specs in it may be created (relative to
     CDI_DIRFD only), written, renamed and removed, and it may be listed. */
  bool cdi;
  int cdi_dirfd;
  /* CP_SANDBOX_PLUGIN only: the kubelet plugin's gRPC servers, bound before
     (grpc_server.h, one epoll set for all their sockets): accept4 on each of
     GRPC_LISTEN_FDS (-1: none), epoll_ctl and epoll_wait on GRPC_EPOLL_FD; and
     beneath each of REMOVE_DIRS (absolute paths, NULL-terminated) files may be
     removed: their sockets, when the agent ends. */
  bool grpc;
  int grpc_listen_fds[CP_SANDBOX_MAX_GRPC_LISTEN];
  int grpc_epoll_fd;
  const char *remove_dirs[CP_SANDBOX_MAX_REMOVE_DIRS + 1];
  /* CP_SANDBOX_PUBLISHER only: the API server's TCP port, the one port a TCP
     connect() may reach where Landlock bounds the network (ABI 4+); 0: none. */
  unsigned connect_port;
};

/* Enter the sandbox; it cannot be left.  Returns the Landlock ABI applied (0: the
 * kernel has no Landlock, seccomp alone; also in a sanitizer build, where neither
 * is loaded), or -1 with *ERR (CP_ERR_RUNTIME) when the sandbox could not be set
 * up (a kernel without seccomp filters; valgrind, which knows neither syscall), in
 * which case the process may already be partly restricted (no_new_privs,
 * Landlock) and should only report and exit. */
int cp_sandbox_enter (const struct cp_sandbox *sb, cp_error_t *err);

#endif
