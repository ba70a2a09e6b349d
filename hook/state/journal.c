/* cachepin: the journal of decisions (see journal.h): its codec, its lock, the
 * commit and the read for display.
 *
 * The codec is json-c's DOM through the strict reader (policy/base/json.h), not a
 * pull parser as the ledger's: a journal is at most CP_JOURNAL_MAX_RECORDS
 * records and is read by a run that commits a record, not by every hook run
 * (bench/journal.c measures what that costs beside a ledger commit). */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "fault.h"
#include "io.h"
#include "json.h"
#include "text.h"
#include "util.h"
#include "ledger_internal.h"
#include "log.h"

/* ------------------------------------------------------------------ names */

static const char *const front_names[CP_JOURNAL_N_FRONTS] = {
  [CP_JOURNAL_HOOK] = "hook",
  [CP_JOURNAL_APPLY] = "apply",
  [CP_JOURNAL_RELEASE] = "release",
};

static const char *const kind_names[CP_JOURNAL_N_KINDS] = {
  [CP_JOURNAL_PLACED] = "placed",     [CP_JOURNAL_UNPLACED] = "unplaced", [CP_JOURNAL_REFUSED] = "refused",
  [CP_JOURNAL_RELEASED] = "released", [CP_JOURNAL_DRIFT] = "drift",       [CP_JOURNAL_SWITCH] = "switch",
};

const char *
cp_journal_front_name (enum cp_journal_front front)
{
  return (unsigned) front < CP_JOURNAL_N_FRONTS ? front_names[front] : "?";
}

const char *
cp_journal_kind_name (enum cp_journal_kind kind)
{
  return (unsigned) kind < CP_JOURNAL_N_KINDS ? kind_names[kind] : "?";
}

static bool
name_index (const char *const *names, size_t n, const char *s, size_t *out)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (names[i], s) == 0)
      {
        *out = i;
        return true;
      }
  return false;
}

bool
cp_journal_front_parse (const char *s, enum cp_journal_front *out)
{
  size_t i;
  if (!name_index (front_names, CP_JOURNAL_N_FRONTS, s, &i))
    return false;
  *out = (enum cp_journal_front) i;
  return true;
}

bool
cp_journal_kind_parse (const char *s, enum cp_journal_kind *out)
{
  size_t i;
  if (!name_index (kind_names, CP_JOURNAL_N_KINDS, s, &i))
    return false;
  *out = (enum cp_journal_kind) i;
  return true;
}

/* ---------------------------------------------------------------- records */

void
cp_journal_record_clear (struct cp_journal_record *r)
{
  free (r->id);
  free (r->name);
  free (r->cgroup);
  free (r->reason);
  if (r->cpus)
    hwloc_bitmap_free (r->cpus);
  if (r->mems)
    hwloc_bitmap_free (r->mems);
  memset (r, 0, sizeof *r);
}

void
cp_journal_list_free (struct cp_journal_list *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n; i++)
    cp_journal_record_clear (&l->records[i]);
  free (l->records);
  free (l);
}

static struct cp_journal_record *
list_push (struct cp_journal_list *l)
{
  /* At most a bound's worth plus a run's few: doubling is not worth it. */
  l->records = cp_xrealloc (l->records, (l->n + 1) * sizeof *l->records);
  struct cp_journal_record *r = &l->records[l->n++];
  memset (r, 0, sizeof *r);
  return r;
}

static int
check_text (const char *key, const char *s, size_t max, bool allow_empty, cp_error_t *err)
{
  size_t len = s ? strnlen (s, max + 1) : 0;
  if (len == 0 && !allow_empty)
    return cp_fail_input (err, "`%s`: empty", key);
  if (len > max)
    return cp_fail_input (err, "`%s`: longer than %zu bytes", key, max);
  if (!cp_text_valid (s ? s : "", len))
    return cp_fail_input (err, "`%s`: not valid UTF-8, or a control character", key);
  return 0;
}

/* A set the writer can spell and the reader takes back: finite, within
 * CP_CPULIST_MAX. */
static int
check_set (const char *key, hwloc_const_bitmap_t set, cp_error_t *err)
{
  if (set == NULL || hwloc_bitmap_iszero (set))
    return 0;
  if (hwloc_bitmap_weight (set) < 0 || hwloc_bitmap_last (set) > CP_CPULIST_MAX)
    return cp_fail_input (err, "`%s`: beyond CPU %d", key, CP_CPULIST_MAX);
  return 0;
}

int
cp_journal_record_check (const struct cp_journal_record *r, cp_error_t *err)
{
  if (r->time < 0 || r->time > CP_JOURNAL_MAX_TIME)
    return cp_fail_input (err, "`time`: expected an integer from 0 to %lld", CP_JOURNAL_MAX_TIME);
  if ((unsigned) r->front >= CP_JOURNAL_N_FRONTS)
    return cp_fail_input (err, "`front`: unknown");
  if ((unsigned) r->kind >= CP_JOURNAL_N_KINDS)
    return cp_fail_input (err, "`kind`: unknown");
  if (check_text ("id", r->id, CP_JOURNAL_MAX_ID, false, err) < 0
      || check_text ("name", r->name, CP_JOURNAL_MAX_NAME, true, err) < 0
      || check_text ("cgroup", r->cgroup, CP_JOURNAL_MAX_CGROUP, true, err) < 0
      || check_text ("reason", r->reason, CP_JOURNAL_MAX_REASON, true, err) < 0
      || check_set ("cpus", r->cpus, err) < 0 || check_set ("mems", r->mems, err) < 0)
    return -1;
  return 0;
}

/* ------------------------------------------------------------------ reading */

/* The keys of a record, every one required. */
static const char *const record_keys[] = { "time", "front", "kind", "id", "name", "cgroup", "cpus", "mems", "reason" };

static int
only_keys (json_object *obj, const char *const *keys, size_t n, cp_error_t *err)
{
  json_object_object_foreach (obj, key, val)
  {
    (void) val;
    size_t i;
    if (!name_index (keys, n, key, &i))
      {
        if (cp_ledger_quotable (key))
          return cp_fail_input (err, "unknown key `%.64s`", key);
        return cp_fail_input (err, "unknown key (not printable)");
      }
  }
  return 0;
}

/* KEY as messages quote it, as the ledger's do: "`time`: ...". */
#define LABEL(key) (snprintf (label, sizeof label, "`%s`", key), label)

static int
member (json_object *obj, const char *key, json_object **out, cp_error_t *err)
{
  if (!cp_json_member (obj, key, false, out))
    return cp_fail_input (err, "`%s` is missing", key);
  return 0;
}

/* Member KEY, a string within MAX bytes that is safe text, copied to *OUT. */
static int
get_text (json_object *obj, const char *key, size_t max, bool allow_empty, char **out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), max, allow_empty, &s, err) < 0)
    return -1;
  if (!cp_text_valid (s, strlen (s)))
    return cp_fail_input (err, "`%s`: not valid UTF-8, or a control character", key);
  *out = cp_xstrdup (s);
  return 0;
}

static int
get_cpulist (json_object *obj, const char *key, hwloc_bitmap_t *out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), CP_CPULIST_MAX_LEN, true, &s, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  /* The parser quotes the list in its errors: quote only lists of our alphabet. */
  if (s[strspn (s, "0123456789,-")] != '\0')
    return cp_fail_input (err, "`%s`: a character other than digits, `,` and `-`", key);
  if (cp_cpulist_parse (s, CP_CPULIST_ALLOW_EMPTY, *out, err) < 0)
    return cp_error_wrap (err, "`%s`", key);
  return 0;
}

static int
get_name (json_object *obj, const char *key, const char *const *names, size_t n, size_t *out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), 16, false, &s, err) < 0)
    return -1;
  if (!name_index (names, n, s, out))
    return cp_ledger_quotable (s) ? cp_fail_input (err, "`%s`: unknown `%s`", key, s)
                                  : cp_fail_input (err, "`%s`: unknown", key);
  return 0;
}

static int
record_from_json (json_object *obj, struct cp_journal_record *r, cp_error_t *err)
{
  if (!json_object_is_type (obj, json_type_object))
    {
      cleanup_free char *got = cp_json_describe (obj);
      return cp_fail_input (err, "expected an object, got %s", got);
    }
  if (only_keys (obj, record_keys, CP_ARRAY_SIZE (record_keys), err) < 0)
    return -1;
  json_object *t;
  int64_t time;
  size_t front, kind;
  if (member (obj, "time", &t, err) < 0 || cp_json_int (t, "`time`", 0, CP_JOURNAL_MAX_TIME, &time, err) < 0
      || get_name (obj, "front", front_names, CP_JOURNAL_N_FRONTS, &front, err) < 0
      || get_name (obj, "kind", kind_names, CP_JOURNAL_N_KINDS, &kind, err) < 0)
    return -1;
  r->time = (long long) time;
  r->front = (enum cp_journal_front) front;
  r->kind = (enum cp_journal_kind) kind;
  if (get_text (obj, "id", CP_JOURNAL_MAX_ID, false, &r->id, err) < 0
      || get_text (obj, "name", CP_JOURNAL_MAX_NAME, true, &r->name, err) < 0
      || get_text (obj, "cgroup", CP_JOURNAL_MAX_CGROUP, true, &r->cgroup, err) < 0
      || get_cpulist (obj, "cpus", &r->cpus, err) < 0 || get_cpulist (obj, "mems", &r->mems, err) < 0
      || get_text (obj, "reason", CP_JOURNAL_MAX_REASON, true, &r->reason, err) < 0)
    return -1;
  return 0;
}

static const char *const top_keys[] = { "version", "records" };

int
cp_journal_parse (const char *buf, size_t len, struct cp_journal_list **out, cp_error_t *err)
{
  if (len > CP_JOURNAL_MAX_BYTES)
    return cp_fail_input (err, "%zu bytes, more than the limit %d", len, CP_JOURNAL_MAX_BYTES);
  cleanup_json json_object *top = NULL;
  if (cp_json_parse_object (buf, len, &top, err) < 0 || only_keys (top, top_keys, CP_ARRAY_SIZE (top_keys), err) < 0)
    return -1;
  json_object *v, *records;
  int64_t version;
  if (member (top, "version", &v, err) < 0 || cp_json_int (v, "`version`", 0, INT32_MAX, &version, err) < 0)
    return -1;
  if (version != CP_JOURNAL_VERSION)
    return cp_fail_input (err, "unsupported version %" PRId64 " (expected %d)", version, CP_JOURNAL_VERSION);
  if (member (top, "records", &records, err) < 0)
    return -1;
  if (!json_object_is_type (records, json_type_array))
    {
      cleanup_free char *got = cp_json_describe (records);
      return cp_fail_input (err, "`records`: expected an array, got %s", got);
    }
  size_t n = json_object_array_length (records);
  if (n > CP_JOURNAL_MAX_RECORDS)
    return cp_fail_input (err, "%zu records, more than the limit %d", n, CP_JOURNAL_MAX_RECORDS);
  cleanup_journal_list struct cp_journal_list *l = cp_xmalloc0 (sizeof *l);
  for (size_t i = 0; i < n; i++)
    if (record_from_json (json_object_array_get_idx (records, i), list_push (l), err) < 0)
      return cp_error_wrap (err, "record %zu", i);
  *out = cp_steal_pointer (&l);
  return 0;
}

/* ------------------------------------------------------------------ writing */

/* S as a JSON string (checked text: only `"` and `\` need an escape, but control
 * characters get one anyway, so that the writer can never break a line). */
static void
put_string (char **p, const char *s)
{
  char *o = *p;
  *o++ = '"';
  for (const unsigned char *c = (const unsigned char *) (s ? s : ""); *c; c++)
    if (*c == '"' || *c == '\\')
      {
        *o++ = '\\';
        *o++ = (char) *c;
      }
    else if (*c < 0x20)
      o += sprintf (o, "\\u%04x", *c);
    else
      *o++ = (char) *c;
  *o++ = '"';
  *p = o;
}

static size_t
string_room (const char *s)
{
  return 6 * (s ? strlen (s) : 0) + 2;
}

/* One record as one line of JSON, without the separator.  Caller frees. */
static char *
record_line (const struct cp_journal_record *r)
{
  cleanup_free char *cpus = r->cpus ? cp_cpulist_format (r->cpus) : cp_xstrdup ("");
  cleanup_free char *mems = r->mems ? cp_cpulist_format (r->mems) : cp_xstrdup ("");
  size_t room = 256 + string_room (r->id) + string_room (r->name) + string_room (r->cgroup)
                + string_room (r->reason) + string_room (cpus) + string_room (mems);
  char *line = cp_xmalloc0 (room);
  char *p = line + sprintf (line, "{\"time\":%lld,\"front\":\"%s\",\"kind\":\"%s\",\"id\":", r->time,
                            cp_journal_front_name (r->front), cp_journal_kind_name (r->kind));
  put_string (&p, r->id);
  p = stpcpy (p, ",\"name\":");
  put_string (&p, r->name);
  p = stpcpy (p, ",\"cgroup\":");
  put_string (&p, r->cgroup);
  p = stpcpy (p, ",\"cpus\":");
  put_string (&p, cpus);
  p = stpcpy (p, ",\"mems\":");
  put_string (&p, mems);
  p = stpcpy (p, ",\"reason\":");
  put_string (&p, r->reason);
  p = stpcpy (p, "}");
  return line;
}

#define HEAD "{\"version\":1,\"records\":["
#define TAIL "\n]}\n"

char *
cp_journal_serialize (const struct cp_journal_list *l, size_t *kept)
{
  /* The newest records first, as many as fit; then written oldest first.  Each
     line costs its length and "\n " (its separator, and a comma but for the
     first): the sum is the file's size exactly. */
  size_t first = l->n > CP_JOURNAL_MAX_RECORDS ? l->n - CP_JOURNAL_MAX_RECORDS : 0;
  char **lines = cp_xcalloc (l->n ? l->n : 1, sizeof *lines);
  size_t total = strlen (HEAD) + strlen (TAIL);
  for (size_t i = l->n; i > first; i--)
    {
      char *line = record_line (&l->records[i - 1]);
      size_t cost = strlen (line) + 2 + (i < l->n ? 1 : 0);
      if (i < l->n && total + cost > CP_JOURNAL_MAX_BYTES)
        {
          free (line);
          first = i;
          break;
        }
      total += cost;
      lines[i - 1] = line;
    }
  char *text = cp_xmalloc0 (total + 1);
  char *p = stpcpy (text, HEAD);
  for (size_t i = first; i < l->n; i++)
    {
      p = stpcpy (p, i > first ? ",\n " : "\n ");
      p = stpcpy (p, lines[i]);
      free (lines[i]);
    }
  stpcpy (p, TAIL);
  free (lines);
  if (kept)
    *kept = l->n - first;
  return text;
}

/* ------------------------------------------------------------ fault points */

CP_FAULT_HOOK (cp_journal_set_fault_hook, cp_journal_fault_fn);

/* ------------------------------------------------------------------- the lock */

struct cp_journal
{
  char *dir;
  int dirfd;       /* the caller's (open_at) or our own (open) */
  bool own_dirfd;
  int lockfd;
  struct cp_journal_list queue;
};

/* flock(FD) within TIMEOUT_MS of START_MS, polling (no SIGALRM in a hook), with
 * sub-millisecond naps: a holder keeps it for one commit (a one-shot note) or
 * for the rest of its run (a hook, from before its sandbox), a few ms either way. */
static int
poll_flock (int fd, const char *what, unsigned timeout_ms, long long start_ms, cp_error_t *err)
{
  for (;;)
    {
      if (flock (fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
      if (errno == EINTR)
        continue;
      if (errno != EWOULDBLOCK)
        return cp_fail_errno (err, errno, "lock %s", what);
      long long waited = cp_monotonic_ms () - start_ms;
      if (waited >= timeout_ms)
        return cp_fail_runtime (err, "timed out after %lld ms waiting for the lock on %s", waited, what);
      struct timespec nap = { .tv_sec = 0, .tv_nsec = (500 + getpid () % 500) * 1000L };
      nanosleep (&nap, NULL);
    }
}

/* Set NAME, which is not what it should be (WHY), aside to ASIDE, with the one
 * warning. */
static int
set_aside (struct cp_journal *j, const char *name, const char *aside, const char *why, cp_error_t *err)
{
  const char *how;
  if (cp_ledger_move_aside (j->dirfd, j->dir, name, aside, &how, err) < 0)
    return -1;
  bool data = strcmp (name, CP_JOURNAL_FILE) == 0;
  cp_log (CP_LOG_WARNING, "%s/%s was not trusted (%s); %s %s%s", j->dir, name, why, how, aside,
          data ? "; the journal of decisions starts again" : "");
  return 0;
}

/* Whether NAME in DIRFD is there and not a regular file: then *WHY says what it is. */
static bool
not_regular (int dirfd, const char *name, const char **why)
{
  struct stat st;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISREG (st.st_mode))
    return false;
  *why = S_ISLNK (st.st_mode) ? "a symlink" : S_ISDIR (st.st_mode) ? "a directory" : "not a regular file";
  return true;
}

static int
take_lock (struct cp_journal *j, unsigned timeout_ms, cp_error_t *err)
{
  long long start = cp_monotonic_ms ();
  cleanup_free char *what = cp_xasprintf ("`%s/%s`", j->dir, CP_JOURNAL_LOCK_FILE);
  /* O_NONBLOCK and O_NOCTTY: a FIFO or a terminal planted here must neither hang
     the run nor become its terminal; a second try after setting aside what was
     there.  Unlike the ledger's, this repair runs under no other lock: two runs
     that repair at once may each lock a file of their own, and one of their
     records may be lost.  The journal is advisory; the ledger's lock, which
     decides who holds CPUs, is never at stake. */
  for (int attempt = 0;; attempt++)
    {
      const char *why;
      cleanup_close int fd = openat (j->dirfd, CP_JOURNAL_LOCK_FILE,
                                     O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
      struct stat st;
      if (fd >= 0 && fstat (fd, &st) == 0 && S_ISREG (st.st_mode))
        {
          if (poll_flock (fd, what, timeout_ms, start, err) < 0)
            return -1;
          j->lockfd = fd;
          fd = -1;
          return 0;
        }
      int saved = fd < 0 ? errno : 0;
      if (attempt > 0 || !not_regular (j->dirfd, CP_JOURNAL_LOCK_FILE, &why))
        return saved ? cp_fail_errno (err, saved, "open %s", what)
                     : cp_fail_runtime (err, "%s is not a regular file", what);
      if (set_aside (j, CP_JOURNAL_LOCK_FILE, CP_JOURNAL_LOCK_CORRUPT_FILE, why, err) < 0)
        return -1;
    }
}

/* --------------------------------------------------------------- the handle */

int
cp_journal_open_at (int dirfd, const char *dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err)
{
  cleanup_journal struct cp_journal *j = cp_xmalloc0 (sizeof *j);
  j->lockfd = -1;
  j->dir = cp_xstrdup (dir);
  /* The caller's fd itself, not a duplicate: the hook's sandbox allows a file to
     be created only relative to that very fd number (hook/host/sandbox.h). */
  j->dirfd = dirfd;
  if (take_lock (j, timeout_ms, err) < 0)
    return -1;
  *out = cp_steal_pointer (&j);
  return 0;
}

int
cp_journal_open (const char *state_dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err)
{
  cleanup_close int dirfd = cp_ledger_open_dir (state_dir, err);
  if (dirfd < 0 || cp_journal_open_at (dirfd, state_dir, timeout_ms, out, err) < 0)
    return -1;
  (*out)->own_dirfd = true;
  dirfd = -1;
  return 0;
}

void
cp_journal_close (struct cp_journal *j)
{
  if (j == NULL)
    return;
  for (size_t i = 0; i < j->queue.n; i++)
    cp_journal_record_clear (&j->queue.records[i]);
  free (j->queue.records);
  if (j->lockfd >= 0)
    close (j->lockfd); /* the flock goes with it */
  if (j->own_dirfd && j->dirfd >= 0)
    close (j->dirfd);
  free (j->dir);
  free (j);
}

/* S cut to MAX bytes at a character boundary and made safe (text.h). */
static char *
clean_text (const char *s, size_t max)
{
  if (s == NULL)
    return cp_xstrdup ("");
  size_t len = strnlen (s, max + 1);
  if (len > max)
    {
      len = max;
      while (len > 0 && ((unsigned char) s[len] & 0xc0) == 0x80)
        len--; /* s[len] continues a character: cut before the character */
    }
  char *t = cp_xstrndup (s, len);
  cp_text_sanitize (t);
  return t;
}

static hwloc_bitmap_t
clean_set (hwloc_const_bitmap_t set)
{
  hwloc_bitmap_t out = cp_bitmap_new ();
  if (set)
    {
      hwloc_bitmap_copy (out, set);
      cleanup_bitmap hwloc_bitmap_t range = cp_bitmap_new ();
      hwloc_bitmap_set_range (range, 0, CP_CPULIST_MAX);
      hwloc_bitmap_and (out, out, range);
    }
  return out;
}

void
cp_journal_record_clean (const struct cp_journal_record *r, struct cp_journal_record *c)
{
  c->time = r->time > 0 ? r->time : (long long) time (NULL);
  if (c->time > CP_JOURNAL_MAX_TIME)
    c->time = CP_JOURNAL_MAX_TIME;
  c->front = (unsigned) r->front < CP_JOURNAL_N_FRONTS ? r->front : CP_JOURNAL_HOOK;
  c->kind = (unsigned) r->kind < CP_JOURNAL_N_KINDS ? r->kind : CP_JOURNAL_UNPLACED;
  c->id = clean_text (r->id, CP_JOURNAL_MAX_ID);
  if (c->id[0] == '\0')
    {
      free (c->id);
      c->id = cp_xstrdup ("?"); /* a bug of the caller's: keep the record anyway */
    }
  c->name = clean_text (r->name, CP_JOURNAL_MAX_NAME);
  c->cgroup = clean_text (r->cgroup, CP_JOURNAL_MAX_CGROUP);
  c->reason = clean_text (r->reason, CP_JOURNAL_MAX_REASON);
  c->cpus = clean_set (r->cpus);
  c->mems = clean_set (r->mems);
}

void
cp_journal_add (struct cp_journal *j, const struct cp_journal_record *r)
{
  cp_journal_record_clean (r, list_push (&j->queue));
}

/* --------------------------------------------------------------- the commit */

/* The journal on disk into *OUT: empty when there is none; when it cannot be
 * trusted, set aside (one warning) and empty too.  Fails on an I/O error only. */
static int
load (struct cp_journal *j, struct cp_journal_list **out, cp_error_t *err)
{
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", j->dir, CP_JOURNAL_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  const char *what;
  cleanup_error cp_error_t why = NULL;
  *out = NULL;
  if (cp_io_read_at (j->dirfd, CP_JOURNAL_FILE, O_NOFOLLOW, name, CP_JOURNAL_MAX_BYTES, 0, &buf, &len, &why) < 0)
    {
      if (cp_error_errno (why) == ENOENT)
        {
          *out = cp_xmalloc0 (sizeof **out);
          return 0;
        }
      if (not_regular (j->dirfd, CP_JOURNAL_FILE, &what))
        ;
      else if (cp_error_errno (why) == EFBIG)
        what = "larger than the limit";
      else
        {
          *err = cp_steal_pointer (&why);
          return -1;
        }
    }
  else if (cp_journal_parse (buf, len, out, &why) == 0)
    return 0;
  else
    what = cp_error_message (why);
  if (set_aside (j, CP_JOURNAL_FILE, CP_JOURNAL_CORRUPT_FILE, what, err) < 0)
    return -1;
  *out = cp_xmalloc0 (sizeof **out);
  return 0;
}

/* TEXT into journal.json.tmp, synced; a stale one (a killed run's) replaced. */
static int
write_tmp (struct cp_journal *j, const char *text, cp_error_t *err)
{
  /* Unlinking first also takes care of what is not a plain file of ours (a FIFO
     would block the open, a hard link would have O_TRUNC truncate another file);
     what cannot be unlinked (a directory) is set aside. */
  const char *why;
  if (unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0) < 0 && errno != ENOENT)
    {
      int saved = errno;
      if (!not_regular (j->dirfd, CP_JOURNAL_TMP_FILE, &why))
        return cp_fail_errno (err, saved, "remove `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
      if (set_aside (j, CP_JOURNAL_TMP_FILE, CP_JOURNAL_TMP_CORRUPT_FILE, why, err) < 0)
        return -1;
    }
  cleanup_close int fd
      = openat (j->dirfd, CP_JOURNAL_TMP_FILE, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return cp_fail_errno (err, errno, "create `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  if (cp_io_write_all (fd, text, strlen (text)) < 0)
    return cp_fail_errno (err, errno, "write `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  int fe = FAULT_RESULT (CP_JOURNAL_FAULT_TMP_WRITTEN);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after writing `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  if (fsync (fd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  int rc = close (fd);
  fd = -1;
  if (rc < 0)
    return cp_fail_errno (err, errno, "close `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  return 0;
}

int
cp_journal_commit (struct cp_journal *j, cp_error_t *err)
{
  struct cp_journal_list queue = j->queue;
  j->queue = (struct cp_journal_list){ 0 };
  cleanup_journal_list struct cp_journal_list *all = NULL;
  int r = load (j, &all, err);
  /* The queue joins the list (freed with it) whatever happens from here. */
  if (all == NULL)
    all = cp_xmalloc0 (sizeof *all);
  all->records = cp_xrealloc (all->records, (all->n + queue.n + 1) * sizeof *all->records);
  memcpy (all->records + all->n, queue.records, queue.n * sizeof *queue.records);
  all->n += queue.n;
  free (queue.records);
  if (r < 0)
    return -1;
  if (queue.n == 0)
    return 0;
  cleanup_free char *text = cp_journal_serialize (all, NULL);
  int fe = 0;
  if (write_tmp (j, text, err) < 0 || (fe = FAULT_RESULT (CP_JOURNAL_FAULT_TMP_SYNCED)) != 0)
    {
      unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0);
      return fe ? cp_fail_errno (err, fe, "fault injected before renaming `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE) : -1;
    }
  if (renameat (j->dirfd, CP_JOURNAL_TMP_FILE, j->dirfd, CP_JOURNAL_FILE) < 0)
    {
      int saved = errno;
      unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0);
      return cp_fail_errno (err, saved, "rename `%s/%s` to %s", j->dir, CP_JOURNAL_TMP_FILE, CP_JOURNAL_FILE);
    }
  fe = FAULT_RESULT (CP_JOURNAL_FAULT_RENAMED);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after renaming `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  return 0;
}

void
cp_journal_note (const char *state_dir, const struct cp_journal_record *r)
{
  cleanup_journal struct cp_journal *j = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_open (state_dir, CP_JOURNAL_LOCK_TIMEOUT_MS, &j, &err) == 0)
    {
      cp_journal_add (j, r);
      if (cp_journal_commit (j, &err) == 0)
        return;
    }
  cleanup_free char *id = clean_text (r->id, 64);
  cp_log (CP_LOG_WARNING, "could not keep `%s %s` in the journal of decisions: %s", cp_journal_kind_name (r->kind),
          id, cp_error_message (err));
}

/* ---------------------------------------------------------- reading for display */

int
cp_journal_read (const char *state_dir, size_t k, struct cp_journal_list **out, cp_error_t *err)
{
  cleanup_close int dirfd = open (state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", state_dir, CP_JOURNAL_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (dirfd < 0 && errno != ENOENT)
    return cp_fail_errno (err, errno, "open state directory `%s`", state_dir);
  if (dirfd < 0
      || cp_io_read_at (dirfd, CP_JOURNAL_FILE, O_NOFOLLOW, name, CP_JOURNAL_MAX_BYTES, CP_IO_INPUT, &buf, &len, err)
             < 0)
    {
      if (dirfd >= 0 && cp_error_errno (*err) != ENOENT)
        return -1;
      cp_error_free (err);
      *out = cp_xmalloc0 (sizeof **out);
      return 0;
    }
  cleanup_journal_list struct cp_journal_list *l = NULL;
  if (cp_journal_parse (buf, len, &l, err) < 0)
    return cp_error_wrap (err, "%s", name);
  if (k > 0 && l->n > k)
    {
      size_t drop = l->n - k;
      for (size_t i = 0; i < drop; i++)
        cp_journal_record_clear (&l->records[i]);
      memmove (l->records, l->records + drop, k * sizeof *l->records);
      l->n = k;
    }
  *out = cp_steal_pointer (&l);
  return 0;
}
