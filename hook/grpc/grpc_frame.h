/* cachepin: gRPC's length-prefixed message (PROTOCOL-HTTP2.md, "Length-Prefixed-
 * Message"): one byte of flags (0: not compressed; the plugin offers no
 * compression, so 1 is refused too), four bytes of length (big-endian), then the
 * message.  Pure bytes, strict: a unary call's body is exactly one message, no
 * byte before, after or missing, and no message longer than the caller's limit. */
#ifndef CP_GRPC_FRAME_H
#define CP_GRPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CP_GRPC_PREFIX_LEN 5

/* The longest message either service takes or sends (docs/security.md). */
#define CP_GRPC_MAX_MESSAGE (256u * 1024u)

/* A body's first N bytes (N may be short of a whole message: a call still
   arriving), checked as far as they go: 0 when nothing is wrong yet, < 0 (*ERR,
   CP_ERR_INPUT, one line) when the flags are not 0, the length is over MAX, or
   bytes go past the one message the prefix announces. */
int cp_grpc_frame_check (const uint8_t *body, size_t n, size_t max, cp_error_t *err);

/* A whole unary body of N bytes: its one message (*MSG, pointing into BODY, and
   *LEN), or < 0 (*ERR) as cp_grpc_frame_check() says, or when BODY is short of a
   prefix or of the message it announces. */
int cp_grpc_frame_unary (const uint8_t *body, size_t n, size_t max, const uint8_t **msg, size_t *len,
                         cp_error_t *err);

/* The prefix of an uncompressed message of LEN bytes. */
void cp_grpc_frame_prefix (uint8_t out[CP_GRPC_PREFIX_LEN], uint32_t len);

#endif
