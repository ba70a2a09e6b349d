/* cachepin: the plugin's end of the NRI socket: dial, write frames, read ttrpc
 * messages (nri_wire.h) from either multiplexed connection. */
#ifndef CP_NRI_CONN_H
#define CP_NRI_CONN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "nri_wire.h"

#define CP_NRI_DEFAULT_SOCKET "/var/run/nri/nri.sock"

/* Another endpoint of the plugin's process (a metrics listener, a kubelet plugin's
 * socket), served by the plugin's one loop: FD is polled with the runtime's socket
 * whenever the loop waits (for the runtime's next call, or to dial it again), and
 * READY (CTX, FD) runs when FD is readable: between two of the runtime's calls,
 * never inside one, so that nothing it does delays an answer by more than its own
 * run.  READY must not block. */
struct cp_nri_side
{
  int fd;
  void (*ready) (void *ctx, int fd);
  void *ctx;
};

/* Wait up to TIMEOUT_MS (-1: for ever) for FD (-1: none) to be readable, running
   the READY of each of SIDE (N) that becomes readable meanwhile: 1 when FD is
   readable, CP_NRI_TIMED_OUT, CP_NRI_INTERRUPTED (a signal), < 0 (*ERR). */
int cp_nri_side_wait (const struct cp_nri_side *side, size_t n, int fd, int timeout_ms, cp_error_t *err);

/* SIGTERM and SIGINT blocked from now on but in the waits of this module, which
   let them in (ppoll): a stop signal is never lost between a check of the stop
   flag and the next wait, nor while a side's READY runs.  A long-running front
   end calls it once its handlers are set. */
void cp_nri_block_stop_signals (void);

struct cp_nri_conn
{
  int fd;
  struct cp_nri_wire wire;
  uint32_t next_stream; /* our client calls' stream ids: odd, growing (ttrpc) */
  const volatile sig_atomic_t *cancel; /* when set and it becomes non-zero, a blocked write
                                          gives up at the next signal (ECANCELED) */
  const struct cp_nri_side *side;      /* served while a read waits (may be NULL) */
  size_t n_side;
};

/* Connect to the runtime's NRI socket PATH. */
int cp_nri_conn_dial (const char *path, struct cp_nri_conn *c, cp_error_t *err);

/* Take FD, already connected (the pre-launched form). */
void cp_nri_conn_adopt (int fd, struct cp_nri_conn *c);

void cp_nri_conn_close (struct cp_nri_conn *c);

/* Write all of OUT's bytes (whole frames), then empty it.  A runtime that stops
 * reading does not hold the plugin: the write fails (ETIMEDOUT) when no byte went
 * out for CP_NRI_SEND_STALL_MS, and (ECANCELED) as soon as a signal arrives with
 * C->cancel set. */
#define CP_NRI_SEND_STALL_MS 10000
int cp_nri_conn_send (struct cp_nri_conn *c, struct cp_buf *out, cp_error_t *err);

/* The next ttrpc message of either connection: 1 with *CONN and *MSG filled, 0
 * when the runtime closed the socket, < 0 on a malformed frame or a read error.
 * Waits at most TIMEOUT_MS (-1: for ever) for bytes: CP_NRI_TIMED_OUT then; an
 * interrupting signal returns CP_NRI_INTERRUPTED. */
#define CP_NRI_TIMED_OUT (-2)
#define CP_NRI_INTERRUPTED (-3)
int cp_nri_conn_recv (struct cp_nri_conn *c, int timeout_ms, uint32_t *conn, struct cp_ttrpc_msg *msg,
                      cp_error_t *err);

#endif
