/* Fuzz cp_ledger_parse(), the reader of ledger.json: a file every hook instance
 * trusts to know who holds which CPUs.
 *
 * Invariants on a ledger that parses:
 *   - every entry passes cp_ledger_entry_check(); ids are unique and find()
 *     returns each entry; no CPU is held by two exclusive entries;
 *   - serialize -> parse succeeds, gives the same entries in the same order, and
 *     serializing that again gives the very same text (the hook never writes a
 *     ledger it would refuse to read, and the format has one spelling);
 *   - cp_ledger_usage() is the union of the exclusive helds and the list of
 *     shared cpus, without the excluded entry;
 *   - put() accepts what parse accepted: remove the first entry and put it back;
 *     and refuses (CP_LEDGER_CONFLICT) an exclusive copy of it under another id.
 * On failure: an input error with a printable one-line message.
 *
 * Differential: the json-c reference codec (tests/support/ledger_codec_dom.c, the one the
 * hook used before issue 12) accepts exactly the same texts, and what it reads
 * is the same ledger (the fast writer's text of both is the same), except where
 * json-c 0.16 is known to misread: see jsonc_misreads_pair().
 *
 * The same bytes also go to cp_proc_parse_stat() (hook/host/proc.h), the parser of
 * /proc/<pid>/stat that reconcile trusts to tell a live container from a reused
 * pid: it reads only the LEN bytes it is given (ASan), fails with an input error,
 * and a state it returns is the byte after the last ")" and a space. */
#define _GNU_SOURCE
#include <hwloc.h>

#include "common.h"
#include "ledger.h"
#include "ledger_codec_dom.h"
#include "ledger_partition.h"
#include "proc.h"
#include "util.h"

static bool
entry_equal (const struct cp_ledger_entry *a, const struct cp_ledger_entry *b)
{
  return strcmp (a->id, b->id) == 0 && strcmp (a->cgroup_mount, b->cgroup_mount) == 0
         && strcmp (a->name ? a->name : "", b->name ? b->name : "") == 0
         && strcmp (a->cgroup, b->cgroup) == 0 && a->cgroup_ino == b->cgroup_ino && a->pid == b->pid
         && a->start_time == b->start_time
         && a->mode == b->mode && hwloc_bitmap_isequal (a->cpus, b->cpus) && hwloc_bitmap_isequal (a->held, b->held)
         && hwloc_bitmap_isequal (a->mems, b->mems) && a->placed_at == b->placed_at
         && a->sched_cache == b->sched_cache && a->core_sched == b->core_sched && a->isolated == b->isolated
         && (a->drift == NULL ? b->drift == NULL || hwloc_bitmap_iszero (b->drift)
                              : b->drift == NULL ? hwloc_bitmap_iszero (a->drift)
                                                 : hwloc_bitmap_isequal (a->drift, b->drift));
}

static void
entry_dup (struct cp_ledger_entry *dst, const struct cp_ledger_entry *src)
{
  *dst = *src;
  dst->id = cp_xstrdup (src->id);
  dst->name = src->name ? cp_xstrdup (src->name) : NULL; /* *dst = *src shared it */
  dst->cgroup_mount = cp_xstrdup (src->cgroup_mount);
  dst->cgroup = cp_xstrdup (src->cgroup);
  dst->cpus = hwloc_bitmap_dup (src->cpus);
  dst->held = hwloc_bitmap_dup (src->held);
  dst->mems = hwloc_bitmap_dup (src->mems);
  dst->drift = src->drift ? hwloc_bitmap_dup (src->drift) : NULL;
  if (dst->cpus == NULL || dst->held == NULL || dst->mems == NULL || (src->drift && dst->drift == NULL))
    abort ();
}

static void
check_ledger (const struct cp_ledger *l)
{
  size_t n = cp_ledger_count (l);
  FUZZ_CHECK (n <= CP_LEDGER_MAX_ENTRIES);
  hwloc_bitmap_t all = hwloc_bitmap_alloc ();
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      cp_error_t err = NULL;
      FUZZ_CHECK_MSG (cp_ledger_entry_check (e, &err) == 0, "entry %zu: %s", i, cp_error_message (err));
      FUZZ_CHECK (cp_ledger_find (l, e->id) == e);
      if (e->mode == CP_MODE_EXCLUSIVE)
        {
          FUZZ_CHECK (!hwloc_bitmap_intersects (all, e->held));
          hwloc_bitmap_or (all, all, e->held);
        }
    }
  hwloc_bitmap_free (all);
}

static void
check_usage (const struct cp_ledger *l, const char *exclude)
{
  struct cp_ledger_usage u;
  cp_ledger_usage (l, exclude, &u);
  hwloc_bitmap_t held = hwloc_bitmap_alloc ();
  size_t n_shared = 0;
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      if (exclude && strcmp (e->id, exclude) == 0)
        continue;
      /* An entry's drift counts as used too (ledger.h, cp_ledger_usage()). */
      hwloc_bitmap_t used = hwloc_bitmap_alloc ();
      hwloc_bitmap_or (used, e->mode == CP_MODE_EXCLUSIVE ? e->held : e->cpus, e->drift ? e->drift : used);
      if (e->mode == CP_MODE_EXCLUSIVE)
        hwloc_bitmap_or (held, held, used);
      else
        {
          FUZZ_CHECK (n_shared < u.n_shared && u.usage.shared[n_shared] != NULL);
          FUZZ_CHECK (hwloc_bitmap_isequal (u.usage.shared[n_shared], used));
          n_shared++;
        }
      hwloc_bitmap_free (used);
    }
  FUZZ_CHECK (n_shared == u.n_shared && u.usage.n_shared == u.n_shared);
  /* A partition not undone yet holds its CPUs too, its entry gone or not
     (ledger_partition.h): the root records of the ids other than EXCLUDE. */
  for (size_t i = 0; i < cp_ledger_partition_count (l); i++)
    {
      const struct cp_ledger_partition *p = cp_ledger_partition_at (l, i);
      if (p->root && (exclude == NULL || strcmp (p->id, exclude) != 0))
        hwloc_bitmap_or (held, held, p->added);
    }
  FUZZ_CHECK (u.usage.held == NULL ? hwloc_bitmap_iszero (held) : hwloc_bitmap_isequal (u.usage.held, held));
  hwloc_bitmap_free (held);
  cp_ledger_usage_release (&u);
}

/* Remove the first entry and put it back; put an exclusive copy under a new id. */
static void
check_put (struct cp_ledger *l)
{
  size_t n = cp_ledger_count (l);
  if (n == 0)
    return;
  struct cp_ledger_entry first;
  entry_dup (&first, cp_ledger_at (l, 0));
  FUZZ_CHECK (cp_ledger_remove (l, first.id));
  FUZZ_CHECK (cp_ledger_count (l) == n - 1 && cp_ledger_find (l, first.id) == NULL);
  FUZZ_CHECK (!cp_ledger_remove (l, first.id));
  cp_error_t err = NULL;
  int r = cp_ledger_put (l, &first, &err);
  FUZZ_CHECK_MSG (r == 0, "put back `%.64s`: %s", first.id, cp_error_message (err));
  FUZZ_CHECK (cp_ledger_count (l) == n);
  FUZZ_CHECK (entry_equal (cp_ledger_find (l, first.id), &first));
  check_ledger (l);

  /* The same entry again changes nothing; a changed one replaces it in place. */
  FUZZ_CHECK (cp_ledger_put (l, &first, &err) == 0 && cp_ledger_count (l) == n);
  struct cp_ledger_entry later = first;
  later.placed_at = first.placed_at > 0 ? first.placed_at - 1 : 1;
  r = cp_ledger_put (l, &later, &err);
  FUZZ_CHECK_MSG (r == 0, "put `%.64s` placed earlier: %s", first.id, cp_error_message (err));
  FUZZ_CHECK (cp_ledger_count (l) == n && cp_ledger_find (l, first.id)->placed_at == later.placed_at);
  check_ledger (l);

  if (first.mode == CP_MODE_EXCLUSIVE && strlen (first.id) < CP_LEDGER_MAX_ID)
    {
      struct cp_ledger_entry twin = first;
      twin.id = cp_xasprintf ("%sx", first.id);
      /* Whether twin.id is new or replaces another entry, FIRST still holds
         twin.held (non-empty in exclusive mode). */
      r = cp_ledger_put (l, &twin, &err);
      FUZZ_CHECK_MSG (r == CP_LEDGER_CONFLICT, "put twin of `%.64s`: %d (%s)", first.id, r, cp_error_message (err));
      FUZZ_CHECK (err != NULL && cp_error_kind (err) == CP_ERR_RUNTIME);
      FUZZ_CHECK (cp_ledger_count (l) == n);
      cp_error_free (&err);
      free (twin.id);
    }

  char *text = cp_ledger_serialize (l);
  struct cp_ledger *back = NULL;
  r = cp_ledger_parse (text, strlen (text), &back, &err);
  FUZZ_CHECK_MSG (r == 0, "after put: %s", cp_error_message (err));
  FUZZ_CHECK (cp_ledger_count (back) == n);
  cp_ledger_close (back);
  free (text);
  cp_ledger_entry_clear (&first);
}

static void
check_proc_stat (const uint8_t *data, size_t size)
{
  unsigned long long start = 0;
  char state = 0;
  cp_error_t err = NULL;
  int r = cp_proc_parse_stat ((const char *) data, size, &start, &state, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, "/proc stat: ");
      cp_error_free (&err);
      return;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  const uint8_t *paren = memrchr (data, ')', size);
  FUZZ_CHECK (paren != NULL && paren + 2 < data + size && paren[1] == ' ' && (char) paren[2] == state);
}

static int
hex4 (const uint8_t *p)
{
  int v = 0;
  for (int i = 0; i < 4; i++)
    {
      int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
  return v;
}

/* Whether DATA escapes a surrogate pair whose code point json-c 0.16 turns into
 * U+FFFD: its tokener tests the decoded point with a 16-bit surrogate mask, so
 * U+1D800..U+1DFFF, U+2D800.. (every point with (cp & 0xF800) == 0xD800) read as
 * a lone surrogate (json-c pull request 893, open upstream). The fast reader
 * decodes them right; only the text comparison skips such inputs. */
static bool
jsonc_misreads_pair (const uint8_t *data, size_t size)
{
  for (size_t i = 0; i + 1 < size; i++)
    {
      if (data[i] != '\\')
        continue;
      if (data[i + 1] == 'u' && i + 12 <= size && data[i + 6] == '\\' && data[i + 7] == 'u')
        {
          int hi = hex4 (data + i + 2), lo = hex4 (data + i + 8);
          if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF)
            {
              unsigned cp = 0x10000u + (((unsigned) hi - 0xD800u) << 10) + ((unsigned) lo - 0xDC00u);
              if ((cp & 0xF800u) == 0xD800u)
                return true;
            }
        }
      i++; /* the escaped character is not the start of another escape */
    }
  return false;
}

/* The reference reader agrees with the fast one on DATA (R and L: what the fast
 * one said). */
static void
check_reference (const uint8_t *data, size_t size, int r, const struct cp_ledger *l)
{
  struct cp_ledger *ref = NULL;
  cp_error_t err = NULL;
  int rd = cp_ledger_parse_dom ((const char *) data, size, &ref, &err);
  FUZZ_CHECK_MSG ((rd < 0) == (r < 0), "the fast reader %s, the reference %s", r < 0 ? "refuses" : "accepts",
                  rd < 0 ? cp_error_message (err) : "accepts");
  cp_error_free (&err);
  if (rd < 0)
    return;
  if (jsonc_misreads_pair (data, size))
    {
      cp_ledger_close (ref);
      return;
    }
  char *a = cp_ledger_serialize (l);
  char *b = cp_ledger_serialize (ref);
  FUZZ_CHECK_MSG (strcmp (a, b) == 0, "read differently:\n%s\n---\n%s", a, b);
  free (a);
  free (b);
  cp_ledger_close (ref);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  check_proc_stat (data, size);
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  int r = cp_ledger_parse ((const char *) data, size, &l, &err);
  check_reference (data, size, r, l);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NULL);
      FUZZ_CHECK (l == NULL);
      cp_error_free (&err);
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL && l != NULL);
  check_ledger (l);

  /* Round trip: the text we would write parses to the same ledger and is a
     fixed point of serialize . parse. */
  char *text = cp_ledger_serialize (l);
  size_t len = strlen (text);
  FUZZ_CHECK (len > 0 && text[len - 1] == '\n');
  struct cp_ledger *back = NULL;
  r = cp_ledger_parse (text, len, &back, &err);
  FUZZ_CHECK_MSG (r == 0, "our own output does not parse: %s", cp_error_message (err));
  FUZZ_CHECK (cp_ledger_count (back) == cp_ledger_count (l));
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    FUZZ_CHECK (entry_equal (cp_ledger_at (l, i), cp_ledger_at (back, i)));
  char *text2 = cp_ledger_serialize (back);
  FUZZ_CHECK_MSG (strcmp (text, text2) == 0, "serialize . parse is not a fixed point:\n%s\n---\n%s", text, text2);
  free (text2);
  cp_ledger_close (back);
  free (text);

  check_usage (l, NULL);
  if (cp_ledger_count (l) > 0)
    check_usage (l, cp_ledger_at (l, 0)->id);
  check_put (l);

  /* A detached ledger has no directory to be committed to. */
  FUZZ_CHECK (cp_ledger_commit (l, &err) < 0 && err != NULL && cp_error_kind (err) == CP_ERR_RUNTIME);
  cp_error_free (&err);
  cp_ledger_close (l);
  return 0;
}
