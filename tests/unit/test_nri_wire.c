/* NRI's wire (hook/nri/nri_wire.c) and ttrpc's calls on it (nri_rpc.c), with frames
   written byte by byte here as containerd's Go code lays them out
   (pkg/net/multiplex: conn id, length, big-endian; ttrpc: length, stream id, type,
   flags, big-endian), never through the encoder under test. */
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "nri_conn.h"
#include "nri_rpc.h"
#include "nri_wire.h"
#include "status.pb-c.h"
#include "util.h"

/* A mux frame: CONN, then LEN bytes of PAYLOAD, appended to B. */
static void
put_frame (struct cp_buf *b, uint32_t conn, const uint8_t *payload, uint32_t len)
{
  uint8_t h[8] = { conn >> 24, conn >> 16, conn >> 8, conn, len >> 24, len >> 16, len >> 8, len };
  cp_buf_append (b, h, 8);
  cp_buf_append (b, payload, len);
}

/* A ttrpc message's header and payload, appended to B. */
static void
put_msg (struct cp_buf *b, uint32_t stream, uint8_t type, const uint8_t *payload, uint32_t len)
{
  uint8_t h[10] = { len >> 24, len >> 16, len >> 8, len, stream >> 24, stream >> 16, stream >> 8, stream, type, 0 };
  cp_buf_append (b, h, 10);
  cp_buf_append (b, payload, len);
}

static void
test_header_layout (void **state)
{
  (void) state;
  uint8_t h[8];
  cp_mux_header_encode (h, 2, 0x01020304);
  static const uint8_t want[8] = { 0, 0, 0, 2, 1, 2, 3, 4 };
  assert_memory_equal (h, want, 8);
  uint32_t conn, len;
  cp_mux_header_decode (want, &conn, &len);
  assert_int_equal (conn, 2);
  assert_int_equal (len, 0x01020304);
}

/* One message in one frame, fed one byte at a time: nothing before the last byte. */
static void
test_one_message_bytewise (void **state)
{
  (void) state;
  struct cp_buf msg = { 0 }, frames = { 0 };
  put_msg (&msg, 1, CP_TTRPC_REQUEST, (const uint8_t *) "hello", 5);
  put_frame (&frames, CP_MUX_CONN_PLUGIN, msg.p, (uint32_t) msg.len);
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  struct cp_ttrpc_msg m;
  for (size_t i = 0; i < frames.len; i++)
    {
      assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 0);
      assert_int_equal (cp_nri_wire_feed (&w, frames.p + i, 1, &err), 0);
    }
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_RUNTIME, &m, &err), 0);
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 1);
  assert_int_equal (m.stream, 1);
  assert_int_equal (m.type, CP_TTRPC_REQUEST);
  assert_int_equal (m.len, 5);
  assert_memory_equal (m.payload, "hello", 5);
  cp_ttrpc_msg_clear (&m);
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 0);
  cp_nri_wire_clear (&w);
  cp_buf_free (&msg);
  cp_buf_free (&frames);
}

/* A message cut across frames of both connections interleaved, and a frame
   holding the end of one message and the whole next one (Go's bufio.Writer
   flushes at 4096 bytes, whatever the message boundaries). */
static void
test_split_and_joined (void **state)
{
  (void) state;
  uint8_t big[5000];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (uint8_t) i;
  struct cp_buf s1 = { 0 }, s2 = { 0 }, frames = { 0 };
  put_msg (&s1, 3, CP_TTRPC_REQUEST, big, sizeof big);
  put_msg (&s1, 5, CP_TTRPC_REQUEST, (const uint8_t *) "x", 1);
  put_msg (&s2, 1, CP_TTRPC_RESPONSE, NULL, 0);
  put_frame (&frames, 1, s1.p, 4096);
  put_frame (&frames, 2, s2.p, 4);
  put_frame (&frames, 1, s1.p + 4096, (uint32_t) s1.len - 4096);
  put_frame (&frames, 2, s2.p + 4, (uint32_t) s2.len - 4);
  put_frame (&frames, 1, NULL, 0); /* an empty frame: Go writes one for an empty write */
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_wire_feed (&w, frames.p, frames.len, &err), 0);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, 1, &m, &err), 1);
  assert_int_equal (m.stream, 3);
  assert_int_equal (m.len, sizeof big);
  assert_memory_equal (m.payload, big, sizeof big);
  cp_ttrpc_msg_clear (&m);
  assert_int_equal (cp_nri_wire_next (&w, 1, &m, &err), 1);
  assert_int_equal (m.stream, 5);
  assert_int_equal (m.len, 1);
  cp_ttrpc_msg_clear (&m);
  assert_int_equal (cp_nri_wire_next (&w, 2, &m, &err), 1);
  assert_int_equal (m.type, CP_TTRPC_RESPONSE);
  assert_int_equal (m.len, 0);
  assert_null (m.payload);
  assert_int_equal (cp_nri_wire_next (&w, 1, &m, &err), 0);
  assert_int_equal (cp_nri_wire_next (&w, 2, &m, &err), 0);
  cp_nri_wire_clear (&w);
  cp_buf_free (&s1);
  cp_buf_free (&s2);
  cp_buf_free (&frames);
}

/* A frame for an id nobody opened (0, reserved, or 7) is dropped, as Go's reader
   does, and what follows still reads. */
static void
test_unknown_conn_dropped (void **state)
{
  (void) state;
  struct cp_buf msg = { 0 }, frames = { 0 };
  put_msg (&msg, 1, CP_TTRPC_REQUEST, (const uint8_t *) "ab", 2);
  put_frame (&frames, 0, (const uint8_t *) "garbage!", 8);
  put_frame (&frames, 7, msg.p, (uint32_t) msg.len);
  put_frame (&frames, 1, msg.p, (uint32_t) msg.len);
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_wire_feed (&w, frames.p, frames.len, &err), 0);
  assert_int_equal (w.dropped, 2);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, 1, &m, &err), 1);
  assert_memory_equal (m.payload, "ab", 2);
  cp_ttrpc_msg_clear (&m);
  assert_int_equal (cp_nri_wire_next (&w, 2, &m, &err), 0);
  assert_int_equal (cp_nri_wire_next (&w, 7, &m, &err), -1);
  cp_error_free (&err);
  cp_nri_wire_clear (&w);
  cp_buf_free (&msg);
  cp_buf_free (&frames);
}

/* Refused with one line: a frame over 4 MiB + 10, a message over 4 MiB (before
   its payload is buffered), a message of an unknown type. */
static void
test_refusals (void **state)
{
  (void) state;
  struct
  {
    uint8_t bytes[18];
    size_t n;
    const char *needle;
  } cases[] = {
    { { 0, 0, 0, 1, 0, 0x40, 0, 0x0b }, 8, "4194315 bytes (at most 4194314)" },
    { { 0, 0, 0, 1, 0, 0, 0, 10, 0, 0x40, 0, 1, 0, 0, 0, 1, 1, 0 }, 18, "4194305 bytes (at most 4194304)" },
    { { 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 9, 0 }, 18, "unknown type 9" },
    { { 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 }, 18, "unknown type 0" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_nri_wire w;
      cp_nri_wire_init (&w);
      cp_error_t err = NULL;
      assert_int_equal (cp_nri_wire_feed (&w, cases[i].bytes, cases[i].n, &err), -1);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      tu_assert_contains (cp_error_message (err), cases[i].needle);
      assert_null (strchr (cp_error_message (err), '\n'));
      cp_error_free (&err);
      cp_nri_wire_clear (&w);
    }
  /* The largest frame Go writes is accepted (its header, here). */
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  const uint8_t max[8] = { 0, 0, 0, 1, 0, 0x40, 0, 0x0a };
  assert_int_equal (cp_nri_wire_feed (&w, max, 8, &err), 0);
  cp_nri_wire_clear (&w);
}

/* What we write: frames of at most 4096 bytes on the given connection whose
   payloads, joined, are the ttrpc header (big-endian) and the payload. */
static void
test_encode_frames (void **state)
{
  (void) state;
  size_t n = 10000;
  uint8_t *payload = malloc (n);
  for (size_t i = 0; i < n; i++)
    payload[i] = (uint8_t) (i * 7);
  struct cp_buf out = { 0 }, joined = { 0 };
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_wire_encode (2, 7, CP_TTRPC_RESPONSE, 0, payload, n, &out, &err), 0);
  size_t frames = 0;
  for (size_t off = 0; off < out.len; frames++)
    {
      assert_true (out.len - off >= 8);
      uint32_t conn = (uint32_t) out.p[off] << 24 | (uint32_t) out.p[off + 1] << 16 | out.p[off + 2] << 8 | out.p[off + 3];
      uint32_t len = (uint32_t) out.p[off + 4] << 24 | (uint32_t) out.p[off + 5] << 16 | out.p[off + 6] << 8 | out.p[off + 7];
      assert_int_equal (conn, 2);
      assert_true (len > 0 && len <= 4096);
      cp_buf_append (&joined, out.p + off + 8, len);
      off += 8 + len;
    }
  assert_int_equal (frames, 3); /* 10010 bytes: 4096 + 4096 + 1818 */
  assert_int_equal (joined.len, n + 10);
  static const uint8_t hdr[10] = { 0, 0, 0x27, 0x10, 0, 0, 0, 7, 2, 0 };
  assert_memory_equal (joined.p, hdr, 10);
  assert_memory_equal (joined.p + 10, payload, n);
  /* And it reads back. */
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  assert_int_equal (cp_nri_wire_feed (&w, out.p, out.len, &err), 0);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, 2, &m, &err), 1);
  assert_int_equal (m.len, n);
  assert_memory_equal (m.payload, payload, n);
  cp_ttrpc_msg_clear (&m);
  cp_nri_wire_clear (&w);
  assert_int_equal (cp_nri_wire_encode (1, 1, 1, 0, payload, CP_TTRPC_MESSAGE_MAX + 1, &out, &err), -1);
  cp_error_free (&err);
  cp_buf_free (&out);
  cp_buf_free (&joined);
  free (payload);
}

/* A ttrpc.Request as the Go client marshals it: service (1), method (2), payload
   (3), timeout_nano (4), hand-written protobuf bytes. */
static void
test_request_decode (void **state)
{
  (void) state;
  static const uint8_t bytes[] = {
    0x0a, 0x03, 'S', 'v', 'c', 0x12, 0x02, 'M', 'm', 0x1a, 0x02, 0x08, 0x01, 0x20, 0x80, 0x94, 0xeb, 0xdc, 0x03,
  };
  Ttrpc__Request *req = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_rpc_request_decode (bytes, sizeof bytes, &req, &err), 0);
  assert_string_equal (req->service, "Svc");
  assert_string_equal (req->method, "Mm");
  assert_int_equal (req->payload.len, 2);
  assert_int_equal (req->timeout_nano, 1000000000);
  ttrpc__request__free_unpacked (req, NULL);
  /* Truncated: the method's length runs past the end. */
  assert_int_equal (cp_rpc_request_decode (bytes, 7, &req, &err), -1);
  tu_assert_contains (cp_error_message (err), "not a ttrpc.Request");
  cp_error_free (&err);
  /* No method. */
  assert_int_equal (cp_rpc_request_decode (bytes, 5, &req, &err), -1);
  tu_assert_contains (cp_error_message (err), "without a service or a method");
  cp_error_free (&err);
}

/* A response with an error status: the bytes Go's status.Proto() gives for code 9
   and message "no", read back through our decoder after our encoder, and laid out
   as google.rpc.Status: code (1), message (2). */
static void
test_response_round_trip (void **state)
{
  (void) state;
  struct cp_buf out = { 0 };
  cp_error_t err = NULL;
  assert_int_equal (cp_rpc_response_encode (1, 5, CP_RPC_FAILED_PRECONDITION, "no", NULL, &out, &err), 0);
  /* frame header 8 + ttrpc header 10, then Response{status{code 9, message "no"}} */
  static const uint8_t want[] = { 0x0a, 0x06, 0x08, 0x09, 0x12, 0x02, 'n', 'o' };
  assert_int_equal (out.len, 18 + sizeof want);
  assert_memory_equal (out.p + 18, want, sizeof want);
  int32_t code;
  char *message;
  assert_int_equal (cp_rpc_response_decode (out.p + 18, out.len - 18, &code, &message, &err), 0);
  assert_int_equal (code, 9);
  assert_string_equal (message, "no");
  free (message);
  static const uint8_t bad[] = { 0x0a, 0x7f, 0x08 };
  assert_int_equal (cp_rpc_response_decode (bad, sizeof bad, &code, &message, &err), -1);
  cp_error_free (&err);
  cp_buf_free (&out);
}

/* The loop's other endpoints (nri_conn.h, struct cp_nri_side): served while the
   loop waits for the runtime, never in its way: with both readable, the runtime's
   socket is answered first and the side endpoint waits for the next wait. */
struct side_seen
{
  int calls;
};

static void
side_ready (void *ctx, int fd)
{
  struct side_seen *seen = ctx;
  char c;
  assert_int_equal (read (fd, &c, 1), 1);
  seen->calls++;
}

static void
test_side_endpoints (void **state)
{
  (void) state;
  int runtime[2], side[2];
  assert_int_equal (pipe (runtime), 0);
  assert_int_equal (pipe (side), 0);
  struct side_seen seen = { 0 };
  struct cp_nri_side sides[] = { { .fd = side[0], .ready = side_ready, .ctx = &seen } };
  cp_error_t err = NULL;
  /* Nothing readable: the wait times out, nothing served. */
  assert_int_equal (cp_nri_side_wait (sides, 1, runtime[0], 20, &err), CP_NRI_TIMED_OUT);
  assert_int_equal (seen.calls, 0);
  /* The side endpoint readable: served, and the wait goes on until its end. */
  assert_int_equal (write (side[1], "x", 1), 1);
  assert_int_equal (cp_nri_side_wait (sides, 1, runtime[0], 50, &err), CP_NRI_TIMED_OUT);
  assert_int_equal (seen.calls, 1);
  /* Both readable: the runtime first, the side endpoint left for the next wait. */
  assert_int_equal (write (side[1], "y", 1), 1);
  assert_int_equal (write (runtime[1], "r", 1), 1);
  assert_int_equal (cp_nri_side_wait (sides, 1, runtime[0], -1, &err), 1);
  assert_int_equal (seen.calls, 1);
  /* No runtime socket (the wait between two dials): the side endpoint served. */
  assert_int_equal (cp_nri_side_wait (sides, 1, -1, 50, &err), CP_NRI_TIMED_OUT);
  assert_int_equal (seen.calls, 2);
  for (int i = 0; i < 2; i++)
    {
      close (runtime[i]);
      close (side[i]);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_header_layout),
    cmocka_unit_test (test_one_message_bytewise),
    cmocka_unit_test (test_split_and_joined),
    cmocka_unit_test (test_unknown_conn_dropped),
    cmocka_unit_test (test_refusals),
    cmocka_unit_test (test_encode_frames),
    cmocka_unit_test (test_request_decode),
    cmocka_unit_test (test_response_round_trip),
    cmocka_unit_test (test_side_endpoints),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
