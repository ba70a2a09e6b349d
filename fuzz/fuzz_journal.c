/* Fuzz cp_journal_parse(), the reader of journal.json (hook/state/journal.h): a
 * file in the state directory that every append reads back and `cachepin status`
 * prints on a terminal.
 *
 * Invariants on a journal that parses:
 *   - at most CP_JOURNAL_MAX_RECORDS records, the text at most CP_JOURNAL_MAX_BYTES;
 *   - every record passes cp_journal_record_check(): ids non-empty, every text
 *     field within its limit and safe for a terminal (policy/base/text.h: no
 *     control character, no bidi override, valid UTF-8), cpulists within
 *     CP_CPULIST_MAX, front and kind known names;
 *   - serialize keeps every record (a journal that was read fits the bound it is
 *     written under, but for the line breaks of a text at the very limit) and
 *     every count, parses back to the same records and counts, and serializing that
 *     again gives the very same text (one spelling; the writer never writes what
 *     the reader refuses);
 *   - cp_journal_record_clean() (what cp_journal_add() queues) makes a record
 *     that passes the check out of any bytes: the input itself as the id, the
 *     name, the cgroup and the reason (up to its first NUL), any time, front and
 *     kind; and it keeps a record that already passed as it was.
 * On failure: an input error with a printable one-line message, and no list. */
#define _GNU_SOURCE
#include <hwloc.h>

#include "common.h"
#include "journal.h"
#include "text.h"
#include "util.h"

static bool
same_set (hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
  bool a0 = a == NULL || hwloc_bitmap_iszero (a), b0 = b == NULL || hwloc_bitmap_iszero (b);
  return a0 || b0 ? a0 == b0 : hwloc_bitmap_isequal (a, b);
}

static bool
record_equal (const struct cp_journal_record *a, const struct cp_journal_record *b)
{
  return a->time == b->time && a->front == b->front && a->kind == b->kind && strcmp (a->id, b->id) == 0
         && strcmp (a->name, b->name) == 0 && strcmp (a->cgroup, b->cgroup) == 0
         && strcmp (a->reason, b->reason) == 0 && same_set (a->cpus, b->cpus) && same_set (a->mems, b->mems);
}

static void
check_list (const struct cp_journal_list *l)
{
  FUZZ_CHECK (l->n <= CP_JOURNAL_MAX_RECORDS);
  for (size_t i = 0; i < l->n; i++)
    {
      cp_error_t err = NULL;
      int r = cp_journal_record_check (&l->records[i], &err);
      FUZZ_CHECK_MSG (r == 0, "record %zu: %s", i, cp_error_message (err));
      FUZZ_CHECK (cp_text_valid (l->records[i].reason, strlen (l->records[i].reason)));
    }
}

static void
check_clean (const uint8_t *data, size_t size, const struct cp_journal_list *l)
{
  char *s = fuzz_cstr (data, size);
  long long time = 0;
  memcpy (&time, data, size < sizeof time ? size : sizeof time);
  struct cp_journal_record raw = {
    .time = time,
    .front = (enum cp_journal_front) (size ? data[0] : 0),
    .kind = (enum cp_journal_kind) (size > 1 ? data[1] : 0),
    .id = s, .name = s, .cgroup = s, .reason = s,
  }, clean = { 0 };
  cp_journal_record_clean (&raw, &clean);
  cp_error_t err = NULL;
  int r = cp_journal_record_check (&clean, &err);
  FUZZ_CHECK_MSG (r == 0, "a cleaned record fails the check: %s", cp_error_message (err));
  FUZZ_CHECK (strlen (clean.reason) <= strlen (s));
  cp_journal_record_clear (&clean);
  free (s);
  if (l && l->n > 0)
    {
      cp_journal_record_clean (&l->records[0], &clean);
      FUZZ_CHECK (record_equal (&clean, &l->records[0]) || l->records[0].time == 0);
      cp_journal_record_clear (&clean);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct cp_journal_list *l = NULL;
  cp_error_t err = NULL;
  int r = cp_journal_parse ((const char *) data, size, &l, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NULL);
      FUZZ_CHECK (l == NULL);
      cp_error_free (&err);
      check_clean (data, size, NULL);
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL && l != NULL);
  FUZZ_CHECK (size <= CP_JOURNAL_MAX_BYTES);
  check_list (l);

  size_t kept = 0;
  char *text = cp_journal_serialize (l, &kept);
  size_t len = strlen (text);
  /* Our spelling is never longer than any other but for the line breaks the
     writer puts between records and counts (2 bytes each) and at the end, and
     the empty counts a version 1 file did not have (16 bytes). */
  size_t counted = 0;
  for (unsigned f = 0; f < CP_JOURNAL_N_FRONTS; f++)
    for (unsigned k = 0; k < CP_JOURNAL_N_KINDS; k++)
      for (unsigned c = 0; c < CP_JOURNAL_N_CAUSES; c++)
        counted += l->counts.n[f][k][c] != 0;
  FUZZ_CHECK_MSG (kept == l->n || size + 2 * (l->n + counted) + 4 + 16 > CP_JOURNAL_MAX_BYTES,
                  "serialize kept %zu of %zu records", kept, l->n);
  FUZZ_CHECK (len > 0 && len <= CP_JOURNAL_MAX_BYTES && text[len - 1] == '\n');
  struct cp_journal_list *back = NULL;
  r = cp_journal_parse (text, len, &back, &err);
  FUZZ_CHECK_MSG (r == 0, "our own output does not parse: %s", cp_error_message (err));
  FUZZ_CHECK (back->n == kept);
  for (size_t i = 0; i < kept; i++)
    FUZZ_CHECK (record_equal (&l->records[l->n - kept + i], &back->records[i]));
  FUZZ_CHECK (memcmp (&l->counts, &back->counts, sizeof l->counts) == 0); /* never trimmed */
  char *text2 = cp_journal_serialize (back, NULL);
  FUZZ_CHECK_MSG (strcmp (text, text2) == 0, "serialize . parse is not a fixed point:\n%s\n---\n%s", text, text2);
  free (text2);
  cp_journal_list_free (back);
  free (text);
  check_clean (data, size, l);
  cp_journal_list_free (l);
  return 0;
}
