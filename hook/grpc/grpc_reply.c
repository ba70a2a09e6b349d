/* cachepin: answering a call from protobuf-c's messages (grpc_reply.h). */
#define _GNU_SOURCE
#include "grpc_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "util.h"

ProtobufCMessage *
cp_grpc_unpack (const ProtobufCMessageDescriptor *desc, const uint8_t *req, size_t n, const char *what,
                struct cp_grpc_reply *reply)
{
  ProtobufCMessage *m = protobuf_c_message_unpack (desc, NULL, n, req);
  if (m == NULL)
    cp_grpc_reply_fail (reply, CP_GRPC_INVALID_ARGUMENT, "%s: the request (%zu bytes) is not a %s message", what,
                        n, desc->name);
  return m;
}

void
cp_grpc_reply_pack (struct cp_grpc_reply *reply, const ProtobufCMessage *m)
{
  size_t len = protobuf_c_message_get_packed_size (m);
  reply->code = CP_GRPC_OK;
  reply->body = cp_xmalloc0 (len ? len : 1);
  reply->len = protobuf_c_message_pack (m, reply->body);
}

void
cp_grpc_reply_fail (struct cp_grpc_reply *reply, enum cp_grpc_code code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *line = NULL;
  if (vasprintf (&line, fmt, ap) < 0)
    abort ();
  va_end (ap);
  cp_log (CP_LOG_WARNING, "grpc: %s", line);
  free (reply->message);
  reply->code = code;
  reply->message = line;
}
