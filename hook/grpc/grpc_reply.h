/* cachepin: what the services share to answer a call (grpc_server.h's struct
 * cp_grpc_reply) from protobuf-c's messages. */
#ifndef CP_GRPC_REPLY_H
#define CP_GRPC_REPLY_H

#include <protobuf-c/protobuf-c.h>

#include "grpc_server.h"

/* The request REQ (N bytes) decoded as DESC's message, or NULL with *REPLY set
   to INVALID_ARGUMENT and one line logged (WHAT names the call).  The caller
   frees it with protobuf_c_message_free_unpacked(). */
ProtobufCMessage *cp_grpc_unpack (const ProtobufCMessageDescriptor *desc, const uint8_t *req, size_t n,
                                  const char *what, struct cp_grpc_reply *reply);

/* M serialized into *REPLY (OK). */
void cp_grpc_reply_pack (struct cp_grpc_reply *reply, const ProtobufCMessage *m);

/* *REPLY set to CODE and a MESSAGE of FMT, and that line logged (warning). */
void cp_grpc_reply_fail (struct cp_grpc_reply *reply, enum cp_grpc_code code, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));

#endif
