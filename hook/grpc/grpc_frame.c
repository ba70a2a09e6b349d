/* cachepin: gRPC's length-prefixed message (grpc_frame.h). */
#include "grpc_frame.h"

static uint32_t
read_len (const uint8_t *p)
{
  return (uint32_t) p[1] << 24 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 8 | (uint32_t) p[4];
}

int
cp_grpc_frame_check (const uint8_t *body, size_t n, size_t max, cp_error_t *err)
{
  if (n >= 1 && body[0] != 0)
    return cp_fail_input (err, "grpc: message flags 0x%02x: only an uncompressed message (0) is taken", body[0]);
  if (n < CP_GRPC_PREFIX_LEN)
    return 0;
  uint32_t len = read_len (body);
  if (len > max)
    return cp_fail_input (err, "grpc: message of %u bytes, over the limit of %zu", len, max);
  if (n - CP_GRPC_PREFIX_LEN > len)
    return cp_fail_input (err, "grpc: %zu bytes after the one message of %u bytes a unary call sends",
                          n - CP_GRPC_PREFIX_LEN - len, len);
  return 0;
}

int
cp_grpc_frame_unary (const uint8_t *body, size_t n, size_t max, const uint8_t **msg, size_t *len, cp_error_t *err)
{
  if (cp_grpc_frame_check (body, n, max, err) < 0)
    return -1;
  if (n < CP_GRPC_PREFIX_LEN)
    return cp_fail_input (err, "grpc: a body of %zu bytes, short of the message prefix (5)", n);
  uint32_t l = read_len (body);
  if (n - CP_GRPC_PREFIX_LEN < l)
    return cp_fail_input (err, "grpc: the body ends %zu bytes into a message of %u bytes", n - CP_GRPC_PREFIX_LEN, l);
  *msg = body + CP_GRPC_PREFIX_LEN;
  *len = l;
  return 0;
}

void
cp_grpc_frame_prefix (uint8_t out[CP_GRPC_PREFIX_LEN], uint32_t len)
{
  out[0] = 0;
  out[1] = (uint8_t) (len >> 24);
  out[2] = (uint8_t) (len >> 16);
  out[3] = (uint8_t) (len >> 8);
  out[4] = (uint8_t) len;
}
