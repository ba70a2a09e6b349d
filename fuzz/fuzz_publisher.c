/* Fuzz target: the agent's side of the DRA publisher's socket
 * (cp_dra_publisher_take(), dra_publisher.h): whatever a compromised publisher sends.
 *
 * The input is a sequence of messages, each led by an op byte:
 *   op & 1 == 0: a raw message, its length the next two bytes (at most a read's
 *                buffer, CP_DRA_PUBLISHER_PART + 64), its bytes the input's;
 *   op & 1 == 1: a part of a claim's answer built from fields: id (0..3), ok
 *                (op & 2), a total and an offset of three bytes each, or (op & 4)
 *                the offset and the total of the answer in progress (so that whole
 *                answers of up to 1 MiB come in parts), (op & 8) a total of 1 MiB
 *                and a byte more; a length of two bytes; its bytes the input's,
 *                then filler.
 * Checked against a model of the promise (the header's): an answer reaches the
 * callback whole exactly when its parts came in order, from offset 0, all of one
 * total and one outcome, with no other claim's first part between them, a JSON of
 * at most CP_DRA_PUBLISHER_MAX_CLAIM bytes or an error of at most
 * CP_DRA_PUBLISHER_PART; the JSON is the parts' bytes in order; an error is one
 * non-empty line; fetch 0 is never answered; a round counted only for a report of
 * its exact size. */
#include "common.h"

#include "dra_publisher.h"
#include "log.h"

#define MAX_MSG (CP_DRA_PUBLISHER_PART + 64)

static struct
{
  char *buf; /* the answer in progress, as the model sees it */
  size_t len, total;
  uint32_t id;
  bool ok, active;
  bool expect;   /* the message now taken completes it */
  bool answered; /* the callback gave it */
} M;

static void
claim_cb (void *ctx, uint32_t id, const char *json, size_t len, const char *error)
{
  (void) ctx;
  FUZZ_CHECK (id != 0);
  FUZZ_CHECK ((json == NULL) != (error == NULL));
  if (error)
    {
      size_t n = strlen (error);
      FUZZ_CHECK_MSG (n > 0 && n <= CP_DRA_PUBLISHER_PART + 256, "an error of %zu bytes", n);
      for (size_t i = 0; i < n; i++)
        FUZZ_CHECK_MSG ((unsigned char) error[i] >= ' ' && error[i] != 0x7f, "a control byte in `%s`", error);
    }
  if (json)
    {
      FUZZ_CHECK (len <= CP_DRA_PUBLISHER_MAX_CLAIM);
      FUZZ_CHECK (json[len] == '\0');
      FUZZ_CHECK_MSG (M.expect && M.ok && id == M.id && len == M.total && memcmp (json, M.buf, len) == 0,
                      "claim %u's JSON of %zu bytes, the model %s (claim %u, %zu bytes)", id, len,
                      M.expect ? "completes" : "expects none", M.id, M.total);
      M.answered = true;
    }
  else if (M.expect && !M.ok && id == M.id)
    M.answered = true;
}

static uint32_t
u24 (const uint8_t *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16;
}

/* The model told of one claim's part (its header H, LEN bytes at BYTES). */
static void
model_part (const struct cp_dra_claim_part *h, const char *bytes, size_t len)
{
  M.expect = false;
  M.answered = false;
  if (h->id == 0)
    return;
  uint32_t cap = h->ok ? CP_DRA_PUBLISHER_MAX_CLAIM : CP_DRA_PUBLISHER_PART;
  bool fits = h->total <= cap && h->off <= h->total && len <= h->total - h->off;
  bool next = M.active && h->id == M.id && h->off == M.len;
  if (!fits || (h->off != 0 && !next) || (h->off != 0 && (h->total != M.total || (h->ok != 0) != M.ok)))
    {
      if (M.active && h->id == M.id) /* refused: its answer dropped */
        M.active = false;
      return;
    }
  if (h->off == 0)
    {
      free (M.buf);
      M.buf = malloc ((size_t) h->total + 1);
      M = (typeof (M)) { .buf = M.buf, .total = h->total, .id = h->id, .ok = h->ok != 0, .active = true };
    }
  memcpy (M.buf + M.len, bytes, len);
  M.len += len;
  if (M.len == M.total)
    {
      M.expect = true;
      M.active = false;
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  cp_log_set_level (CP_LOG_ERROR); /* one line per refusal: not thousands a second */
  static char msg[MAX_MSG];
  struct cp_dra_publisher p = { .fd = -1, .node = "node-a", .claim = claim_cb };
  free (M.buf);
  memset (&M, 0, sizeof M);
  size_t i = 0;
  while (i < size)
    {
      uint8_t op = data[i++];
      size_t n;
      struct cp_dra_claim_part h = { .type = CP_DRA_MSG_CLAIM };
      if (!(op & 1))
        {
          if (size - i < 2)
            break;
          n = ((size_t) data[i] | (size_t) data[i + 1] << 8) % (MAX_MSG + 1);
          i += 2;
          size_t have = size - i < n ? size - i : n;
          memcpy (msg, data + i, have);
          memset (msg + have, 'x', n - have);
          i += have;
        }
      else
        {
          if (size - i < 9)
            break;
          h.id = data[i] % 4;
          h.ok = (op & 2) != 0;
          h.total = u24 (data + i + 1);
          h.off = u24 (data + i + 4);
          if (op & 4)
            {
              h.total = (uint32_t) M.total;
              h.off = (uint32_t) M.len;
              h.id = M.id;
              h.ok = M.ok;
            }
          if (op & 8)
            h.total = CP_DRA_PUBLISHER_MAX_CLAIM + 1;
          size_t len = ((size_t) data[i + 7] | (size_t) data[i + 8] << 8) % (CP_DRA_PUBLISHER_PART + 1);
          if (op & 16) /* the rest of the answer, or as much as a part holds */
            len = h.total > h.off ? h.total - h.off : 0;
          if (len > CP_DRA_PUBLISHER_PART)
            len = CP_DRA_PUBLISHER_PART;
          i += 9;
          memcpy (msg, &h, sizeof h);
          size_t have = size - i < len ? size - i : len;
          memcpy (msg + sizeof h, data + i, have);
          memset (msg + sizeof h + have, op & 32 ? '\n' : '{', len - have);
          i += have;
          n = sizeof h + len;
        }
      uint64_t rounds = p.rounds;
      int32_t type = 0;
      if (n >= sizeof type)
        memcpy (&type, msg, sizeof type);
      if (type == CP_DRA_MSG_CLAIM && n >= sizeof h)
        {
          memcpy (&h, msg, sizeof h);
          model_part (&h, msg + sizeof h, n - sizeof h);
        }
      else
        M.expect = M.answered = false;
      cp_dra_publisher_take (&p, msg, n);
      FUZZ_CHECK_MSG (M.answered == M.expect, "claim %u (%zu bytes, ok %d): %s", M.id, M.total, M.ok,
                      M.expect ? "complete, not answered" : "answered unexpectedly");
      FUZZ_CHECK (p.rounds == rounds || (type == CP_DRA_MSG_REPORT && p.rounds == rounds + 1));
      FUZZ_CHECK (p.failures <= p.rounds && p.writes <= p.rounds);
      FUZZ_CHECK (p.part == NULL || (p.part_len <= p.part_total && p.part_id != 0
                                     && p.part_total <= (p.part_ok ? CP_DRA_PUBLISHER_MAX_CLAIM : CP_DRA_PUBLISHER_PART)));
      FUZZ_CHECK ((p.part != NULL) == M.active);
    }
  free (p.part);
  free (M.buf);
  memset (&M, 0, sizeof M);
  return 0;
}
