/* cachepin: gRPC servers on unix sockets (grpc_server.h). */
#define _GNU_SOURCE
#include "grpc_server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "grpc_conn.h"
#include "log.h"
#include "util.h"

#define MAX_LISTENERS 4

/* What an epoll event's data points at. */
enum tag
{
  TAG_TIMER,
  TAG_LISTENER,
  TAG_CONN,
};

struct listener
{
  enum tag tag;
  int fd;
  char *path;
  struct cp_grpc_conn_config cfg;
};

struct slot
{
  enum tag tag;
  struct cp_grpc_conn *conn; /* NULL: free */
  bool polling_out;
};

struct cp_grpc_server
{
  int epoll_fd;
  enum tag timer_tag;
  int timer_fd;
  long stall_ms, idle_ms, defer_ms;
  struct listener listeners[MAX_LISTENERS];
  size_t n_listeners;
  struct slot slots[CP_GRPC_MAX_CONNECTIONS];
  size_t n_conns;
};

int
cp_grpc_server_new (struct cp_grpc_server **out, cp_error_t *err)
{
  struct cp_grpc_server *s = cp_xmalloc0 (sizeof *s);
  s->timer_tag = TAG_TIMER;
  s->stall_ms = CP_GRPC_STALL_MS;
  s->idle_ms = CP_GRPC_IDLE_MS;
  s->defer_ms = CP_GRPC_DEFER_MS;
  s->timer_fd = -1;
  s->epoll_fd = epoll_create1 (EPOLL_CLOEXEC);
  if (s->epoll_fd < 0)
    {
      free (s);
      return cp_fail_errno (err, errno, "grpc: epoll_create1");
    }
  for (size_t i = 0; i < CP_GRPC_MAX_CONNECTIONS; i++)
    s->slots[i].tag = TAG_CONN;
  /* A tick of a second: the timeouts are checked even when no peer sends. */
  s->timer_fd = timerfd_create (CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  struct itimerspec its = { .it_interval = { .tv_sec = 1 }, .it_value = { .tv_sec = 1 } };
  struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->timer_tag };
  if (s->timer_fd < 0 || timerfd_settime (s->timer_fd, 0, &its, NULL) < 0
      || epoll_ctl (s->epoll_fd, EPOLL_CTL_ADD, s->timer_fd, &ev) < 0)
    {
      int e = errno;
      cp_grpc_server_free (s);
      return cp_fail_errno (err, e, "grpc: the timeout timer");
    }
  *out = s;
  return 0;
}

void
cp_grpc_server_set_timeouts (struct cp_grpc_server *s, long stall_ms, long idle_ms)
{
  if (stall_ms > 0)
    s->stall_ms = stall_ms;
  if (idle_ms > 0)
    s->idle_ms = idle_ms;
  for (size_t i = 0; i < s->n_listeners; i++)
    {
      s->listeners[i].cfg.stall_ms = s->stall_ms;
      s->listeners[i].cfg.idle_ms = s->idle_ms;
    }
}

void
cp_grpc_server_set_defer (struct cp_grpc_server *s, long defer_ms)
{
  if (defer_ms > 0)
    s->defer_ms = defer_ms;
  for (size_t i = 0; i < s->n_listeners; i++)
    s->listeners[i].cfg.defer_ms = s->defer_ms;
}

int
cp_grpc_server_listen (struct cp_grpc_server *s, const char *path, const struct cp_grpc_method *methods, size_t n,
                       cp_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path)
    return cp_fail_input (err, "grpc: socket path %.64s...: longer than a unix socket's %zu bytes", path,
                          sizeof sa.sun_path - 1);
  if (s->n_listeners == MAX_LISTENERS)
    return cp_fail_runtime (err, "grpc: more than %d sockets", MAX_LISTENERS);
  strcpy (sa.sun_path, path);
  cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return cp_fail_errno (err, errno, "grpc: socket for %s", path);
  /* A socket left by an agent that did not end cleanly: replaced (a file of
     another kind is not). */
  struct stat st;
  if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
    unlink (path);
  /* Made 0600 from the start: only root (the kubelet) connects. */
  mode_t old = umask (0177);
  int r = bind (fd, (struct sockaddr *) &sa, sizeof sa);
  umask (old);
  if (r < 0)
    return cp_fail_errno (err, errno, "grpc: bind %s", path);
  if (listen (fd, CP_GRPC_MAX_CONNECTIONS) < 0)
    {
      int e = errno;
      unlink (path);
      return cp_fail_errno (err, e, "grpc: listen %s", path);
    }
  struct listener *l = &s->listeners[s->n_listeners];
  const char *slash = strrchr (path, '/');
  *l = (struct listener) {
    .tag = TAG_LISTENER,
    .fd = fd,
    .path = cp_xstrdup (path),
    .cfg = { .methods = methods, .n_methods = n, .stall_ms = s->stall_ms, .idle_ms = s->idle_ms,
             .defer_ms = s->defer_ms },
  };
  l->cfg.name = slash ? l->path + (slash - path) + 1 : l->path;
  struct epoll_event ev = { .events = EPOLLIN, .data.ptr = l };
  if (epoll_ctl (s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
    {
      int e = errno;
      unlink (path);
      free (l->path);
      return cp_fail_errno (err, e, "grpc: epoll_ctl %s", path);
    }
  fd = -1;
  s->n_listeners++;
  return 0;
}

int
cp_grpc_server_fd (const struct cp_grpc_server *s)
{
  return s->epoll_fd;
}

size_t
cp_grpc_server_listen_fds (const struct cp_grpc_server *s, int *fds, size_t max)
{
  size_t n = 0;
  for (size_t i = 0; i < s->n_listeners && n < max; i++)
    fds[n++] = s->listeners[i].fd;
  return n;
}

static void
drop (struct cp_grpc_server *s, struct slot *slot)
{
  epoll_ctl (s->epoll_fd, EPOLL_CTL_DEL, cp_grpc_conn_fd (slot->conn), NULL);
  cp_grpc_conn_free (slot->conn);
  slot->conn = NULL;
  slot->polling_out = false;
  s->n_conns--;
}

static void
accept_all (struct cp_grpc_server *s, struct listener *l)
{
  for (;;)
    {
      int fd = accept4 (l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0)
        {
          if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            cp_log (CP_LOG_WARNING, "grpc: %s: accept: %s", l->cfg.name, strerror (errno));
          if (errno == EINTR)
            continue;
          return;
        }
      struct slot *slot = NULL;
      for (size_t i = 0; i < CP_GRPC_MAX_CONNECTIONS && slot == NULL; i++)
        if (s->slots[i].conn == NULL)
          slot = &s->slots[i];
      if (slot == NULL)
        {
          cp_log (CP_LOG_WARNING, "grpc: %s: %d connections open already: a new one closed", l->cfg.name,
                  CP_GRPC_MAX_CONNECTIONS);
          close (fd);
          continue;
        }
      slot->conn = cp_grpc_conn_new (fd, &l->cfg);
      struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = slot };
      if (epoll_ctl (s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        {
          cp_log (CP_LOG_WARNING, "grpc: %s: epoll_ctl: %s", l->cfg.name, strerror (errno));
          cp_grpc_conn_free (slot->conn);
          slot->conn = NULL;
          continue;
        }
      s->n_conns++;
      /* Our SETTINGS first (the server's preface). */
      if (!cp_grpc_conn_serve (slot->conn))
        drop (s, slot);
    }
}

/* Poll for writing while the peer has bytes to take, not otherwise. */
static void
repoll (struct cp_grpc_server *s, struct slot *slot)
{
  bool out = cp_grpc_conn_wants_write (slot->conn);
  if (out == slot->polling_out)
    return;
  struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0), .data.ptr = slot };
  if (epoll_ctl (s->epoll_fd, EPOLL_CTL_MOD, cp_grpc_conn_fd (slot->conn), &ev) == 0)
    slot->polling_out = out;
}

void
cp_grpc_server_run (struct cp_grpc_server *s)
{
  struct epoll_event ev[32];
  int n = epoll_wait (s->epoll_fd, ev, CP_ARRAY_SIZE (ev), 0);
  for (int i = 0; i < n; i++)
    {
      enum tag *tag = ev[i].data.ptr;
      if (*tag == TAG_TIMER)
        {
          uint64_t ticks;
          if (read (s->timer_fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
            cp_log (CP_LOG_DEBUG, "grpc: timer: %s", strerror (errno));
        }
      else if (*tag == TAG_LISTENER)
        accept_all (s, (struct listener *) tag);
      else
        {
          struct slot *slot = (struct slot *) tag;
          if (slot->conn == NULL)
            continue;
          if (!cp_grpc_conn_serve (slot->conn))
            drop (s, slot);
          else
            repoll (s, slot);
        }
    }
  long long now = cp_monotonic_ms ();
  for (size_t i = 0; i < CP_GRPC_MAX_CONNECTIONS; i++)
    if (s->slots[i].conn && !cp_grpc_conn_check_time (s->slots[i].conn, now))
      drop (s, &s->slots[i]);
    else if (s->slots[i].conn)
      repoll (s, &s->slots[i]); /* a deferred answer, written between two runs, may wait for room */
}

void
cp_grpc_server_free (struct cp_grpc_server *s)
{
  if (s == NULL)
    return;
  for (size_t i = 0; i < CP_GRPC_MAX_CONNECTIONS; i++)
    if (s->slots[i].conn)
      drop (s, &s->slots[i]);
  for (size_t i = 0; i < s->n_listeners; i++)
    {
      close (s->listeners[i].fd);
      /* unlinkat: what the sandbox allows (beneath the dirs it names: front.h). */
      if (unlinkat (AT_FDCWD, s->listeners[i].path, 0) < 0 && errno != ENOENT)
        cp_log (CP_LOG_WARNING, "grpc: remove %s: %s", s->listeners[i].path, strerror (errno));
      free (s->listeners[i].path);
    }
  if (s->timer_fd >= 0)
    close (s->timer_fd);
  close (s->epoll_fd);
  free (s);
}

void
cp_grpc_server_freep (struct cp_grpc_server **s)
{
  cp_grpc_server_free (*s);
  *s = NULL;
}
