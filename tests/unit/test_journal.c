/* The journal of decisions (hook/state/journal.c): its codec, its bound, its files
 * (permissions, what is set aside, symlinks), its lock, two writers at once. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "sandbox.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* ---------------------------------------------------------------- helpers */

struct tdir
{
  char root[64];
  char state[96];
};

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

static int
tdir_setup (void **state)
{
  struct tdir *t = cp_xmalloc0 (sizeof *t);
  strcpy (t->root, "/tmp/cp-journal-XXXXXX");
  if (mkdtemp (t->root) == NULL)
    fail_msg ("mkdtemp: %s", strerror (errno));
  snprintf (t->state, sizeof t->state, "%s/state", t->root);
  *state = t;
  return 0;
}

static int
tdir_teardown (void **state)
{
  struct tdir *t = *state;
  nftw (t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free (t);
  return 0;
}

static char *
path_in (const struct tdir *t, const char *name)
{
  return cp_xasprintf ("%s/%s", t->state, name);
}

/* The whole file, NUL-terminated (NULL when it cannot be read); *LEN its size. */
static char *
slurp (const char *path, size_t *len)
{
  FILE *f = fopen (path, "re");
  if (f == NULL)
    return NULL;
  char *buf = cp_xmalloc0 (1 << 20);
  size_t n = fread (buf, 1, (1 << 20) - 1, f);
  fclose (f);
  if (len)
    *len = n;
  return buf;
}

static void
put_file (const struct tdir *t, const char *name, const char *data, size_t len)
{
  cleanup_free char *p = path_in (t, name);
  int fd = open (p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    fail_msg ("open %s: %s", p, strerror (errno));
  assert_int_equal (write (fd, data, len), (ssize_t) len);
  close (fd);
}

static bool
is_there (const struct tdir *t, const char *name, mode_t type)
{
  cleanup_free char *p = path_in (t, name);
  struct stat st;
  return lstat (p, &st) == 0 && (type == 0 || (st.st_mode & S_IFMT) == type);
}

static struct cp_journal_record
rec (const char *id, enum cp_journal_kind kind, const char *cpus, const char *reason)
{
  return (struct cp_journal_record){
    .time = 1764500000,
    .front = CP_JOURNAL_HOOK,
    .kind = kind,
    .id = (char *) id,
    .name = (char *) "web",
    .cgroup = (char *) "/machine.slice/libpod-x.scope",
    .cpus = cpus ? tu_set (cpus) : NULL,
    .mems = cpus ? tu_set ("0") : NULL,
    .reason = (char *) reason,
  };
}

static void
rec_free_sets (struct cp_journal_record *r)
{
  if (r->cpus)
    hwloc_bitmap_free (r->cpus);
  if (r->mems)
    hwloc_bitmap_free (r->mems);
}

/* Open, add R, commit, close: the test fails on any error. */
static void
append (const char *state_dir, const struct cp_journal_record *r, unsigned timeout_ms)
{
  cleanup_journal struct cp_journal *j = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_open (state_dir, timeout_ms, &j, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  cp_journal_add (j, r);
  if (cp_journal_commit (j, &err) < 0)
    fail_msg ("commit: %s", cp_error_message (err));
}

static void
append_id (const char *state_dir, const char *id)
{
  struct cp_journal_record r = rec (id, CP_JOURNAL_PLACED, "1", "because");
  append (state_dir, &r, 10000);
  rec_free_sets (&r);
}

/* The journal as read for display; the test fails when it cannot be. */
static struct cp_journal_list *
read_all (const char *state_dir)
{
  struct cp_journal_list *l = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_read (state_dir, 0, &l, &err) < 0)
    fail_msg ("read: %s", cp_error_message (err));
  return l;
}

/* Run FN (ARG) with stderr (cp_log's) going to a file; its text (caller frees). */
static char *
capture_stderr (void (*fn) (void *), void *arg)
{
  char name[] = "/tmp/cp-journal-log-XXXXXX";
  int fd = mkstemp (name);
  assert_true (fd >= 0);
  fflush (stderr);
  int saved = dup (2);
  dup2 (fd, 2);
  fn (arg);
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  close (fd);
  char *text = slurp (name, NULL);
  unlink (name);
  return text;
}

static size_t
count (const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *p = hay; (p = strstr (p, needle)) != NULL; p++)
    n++;
  return n;
}

/* ------------------------------------------------------------ kept records */

/* With the records kept (cp_journal_cache_keep(), the NRI plugin's), each commit
 * after the first takes them instead of reading the file, and writes what a commit
 * that reads it writes, byte for byte, past the bound too; a commit by another
 * process (a new file renamed over it) is seen: its record is in the next commit. */
static void
test_kept (void **state)
{
  struct tdir *t = *state;
  cleanup_free char *kept_dir = cp_xasprintf ("%s/kept", t->root);
  cleanup_free char *read_dir = cp_xasprintf ("%s/read", t->root);
  size_t n = CP_JOURNAL_MAX_RECORDS + 6;
  for (int keep = 0; keep < 2; keep++)
    {
      cp_journal_cache_keep (keep);
      for (size_t i = 0; i < n; i++)
        {
          char id[32];
          snprintf (id, sizeof id, "c%zu", i);
          append_id (keep ? kept_dir : read_dir, id);
        }
    }
  unsigned long hits, misses;
  cp_journal_cache_stats (&hits, &misses);
  assert_int_equal (hits, n - 1);
  assert_int_equal (misses, 0);
  cleanup_free char *a_path = cp_xasprintf ("%s/%s", kept_dir, CP_JOURNAL_FILE);
  cleanup_free char *b_path = cp_xasprintf ("%s/%s", read_dir, CP_JOURNAL_FILE);
  size_t a_len, b_len;
  cleanup_free char *a = slurp (a_path, &a_len);
  cleanup_free char *b = slurp (b_path, &b_len);
  assert_int_equal (a_len, b_len);
  assert_memory_equal (a, b, a_len);

  /* Another process commits (it keeps nothing: it reads the file). */
  fflush (NULL);
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      cp_journal_cache_keep (false);
      append_id (kept_dir, "by-another");
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (child, &status, 0), child);
  assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  append_id (kept_dir, "after");
  cp_journal_cache_stats (&hits, &misses);
  assert_int_equal (hits, n - 1);
  assert_int_equal (misses, 1);
  struct cp_journal_list *l = read_all (kept_dir);
  assert_int_equal (l->n, CP_JOURNAL_MAX_RECORDS);
  assert_string_equal (l->records[l->n - 2].id, "by-another");
  assert_string_equal (l->records[l->n - 1].id, "after");
  cp_journal_list_free (l);
  /* and the next takes what that one wrote */
  append_id (kept_dir, "again");
  cp_journal_cache_stats (&hits, &misses);
  assert_int_equal (hits, n);
  l = read_all (kept_dir);
  assert_string_equal (l->records[l->n - 3].id, "by-another");
  cp_journal_list_free (l);
  cp_journal_cache_keep (false);
}

/* ------------------------------------------------------------------ codec */

static void
test_round_trip (void **state)
{
  (void) state;
  struct cp_journal_list l = { .records = cp_xcalloc (3, sizeof (struct cp_journal_record)), .n = 3 };
  l.records[0] = (struct cp_journal_record){ .time = 1, .front = CP_JOURNAL_APPLY, .kind = CP_JOURNAL_PLACED,
                                             .id = cp_xstrdup ("apply:/sys/fs/cgroup/batch"), .name = cp_xstrdup (""),
                                             .cgroup = cp_xstrdup ("/batch"), .cpus = tu_set ("0-3,8"),
                                             .mems = tu_set ("0"), .reason = cp_xstrdup ("4 CPUs in L3#0") };
  l.records[1] = (struct cp_journal_record){ .time = CP_JOURNAL_MAX_TIME, .front = CP_JOURNAL_HOOK,
                                             .kind = CP_JOURNAL_UNPLACED, .id = cp_xstrdup ("abc"),
                                             .name = cp_xstrdup ("wéb \"quoted\" \\ back"), .cgroup = cp_xstrdup (""),
                                             .reason = cp_xstrdup ("64 CPUs asked, 2 free") };
  l.records[2] = (struct cp_journal_record){ .time = 3, .front = CP_JOURNAL_RELEASE, .kind = CP_JOURNAL_SWITCH,
                                             .id = cp_xstrdup ("x"), .cpus = tu_set (""), .mems = NULL };
  for (size_t i = 0; i < l.n; i++)
    {
      cleanup_error cp_error_t err = NULL;
      if (cp_journal_record_check (&l.records[i], &err) < 0)
        fail_msg ("record %zu: %s", i, cp_error_message (err));
    }
  size_t kept = 0;
  cleanup_free char *text = cp_journal_serialize (&l, &kept);
  assert_int_equal (kept, 3);
  /* One record per line, then the counts' line (none counted), the file ends with a newline. */
  assert_int_equal (count (text, "\n"), 6);
  tu_assert_contains (text, "\n],\"counts\":[\n]}\n");
  assert_true (strncmp (text, "{\"version\":2,\"records\":[\n {\"time\":1,\"front\":\"apply\",\"kind\":\"placed\"", 64)
               == 0);
  assert_int_equal (text[strlen (text) - 1], '\n');

  struct cp_journal_list *back = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_parse (text, strlen (text), &back, &err) < 0)
    fail_msg ("parse: %s\n%s", cp_error_message (err), text);
  assert_int_equal (back->n, 3);
  assert_int_equal (back->records[1].time, CP_JOURNAL_MAX_TIME);
  assert_int_equal (back->records[0].front, CP_JOURNAL_APPLY);
  assert_int_equal (back->records[1].kind, CP_JOURNAL_UNPLACED);
  assert_string_equal (back->records[1].name, "wéb \"quoted\" \\ back");
  tu_assert_set (back->records[0].cpus, "0-3,8");
  tu_assert_set (back->records[2].cpus, "");
  tu_assert_set (back->records[2].mems, "");
  assert_string_equal (back->records[2].reason, "");
  cleanup_free char *again = cp_journal_serialize (back, NULL);
  assert_string_equal (text, again); /* one spelling */
  cp_journal_list_free (back);
  for (size_t i = 0; i < l.n; i++)
    cp_journal_record_clear (&l.records[i]);
  free (l.records);
}

#define R1 "{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"0\",\"mems\":\"\",\"reason\":\"\"}"
#define WRAP(records) "{\"version\":1,\"records\":[" records "]}"

static void
test_refuses (void **state)
{
  (void) state;
  static const struct
  {
    const char *text;
    const char *says;
  } cases[] = {
    { "", "empty" },
    { "[]", "object" },
    { WRAP (R1) "x", "invalid JSON" },
    { "{\"version\":1,\"records\":[" R1, "invalid JSON" }, /* torn */
    { "{\"version\":1,\"version\":1,\"records\":[]}", "duplicate key" },
    { "{\"version\":3,\"records\":[],\"counts\":[]}", "unsupported version 3 (expected 1 or 2)" },
    { "{\"version\":0,\"records\":[]}", "unsupported version 0" },
    { "{\"version\":1.0,\"records\":[]}", "`version`" },
    { "{\"records\":[]}", "`version` is missing" },
    { "{\"version\":1}", "`records` is missing" },
    { "{\"version\":1,\"records\":{}}", "`records`: expected an array" },
    { "{\"version\":1,\"records\":[],\"more\":1}", "unknown key `more`" },
    { WRAP ("1"), "record 0: expected an object, got 1" },
    { WRAP (R1 ",{\"time\":1}"), "record 1: `front` is missing" },
    { WRAP ("{\"time\":-1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\"}"), "`time`" },
    { WRAP ("{\"time\":9007199254740993,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\"}"), "`time`" },
    { WRAP ("{\"time\":1,\"front\":\"plan\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\"}"), "`front`: unknown `plan`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"Placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\"}"), "`kind`: unknown" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\"}"), "`id`: empty" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"0-\",\"mems\":\"\",\"reason\":\"\"}"), "`cpus`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"8192\",\"mems\":\"\",\"reason\":\"\"}"), "`cpus`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\" 0\",\"reason\":\"\"}"), "`mems`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"line\\nbreak\"}"), "`reason`: not valid UTF-8, or a control character" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\\u001b[2J\"}"), "`reason`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\\u0000\"}"), "`reason`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\",\"reason\":\"\",\"extra\":1}"), "unknown key `extra`" },
    { WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\",\"name\":\"\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\"}"), "`reason` is missing" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_journal_list *l = NULL;
      cleanup_error cp_error_t err = NULL;
      int r = cp_journal_parse (cases[i].text, strlen (cases[i].text), &l, &err);
      if (r == 0)
        fail_msg ("case %zu accepted: %s", i, cases[i].text);
      assert_null (l);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      tu_assert_contains (cp_error_message (err), cases[i].says);
    }

  /* A NUL byte; a name one byte too long; more records than the bound. */
  static const char nul[] = WRAP (R1) "\0";
  struct cp_journal_list *l = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_journal_parse (nul, sizeof nul - 1, &l, &err) < 0);
  cp_error_free (&err);
  char name[CP_JOURNAL_MAX_NAME + 2];
  memset (name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  cleanup_free char *long_name = cp_xasprintf (WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\","
                                                     "\"name\":\"%s\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\","
                                                     "\"reason\":\"\"}"), name);
  assert_true (cp_journal_parse (long_name, strlen (long_name), &l, &err) < 0);
  tu_assert_contains (cp_error_message (err), "`name`: longer than 255 bytes");
  cp_error_free (&err);
  name[sizeof name - 2] = '\0'; /* exactly the limit */
  cleanup_free char *ok_name = cp_xasprintf (WRAP ("{\"time\":1,\"front\":\"hook\",\"kind\":\"placed\",\"id\":\"a\","
                                                   "\"name\":\"%s\",\"cgroup\":\"\",\"cpus\":\"\",\"mems\":\"\","
                                                   "\"reason\":\"\"}"), name);
  assert_int_equal (cp_journal_parse (ok_name, strlen (ok_name), &l, &err), 0);
  cp_journal_list_free (l);
  l = NULL;
  size_t cap = 16 + (CP_JOURNAL_MAX_RECORDS + 1) * (sizeof R1 + 1);
  char *many = cp_xmalloc0 (cap);
  char *p = stpcpy (many, "{\"version\":1,\"records\":[");
  for (int i = 0; i <= CP_JOURNAL_MAX_RECORDS; i++)
    p = stpcpy (stpcpy (p, i ? "," : ""), R1);
  strcpy (p, "]}");
  assert_true (cp_journal_parse (many, strlen (many), &l, &err) < 0);
  tu_assert_contains (cp_error_message (err), "65 records, more than the limit 64");
  free (many);
}

/* The counts (journal.h, "The counts"): written one line each, read back the same,
 * version 1 (none) still read, and every fault of a line refused with one line. */
#define V2(records, counts) "{\"version\":2,\"records\":[" records "],\"counts\":[" counts "]}"
#define C(front, kind, cause, n) "{\"front\":\"" front "\",\"kind\":\"" kind "\",\"cause\":\"" cause "\",\"n\":" n "}"

static void
test_counts_codec (void **state)
{
  (void) state;
  struct cp_journal_list l = { 0 };
  l.counts.n[CP_JOURNAL_HOOK][CP_JOURNAL_PLACED][CP_JOURNAL_CAUSE_NONE] = 12;
  l.counts.n[CP_JOURNAL_NRI][CP_JOURNAL_REFUSED][CP_JOURNAL_CAUSE_INVALID] = 1;
  l.counts.n[CP_JOURNAL_APPLY][CP_JOURNAL_UNPLACED][CP_JOURNAL_CAUSE_UNSATISFIABLE] = CP_JOURNAL_MAX_COUNT;
  cleanup_free char *text = cp_journal_serialize (&l, NULL);
  assert_string_equal (text, "{\"version\":2,\"records\":[\n],\"counts\":[\n "
                             C ("hook", "placed", "", "12") ",\n "
                             C ("apply", "unplaced", "unsatisfiable", "9007199254740992") ",\n "
                             C ("nri", "refused", "invalid", "1") "\n]}\n");
  struct cp_journal_list *back = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_parse (text, strlen (text), &back, &err) < 0)
    fail_msg ("parse: %s", cp_error_message (err));
  assert_memory_equal (&back->counts, &l.counts, sizeof l.counts);
  cp_journal_list_free (back);

  /* Version 1, written before the counts: read, none counted. */
  static const char v1[] = WRAP (R1);
  assert_int_equal (cp_journal_parse (v1, strlen (v1), &back, &err), 0);
  assert_int_equal (back->n, 1);
  static const struct cp_journal_counts zero;
  assert_memory_equal (&back->counts, &zero, sizeof zero);
  cp_journal_list_free (back);

  static const struct
  {
    const char *text;
    const char *says;
  } cases[] = {
    { "{\"version\":2,\"records\":[]}", "`counts` is missing" },
    { "{\"version\":1,\"records\":[],\"counts\":[]}", "unknown key `counts` (version 1)" },
    { V2 ("", "{}"), "count 0: `front` is missing" },
    { "{\"version\":2,\"records\":[],\"counts\":{}}", "`counts`: expected an array, got {}" },
    { V2 ("", "1"), "count 0: expected an object" },
    { V2 ("", C ("hook", "placed", "", "1") "," C ("hook", "placed", "", "2")), "count 1: hook placed given twice" },
    { V2 ("", C ("hook", "refused", "failure", "1") "," C ("hook", "refused", "failure", "1")),
      "hook refused failure given twice" },
    { V2 ("", C ("plan", "placed", "", "1")), "count 0: `front`: unknown `plan`" },
    { V2 ("", C ("hook", "moved", "", "1")), "`kind`: unknown `moved`" },
    { V2 ("", C ("hook", "refused", "bored", "1")), "`cause`: unknown `bored`" },
    { V2 ("", C ("hook", "refused", "", "1")), "`cause`: not one for kind `refused`" },
    { V2 ("", C ("hook", "placed", "invalid", "1")), "`cause`: not one for kind `placed`" },
    { V2 ("", C ("hook", "placed", "", "0")), "`n`" },
    { V2 ("", C ("hook", "placed", "", "-1")), "`n`" },
    { V2 ("", C ("hook", "placed", "", "1.5")), "`n`" },
    { V2 ("", C ("hook", "placed", "", "9007199254740993")), "`n`" },
    { V2 ("", C ("hook", "placed", "", "\"1\"")), "`n`" },
    { V2 ("", "{\"front\":\"hook\",\"kind\":\"placed\",\"cause\":\"\"}"), "`n` is missing" },
    { V2 ("", "{\"front\":\"hook\",\"kind\":\"placed\",\"cause\":\"\",\"n\":1,\"by\":1}"), "unknown key `by`" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_journal_list *bad = NULL;
      cleanup_error cp_error_t e = NULL;
      if (cp_journal_parse (cases[i].text, strlen (cases[i].text), &bad, &e) == 0)
        fail_msg ("case %zu accepted: %s", i, cases[i].text);
      assert_null (bad);
      assert_int_equal (cp_error_kind (e), CP_ERR_INPUT);
      tu_assert_contains (cp_error_message (e), cases[i].says);
      assert_null (strchr (cp_error_message (e), '\n'));
    }
}

/* A cause from an error's kind, and the one a record is counted under. */
static void
test_causes (void **state)
{
  (void) state;
  assert_int_equal (cp_journal_cause_of (CP_ERR_INPUT), CP_JOURNAL_CAUSE_INVALID);
  assert_int_equal (cp_journal_cause_of (CP_ERR_UNSATISFIABLE), CP_JOURNAL_CAUSE_UNSATISFIABLE);
  assert_int_equal (cp_journal_cause_of (CP_ERR_RUNTIME), CP_JOURNAL_CAUSE_FAILURE);
  assert_int_equal (cp_journal_cause_for (CP_JOURNAL_PLACED, CP_JOURNAL_CAUSE_INVALID), CP_JOURNAL_CAUSE_NONE);
  assert_int_equal (cp_journal_cause_for (CP_JOURNAL_REFUSED, CP_JOURNAL_CAUSE_NONE), CP_JOURNAL_CAUSE_FAILURE);
  assert_int_equal (cp_journal_cause_for (CP_JOURNAL_UNPLACED, (enum cp_journal_cause) 99), CP_JOURNAL_CAUSE_FAILURE);
  assert_int_equal (cp_journal_cause_for (CP_JOURNAL_UNPLACED, CP_JOURNAL_CAUSE_INVALID), CP_JOURNAL_CAUSE_INVALID);
  static const char *const names[] = { "", "invalid", "unsatisfiable", "failure" };
  for (unsigned c = 0; c < CP_JOURNAL_N_CAUSES; c++)
    {
      enum cp_journal_cause back;
      assert_string_equal (cp_journal_cause_name ((enum cp_journal_cause) c), names[c]);
      assert_true (cp_journal_cause_parse (names[c], &back));
      assert_int_equal (back, c);
    }
  enum cp_journal_cause back;
  assert_false (cp_journal_cause_parse ("Invalid", &back));
  /* A count stays at its limit. */
  struct cp_journal_counts c = { 0 };
  c.n[CP_JOURNAL_HOOK][CP_JOURNAL_PLACED][0] = CP_JOURNAL_MAX_COUNT - 1;
  struct cp_journal_record r = { .front = CP_JOURNAL_HOOK, .kind = CP_JOURNAL_PLACED };
  cp_journal_counts_add (&c, &r);
  cp_journal_counts_add (&c, &r);
  assert_true (c.n[CP_JOURNAL_HOOK][CP_JOURNAL_PLACED][0] == CP_JOURNAL_MAX_COUNT);
}

/* Commits count what they add, past the bound that drops the records, by front,
 * kind and cause; a journal set aside starts counting again. */
static void
test_counts_commit (void **state)
{
  struct tdir *t = *state;
  size_t n = CP_JOURNAL_MAX_RECORDS + 6;
  for (size_t i = 0; i < n; i++)
    append_id (t->state, "placed");
  struct cp_journal_record r = rec ("bad", CP_JOURNAL_REFUSED, NULL, "annotation cachepin.io/cpus: invalid");
  r.cause = CP_JOURNAL_CAUSE_INVALID;
  append (t->state, &r, 1000);
  r = rec ("big", CP_JOURNAL_UNPLACED, NULL, "64 CPUs asked");
  r.cause = CP_JOURNAL_CAUSE_UNSATISFIABLE;
  r.front = CP_JOURNAL_NRI;
  append (t->state, &r, 1000);
  r = rec ("nocause", CP_JOURNAL_UNPLACED, NULL, "ledger busy"); /* no cause given: the host's failure */
  append (t->state, &r, 1000);
  r = rec ("gone", CP_JOURNAL_RELEASED, NULL, "");
  r.cause = CP_JOURNAL_CAUSE_INVALID; /* none for a release */
  r.front = CP_JOURNAL_RELEASE;
  append (t->state, &r, 1000);

  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, CP_JOURNAL_MAX_RECORDS);
  struct cp_journal_counts want = { 0 };
  want.n[CP_JOURNAL_HOOK][CP_JOURNAL_PLACED][CP_JOURNAL_CAUSE_NONE] = n;
  want.n[CP_JOURNAL_HOOK][CP_JOURNAL_REFUSED][CP_JOURNAL_CAUSE_INVALID] = 1;
  want.n[CP_JOURNAL_NRI][CP_JOURNAL_UNPLACED][CP_JOURNAL_CAUSE_UNSATISFIABLE] = 1;
  want.n[CP_JOURNAL_HOOK][CP_JOURNAL_UNPLACED][CP_JOURNAL_CAUSE_FAILURE] = 1;
  want.n[CP_JOURNAL_RELEASE][CP_JOURNAL_RELEASED][CP_JOURNAL_CAUSE_NONE] = 1;
  assert_memory_equal (&l->counts, &want, sizeof want);
  cp_journal_list_free (l);

  /* Garbage: set aside with the records, the counts start again from the next one. */
  put_file (t, CP_JOURNAL_FILE, "garbage", 7);
  append_id (t->state, "after");
  l = read_all (t->state);
  struct cp_journal_counts one = { 0 };
  one.n[CP_JOURNAL_HOOK][CP_JOURNAL_PLACED][CP_JOURNAL_CAUSE_NONE] = 1;
  assert_memory_equal (&l->counts, &one, sizeof one);
  cp_journal_list_free (l);
}

/* A drift is journaled once per change: the same drift again (a run that saw it and
   committed no ledger, then the next) is not, nor counted; a drift elsewhere, one
   back, or one after another record of the same id is. */
static void
test_drift_once (void **state)
{
  struct tdir *t = *state;
  struct cp_journal_record d = rec ("c1", CP_JOURNAL_DRIFT, "3", "cpuset.cpus is 3");
  append (t->state, &d, 1000);
  append (t->state, &d, 1000);                 /* the same, again: dropped */
  struct cp_journal_record other = rec ("c2", CP_JOURNAL_DRIFT, "3", "cpuset.cpus is 3");
  append (t->state, &other, 1000);             /* another container's: kept */
  append (t->state, &d, 1000);                 /* c1's newest is still that drift: dropped */
  struct cp_journal_record moved = rec ("c1", CP_JOURNAL_DRIFT, "4", "cpuset.cpus is 4");
  append (t->state, &moved, 1000);             /* a change: kept */
  struct cp_journal_record back = rec ("c1", CP_JOURNAL_DRIFT, NULL, "back");
  append (t->state, &back, 1000);
  append (t->state, &back, 1000);              /* back, twice: once */
  append (t->state, &d, 1000);                 /* moved again to 3: kept */
  struct cp_journal_record released = rec ("c1", CP_JOURNAL_RELEASED, "3", "");
  append (t->state, &released, 1000);
  append (t->state, &d, 1000);                 /* after another record of c1: kept */

  struct cp_journal_list *l = read_all (t->state);
  const char *want[] = { "c1:3", "c2:3", "c1:4", "c1:", "c1:3", "c1:3" };
  size_t drifts = 0;
  for (size_t i = 0; i < l->n; i++)
    if (l->records[i].kind == CP_JOURNAL_DRIFT)
      {
        cleanup_free char *cpus = l->records[i].cpus ? cp_cpulist_format (l->records[i].cpus) : cp_xstrdup ("");
        cleanup_free char *got = cp_xasprintf ("%s:%s", l->records[i].id, cpus);
        assert_true (drifts < sizeof want / sizeof *want);
        assert_string_equal (got, want[drifts]);
        drifts++;
      }
  assert_int_equal (drifts, sizeof want / sizeof *want);
  assert_int_equal (l->n, drifts + 1);
  assert_int_equal (l->counts.n[CP_JOURNAL_HOOK][CP_JOURNAL_DRIFT][CP_JOURNAL_CAUSE_NONE], drifts);
  cp_journal_list_free (l);
  rec_free_sets (&d);
  rec_free_sets (&other);
  rec_free_sets (&moved);
  rec_free_sets (&released);
}

/* What add() keeps of a record that breaks the rules: cut, made safe, never lost. */
static void
test_add_cleans (void **state)
{
  struct tdir *t = *state;
  char reason[CP_JOURNAL_MAX_REASON + 64];
  memset (reason, 'r', sizeof reason);
  /* "é" (2 bytes) across the limit: the cut goes before it. */
  reason[CP_JOURNAL_MAX_REASON - 1] = (char) 0xc3;
  reason[CP_JOURNAL_MAX_REASON] = (char) 0xa9;
  reason[sizeof reason - 1] = '\0';
  struct cp_journal_record r = rec ("id\x1b[2J\nforged", CP_JOURNAL_REFUSED, NULL, reason);
  r.time = 0;
  r.cpus = tu_set ("1,8191");
  hwloc_bitmap_set (r.cpus, 9000);
  r.mems = hwloc_bitmap_alloc_full ();
  long long before = (long long) time (NULL);
  append (t->state, &r, 1000);
  rec_free_sets (&r);
  struct cp_journal_record empty = rec ("", CP_JOURNAL_RELEASED, NULL, NULL);
  empty.name = NULL;
  empty.cgroup = NULL;
  append (t->state, &empty, 1000);

  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 2);
  const struct cp_journal_record *a = &l->records[0];
  assert_true (a->time >= before && a->time <= (long long) time (NULL));
  assert_string_equal (a->id, "id?[2J?forged");
  assert_int_equal (strlen (a->reason), CP_JOURNAL_MAX_REASON - 1);
  tu_assert_set (a->cpus, "1,8191");
  tu_assert_set (a->mems, "0-8191");
  assert_string_equal (l->records[1].id, "?");
  assert_string_equal (l->records[1].name, "");
  assert_string_equal (l->records[1].reason, "");
  cp_journal_list_free (l);
}

/* ------------------------------------------------------------------ bound */

static void
test_bound (void **state)
{
  struct tdir *t = *state;
  cleanup_free char *file = path_in (t, CP_JOURNAL_FILE);
  for (int i = 0; i < 1000; i++)
    {
      char id[16];
      snprintf (id, sizeof id, "c%04d", i);
      append_id (t->state, id);
      /* Checked every time early on, then now and then: the bound is kept over
         all of them, and the records are the newest, oldest first. */
      if (i > 80 && i % 37 != 0 && i != 999)
        continue;
      struct cp_journal_list *l = read_all (t->state);
      size_t want = i + 1 < CP_JOURNAL_MAX_RECORDS ? (size_t) i + 1 : CP_JOURNAL_MAX_RECORDS;
      assert_int_equal (l->n, want);
      for (size_t k = 0; k < l->n; k++)
        {
          char expect[16];
          snprintf (expect, sizeof expect, "c%04zu", (size_t) i + 1 - want + k);
          assert_string_equal (l->records[k].id, expect);
        }
      cp_journal_list_free (l);
      struct stat st;
      assert_int_equal (stat (file, &st), 0);
      assert_true (st.st_size <= CP_JOURNAL_MAX_BYTES);
    }
}

/* Records as large as the fields allow: the byte cap, not the count, is the bound;
 * the newest always fits. */
static void
test_byte_cap (void **state)
{
  struct tdir *t = *state;
  char *big_id = cp_xmalloc0 (CP_JOURNAL_MAX_ID + 1);
  char *big_cg = cp_xmalloc0 (CP_JOURNAL_MAX_CGROUP + 1);
  char *big_reason = cp_xmalloc0 (CP_JOURNAL_MAX_REASON + 1);
  memset (big_cg, '/', CP_JOURNAL_MAX_CGROUP);
  memset (big_reason, '"', CP_JOURNAL_MAX_REASON); /* each one escaped: twice the bytes */
  struct cp_journal_record r = rec ("x", CP_JOURNAL_PLACED, NULL, big_reason);
  r.cgroup = big_cg;
  r.cpus = cp_bitmap_new ();
  for (unsigned c = 0; c <= CP_CPULIST_MAX; c += 2)
    hwloc_bitmap_set (r.cpus, c); /* the longest cpulist there is */
  r.mems = hwloc_bitmap_dup (r.cpus);
  cleanup_free char *file = path_in (t, CP_JOURNAL_FILE);
  for (int i = 0; i < 12; i++)
    {
      memset (big_id, 'a' + i, CP_JOURNAL_MAX_ID);
      r.id = big_id;
      append (t->state, &r, 1000);
      struct stat st;
      assert_int_equal (stat (file, &st), 0);
      assert_true (st.st_size <= CP_JOURNAL_MAX_BYTES);
      struct cp_journal_list *l = read_all (t->state);
      assert_true (l->n >= 1 && l->n < CP_JOURNAL_MAX_RECORDS);
      assert_string_equal (l->records[l->n - 1].id, big_id); /* the newest is kept */
      assert_true (hwloc_bitmap_isequal (l->records[l->n - 1].cpus, r.cpus));
      if (i > 0 && l->n > 1)
        assert_int_equal (l->records[l->n - 2].id[0], 'a' + i - 1); /* then the one before */
      cp_journal_list_free (l);
    }
  rec_free_sets (&r);
  free (big_id);
  free (big_cg);
  free (big_reason);
}

/* Several records added in one run: one commit, in order; none queued: nothing written. */
static void
test_queue (void **state)
{
  struct tdir *t = *state;
  cleanup_error cp_error_t err = NULL;
  struct cp_journal *j = NULL;
  assert_int_equal (cp_journal_open (t->state, 1000, &j, &err), 0);
  assert_int_equal (cp_journal_commit (j, &err), 0);
  assert_false (is_there (t, CP_JOURNAL_FILE, 0));
  struct cp_journal_record a = rec ("a", CP_JOURNAL_DRIFT, "2-3", "moved by systemd");
  struct cp_journal_record b = rec ("b", CP_JOURNAL_PLACED, "0-1", "2 CPUs in L3#0");
  cp_journal_add (j, &a);
  cp_journal_add (j, &b);
  assert_int_equal (cp_journal_commit (j, &err), 0);
  cp_journal_add (j, &a); /* queued, never committed: dropped by close */
  cp_journal_close (j);
  rec_free_sets (&a);
  rec_free_sets (&b);
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 2);
  assert_string_equal (l->records[0].id, "a");
  assert_int_equal (l->records[0].kind, CP_JOURNAL_DRIFT);
  tu_assert_set (l->records[0].cpus, "2-3");
  assert_string_equal (l->records[1].id, "b");
  cp_journal_list_free (l);
}

/* -------------------------------------------------------------- the files */

static void
test_permissions (void **state)
{
  struct tdir *t = *state;
  mode_t old = umask (0);
  append_id (t->state, "a");
  umask (old);
  struct stat st;
  assert_int_equal (stat (t->state, &st), 0);
  assert_int_equal (st.st_mode & 07777, 0700); /* made by cp_ledger_open_dir() */
  static const char *const files[] = { CP_JOURNAL_FILE, CP_JOURNAL_LOCK_FILE };
  for (size_t i = 0; i < CP_ARRAY_SIZE (files); i++)
    {
      cleanup_free char *p = path_in (t, files[i]);
      assert_int_equal (lstat (p, &st), 0);
      assert_true (S_ISREG (st.st_mode));
      assert_int_equal (st.st_mode & 07777, 0600);
      assert_int_equal (st.st_uid, geteuid ());
      assert_int_equal (st.st_nlink, 1);
    }
  assert_false (is_there (t, CP_JOURNAL_TMP_FILE, 0));

  /* A state directory open to others is refused, as the ledger refuses it. */
  assert_int_equal (chmod (t->state, 0755), 0);
  struct cp_journal *j = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_journal_open (t->state, 100, &j, &err) < 0);
  tu_assert_contains (cp_error_message (err), "open to group or others");
  assert_int_equal (chmod (t->state, 0700), 0);
}

struct warn_case
{
  const char *state;
};

static void
append_b (void *arg)
{
  append_id (((struct warn_case *) arg)->state, "b");
}

/* Torn or garbage: set aside (kept for a post-mortem) with one warning, then the
 * journal starts again; read for display refuses it and leaves it in place. */
static void
test_torn_garbage (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  cleanup_free char *file = path_in (t, CP_JOURNAL_FILE);
  size_t len = 0;
  cleanup_free char *whole = slurp (file, &len);
  static const struct
  {
    size_t keep; /* of the valid text; SIZE_MAX: garbage instead */
  } cases[] = { { 0 }, { 1 }, { 30 }, { SIZE_MAX } };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      if (cases[i].keep == SIZE_MAX)
        put_file (t, CP_JOURNAL_FILE, "\x7f" "ELF\0\x01\xff garbage", 16);
      else
        put_file (t, CP_JOURNAL_FILE, whole, cases[i].keep < len / 2 ? cases[i].keep : len / 2);
      size_t torn_len = 0;
      cleanup_free char *torn = slurp (file, &torn_len);

      struct cp_journal_list *l = NULL;
      cleanup_error cp_error_t err = NULL;
      assert_true (cp_journal_read (t->state, 0, &l, &err) < 0);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      tu_assert_contains (cp_error_message (err), CP_JOURNAL_FILE);
      assert_false (is_there (t, CP_JOURNAL_CORRUPT_FILE, 0) && i == 0); /* read moved nothing */

      struct warn_case w = { t->state };
      cleanup_free char *log = capture_stderr (append_b, &w);
      assert_int_equal (count (log, "warning"), 1);
      tu_assert_contains (log, CP_JOURNAL_CORRUPT_FILE);

      cleanup_free char *corrupt_path = path_in (t, CP_JOURNAL_CORRUPT_FILE);
      size_t kept_len = 0;
      cleanup_free char *kept = slurp (corrupt_path, &kept_len);
      assert_non_null (kept);
      assert_int_equal (kept_len, torn_len);
      assert_memory_equal (kept, torn, torn_len);
      l = read_all (t->state);
      assert_int_equal (l->n, 1);
      assert_string_equal (l->records[0].id, "b");
      cp_journal_list_free (l);

      /* And the next append is quiet. */
      cleanup_free char *quiet = capture_stderr (append_b, &w);
      assert_int_equal (count (quiet, "warning"), 0);
    }
}

static void
test_symlinks (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  /* A target outside the state directory that holds a valid journal: it must be
     neither read (as the journal) nor written. */
  cleanup_free char *file = path_in (t, CP_JOURNAL_FILE);
  cleanup_free char *target = cp_xasprintf ("%s/target", t->root);
  assert_int_equal (rename (file, target), 0);
  size_t target_len = 0;
  cleanup_free char *target_text = slurp (target, &target_len);
  assert_int_equal (symlink (target, file), 0);

  struct cp_journal_list *l = NULL;
  cleanup_error cp_error_t err = NULL;
  assert_true (cp_journal_read (t->state, 0, &l, &err) < 0);
  tu_assert_contains (cp_error_message (err), "symbolic link");
  assert_true (is_there (t, CP_JOURNAL_FILE, S_IFLNK)); /* left in place */
  cp_error_free (&err);

  append_id (t->state, "b");
  assert_true (is_there (t, CP_JOURNAL_CORRUPT_FILE, S_IFLNK)); /* the link set aside */
  assert_true (is_there (t, CP_JOURNAL_FILE, S_IFREG));
  l = read_all (t->state);
  assert_int_equal (l->n, 1); /* not the target's "a" */
  assert_string_equal (l->records[0].id, "b");
  cp_journal_list_free (l);

  /* A symlink in place of the tmp file and of the lock: neither followed. */
  cleanup_free char *tmp = path_in (t, CP_JOURNAL_TMP_FILE);
  cleanup_free char *lock = path_in (t, CP_JOURNAL_LOCK_FILE);
  cleanup_free char *elsewhere = cp_xasprintf ("%s/elsewhere", t->root);
  assert_int_equal (symlink (target, tmp), 0);
  assert_int_equal (unlink (lock), 0);
  assert_int_equal (symlink (elsewhere, lock), 0);
  append_id (t->state, "c");
  assert_true (is_there (t, CP_JOURNAL_LOCK_FILE, S_IFREG));
  assert_true (is_there (t, CP_JOURNAL_LOCK_CORRUPT_FILE, S_IFLNK));
  assert_false (is_there (t, CP_JOURNAL_TMP_FILE, 0));
  struct stat st;
  assert_true (lstat (elsewhere, &st) < 0 && errno == ENOENT);
  size_t now_len = 0;
  cleanup_free char *now = slurp (target, &now_len);
  assert_int_equal (now_len, target_len);
  assert_memory_equal (now, target_text, now_len);
  l = read_all (t->state);
  assert_int_equal (l->n, 2);
  cp_journal_list_free (l);
}

/* Other kinds of files in place of the journal's: no hang, set aside, go on. */
static void
test_not_regular (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  cleanup_free char *file = path_in (t, CP_JOURNAL_FILE);
  cleanup_free char *tmp = path_in (t, CP_JOURNAL_TMP_FILE);
  assert_int_equal (unlink (file), 0);
  assert_int_equal (mkfifo (file, 0600), 0);
  assert_int_equal (mkdir (tmp, 0700), 0);
  append_id (t->state, "b");
  assert_true (is_there (t, CP_JOURNAL_CORRUPT_FILE, S_IFIFO));
  assert_true (is_there (t, CP_JOURNAL_TMP_CORRUPT_FILE, S_IFDIR));
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 1);
  cp_journal_list_free (l);
  /* Too big: set aside too. */
  char *big = cp_xmalloc0 (CP_JOURNAL_MAX_BYTES + 2);
  memset (big, ' ', CP_JOURNAL_MAX_BYTES + 1);
  put_file (t, CP_JOURNAL_FILE, big, CP_JOURNAL_MAX_BYTES + 1);
  free (big);
  append_id (t->state, "c");
  l = read_all (t->state);
  assert_int_equal (l->n, 1);
  assert_string_equal (l->records[0].id, "c");
  cp_journal_list_free (l);
}

/* A stale tmp from a killed run is replaced; journal.json is untouched until the
 * rename. */
static void
test_stale_tmp (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  put_file (t, CP_JOURNAL_TMP_FILE, "{\"version\":1,\"rec", 17);
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 1);
  cp_journal_list_free (l);
  append_id (t->state, "b");
  assert_false (is_there (t, CP_JOURNAL_TMP_FILE, 0));
  assert_false (is_there (t, CP_JOURNAL_CORRUPT_FILE, 0));
  l = read_all (t->state);
  assert_int_equal (l->n, 2);
  cp_journal_list_free (l);
}

static void
test_read (void **state)
{
  struct tdir *t = *state;
  /* Nothing there: empty, and nothing created. */
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 0);
  cp_journal_list_free (l);
  assert_true (access (t->state, F_OK) < 0);
  assert_int_equal (mkdir (t->state, 0700), 0);
  l = read_all (t->state);
  assert_int_equal (l->n, 0);
  cp_journal_list_free (l);
  assert_false (is_there (t, CP_JOURNAL_LOCK_FILE, 0));

  for (int i = 0; i < 5; i++)
    {
      char id[8];
      snprintf (id, sizeof id, "c%d", i);
      append_id (t->state, id);
    }
  cleanup_error cp_error_t err = NULL;
  assert_int_equal (cp_journal_read (t->state, 2, &l, &err), 0);
  assert_int_equal (l->n, 2);
  assert_string_equal (l->records[0].id, "c3");
  assert_string_equal (l->records[1].id, "c4");
  cp_journal_list_free (l);
  assert_int_equal (cp_journal_read (t->state, 50, &l, &err), 0);
  assert_int_equal (l->n, 5);
  cp_journal_list_free (l);
}

/* ---------------------------------------------------------------- the lock */

static void
note_c (void *arg)
{
  struct cp_journal_record r = rec ("c", CP_JOURNAL_UNPLACED, NULL, "ledger busy");
  cp_journal_note (((struct warn_case *) arg)->state, &r);
}

/* A journal whose lock is held elsewhere costs a record and a warning, in a
 * bounded time, never the run. */
static void
test_lock_busy (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  cleanup_free char *lock = path_in (t, CP_JOURNAL_LOCK_FILE);
  int fd = open (lock, O_RDWR | O_CLOEXEC);
  assert_true (fd >= 0);
  assert_int_equal (flock (fd, LOCK_EX), 0);

  struct cp_journal *j = NULL;
  cleanup_error cp_error_t err = NULL;
  long long t0 = cp_monotonic_ms ();
  assert_true (cp_journal_open (t->state, 50, &j, &err) < 0);
  long long took = cp_monotonic_ms () - t0;
  /* At least the limit: it waited.  The upper bound only tells a wait that ends
     from one that never does; sanitizers on a loaded 2-CPU machine have taken
     more than 2 s here, so it is loose, and speed is bench/'s business. */
  assert_true (took >= 50 && took < 60000);
  tu_assert_contains (cp_error_message (err), "timed out");

  struct warn_case w = { t->state };
  t0 = cp_monotonic_ms ();
  cleanup_free char *log = capture_stderr (note_c, &w);
  took = cp_monotonic_ms () - t0;
  assert_true (took >= CP_JOURNAL_LOCK_TIMEOUT_MS && took < 60000);
  assert_int_equal (count (log, "warning"), 1);
  tu_assert_contains (log, "unplaced c");
  close (fd);

  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 1);
  cp_journal_list_free (l);
}

/* Two processes appending at once: every record is kept up to the bound; beyond
 * it, what is kept of each writer is the end of what it wrote. */
static void
run_writers (const struct tdir *t, int per_child)
{
  enum { N_CHILDREN = 2 };
  pid_t kids[N_CHILDREN];
  for (int k = 0; k < N_CHILDREN; k++)
    {
      kids[k] = fork ();
      assert_true (kids[k] >= 0);
      if (kids[k] > 0)
        continue;
      for (int i = 0; i < per_child; i++)
        {
          struct cp_journal *j = NULL;
          cp_error_t err = NULL;
          char id[16];
          snprintf (id, sizeof id, "w%d-%03d", k, i);
          struct cp_journal_record r = rec (id, CP_JOURNAL_PLACED, NULL, "race");
          if (cp_journal_open (t->state, 60000, &j, &err) < 0)
            {
              fprintf (stderr, "writer %d: %s\n", k, cp_error_message (err));
              _exit (1);
            }
          cp_journal_add (j, &r);
          if (cp_journal_commit (j, &err) < 0)
            {
              fprintf (stderr, "writer %d: %s\n", k, cp_error_message (err));
              _exit (1);
            }
          cp_journal_close (j);
        }
      _exit (0);
    }
  for (int k = 0; k < N_CHILDREN; k++)
    {
      int status;
      assert_int_equal (waitpid (kids[k], &status, 0), kids[k]);
      assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    }
  struct cp_journal_list *l = read_all (t->state);
  size_t total = (size_t) N_CHILDREN * (size_t) per_child;
  assert_int_equal (l->n, total < CP_JOURNAL_MAX_RECORDS ? total : CP_JOURNAL_MAX_RECORDS);
  int next[N_CHILDREN] = { -1, -1 };
  for (size_t i = 0; i < l->n; i++)
    {
      int k, seq;
      assert_int_equal (sscanf (l->records[i].id, "w%d-%d", &k, &seq), 2);
      assert_true (k >= 0 && k < N_CHILDREN);
      if (next[k] < 0)
        next[k] = seq; /* where this writer's kept records start... */
      assert_int_equal (seq, next[k]); /* ...then every one of them, in order */
      next[k]++;
    }
  for (int k = 0; k < N_CHILDREN; k++)
    assert_true (next[k] < 0 || next[k] == per_child); /* up to its last */
  if (total <= CP_JOURNAL_MAX_RECORDS)
    for (int k = 0; k < N_CHILDREN; k++)
      assert_int_equal (next[k], per_child);
  cp_journal_list_free (l);
}

static void
test_concurrent_within_bound (void **state)
{
  run_writers (*state, CP_JOURNAL_MAX_RECORDS / 2);
}

static void
test_concurrent_beyond_bound (void **state)
{
  run_writers (*state, 150);
}

/* The hook's order (journal.h): the journal opened (its lock taken) before the
 * sandbox, its records added and committed inside it, on the ledger's state
 * directory fd.  A torn journal is set aside from inside too.  The lock itself
 * cannot be taken inside (no flock): what makes the order necessary. */
static void
test_sandboxed_commit (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "a");
  put_file (t, CP_JOURNAL_FILE, "{\"version\":1,\"rec", 17);
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      int dirfd = open (t->state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct cp_journal *j = NULL;
      cp_error_t err = NULL;
      if (dirfd < 0 || cp_journal_open_at (dirfd, t->state, 1000, &j, &err) < 0)
        _exit (3);
      struct cp_sandbox sb = { .state_dirfd = dirfd, .cgroup_mountfd = -1, .pid = 0 };
      if (cp_sandbox_enter (&sb, &err) < 0)
        {
          fprintf (stderr, "child: cp_sandbox_enter: %s\n", cp_error_message (err));
          _exit (77);
        }
      struct cp_journal_record r = rec ("sandboxed", CP_JOURNAL_PLACED, NULL, "inside");
      cp_journal_add (j, &r);
      if (cp_journal_commit (j, &err) < 0)
        {
          fprintf (stderr, "child: commit: %s\n", cp_error_message (err));
          _exit (4);
        }
      cp_journal_close (j);
      struct cp_journal *again = NULL;
      if (!CP_SANDBOX_SANITIZER_BUILD && cp_journal_open_at (dirfd, t->state, 50, &again, &err) == 0)
        _exit (5); /* flock allowed after all: the order would not matter */
      _exit (0);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77)
    tu_skip ();
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    fail_msg ("child: %s %d", WIFEXITED (status) ? "exit" : "signal",
              WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status));
  assert_true (is_there (t, CP_JOURNAL_CORRUPT_FILE, S_IFREG));
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 1);
  assert_string_equal (l->records[0].id, "sandboxed");
  cp_journal_list_free (l);
}

/* A run killed anywhere in an append (the runtime's SIGKILL at its hook timeout)
 * leaves the old journal or the new one, never a torn one: the next read takes it
 * as it is, and the next append sets nothing aside. */
static void
test_killed_mid_append (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "first");
  unsigned seed = (unsigned) getpid ();
  for (int round = 0; round < 25; round++)
    {
      fflush (NULL);
      pid_t pid = fork ();
      assert_true (pid >= 0);
      if (pid == 0)
        {
          for (int i = 0;; i++)
            {
              char id[32];
              snprintf (id, sizeof id, "k%02d-%d", round, i);
              struct cp_journal_record r = rec (id, CP_JOURNAL_PLACED, "0-3", "killed at some point");
              struct cp_journal *j = NULL;
              cp_error_t err = NULL;
              if (cp_journal_open (t->state, 10000, &j, &err) < 0)
                _exit (1);
              cp_journal_add (j, &r);
              if (cp_journal_commit (j, &err) < 0)
                _exit (1);
              cp_journal_close (j);
            }
        }
      struct timespec nap = { .tv_sec = 0, .tv_nsec = (long) (rand_r (&seed) % 20000) * 1000L };
      nanosleep (&nap, NULL);
      kill (pid, SIGKILL);
      int status;
      assert_int_equal (waitpid (pid, &status, 0), pid);
      assert_true (WIFSIGNALED (status)); /* killed, not failed */
      struct cp_journal_list *l = read_all (t->state);
      assert_true (l->n >= 1 && l->n <= CP_JOURNAL_MAX_RECORDS);
      cp_journal_list_free (l);
    }
  append_id (t->state, "last");
  assert_false (is_there (t, CP_JOURNAL_CORRUPT_FILE, 0));
  assert_false (is_there (t, CP_JOURNAL_TMP_FILE, 0));
  struct cp_journal_list *l = read_all (t->state);
  assert_string_equal (l->records[l->n - 1].id, "last");
  cp_journal_list_free (l);
}

/* -------------------------------------------------------- fault injection */

#ifdef CACHEPIN_FAULT_INJECTION
static enum cp_journal_fault_point fault_at;

static int
kill_here (enum cp_journal_fault_point point, void *data)
{
  (void) data;
  if (point == fault_at)
    _exit (42);
  return 0;
}

static int
fail_here (enum cp_journal_fault_point point, void *data)
{
  (void) data;
  return point == fault_at ? EIO : 0;
}

static const enum cp_journal_fault_point fault_points[] = {
  CP_JOURNAL_FAULT_TMP_WRITTEN,
  CP_JOURNAL_FAULT_TMP_SYNCED,
  CP_JOURNAL_FAULT_RENAMED,
};

/* Killed at each step of a commit: the journal is the old one or the new one,
 * whole; the next append goes on from it without setting anything aside. */
static void
test_fault_kill (void **state)
{
  struct tdir *t = *state;
  for (size_t i = 0; i < CP_ARRAY_SIZE (fault_points); i++)
    {
      char dir[160];
      snprintf (dir, sizeof dir, "%s/state-%zu", t->root, i);
      append_id (dir, "old");
      fflush (NULL);
      pid_t child = fork ();
      assert_true (child >= 0);
      if (child == 0)
        {
          fault_at = fault_points[i];
          cp_journal_set_fault_hook (kill_here, NULL);
          append_id (dir, "new");
          _exit (2);
        }
      int status;
      assert_int_equal (waitpid (child, &status, 0), child);
      assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 42);
      struct cp_journal_list *l = read_all (dir);
      assert_int_equal (l->n, fault_points[i] == CP_JOURNAL_FAULT_RENAMED ? 2 : 1);
      assert_string_equal (l->records[0].id, "old");
      cp_journal_list_free (l);
      append_id (dir, "next");
      l = read_all (dir);
      assert_string_equal (l->records[l->n - 1].id, "next");
      cp_journal_list_free (l);
      cleanup_free char *corrupt = cp_xasprintf ("%s/%s", dir, CP_JOURNAL_CORRUPT_FILE);
      cleanup_free char *tmp = cp_xasprintf ("%s/%s", dir, CP_JOURNAL_TMP_FILE);
      assert_true (access (corrupt, F_OK) < 0 && access (tmp, F_OK) < 0);
    }
}

/* A step that fails: the commit says so, the old journal stays, no tmp is left,
 * and the next commit works. */
static void
test_fault_fail (void **state)
{
  struct tdir *t = *state;
  append_id (t->state, "old");
  for (size_t i = 0; i < CP_ARRAY_SIZE (fault_points); i++)
    {
      fault_at = fault_points[i];
      cp_journal_set_fault_hook (fail_here, NULL);
      struct cp_journal *j = NULL;
      cleanup_error cp_error_t err = NULL;
      assert_int_equal (cp_journal_open (t->state, 1000, &j, &err), 0);
      struct cp_journal_record r = rec ("failed", CP_JOURNAL_PLACED, NULL, NULL);
      cp_journal_add (j, &r);
      assert_int_equal (cp_journal_commit (j, &err), -1);
      tu_assert_contains (cp_error_message (err), "fault injected");
      cp_journal_close (j);
      cp_journal_set_fault_hook (NULL, NULL);
      assert_false (is_there (t, CP_JOURNAL_TMP_FILE, 0));
      struct cp_journal_list *l = read_all (t->state);
      /* Renamed, then failed: written all the same. */
      assert_int_equal (l->n, fault_points[i] == CP_JOURNAL_FAULT_RENAMED ? 2 : 1);
      assert_string_equal (l->records[0].id, "old");
      cp_journal_list_free (l);
    }
  append_id (t->state, "next");
  struct cp_journal_list *l = read_all (t->state);
  assert_int_equal (l->n, 3);
  cp_journal_list_free (l);
}

/* A failed commit with the records kept (the NRI plugin's): nothing stays kept, so
 * the next commit reads the file and carries what it holds: the failed record where
 * it was renamed in, not where it was not. */
static void
test_kept_fault (void **state)
{
  struct tdir *t = *state;
  cp_journal_cache_keep (true);
  for (size_t i = 0; i < CP_ARRAY_SIZE (fault_points); i++)
    {
      char dir[160];
      snprintf (dir, sizeof dir, "%s/state-%zu", t->root, i);
      append_id (dir, "old");
      fault_at = fault_points[i];
      cp_journal_set_fault_hook (fail_here, NULL);
      struct cp_journal *j = NULL;
      cleanup_error cp_error_t err = NULL;
      assert_int_equal (cp_journal_open (dir, 1000, &j, &err), 0);
      struct cp_journal_record r = rec ("failed", CP_JOURNAL_PLACED, NULL, NULL);
      cp_journal_add (j, &r);
      assert_int_equal (cp_journal_commit (j, &err), -1);
      cp_journal_close (j);
      cp_journal_set_fault_hook (NULL, NULL);
      append_id (dir, "next");
      struct cp_journal_list *l = read_all (dir);
      bool renamed = fault_points[i] == CP_JOURNAL_FAULT_RENAMED;
      assert_int_equal (l->n, renamed ? 3 : 2);
      assert_string_equal (l->records[0].id, "old");
      if (renamed)
        assert_string_equal (l->records[1].id, "failed");
      assert_string_equal (l->records[l->n - 1].id, "next");
      cp_journal_list_free (l);
    }
  cp_journal_cache_keep (false);
}
#endif

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_round_trip),
    cmocka_unit_test (test_refuses),
    cmocka_unit_test (test_counts_codec),
    cmocka_unit_test (test_causes),
    cmocka_unit_test_setup_teardown (test_counts_commit, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_add_cleans, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_drift_once, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_bound, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_byte_cap, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_queue, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_permissions, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_torn_garbage, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_symlinks, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_not_regular, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_stale_tmp, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_read, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_lock_busy, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_sandboxed_commit, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_killed_mid_append, tdir_setup, tdir_teardown),
#ifdef CACHEPIN_FAULT_INJECTION
    cmocka_unit_test_setup_teardown (test_fault_kill, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_fault_fail, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_kept_fault, tdir_setup, tdir_teardown),
#endif
    cmocka_unit_test_setup_teardown (test_kept, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_concurrent_within_bound, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_concurrent_beyond_bound, tdir_setup, tdir_teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
