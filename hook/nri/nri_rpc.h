/* cachepin: ttrpc's unary calls over NRI's wire (nri_wire.h), in protobuf-c's messages
 * generated from hook/nri/proto (request.proto: ttrpc.Request and ttrpc.Response;
 * status.proto: google.rpc.Status; api.proto: NRI's services and messages).
 *
 * A request names its service ("nri.pkg.api.v1alpha1.Plugin" or "...Runtime") and
 * method ("CreateContainer") and carries the method's message as bytes; a response
 * carries a status (code 0: OK; the gRPC codes otherwise, with a message the runtime
 * shows) and the reply's message as bytes. */
#ifndef CP_NRI_RPC_H
#define CP_NRI_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdint.h>

#include "api.pb-c.h"
#include "request.pb-c.h"
#include "error.h"
#include "nri_wire.h"

#define CP_NRI_SERVICE_PLUGIN "nri.pkg.api.v1alpha1.Plugin"
#define CP_NRI_SERVICE_RUNTIME "nri.pkg.api.v1alpha1.Runtime"

/* gRPC status codes ttrpc carries (google.golang.org/grpc/codes). */
enum cp_rpc_code
{
  CP_RPC_OK = 0,
  CP_RPC_INVALID_ARGUMENT = 3,
  CP_RPC_RESOURCE_EXHAUSTED = 8,
  CP_RPC_FAILED_PRECONDITION = 9,
  CP_RPC_UNIMPLEMENTED = 12,
  CP_RPC_INTERNAL = 13,
};

/* Decode a ttrpc.Request (a message of type CP_TTRPC_REQUEST); free *OUT with
 * ttrpc__request__free_unpacked (OUT, NULL).  An input error when the bytes are
 * not one, or it names no service or method. */
int cp_rpc_request_decode (const uint8_t *p, size_t n, Ttrpc__Request **out, cp_error_t *err);

/* Decode the message of type DESC in P (N bytes); free with protobuf_c_message_free_unpacked. */
int cp_rpc_message_decode (const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n,
                           ProtobufCMessage **out, cp_error_t *err);

/* Append to OUT the frames of a request of SERVICE.METHOD carrying MSG, on
 * connection CONN, stream STREAM. */
int cp_rpc_request_encode (uint32_t conn, uint32_t stream, const char *service, const char *method,
                           const ProtobufCMessage *msg, struct cp_buf *out, cp_error_t *err);

/* Append to OUT the frames of the response to STREAM on CONN: status CODE with
 * MESSAGE (NULL: none), and REPLY (NULL: none, for an error). */
int cp_rpc_response_encode (uint32_t conn, uint32_t stream, int32_t code, const char *message,
                            const ProtobufCMessage *reply, struct cp_buf *out, cp_error_t *err);

/* Decode a ttrpc.Response: its status code into *CODE, its message into *MESSAGE
 * (malloc'ed, NULL when none); the reply's bytes are not kept.  An input error when
 * the bytes are not one. */
int cp_rpc_response_decode (const uint8_t *p, size_t n, int32_t *code, char **message, cp_error_t *err);

#endif
