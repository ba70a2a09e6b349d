/* cachepin: NRI's wire, below protobuf: the multiplexer's frames and ttrpc's messages.
 *
 * What the runtime and a plugin exchange over the one socket (containerd/nri v0.8.0,
 * containerd/ttrpc v1.2.7, read from their Go sources):
 *
 *   pkg/net/multiplex   frames: an 8-byte header, the connection id (uint32) then the
 *                       payload's length (uint32), both big-endian, then the payload.
 *                       Id 0 is reserved; a plugin serves its Plugin service on id 1
 *                       (PluginServiceConn) and calls the Runtime service on id 2
 *                       (RuntimeServiceConn).  The Go writer cuts a write into frames
 *                       of at most 10 + 4 MiB (maxPayloadSize); the Go reader drops a
 *                       frame whose id nobody opened.  A frame is a piece of a byte
 *                       stream: a ttrpc message may span frames, a frame may hold
 *                       the end of one message and the start of the next.
 *   ttrpc channel.go    messages on each connection's stream: a 10-byte header, the
 *                       payload's length (uint32), the stream id (uint32), the type
 *                       (uint8: 1 request, 2 response, 3 data) and flags (uint8),
 *                       big-endian, then at most 4 MiB of payload (messageLengthMax).
 *                       A client's stream ids are odd and grow.
 *
 * Frames we write carry at most CP_MUX_WRITE_MAX bytes: the Go side reads each
 * connection through a bufio.Reader of 4096 bytes, and its conn.Read refuses
 * (ENOMEM) a frame longer than the buffer it is handed.  Frames we read may be as
 * long as the Go writer makes them.
 *
 * Pure: bytes in, messages out (and the reverse); the socket is nri_conn.h's. */
#ifndef CP_NRI_WIRE_H
#define CP_NRI_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CP_MUX_HEADER_LEN 8u
#define CP_TTRPC_HEADER_LEN 10u
#define CP_TTRPC_MESSAGE_MAX (4u << 20)
#define CP_MUX_PAYLOAD_MAX (CP_TTRPC_HEADER_LEN + CP_TTRPC_MESSAGE_MAX)
#define CP_MUX_WRITE_MAX 4096u

enum
{
  CP_MUX_CONN_PLUGIN = 1,  /* the runtime calls the plugin's service on it */
  CP_MUX_CONN_RUNTIME = 2, /* the plugin calls the runtime's service on it */
  CP_MUX_CONNS = 3,        /* ids below this one are known (0 is reserved) */
};

enum cp_ttrpc_type
{
  CP_TTRPC_REQUEST = 1,
  CP_TTRPC_RESPONSE = 2,
  CP_TTRPC_DATA = 3, /* streams: never used by NRI's unary calls */
};

/* A growing byte buffer. */
struct cp_buf
{
  uint8_t *p;
  size_t len;
  size_t cap;
};
void cp_buf_append (struct cp_buf *b, const void *data, size_t n);
void cp_buf_free (struct cp_buf *b);

/* One ttrpc message; PAYLOAD (LEN bytes, NULL when 0) is the caller's to free. */
struct cp_ttrpc_msg
{
  uint32_t stream;
  uint8_t type;
  uint8_t flags;
  uint8_t *payload;
  size_t len;
};
void cp_ttrpc_msg_clear (struct cp_ttrpc_msg *m);

/* The reading side: the frames fed so far, undone into one byte stream per known
 * connection. */
struct cp_nri_wire
{
  uint8_t hdr[CP_MUX_HEADER_LEN]; /* the header being read */
  size_t hdr_have;                /* its bytes so far */
  uint32_t conn;                  /* the frame being read: its connection ... */
  uint32_t left;                  /* ... and the payload bytes still to come */
  bool in_payload;
  struct cp_buf stream[CP_MUX_CONNS]; /* [1], [2]: what each connection carried */
  unsigned long dropped;              /* frames for an id nobody opened (as Go does) */
};

void cp_nri_wire_init (struct cp_nri_wire *w);
void cp_nri_wire_clear (struct cp_nri_wire *w);

/* The mux header of a frame. */
void cp_mux_header_encode (uint8_t hdr[CP_MUX_HEADER_LEN], uint32_t conn, uint32_t len);
void cp_mux_header_decode (const uint8_t hdr[CP_MUX_HEADER_LEN], uint32_t *conn, uint32_t *len);

/* Take N more bytes of the socket.  Fails (an input error, one line) on a frame
 * longer than CP_MUX_PAYLOAD_MAX and on a ttrpc message header that announces
 * more than CP_TTRPC_MESSAGE_MAX bytes: the connection is then to be closed, as
 * nothing after it can be trusted to be a frame boundary. */
int cp_nri_wire_feed (struct cp_nri_wire *w, const uint8_t *p, size_t n, cp_error_t *err);

/* The next complete ttrpc message of connection CONN (1 or 2) into *OUT: 1 when
 * there is one, 0 when more bytes are needed, < 0 on a malformed one (an unknown
 * type, an oversized length). */
int cp_nri_wire_next (struct cp_nri_wire *w, uint32_t conn, struct cp_ttrpc_msg *out, cp_error_t *err);

/* Append to OUT the ttrpc message (STREAM, TYPE, FLAGS, PAYLOAD of LEN bytes) on
 * connection CONN, cut into frames of at most CP_MUX_WRITE_MAX bytes.  Fails on a
 * payload over CP_TTRPC_MESSAGE_MAX. */
int cp_nri_wire_encode (uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags, const uint8_t *payload,
                        size_t len, struct cp_buf *out, cp_error_t *err);

#endif
