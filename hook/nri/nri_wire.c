/* cachepin: NRI's multiplexer frames and ttrpc messages (nri_wire.h). */
#include <stdlib.h>
#include <string.h>

#include "nri_wire.h"

static uint32_t
get_be32 (const uint8_t *p)
{
  return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

static void
put_be32 (uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) (v >> 24);
  p[1] = (uint8_t) (v >> 16);
  p[2] = (uint8_t) (v >> 8);
  p[3] = (uint8_t) v;
}

void
cp_buf_append (struct cp_buf *b, const void *data, size_t n)
{
  if (n == 0)
    return;
  if (b->cap - b->len < n)
    {
      size_t cap = b->cap ? b->cap : 256;
      while (cap - b->len < n)
        cap *= 2;
      uint8_t *p = realloc (b->p, cap);
      if (p == NULL)
        abort (); /* out of memory: the style's rule */
      b->p = p;
      b->cap = cap;
    }
  memcpy (b->p + b->len, data, n);
  b->len += n;
}

void
cp_buf_free (struct cp_buf *b)
{
  free (b->p);
  *b = (struct cp_buf) { 0 };
}

void
cp_ttrpc_msg_clear (struct cp_ttrpc_msg *m)
{
  free (m->payload);
  *m = (struct cp_ttrpc_msg) { 0 };
}

void
cp_nri_wire_init (struct cp_nri_wire *w)
{
  *w = (struct cp_nri_wire) { 0 };
}

void
cp_nri_wire_clear (struct cp_nri_wire *w)
{
  for (size_t i = 0; i < CP_MUX_CONNS; i++)
    cp_buf_free (&w->stream[i]);
  cp_nri_wire_init (w);
}

void
cp_mux_header_encode (uint8_t hdr[CP_MUX_HEADER_LEN], uint32_t conn, uint32_t len)
{
  put_be32 (hdr, conn);
  put_be32 (hdr + 4, len);
}

void
cp_mux_header_decode (const uint8_t hdr[CP_MUX_HEADER_LEN], uint32_t *conn, uint32_t *len)
{
  *conn = get_be32 (hdr);
  *len = get_be32 (hdr + 4);
}

static bool
known_conn (uint32_t conn)
{
  return conn > 0 && conn < CP_MUX_CONNS;
}

/* The first message header buffered on S, when there is one, must announce what
   ttrpc accepts: checked as soon as its 10 bytes are in, so that a length of 4 GiB
   is refused before anything is buffered for it. */
static int
check_first_header (const struct cp_buf *s, uint32_t conn, cp_error_t *err)
{
  if (s->len < CP_TTRPC_HEADER_LEN)
    return 0;
  uint32_t len = get_be32 (s->p);
  if (len > CP_TTRPC_MESSAGE_MAX)
    return cp_fail_input (err, "NRI connection %u: a ttrpc message of %u bytes (at most %u)", conn, len,
                          CP_TTRPC_MESSAGE_MAX);
  uint8_t type = s->p[8];
  if (type < CP_TTRPC_REQUEST || type > CP_TTRPC_DATA)
    return cp_fail_input (err, "NRI connection %u: a ttrpc message of unknown type %u", conn, type);
  return 0;
}

int
cp_nri_wire_feed (struct cp_nri_wire *w, const uint8_t *p, size_t n, cp_error_t *err)
{
  while (n > 0)
    {
      if (!w->in_payload)
        {
          size_t take = CP_MUX_HEADER_LEN - w->hdr_have;
          if (take > n)
            take = n;
          memcpy (w->hdr + w->hdr_have, p, take);
          w->hdr_have += take;
          p += take;
          n -= take;
          if (w->hdr_have < CP_MUX_HEADER_LEN)
            return 0;
          w->hdr_have = 0;
          cp_mux_header_decode (w->hdr, &w->conn, &w->left);
          if (w->left > CP_MUX_PAYLOAD_MAX)
            return cp_fail_input (err, "NRI frame on connection %u: %u bytes (at most %u)", w->conn, w->left,
                                  CP_MUX_PAYLOAD_MAX);
          if (!known_conn (w->conn))
            w->dropped++;
          w->in_payload = w->left > 0;
          continue;
        }
      size_t take = w->left < n ? w->left : n;
      if (known_conn (w->conn))
        {
          struct cp_buf *s = &w->stream[w->conn];
          cp_buf_append (s, p, take);
          if (check_first_header (s, w->conn, err) < 0)
            return -1;
        }
      p += take;
      n -= take;
      w->left -= (uint32_t) take;
      w->in_payload = w->left > 0;
    }
  return 0;
}

int
cp_nri_wire_next (struct cp_nri_wire *w, uint32_t conn, struct cp_ttrpc_msg *out, cp_error_t *err)
{
  *out = (struct cp_ttrpc_msg) { 0 };
  if (!known_conn (conn))
    return cp_fail_input (err, "NRI connection %u: not one of ours", conn);
  struct cp_buf *s = &w->stream[conn];
  if (check_first_header (s, conn, err) < 0)
    return -1;
  if (s->len < CP_TTRPC_HEADER_LEN)
    return 0;
  uint32_t len = get_be32 (s->p);
  if (s->len - CP_TTRPC_HEADER_LEN < len)
    return 0;
  out->len = len;
  out->stream = get_be32 (s->p + 4);
  out->type = s->p[8];
  out->flags = s->p[9];
  if (len > 0)
    {
      out->payload = malloc (len);
      if (out->payload == NULL)
        abort ();
      memcpy (out->payload, s->p + CP_TTRPC_HEADER_LEN, len);
    }
  size_t used = CP_TTRPC_HEADER_LEN + (size_t) len;
  memmove (s->p, s->p + used, s->len - used);
  s->len -= used;
  return 1;
}

int
cp_nri_wire_encode (uint32_t conn, uint32_t stream, uint8_t type, uint8_t flags, const uint8_t *payload,
                    size_t len, struct cp_buf *out, cp_error_t *err)
{
  if (len > CP_TTRPC_MESSAGE_MAX)
    return cp_fail_input (err, "ttrpc message of %zu bytes (at most %u)", len, CP_TTRPC_MESSAGE_MAX);
  uint8_t msg_hdr[CP_TTRPC_HEADER_LEN];
  put_be32 (msg_hdr, (uint32_t) len);
  put_be32 (msg_hdr + 4, stream);
  msg_hdr[8] = type;
  msg_hdr[9] = flags;
  /* The message, header and payload, as one stream cut into frames. */
  size_t total = CP_TTRPC_HEADER_LEN + len;
  for (size_t off = 0; off < total;)
    {
      size_t chunk = total - off < CP_MUX_WRITE_MAX ? total - off : CP_MUX_WRITE_MAX;
      uint8_t hdr[CP_MUX_HEADER_LEN];
      cp_mux_header_encode (hdr, conn, (uint32_t) chunk);
      cp_buf_append (out, hdr, sizeof hdr);
      for (size_t i = off; i < off + chunk;)
        {
          /* from the message header, then from the payload */
          if (i < CP_TTRPC_HEADER_LEN)
            {
              size_t n = CP_TTRPC_HEADER_LEN - i < off + chunk - i ? CP_TTRPC_HEADER_LEN - i : off + chunk - i;
              cp_buf_append (out, msg_hdr + i, n);
              i += n;
            }
          else
            {
              cp_buf_append (out, payload + (i - CP_TTRPC_HEADER_LEN), off + chunk - i);
              i = off + chunk;
            }
        }
      off += chunk;
    }
  return 0;
}
