/* cachepin: ttrpc's requests and responses in protobuf-c (nri_rpc.h). */
#include <stdlib.h>
#include <string.h>

#include "nri_rpc.h"
#include "status.pb-c.h"
#include "util.h"

int
cp_rpc_message_decode (const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n,
                       ProtobufCMessage **out, cp_error_t *err)
{
  *out = protobuf_c_message_unpack (desc, NULL, n, p);
  if (*out == NULL)
    return cp_fail_input (err, "NRI: %zu bytes that are not a %s", n, desc->name);
  return 0;
}

int
cp_rpc_request_decode (const uint8_t *p, size_t n, Ttrpc__Request **out, cp_error_t *err)
{
  ProtobufCMessage *m = NULL;
  if (cp_rpc_message_decode (&ttrpc__request__descriptor, p, n, &m, err) < 0)
    return -1;
  Ttrpc__Request *req = (Ttrpc__Request *) m;
  if (req->service == NULL || req->service[0] == '\0' || req->method == NULL || req->method[0] == '\0')
    {
      ttrpc__request__free_unpacked (req, NULL);
      return cp_fail_input (err, "NRI: a ttrpc request without a service or a method");
    }
  *out = req;
  return 0;
}

/* MSG packed into a new buffer (*DATA, *LEN); MSG NULL: nothing. */
static void
pack (const ProtobufCMessage *msg, uint8_t **data, size_t *len)
{
  *data = NULL;
  *len = 0;
  if (msg == NULL)
    return;
  *len = protobuf_c_message_get_packed_size (msg);
  *data = malloc (*len ? *len : 1);
  if (*data == NULL)
    abort ();
  protobuf_c_message_pack (msg, *data);
}

int
cp_rpc_request_encode (uint32_t conn, uint32_t stream, const char *service, const char *method,
                       const ProtobufCMessage *msg, struct cp_buf *out, cp_error_t *err)
{
  Ttrpc__Request req = TTRPC__REQUEST__INIT;
  req.service = (char *) service;
  req.method = (char *) method;
  cleanup_free uint8_t *payload = NULL;
  pack (msg, &payload, &req.payload.len);
  req.payload.data = payload;
  cleanup_free uint8_t *bytes = NULL;
  size_t len;
  pack (&req.base, &bytes, &len);
  return cp_nri_wire_encode (conn, stream, CP_TTRPC_REQUEST, 0, bytes, len, out, err);
}

int
cp_rpc_response_encode (uint32_t conn, uint32_t stream, int32_t code, const char *message,
                        const ProtobufCMessage *reply, struct cp_buf *out, cp_error_t *err)
{
  Google__Rpc__Status status = GOOGLE__RPC__STATUS__INIT;
  status.code = code;
  if (message)
    status.message = (char *) message;
  Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
  resp.status = &status;
  cleanup_free uint8_t *payload = NULL;
  pack (reply, &payload, &resp.payload.len);
  resp.payload.data = payload;
  cleanup_free uint8_t *bytes = NULL;
  size_t len;
  pack (&resp.base, &bytes, &len);
  return cp_nri_wire_encode (conn, stream, CP_TTRPC_RESPONSE, 0, bytes, len, out, err);
}

int
cp_rpc_response_decode (const uint8_t *p, size_t n, int32_t *code, char **message, cp_error_t *err)
{
  *code = CP_RPC_OK;
  *message = NULL;
  Ttrpc__Response *resp = ttrpc__response__unpack (NULL, n, p);
  if (resp == NULL)
    return cp_fail_input (err, "NRI: %zu bytes that are not a ttrpc response", n);
  if (resp->status)
    {
      *code = resp->status->code;
      if (resp->status->message && resp->status->message[0])
        *message = strdup (resp->status->message);
    }
  ttrpc__response__free_unpacked (resp, NULL);
  return 0;
}
