/* Fuzz NRI's wire (hook/nri/nri_wire.c) and the ttrpc/protobuf decoding on it
 * (nri_rpc.c), as the plugin reads its socket.
 *
 * Input: one byte that cuts the rest into feeds of 1..256 bytes (the socket's
 * reads), then the bytes.  Invariants:
 *   - a refusal is an input error of one line, and nothing after it is read;
 *   - every message read has a known type and at most CP_TTRPC_MESSAGE_MAX bytes;
 *   - a message read re-encodes (cp_nri_wire_encode) into frames that read back
 *     as the same message;
 *   - a request or response payload is decoded or refused, never a crash; a
 *     request decoded names a service and a method. */
#include "common.h"
#include "nri_rpc.h"
#include "nri_wire.h"

static void
check_round_trip (uint32_t conn, const struct cp_ttrpc_msg *m)
{
  struct cp_buf out = { 0 };
  cp_error_t err = NULL;
  FUZZ_CHECK (cp_nri_wire_encode (conn, m->stream, m->type, m->flags, m->payload, m->len, &out, &err) == 0);
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  FUZZ_CHECK (cp_nri_wire_feed (&w, out.p, out.len, &err) == 0);
  struct cp_ttrpc_msg back;
  FUZZ_CHECK (cp_nri_wire_next (&w, conn, &back, &err) == 1);
  FUZZ_CHECK (back.stream == m->stream && back.type == m->type && back.flags == m->flags && back.len == m->len);
  FUZZ_CHECK (m->len == 0 || memcmp (back.payload, m->payload, m->len) == 0);
  cp_ttrpc_msg_clear (&back);
  cp_nri_wire_clear (&w);
  cp_buf_free (&out);
}

static void
check_payload (const struct cp_ttrpc_msg *m)
{
  cp_error_t err = NULL;
  if (m->type == CP_TTRPC_REQUEST)
    {
      Ttrpc__Request *req = NULL;
      if (cp_rpc_request_decode (m->payload, m->len, &req, &err) == 0)
        {
          FUZZ_CHECK (req->service && req->service[0] && req->method && req->method[0]);
          ProtobufCMessage *msg = NULL;
          if (cp_rpc_message_decode (&nri__pkg__api__v1alpha1__create_container_request__descriptor,
                                     req->payload.data, req->payload.len, &msg, &err) == 0)
            protobuf_c_message_free_unpacked (msg, NULL);
          ttrpc__request__free_unpacked (req, NULL);
        }
    }
  else if (m->type == CP_TTRPC_RESPONSE)
    {
      int32_t code;
      char *message = NULL;
      if (cp_rpc_response_decode (m->payload, m->len, &code, &message, &err) == 0)
        free (message);
    }
  cp_error_free (&err);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  size_t cut = (size_t) data[0] + 1;
  data++;
  size--;
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  bool refused = false;
  for (size_t off = 0; off < size && !refused;)
    {
      size_t n = size - off < cut ? size - off : cut;
      if (cp_nri_wire_feed (&w, data + off, n, &err) < 0)
        refused = true;
      off += n;
      for (uint32_t conn = 1; conn < CP_MUX_CONNS && !refused; conn++)
        {
          struct cp_ttrpc_msg m;
          int r;
          while (!refused && (r = cp_nri_wire_next (&w, conn, &m, &err)) != 0)
            {
              if (r < 0)
                {
                  refused = true;
                  break;
                }
              FUZZ_CHECK (m.type >= CP_TTRPC_REQUEST && m.type <= CP_TTRPC_DATA);
              FUZZ_CHECK (m.len <= CP_TTRPC_MESSAGE_MAX);
              check_round_trip (conn, &m);
              check_payload (&m);
              cp_ttrpc_msg_clear (&m);
            }
        }
    }
  if (refused)
    {
      FUZZ_CHECK (cp_error_kind (err) == CP_ERR_INPUT);
      FUZZ_CHECK (strchr (cp_error_message (err), '\n') == NULL);
    }
  cp_error_free (&err);
  cp_nri_wire_clear (&w);
  return 0;
}
