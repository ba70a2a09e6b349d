/* cachepin: the NRI socket (nri_conn.h). */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nri_conn.h"

int
cp_nri_conn_dial (const char *path, struct cp_nri_conn *c, cp_error_t *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path)
    return cp_fail_input (err, "NRI socket %s: path too long", path);
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return cp_fail_errno (err, errno, "NRI socket: socket");
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    {
      int e = errno;
      close (fd);
      return cp_fail_errno (err, e, "NRI socket %s: connect", path);
    }
  cp_nri_conn_adopt (fd, c);
  return 0;
}

void
cp_nri_conn_adopt (int fd, struct cp_nri_conn *c)
{
  c->fd = fd;
  cp_nri_wire_init (&c->wire);
  c->next_stream = 1;
}

void
cp_nri_conn_close (struct cp_nri_conn *c)
{
  if (c->fd >= 0)
    close (c->fd);
  c->fd = -1;
  cp_nri_wire_clear (&c->wire);
}

/* Milliseconds left until DEADLINE (CLOCK_MONOTONIC), at least 0. */
static int
ms_left (const struct timespec *deadline)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  long long ms = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
  return ms < 0 ? 0 : ms > 1000000000 ? 1000000000 : (int) ms;
}

#define CP_NRI_MAX_SIDES 8

void
cp_nri_block_stop_signals (void)
{
  sigset_t stop;
  sigemptyset (&stop);
  sigaddset (&stop, SIGTERM);
  sigaddset (&stop, SIGINT);
  sigprocmask (SIG_BLOCK, &stop, NULL);
}

/* poll(2) with SIGTERM and SIGINT let in for the wait alone: blocked outside it
   (cp_nri_block_stop_signals()), one that comes while a side's READY runs, or
   between a check of the stop flag and the wait, stays pending and interrupts
   this wait at once (EINTR), where a plain poll would sleep through it. */
static int
stop_aware_poll (struct pollfd *pfd, nfds_t n, int timeout_ms)
{
  sigset_t during;
  sigprocmask (SIG_SETMASK, NULL, &during);
  sigdelset (&during, SIGTERM);
  sigdelset (&during, SIGINT);
  struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000L };
  return ppoll (pfd, n, timeout_ms < 0 ? NULL : &ts, &during);
}

int
cp_nri_side_wait (const struct cp_nri_side *side, size_t n, int fd, int timeout_ms, cp_error_t *err)
{
  if (n > CP_NRI_MAX_SIDES)
    n = CP_NRI_MAX_SIDES;
  struct timespec deadline;
  clock_gettime (CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L)
    {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  for (;;)
    {
      struct pollfd pfd[1 + CP_NRI_MAX_SIDES];
      pfd[0] = (struct pollfd) { .fd = fd, .events = POLLIN };
      for (size_t i = 0; i < n; i++)
        pfd[1 + i] = (struct pollfd) { .fd = side[i].fd, .events = POLLIN };
      int r = stop_aware_poll (pfd, 1 + n, timeout_ms < 0 ? -1 : ms_left (&deadline));
      if (r < 0 && errno == EINTR)
        return CP_NRI_INTERRUPTED;
      if (r < 0)
        return cp_fail_errno (err, errno, "NRI socket: poll");
      if (r == 0)
        return CP_NRI_TIMED_OUT;
      /* The runtime first: a side endpoint never makes it wait longer than one
         READY's run. */
      if (fd >= 0 && pfd[0].revents)
        return 1;
      for (size_t i = 0; i < n; i++)
        if (pfd[1 + i].revents)
          side[i].ready (side[i].ctx, side[i].fd);
    }
}

static bool
cancelled (const struct cp_nri_conn *c)
{
  return c->cancel && *c->cancel;
}

/* Wait until C's socket takes bytes: 0, or -1 (*ERR: stalled, cancelled, failed). */
static int
wait_writable (struct cp_nri_conn *c, cp_error_t *err)
{
  for (;;)
    {
      if (cancelled (c))
        return cp_fail_errno (err, ECANCELED, "NRI socket: write: stopped by a signal");
      struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
      int r = stop_aware_poll (&pfd, 1, CP_NRI_SEND_STALL_MS);
      if (r < 0 && errno == EINTR)
        continue; /* checked above */
      if (r < 0)
        return cp_fail_errno (err, errno, "NRI socket: poll");
      if (r == 0)
        return cp_fail_errno (err, ETIMEDOUT, "NRI socket: write: the runtime read nothing for %d s",
                              CP_NRI_SEND_STALL_MS / 1000);
      return 0;
    }
}

int
cp_nri_conn_send (struct cp_nri_conn *c, struct cp_buf *out, cp_error_t *err)
{
  size_t off = 0;
  while (off < out->len)
    {
      ssize_t n = send (c->fd, out->p + off, out->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        {
          if (wait_writable (c, err) < 0)
            return -1;
          continue;
        }
      if (n <= 0)
        return cp_fail_errno (err, n < 0 ? errno : EPIPE, "NRI socket: write");
      off += (size_t) n;
    }
  out->len = 0;
  return 0;
}

/* A message already read, of either connection: 1, 0 or < 0 as cp_nri_wire_next(). */
static int
buffered (struct cp_nri_conn *c, uint32_t *conn, struct cp_ttrpc_msg *msg, cp_error_t *err)
{
  for (uint32_t id = 1; id < CP_MUX_CONNS; id++)
    {
      int r = cp_nri_wire_next (&c->wire, id, msg, err);
      if (r != 0)
        {
          *conn = id;
          return r;
        }
    }
  return 0;
}

int
cp_nri_conn_recv (struct cp_nri_conn *c, int timeout_ms, uint32_t *conn, struct cp_ttrpc_msg *msg, cp_error_t *err)
{
  for (;;)
    {
      int r = buffered (c, conn, msg, err);
      if (r != 0)
        return r;
      r = cp_nri_side_wait (c->side, c->n_side, c->fd, timeout_ms, err);
      if (r != 1)
        return r;
      uint8_t buf[65536];
      ssize_t n = read (c->fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        return CP_NRI_INTERRUPTED;
      if (n < 0)
        return cp_fail_errno (err, errno, "NRI socket: read");
      if (n == 0)
        return 0;
      if (cp_nri_wire_feed (&c->wire, buf, (size_t) n, err) < 0)
        return -1;
    }
}
