/* The ledger (hook/state/ledger.c): files, locking, validation, reconcile, usage. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "ledger_internal.h"
#include "proc.h"
#include "cpulist.h"
#include "util.h"
#include "text.h"

/* ---------------------------------------------------------------- helpers */

#define expect_contains(hay, needle) expect_contains_ (hay, needle, __FILE__, __LINE__)
static void
expect_contains_ (const char *hay, const char *needle, const char *file, int line)
{
  if (hay == NULL || strstr (hay, needle) == NULL)
    {
      print_error ("%s:%d: `%s` does not contain `%s`\n", file, line, hay ? hay : "(null)", needle);
      _fail (file, line);
    }
}

#define expect_ok(call, err) \
  do { if ((call) < 0) fail_msg ("%s: %s", #call, cp_error_message (err)); } while (0)

/* A fresh temporary directory; the state directory is STATE below it (not created). */
struct tdir
{
  char root[64];
  char state[96];
};

static void
tdir_make (struct tdir *t)
{
  strcpy (t->root, "/tmp/cp-ledger-XXXXXX");
  if (mkdtemp (t->root) == NULL)
    fail_msg ("mkdtemp: %s", strerror (errno));
  snprintf (t->state, sizeof t->state, "%s/state", t->root);
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

static void
tdir_remove (struct tdir *t)
{
  nftw (t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* cmocka setup and teardown: the teardown also runs after a failure. */
static int
tdir_setup (void **state)
{
  struct tdir *t = cp_xmalloc0 (sizeof *t);
  tdir_make (t);
  *state = t;
  return 0;
}

static int
tdir_teardown (void **state)
{
  tdir_remove (*state);
  free (*state);
  return 0;
}

static char *
state_path (const struct tdir *t, const char *name)
{
  return cp_xasprintf ("%s/%s", t->state, name);
}

static void
write_file (const char *path, const char *data, size_t len)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    fail_msg ("open %s: %s", path, strerror (errno));
  assert_int_equal (write (fd, data, len), (ssize_t) len);
  close (fd);
}

/* The whole file, NUL-terminated; *LEN its size.  NULL when it does not exist. */
static char *
read_file (const char *path, size_t *len)
{
  FILE *f = fopen (path, "re");
  if (f == NULL)
    return NULL;
  char *buf = cp_xmalloc0 (8 << 20);
  size_t n = fread (buf, 1, (8 << 20) - 1, f);
  fclose (f);
  if (len)
    *len = n;
  return buf;
}

static bool
exists (const char *path)
{
  struct stat st;
  return lstat (path, &st) == 0;
}

static bool
state_exists (const struct tdir *t, const char *name)
{
  cleanup_free char *path = state_path (t, name);
  return exists (path);
}

static void
make_state_dir (const struct tdir *t)
{
  if (mkdir (t->state, 0700) < 0)
    fail_msg ("mkdir %s: %s", t->state, strerror (errno));
}

/* An entry owning its strings and sets; free with cp_ledger_entry_clear(). */
static struct cp_ledger_entry
entry (const char *id, enum cp_mode mode, const char *cpus, const char *held)
{
  struct cp_ledger_entry e = {
    .id = cp_xstrdup (id),
    .cgroup_mount = cp_xstrdup ("/sys/fs/cgroup/cpuset"),
    .cgroup = cp_xasprintf ("/machine/%s", id),
    .pid = 0,
    .start_time = 0,
    .mode = mode,
    .cpus = tu_set (cpus),
    .held = tu_set (held),
    .mems = tu_set ("0"),
    .placed_at = 1700000000,
  };
  return e;
}

static void
put_ok (struct cp_ledger *l, const struct cp_ledger_entry *e)
{
  cp_error_t err = NULL;
  expect_ok (cp_ledger_put (l, e, &err), err);
}

static struct cp_ledger *
open_ok (const char *dir)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_ledger_open (dir, 5000, &l, &err), err);
  return l;
}

static int
wait_status (pid_t pid)
{
  int status;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      fail_msg ("waitpid: %s", strerror (errno));
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

/* ---------------------------------------------------------- round trip */

static void
test_round_trip (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  cp_error_t err = NULL;

  struct cp_ledger *l = open_ok (t.state);
  struct stat st;
  assert_int_equal (stat (t.state, &st), 0);
  assert_int_equal (st.st_mode & 07777, 0700);
  assert_int_equal (cp_ledger_count (l), 0);
  assert_false (cp_ledger_was_recovered (l, NULL));

  struct cp_ledger_entry a = entry ("aaaa", CP_MODE_EXCLUSIVE, "0-3", "0-3,64-67");
  a.pid = 1234;
  a.start_time = 987654;
  struct cp_ledger_entry b = entry ("apply:/pod/b", CP_MODE_SHARED, "8-15", "");
  free (b.cgroup_mount);
  b.cgroup_mount = cp_xstrdup ("/sys/fs/cgroup");
  hwloc_bitmap_free (b.mems);
  b.mems = tu_set ("0-1");
  b.placed_at = 0;
  put_ok (l, &a);
  put_ok (l, &b);
  struct cp_ledger_entry c = entry ("nomems", CP_MODE_SHARED, "16", "");
  hwloc_bitmap_zero (c.mems); /* cgroup v2 cpuset.mems left to inherit */
  put_ok (l, &c);
  assert_true (cp_ledger_remove (l, "nomems"));
  put_ok (l, &c);
  assert_int_equal (cp_ledger_count (l), 3);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);

  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  assert_int_equal (stat (file, &st), 0);
  assert_int_equal (st.st_mode & 07777, 0600);
  assert_false (state_exists (&t, CP_LEDGER_TMP_FILE));

  /* The file is what ledger.h documents. */
  struct json_object *root = json_object_from_file (file);
  assert_non_null (root);
  struct json_object *v, *entries, *e0, *f;
  assert_true (json_object_object_get_ex (root, "version", &v));
  assert_int_equal (json_object_get_int (v), CP_LEDGER_VERSION);
  assert_int_equal (CP_LEDGER_VERSION, 3);
  assert_false (json_object_object_get_ex (root, "sched_cache_restore", &v));
  assert_true (json_object_object_get_ex (root, "entries", &entries));
  assert_int_equal (json_object_array_length (entries), 3);
  e0 = json_object_array_get_idx (entries, 0);
  assert_true (json_object_object_get_ex (e0, "held", &f));
  assert_string_equal (json_object_get_string (f), "0-3,64-67");
  assert_true (json_object_object_get_ex (e0, "mode", &f));
  assert_string_equal (json_object_get_string (f), "exclusive");
  assert_true (json_object_object_get_ex (e0, "start_time", &f));
  assert_int_equal (json_object_get_int64 (f), 987654);
  assert_true (json_object_object_get_ex (e0, "cgroup_mount", &f));
  assert_string_equal (json_object_get_string (f), "/sys/fs/cgroup/cpuset");
  assert_true (json_object_object_get_ex (e0, "sched_cache", &f));
  assert_string_equal (json_object_get_string (f), "none");
  assert_true (json_object_object_get_ex (e0, "core_sched", &f));
  assert_false (json_object_get_boolean (f));
  assert_true (json_object_object_get_ex (e0, "drift", &f));
  assert_string_equal (json_object_get_string (f), "");
  json_object_put (root);

  l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), 3);
  assert_true (hwloc_bitmap_iszero (cp_ledger_find (l, "nomems")->mems));
  assert_true (cp_ledger_remove (l, "nomems"));
  const struct cp_ledger_entry *ga = cp_ledger_find (l, "aaaa");
  assert_non_null (ga);
  assert_ptr_equal (ga, cp_ledger_at (l, 0));
  assert_string_equal (ga->cgroup_mount, "/sys/fs/cgroup/cpuset");
  assert_string_equal (ga->cgroup, "/machine/aaaa");
  assert_int_equal (ga->pid, 1234);
  assert_int_equal (ga->start_time, 987654);
  assert_int_equal (ga->mode, CP_MODE_EXCLUSIVE);
  tu_assert_set (ga->cpus, "0-3");
  tu_assert_set (ga->held, "0-3,64-67");
  tu_assert_set (ga->mems, "0");
  assert_int_equal (ga->placed_at, 1700000000);
  const struct cp_ledger_entry *gb = cp_ledger_at (l, 1);
  assert_string_equal (gb->id, "apply:/pod/b");
  assert_string_equal (gb->cgroup_mount, "/sys/fs/cgroup");
  assert_int_equal (gb->mode, CP_MODE_SHARED);
  tu_assert_set (gb->cpus, "8-15");
  tu_assert_set (gb->held, "");
  tu_assert_set (gb->mems, "0-1");
  assert_int_equal (gb->placed_at, 0);
  assert_null (cp_ledger_at (l, 2));
  assert_null (cp_ledger_find (l, "nope"));
  expect_ok (cp_ledger_commit (l, &err), err);

  /* Nothing changed (a put of an equal entry is no change): no rewrite. */
  assert_int_equal (stat (file, &st), 0);
  ino_t ino = st.st_ino;
  put_ok (l, &a);
  expect_ok (cp_ledger_commit (l, &err), err);
  assert_int_equal (stat (file, &st), 0);
  assert_int_equal (st.st_ino, ino);

  /* Replace by id, remove. */
  a.pid = 4321;
  put_ok (l, &a);
  assert_int_equal (cp_ledger_count (l), 2);
  assert_true (cp_ledger_remove (l, "apply:/pod/b"));
  assert_false (cp_ledger_remove (l, "apply:/pod/b"));
  expect_ok (cp_ledger_commit (l, &err), err);
  assert_int_equal (stat (file, &st), 0);
  assert_int_not_equal (st.st_ino, ino);
  cp_ledger_close (l);

  l = open_ok (t.state);
  assert_int_equal (cp_ledger_count (l), 1);
  assert_int_equal (cp_ledger_find (l, "aaaa")->pid, 4321);

  /* serialize and parse agree; a detached ledger cannot be committed. */
  cleanup_free char *text = cp_ledger_serialize (l);
  struct cp_ledger *d = NULL;
  expect_ok (cp_ledger_parse (text, strlen (text), &d, &err), err);
  cleanup_free char *again = cp_ledger_serialize (d);
  assert_string_equal (text, again);
  assert_int_equal (cp_ledger_commit (d, &err), -1);
  expect_contains (cp_error_message (err), "no state directory");
  cp_error_free (&err);
  cp_ledger_close (d);
  cp_ledger_close (l);

  /* A trailing slash on the directory is fine. */
  cleanup_free char *slashed = cp_xasprintf ("%s//", t.state);
  l = open_ok (slashed);
  assert_int_equal (cp_ledger_count (l), 1);
  cp_ledger_close (l);

  cp_ledger_entry_clear (&a);
  cp_ledger_entry_clear (&b);
  cp_ledger_entry_clear (&c);
}

/* ---------------------------------------------------------------- locking */

/* Another process holding the ledger (open in DIR) until holder_release(). */
struct holder
{
  pid_t pid;
  int release; /* write end: closing it lets the holder go */
};

static struct holder
holder_start (const char *dir)
{
  int ready[2], release[2];
  assert_int_equal (pipe (ready), 0);
  assert_int_equal (pipe (release), 0);
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      close (ready[0]);
      close (release[1]);
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_open (dir, 5000, &l, &err) < 0)
        _exit (1);
      char c = 'x';
      if (write (ready[1], &c, 1) != 1)
        _exit (2);
      if (read (release[0], &c, 1) < 0)
        _exit (3);
      cp_ledger_close (l);
      _exit (0);
    }
  close (ready[1]);
  close (release[0]);
  char c;
  assert_int_equal (read (ready[0], &c, 1), 1);
  close (ready[0]);
  return (struct holder) { .pid = child, .release = release[1] };
}

/* Let H go; it must have held and closed the ledger. */
static void
holder_release (struct holder *h)
{
  close (h->release);
  assert_int_equal (wait_status (h->pid), 0);
}

/* cp_ledger_on_commit(): told once the changes are committed, never when the
   ledger closes first (the engine's release records, events.h). */
static void
count_call (void *data)
{
  (*(int *) data)++;
}

static void
test_on_commit (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  int calls = 0;
  cp_error_t err = NULL;
  struct cp_ledger *l = open_ok (t.state);
  struct cp_ledger_entry e = entry ("a", CP_MODE_EXCLUSIVE, "0", "0");
  put_ok (l, &e);
  cp_ledger_on_commit (l, count_call, &calls, NULL);
  cp_ledger_close (l); /* not committed: not told */
  assert_int_equal (calls, 0);
  l = open_ok (t.state);
  put_ok (l, &e);
  cp_ledger_on_commit (l, count_call, &calls, NULL);
  expect_ok (cp_ledger_commit (l, &err), err);
  assert_int_equal (calls, 1);
  expect_ok (cp_ledger_commit (l, &err), err); /* once */
  assert_int_equal (calls, 1);
  cp_ledger_close (l);
  assert_int_equal (calls, 1);
  cp_ledger_entry_clear (&e);
}

static void
test_lock_timeout (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  struct holder h = holder_start (t.state);

  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  long long t0 = cp_monotonic_ms ();
  assert_int_equal (cp_ledger_open (t.state, 200, &l, &err), -1);
  long long took = cp_monotonic_ms () - t0;
  assert_null (l);
  assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);
  expect_contains (cp_error_message (err), "timed out after");
  expect_contains (cp_error_message (err), "limit 200 ms");
  expect_contains (cp_error_message (err), CP_LEDGER_LOCK_FILE);
  cp_error_free (&err);
  if (took < 195 || took > 600)
    fail_msg ("the 200 ms lock timeout took %lld ms", took);

  /* Timeout 0: one try. */
  t0 = cp_monotonic_ms ();
  assert_int_equal (cp_ledger_open (t.state, 0, &l, &err), -1);
  assert_true (cp_monotonic_ms () - t0 < 100);
  cp_error_free (&err);

  /* Released: a waiting open gets it. */
  holder_release (&h);
  l = open_ok (t.state);
  cp_ledger_close (l);
}

/* A hook holds the lock while ledger.lock is removed, or replaced by a symlink
 * (which sends the next hook to the repair): the next hook must still wait for
 * the first.  Before, it flocked a new ledger.lock of its own and both wrote the
 * ledger (two exclusive containers on one CPU, 1 round in 18 of a storm). */
static void
test_lock_replaced_while_held (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  cleanup_free char *lock = state_path (&t, CP_LEDGER_LOCK_FILE);
  static const char *const how[] = { "removed", "replaced by a symlink", "replaced by a new file" };
  for (int k = 0; k < 3; k++)
    {
      struct holder h = holder_start (t.state);

      assert_int_equal (unlink (lock), 0);
      if (k == 1)
        assert_int_equal (symlink ("/dev/null", lock), 0);
      else if (k == 2)
        write_file (lock, "", 0);
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_open (t.state, 200, &l, &err) == 0)
        fail_msg ("ledger.lock %s while a hook held it: a second hook took the lock too", how[k]);
      expect_contains (cp_error_message (err), "timed out after");
      cp_error_free (&err);

      holder_release (&h);
      cp_ledger_close (open_ok (t.state));
    }
}

#define N_CHILDREN 16
#define N_ROUNDS 20

static void
test_concurrency (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  pid_t kids[N_CHILDREN];
  for (int k = 0; k < N_CHILDREN; k++)
    {
      kids[k] = fork ();
      assert_true (kids[k] >= 0);
      if (kids[k] > 0)
        continue;
      for (int r = 0; r < N_ROUNDS; r++)
        {
          struct cp_ledger *l = NULL;
          cp_error_t err = NULL;
          char id[32], cpu[16];
          snprintf (id, sizeof id, "c%02d-%02d", k, r);
          snprintf (cpu, sizeof cpu, "%d", k * N_ROUNDS + r);
          struct cp_ledger_entry e = entry (id, CP_MODE_EXCLUSIVE, cpu, cpu);
          if (cp_ledger_open (t.state, 60000, &l, &err) < 0 || cp_ledger_put (l, &e, &err) < 0
              || cp_ledger_commit (l, &err) < 0)
            {
              fprintf (stderr, "child %d round %d: %s\n", k, r, cp_error_message (err));
              _exit (1);
            }
          if (cp_ledger_was_recovered (l, NULL))
            _exit (2);
          cp_ledger_close (l);
          cp_ledger_entry_clear (&e);
        }
      _exit (0);
    }
  for (int k = 0; k < N_CHILDREN; k++)
    assert_int_equal (wait_status (kids[k]), 0);

  struct cp_ledger *l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), N_CHILDREN * N_ROUNDS);
  for (int k = 0; k < N_CHILDREN; k++)
    for (int r = 0; r < N_ROUNDS; r++)
      {
        char id[32];
        snprintf (id, sizeof id, "c%02d-%02d", k, r);
        const struct cp_ledger_entry *e = cp_ledger_find (l, id);
        if (e == NULL)
          fail_msg ("entry %s is missing", id);
        assert_int_equal (hwloc_bitmap_first (e->held), k * N_ROUNDS + r);
      }
  cp_ledger_close (l);
  size_t len;
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *text = read_file (file, &len);
  cp_error_t err = NULL;
  expect_ok (cp_ledger_parse (text, len, &l, &err), err);
  cp_ledger_close (l);
  assert_false (state_exists (&t, CP_LEDGER_TMP_FILE));
}

/* ------------------------------------------------------------ corruption */

#define ENTRY_WITH(id, mode, cpus, held, extra)                                                             \
  "{\"id\":\"" id "\",\"cgroup_mount\":\"/sys/fs/cgroup/cpuset\",\"cgroup\":\"/c/" id "\",\"pid\":0,"   \
  "\"start_time\":0,\"mode\":\"" mode "\",\"cpus\":\"" cpus "\",\"held\":\"" held "\",\"mems\":\"0\"," \
  "\"placed_at\":1" extra "}"
#define ENTRY(id, held) ENTRY_WITH (id, "exclusive", held, held, "")
#define LEDGER(entries) "{\"version\":1,\"entries\":[" entries "]}"
#define LEDGER2(entries) "{\"version\":2,\"entries\":[" entries "]}"
#define LEDGER3(entries) "{\"version\":3,\"entries\":[" entries "]}"
#define DRIFT(d) KERNEL ("none", "false") ",\"drift\":\"" d "\""
#define NAME(n) ",\"name\":\"" n "\""
#define KERNEL(ask, core) ",\"sched_cache\":\"" ask "\",\"core_sched\":" core
#define RAW(mount, cgroup, pid, start)                                                                      \
  LEDGER ("{\"id\":\"a\",\"cgroup_mount\":\"" mount "\",\"cgroup\":\"" cgroup "\",\"pid\":" pid            \
          ",\"start_time\":" start ",\"mode\":\"exclusive\",\"cpus\":\"0\",\"held\":\"0\",\"mems\":\"0\","   \
          "\"placed_at\":1}")

/* An entry with these fields' raw JSON text. */
#define FULL(pid, start, mode, cpus)                                                                        \
  LEDGER ("{\"id\":\"a\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/c\",\"pid\":" pid ",\"start_time\":" start       \
          ",\"mode\":" mode ",\"cpus\":" cpus ",\"held\":\"0\",\"mems\":\"0\",\"placed_at\":1}")
#define EXCL "\"exclusive\""

struct bad
{
  const char *what;
  const char *text;
  size_t len; /* 0: strlen */
  const char *needle;
};

static const struct bad bad_ledgers[] = {
  { "empty file", "", 0, "empty input" },
  { "truncated", LEDGER (ENTRY ("a", "0-1") "," ENTRY ("b", "2")), 60, "unexpected end of data" },
  { "garbage", "hello, world\n", 0, "expected a JSON object" },
  { "binary garbage", "\x89PNG\r\n\x1a\n", 0, "expected a JSON object" },
  { "trailing data", LEDGER ("") " {}", 0, "invalid JSON at byte 27" },
  { "two objects", LEDGER ("") LEDGER (""), 0, "invalid JSON" },
  { "NUL bytes", LEDGER ("") "\0\0\0", sizeof (LEDGER ("") "\0\0\0") - 1, "NUL byte" },
  { "NUL inside", "{\"version\":1,\0\"entries\":[]}", 27, "invalid JSON at byte 13: NUL byte" },
  { "top level array", "[]", 0, "expected a JSON object" },
  { "wrong version", "{\"version\":4,\"entries\":[]}", 0, "unsupported version 4" },
  { "v3 entry without drift", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", KERNEL ("none", "false"))), 0,
    "`drift` is missing" },
  { "v2 entry with drift", LEDGER2 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("1"))), 0,
    "unknown key `drift`" },
  { "drift not a cpulist", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("x"))), 0,
    "`drift`: a character other than digits" },
  { "drift equal to cpus", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("0"))), 0,
    "`drift` is `cpus`" },
  { "v2 entry with a name", LEDGER2 (ENTRY_WITH ("a", "exclusive", "0", "0", KERNEL ("none", "false") NAME ("w"))),
    0, "unknown key `name`" },
  { "empty name", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") NAME (""))), 0, "`name` is empty" },
  { "name with an escape", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") NAME ("\\u001b[2Jx"))), 0,
    "`name` has a control character or is not valid UTF-8" },
  { "name with a bidi override", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") NAME ("a\xe2\x80\xae" "b"))),
    0, "`name` has a control character or is not valid UTF-8" },
  { "name not a string", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") ",\"name\":7")), 0,
    "`name`: expected a string" },
  { "name too long", LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") NAME ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"))), 0,
    "`name` is longer than 253 bytes" },
  { "v2 entry without sched_cache", LEDGER2 (ENTRY ("a", "0")), 0, "`sched_cache` is missing" },
  { "v2 sched_cache unknown", LEDGER2 (ENTRY_WITH ("a", "exclusive", "0", "0", KERNEL ("yes", "false"))), 0,
    "`sched_cache`: expected \"none\", \"on\" or \"off\"" },
  { "v2 core_sched a string", LEDGER2 (ENTRY_WITH ("a", "exclusive", "0", "0", KERNEL ("on", "\"true\""))), 0,
    "`core_sched`: expected true or false" },
  { "v1 entry with sched_cache", LEDGER (ENTRY_WITH ("a", "exclusive", "0", "0", KERNEL ("on", "false"))), 0,
    "unknown key `sched_cache`" },
  { "restore in version 1", "{\"version\":1,\"entries\":[],\"sched_cache_restore\":\"on\"}", 0,
    "unknown key `sched_cache_restore`" },
  { "restore not on/off", "{\"version\":2,\"entries\":[],\"sched_cache_restore\":\"1\"}", 0,
    "`sched_cache_restore`: expected \"on\" or \"off\"" },
  { "restore a number", "{\"version\":2,\"entries\":[],\"sched_cache_restore\":1}", 0,
    "`sched_cache_restore`: expected a string" },
  { "version 0", "{\"version\":0,\"entries\":[]}", 0, "unsupported version 0" },
  { "version string", "{\"version\":\"1\",\"entries\":[]}", 0, "`version`: expected an integer" },
  { "version double", "{\"version\":1.0,\"entries\":[]}", 0, "`version`: expected an integer" },
  { "no version", "{\"entries\":[]}", 0, "`version` is missing" },
  { "no entries", "{\"version\":1}", 0, "`entries` is missing" },
  { "entries object", "{\"version\":1,\"entries\":{}}", 0, "`entries`: expected an array, got {}" },
  { "unknown top key", "{\"version\":1,\"entries\":[],\"x\":1}", 0, "unknown key `x`" },
  { "entry not an object", LEDGER ("1"), 0, "entry 0: expected an object, got 1" },
  { "too deep", LEDGER ("[[1]]"), 0, "entry 0: expected an object, got [[1]]" },
  /* json-c alone keeps the last of duplicate keys: refused, as by every strict reader. */
  { "pid duplicate key", LEDGER (ENTRY_WITH ("a", "exclusive", "0", "0", ",\"pid\":\"12\"")), 0,
    "entries[0]: duplicate key \"pid\"" },
  { "id duplicate key", LEDGER ("{\"id\":\"x\",\"id\":\"y\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/c\",\"pid\":0,"
                               "\"start_time\":0,\"mode\":\"shared\",\"cpus\":\"0\",\"held\":\"\",\"mems\":\"0\","
                               "\"placed_at\":1}"),
    0, "entries[0]: duplicate key \"id\"" },
  { "top duplicate key", "{\"version\":1,\"entries\":[],\"entries\":[]}", 0, "duplicate key \"entries\"" },
  { "pid as string", FULL ("\"12\"", "0", EXCL, "\"0\""), 0,
    "`pid`: expected an integer from 0 to 2147483647, got \"12\"" },
  { "pid negative", FULL ("-1", "0", EXCL, "\"0\""), 0, "`pid`: expected an integer from 0 to 2147483647, got -1" },
  { "pid double", FULL ("1.5", "0", EXCL, "\"0\""), 0, "`pid`: expected an integer from 0 to 2147483647, got 1.5" },
  { "pid huge", FULL ("4294967296", "0", EXCL, "\"0\""), 0, "`pid`: expected an integer" },
  { "start_time overflow", FULL ("1", "99999999999999999999", EXCL, "\"0\""), 0,
    "`start_time`: expected an integer from 0 to 9007199254740992" },
  { "start_time null", FULL ("1", "null", EXCL, "\"0\""), 0,
    "`start_time`: expected an integer from 0 to 9007199254740992, got null" },
  { "cpus int", FULL ("0", "0", EXCL, "3"), 0, "`cpus`: expected a string, got 3" },
  { "start_time 2^53+1", FULL ("1", "9007199254740993", EXCL, "\"0\""), 0,
    "`start_time`: expected an integer from 0 to 9007199254740992, got 9007199254740993" },
  { "mode bool", FULL ("0", "0", "true", "\"0\""), 0, "`mode`: expected a string, got true" },
  { "mode unknown", LEDGER (ENTRY_WITH ("a", "bogus", "0", "0", "")), 0, "`mode`: invalid value `bogus`" },
  { "cpulist 3-1", LEDGER (ENTRY ("a", "3-1")), 0, "range end 1 is before start 3" },
  { "cpulist 0-", LEDGER (ENTRY ("a", "0-")), 0, "`cpus`" },
  { "cpulist newline", LEDGER (ENTRY ("a", "5\\n")), 0, "`cpus`: a character other than digits" },
  { "cpulist space", LEDGER (ENTRY ("a", "1, 2")), 0, "`cpus`: a character other than digits" },
  { "cpulist octal", LEDGER (ENTRY ("a", "010")), 0, "leading zero" },
  { "cpulist too big", LEDGER (ENTRY ("a", "9000")), 0, "above the maximum" },
  { "mems bad", LEDGER ("{\"id\":\"a\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/c\",\"pid\":0,\"start_time\":0,"
                        "\"mode\":\"shared\",\"cpus\":\"0\",\"held\":\"\",\"mems\":\"0-\",\"placed_at\":1}"),
    0, "`mems`: `0-`: a number is missing at the end" },
  { "cpus empty", LEDGER (ENTRY_WITH ("a", "exclusive", "", "0", "")), 0, "`cpus`: empty cpulist" },
  { "held empty (exclusive)", LEDGER (ENTRY_WITH ("a", "exclusive", "0", "", "")), 0, "`held` is empty" },
  { "held misses cpus", LEDGER (ENTRY_WITH ("a", "exclusive", "0-1", "1", "")), 0, "does not include `cpus`" },
  { "held in shared mode", LEDGER (ENTRY_WITH ("a", "shared", "0-1", "0-1", "")), 0, "not empty in shared mode" },
  { "missing field", LEDGER ("{\"id\":\"a\"}"), 0, "entry 0: `cgroup_mount` is missing" },
  { "unknown entry key", LEDGER (ENTRY_WITH ("a", "exclusive", "0", "0", ",\"extra\":1")), 0,
    "entry 0: unknown key `extra`" },
  { "id empty", LEDGER (ENTRY ("", "0")), 0, "`id` is empty" },
  { "id control char", LEDGER (ENTRY ("a\\nb", "0")), 0, "`id` has a control character" },
  { "id escape char", LEDGER (ENTRY ("a\\u001b[31m", "0")), 0, "`id` has a control character" },
  { "id C1 control", LEDGER (ENTRY ("a\\u009b", "0")), 0, "`id` has a control character" },
  { "id NUL escape", LEDGER (ENTRY ("a\\u0000b", "0")), 0, "`id`: contains a NUL character" },
  { "id bad UTF-8", LEDGER (ENTRY ("a\xff", "0")), 0, "invalid JSON" },
  /* json-c's own UTF-8 check is lax: ours refuses what it lets through. */
  { "id encoded surrogate", LEDGER (ENTRY ("a\xed\xa0\x80", "0")), 0, "not valid UTF-8" },
  { "id overlong", LEDGER (ENTRY ("a\xc0\xaf", "0")), 0, "not valid UTF-8" },
  { "id past U+10FFFF", LEDGER (ENTRY ("a\xf4\x90\x80\x80", "0")), 0, "not valid UTF-8" },
  { "id raw C1", LEDGER (ENTRY ("a\xc2\x9b", "0")), 0, "entry 0: `id` has a control character" },
  { "key raw C1", LEDGER (ENTRY_WITH ("a", "exclusive", "0", "0", ",\"\xc2\x9b[2J\":1")), 0,
    "entry 0: unknown key (not printable)" },
  { "mode raw C1", LEDGER (ENTRY_WITH ("a", "\xc2\x9b[2J", "0", "0", "")), 0, "`mode` has a control character" },
  { "id truncated UTF-8", LEDGER (ENTRY ("a\xe2\x82", "0")), 0, "invalid utf-8" },
  { "cgroup relative", RAW ("/m", "c", "0", "0"), 0, "`cgroup`: `c` is not an absolute path" },
  { "mount relative", RAW ("m", "/c", "0", "0"), 0, "`cgroup_mount`: `m` is not an absolute path" },
  { "mount empty", RAW ("", "/c", "0", "0"), 0, "`cgroup_mount` is empty" },
  { "cgroup dotdot", LEDGER (ENTRY ("../../etc", "0")), 0, "`cgroup`: `/c/../../etc` has a `..` component" },
  { "start_time without pid", RAW ("/m", "/c", "0", "5"), 0, "`start_time` is 5 without a pid" },
  { "duplicate ids", LEDGER (ENTRY ("a", "0") "," ENTRY ("b", "1") "," ENTRY ("a", "2")), 0,
    "id `a` appears more than once" },
  { "overlapping held", LEDGER (ENTRY ("a", "0-3") "," ENTRY ("b", "4-5") "," ENTRY ("c", "3-4")), 0,
    "CPUs 3 are held by both `a` and `c`" },
};

/* Non-ASCII text is kept as is; json-c turns a lone surrogate escape into U+FFFD. */
static void
test_utf8_text (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *d = NULL;
  const char *utf = LEDGER (ENTRY ("caf\\u00e9-\xe2\x82\xac-\\ud800", "0"));
  const char *want = "caf\xc3\xa9-\xe2\x82\xac-\xef\xbf\xbd";
  expect_ok (cp_ledger_parse (utf, strlen (utf), &d, &err), err);
  assert_string_equal (cp_ledger_at (d, 0)->id, want);
  cleanup_free char *out = cp_ledger_serialize (d);
  cp_ledger_close (d);
  expect_ok (cp_ledger_parse (out, strlen (out), &d, &err), err);
  assert_string_equal (cp_ledger_at (d, 0)->id, want);
  cp_ledger_close (d);
}

static void
expect_recovered (const struct tdir *t, const char *text, size_t len, const char *needle, const char *what)
{
  cleanup_free char *file = state_path (t, CP_LEDGER_FILE);
  cleanup_free char *aside = state_path (t, CP_LEDGER_CORRUPT_FILE);
  write_file (file, text, len);

  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (t->state, 1000, &l, &err) < 0)
    fail_msg ("%s: open failed: %s", what, cp_error_message (err));
  const char *why = NULL;
  if (!cp_ledger_was_recovered (l, &why))
    fail_msg ("%s: accepted", what);
  expect_contains (why, needle);
  expect_contains (why, "moved it to ledger.json.corrupt");
  assert_null (strchr (why, '\n'));
  assert_int_equal (cp_ledger_count (l), 0);
  assert_false (exists (file));
  size_t got_len;
  cleanup_free char *got = read_file (aside, &got_len);
  assert_non_null (got);
  assert_int_equal (got_len, len);
  assert_memory_equal (got, text, len);

  /* The hook keeps working: it can record and commit. */
  struct cp_ledger_entry e = entry ("new", CP_MODE_EXCLUSIVE, "0", "0");
  put_ok (l, &e);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&e);
  l = open_ok (t->state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), 1);
  cp_ledger_close (l);
  unlink (file);
}

/* Version 2's kernel-feature fields survive a commit, version 1 reads as asking
 * nothing, and the count of containers asking for cache-aware scheduling is what
 * the entries say. */
static void
test_kernel_fields (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *v1 = LEDGER (ENTRY ("old", "0-1"));
  expect_ok (cp_ledger_parse (v1, strlen (v1), &l, &err), err);
  assert_int_equal (cp_ledger_cas_restore (l), -1);
  assert_int_equal (cp_ledger_at (l, 0)->sched_cache, CP_ASK_NONE);
  assert_false (cp_ledger_at (l, 0)->core_sched);
  assert_true (hwloc_bitmap_iszero (cp_ledger_at (l, 0)->drift));
  assert_int_equal (cp_ledger_cas_askers (l), 0);
  cp_ledger_close (l);

  /* Version 2 reads as no drift seen; version 3's drift survives a round trip. */
  const char *v2 = LEDGER2 (ENTRY_WITH ("two", "exclusive", "0", "0", KERNEL ("on", "false")));
  expect_ok (cp_ledger_parse (v2, strlen (v2), &l, &err), err);
  assert_true (hwloc_bitmap_iszero (cp_ledger_at (l, 0)->drift));
  assert_int_equal (cp_ledger_at (l, 0)->sched_cache, CP_ASK_ON);
  cp_ledger_close (l);
  const char *v3 = LEDGER3 (ENTRY_WITH ("three", "exclusive", "0", "0", DRIFT ("1-2")));
  expect_ok (cp_ledger_parse (v3, strlen (v3), &l, &err), err);
  tu_assert_set (cp_ledger_at (l, 0)->drift, "1-2");
  cleanup_free char *v3_text = cp_ledger_serialize (l);
  expect_contains (v3_text, "\"drift\":\"1-2\"");
  cp_ledger_close (l);

  l = open_ok (t.state);
  struct cp_ledger_entry a = entry ("a", CP_MODE_EXCLUSIVE, "0", "0");
  struct cp_ledger_entry b = entry ("b", CP_MODE_EXCLUSIVE, "1", "1");
  struct cp_ledger_entry c = entry ("c", CP_MODE_EXCLUSIVE, "2", "2");
  a.sched_cache = CP_ASK_ON;
  a.core_sched = true;
  b.sched_cache = CP_ASK_OFF;
  c.sched_cache = CP_ASK_ON;
  put_ok (l, &a);
  put_ok (l, &b);
  put_ok (l, &c);
  assert_int_equal (cp_ledger_cas_askers (l), 2);
  cp_ledger_set_cas_restore (l, 0);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);

  l = open_ok (t.state);
  assert_int_equal (cp_ledger_cas_restore (l), 0);
  assert_int_equal (cp_ledger_cas_askers (l), 2);
  assert_int_equal (cp_ledger_find (l, "a")->sched_cache, CP_ASK_ON);
  assert_true (cp_ledger_find (l, "a")->core_sched);
  assert_int_equal (cp_ledger_find (l, "b")->sched_cache, CP_ASK_OFF);
  assert_false (cp_ledger_find (l, "b")->core_sched);
  assert_true (cp_ledger_remove (l, "a"));
  assert_true (cp_ledger_remove (l, "c"));
  assert_int_equal (cp_ledger_cas_askers (l), 0);
  cp_ledger_set_cas_restore (l, -1);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);

  l = open_ok (t.state);
  assert_int_equal (cp_ledger_cas_restore (l), -1);
  assert_int_equal (cp_ledger_count (l), 1);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&a);
  cp_ledger_entry_clear (&b);
  cp_ledger_entry_clear (&c);
}

static void
test_corruption (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad_ledgers); i++)
    {
      const struct bad *b = &bad_ledgers[i];
      size_t len = b->len ? b->len : strlen (b->text);
      /* Straight from the parser, then through open. */
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_parse (b->text, len, &l, &err) == 0)
        fail_msg ("%s: parsed", b->what);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      if (strstr (cp_error_message (err), b->needle) == NULL)
        fail_msg ("%s: `%s` does not contain `%s`", b->what, cp_error_message (err), b->needle);
      cp_error_free (&err);
      expect_recovered (&t, b->text, len, b->needle, b->what);
    }
}

static void
test_corruption_files (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_CORRUPT_FILE);

  /* An older .corrupt is replaced. */
  write_file (aside, "old", 3);
  expect_recovered (&t, "new garbage", 11, "expected a JSON object", "replace older");

  /* Huge: refused on its size, without parsing. */
  int fd = open (file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true (fd >= 0);
  assert_int_equal (ftruncate (fd, CP_LEDGER_MAX_SIZE + 1), 0);
  close (fd);
  struct cp_ledger *l = open_ok (t.state);
  const char *why;
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "more than the limit");
  assert_int_equal (cp_ledger_count (l), 0);
  assert_false (exists (file));
  cp_ledger_close (l);
  /* And the parser itself refuses such a buffer. */
  char *big = cp_xmalloc0 (CP_LEDGER_MAX_SIZE + 1);
  memset (big, ' ', CP_LEDGER_MAX_SIZE + 1);
  cp_error_t err = NULL;
  assert_int_equal (cp_ledger_parse (big, CP_LEDGER_MAX_SIZE + 1, &l, &err), -1);
  expect_contains (cp_error_message (err), "more than the limit");
  cp_error_free (&err);
  free (big);

  /* A symlink, pointing at a valid ledger elsewhere. */
  cleanup_free char *elsewhere = cp_xasprintf ("%s/elsewhere.json", t.root);
  write_file (elsewhere, LEDGER (ENTRY ("a", "0")), strlen (LEDGER (ENTRY ("a", "0"))));
  assert_int_equal (symlink (elsewhere, file), 0);
  l = open_ok (t.state);
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "symlink");
  assert_int_equal (cp_ledger_count (l), 0);
  cp_ledger_close (l);
  assert_true (exists (elsewhere));

  /* A FIFO must not hang the hook. */
  assert_int_equal (mkfifo (file, 0600), 0);
  l = open_ok (t.state);
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "not a regular file");
  cp_ledger_close (l);

  /* A directory (it would make every commit fail), over an older .corrupt file,
   * then a file over that directory. */
  assert_true (exists (aside));
  assert_int_equal (mkdir (file, 0700), 0);
  l = open_ok (t.state);
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "not a regular file");
  struct cp_ledger_entry e = entry ("a", CP_MODE_EXCLUSIVE, "0", "0");
  put_ok (l, &e);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&e);
  struct stat st;
  assert_int_equal (stat (aside, &st), 0);
  assert_true (S_ISDIR (st.st_mode));
  expect_recovered (&t, "garbage", 7, "expected a JSON object", "file over a directory");
}

/* A ledger.json lost after it was committed (truncated in place, rewritten with a
 * version no reader knows, removed) costs at most its last commit: open goes back
 * to ledger.json.prev, the generation before, says so in one line, and the next
 * commit writes ledger.json again.  Only when ledger.json.prev cannot be trusted
 * either does the ledger start empty (and says that). */
static void
commit_generations (const struct tdir *t)
{
  cp_error_t err = NULL;
  struct cp_ledger *l = open_ok (t->state);
  struct cp_ledger_entry a = entry ("a", CP_MODE_EXCLUSIVE, "0", "0");
  put_ok (l, &a);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  l = open_ok (t->state);
  struct cp_ledger_entry b = entry ("b", CP_MODE_EXCLUSIVE, "1", "1");
  put_ok (l, &b);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&a);
  cp_ledger_entry_clear (&b);
}

static void
test_prev_generation (void **state)
{
  static const char *const damages[] = { "truncated", "unknown version", "removed", "a directory" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (damages); i++)
    {
      struct tdir t = *(struct tdir *) *state;
      snprintf (t.state, sizeof t.state, "%s/state-%zu", t.root, i);
      commit_generations (&t);
      cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
      if (i == 0)
        assert_int_equal (truncate (file, 0), 0);
      else if (i == 1)
        {
          const char *v99 = "{\"version\":99,\"entries\":[]}";
          int fd = open (file, O_WRONLY | O_TRUNC | O_CLOEXEC); /* in place, as an editor would not */
          assert_true (fd >= 0);
          assert_int_equal (write (fd, v99, strlen (v99)), (ssize_t) strlen (v99));
          close (fd);
        }
      else if (i == 2)
        assert_int_equal (unlink (file), 0);
      else
        assert_true (unlink (file) == 0 && mkdir (file, 0700) == 0);

      struct cp_ledger *l = open_ok (t.state);
      if (cp_ledger_count (l) != 1 || cp_ledger_find (l, "a") == NULL)
        fail_msg ("%s: %zu entries, `a` %s: the running containers were lost", damages[i], cp_ledger_count (l),
                  cp_ledger_find (l, "a") ? "kept" : "lost");
      const char *why = NULL;
      if (!cp_ledger_was_recovered (l, &why))
        fail_msg ("%s: not said", damages[i]);
      expect_contains (why, "went back to the previous generation, ledger.json.prev (1 entry): at most the last "
                            "commit is lost");
      expect_contains (why, i == 2 ? "ledger.json is missing" : "moved it to ledger.json.corrupt");
      assert_null (strchr (why, '\n'));
      /* b's commit was the last: that one is lost, and its CPU free again. */
      cp_error_t err = NULL;
      expect_ok (cp_ledger_commit (l, &err), err);
      cp_ledger_close (l);
      assert_true (state_exists (&t, CP_LEDGER_FILE));
      l = open_ok (t.state);
      assert_false (cp_ledger_was_recovered (l, NULL));
      assert_int_equal (cp_ledger_count (l), 1);
      cp_ledger_close (l);
    }

  /* The previous generation untrusted too: empty, and said. */
  struct tdir t = *(struct tdir *) *state;
  snprintf (t.state, sizeof t.state, "%s/state-both", t.root);
  commit_generations (&t);
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *prev = state_path (&t, CP_LEDGER_PREV_FILE);
  write_file (file, "garbage", 7);
  write_file (prev, "{\"version\":99", 13);
  struct cp_ledger *l = open_ok (t.state);
  const char *why = NULL;
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "started an empty ledger (the previous generation, ledger.json.prev, is not trusted either:");
  assert_int_equal (cp_ledger_count (l), 0);
  cp_ledger_close (l);

  /* No previous generation (the first commit was the last): empty, and said. */
  snprintf (t.state, sizeof t.state, "%s/state-first", t.root);
  make_state_dir (&t);
  free (file);
  file = state_path (&t, CP_LEDGER_FILE);
  write_file (file, "garbage", 7);
  l = open_ok (t.state);
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "started an empty ledger (no previous generation, ledger.json.prev, to go back to)");
  cp_ledger_close (l);
  /* Neither file (the garbage was set aside): the first run, nothing to say. */
  assert_false (exists (file));
  l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  cp_ledger_close (l);
}

/* Each commit keeps the generation it replaces, as another file (not a name for
 * the same one: a ledger.json damaged in place leaves it whole); a directory in
 * its place is set aside once. */
static void
test_prev_kept (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  commit_generations (&t);
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *prev = state_path (&t, CP_LEDGER_PREV_FILE);
  struct stat fst, pst;
  assert_int_equal (stat (file, &fst), 0);
  assert_int_equal (stat (prev, &pst), 0);
  assert_true (fst.st_ino != pst.st_ino);
  assert_int_equal (fst.st_nlink, 1);
  assert_int_equal (pst.st_nlink, 1);
  cp_error_t err = NULL;
  struct cp_ledger *d = NULL;
  cleanup_free char *text = read_file (prev, NULL);
  expect_ok (cp_ledger_parse (text, strlen (text), &d, &err), err);
  assert_int_equal (cp_ledger_count (d), 1);
  cp_ledger_close (d);

  assert_true (unlink (prev) == 0 && mkdir (prev, 0700) == 0);
  struct cp_ledger *l = open_ok (t.state);
  struct cp_ledger_entry c = entry ("c", CP_MODE_EXCLUSIVE, "2", "2");
  put_ok (l, &c);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&c);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_PREV_CORRUPT_FILE);
  assert_int_equal (stat (aside, &pst), 0);
  assert_true (S_ISDIR (pst.st_mode));
  assert_int_equal (stat (prev, &pst), 0);
  assert_true (S_ISREG (pst.st_mode));
}

/* Break E in the I-th way of test_put_refuses's table. */
static void
spoil (struct cp_ledger_entry *e, size_t i)
{
  switch (i)
    {
    case 0: free (e->id); e->id = cp_xstrdup ("a\nb"); break;
    case 1: free (e->id); e->id = cp_xstrdup (""); break;
    case 2: free (e->id); e->id = NULL; break;
    case 3:
      free (e->id);
      e->id = cp_xmalloc0 (CP_LEDGER_MAX_ID + 2);
      memset (e->id, 'x', CP_LEDGER_MAX_ID + 1);
      break;
    case 4: free (e->cgroup); e->cgroup = cp_xstrdup ("pod"); break;
    case 5: free (e->cgroup); e->cgroup = cp_xstrdup ("/a/.."); break;
    case 6: free (e->cgroup_mount); e->cgroup_mount = cp_xstrdup ("/../x"); break;
    case 7: e->start_time = 5; break;
    case 8: e->pid = -3; break;
    case 9: e->placed_at = -1; break;
    case 10: hwloc_bitmap_zero (e->cpus); break;
    case 11: hwloc_bitmap_fill (e->cpus); break;
    case 12: hwloc_bitmap_fill (e->mems); break;
    case 13: hwloc_bitmap_clr (e->held, 20); hwloc_bitmap_set (e->held, 21); break;
    case 14: e->mode = CP_MODE_SHARED; break;
    case 15: e->mode = (enum cp_mode) 7; break;
    case 16: free (e->id); e->id = cp_xstrdup ("a\xe2\x82"); break;
    case 17: free (e->cgroup); e->cgroup = cp_xstrdup ("/\xed\xa0\x80"); break;
    case 18: free (e->cgroup); e->cgroup = cp_xstrdup ("/\x1b[2J"); break;
    default: fail_msg ("no spoil %zu", i);
    }
}

/* The writer never produces what the reader refuses: put applies the same rules. */
/* A put whose entry shares the strings and sets of the entry it replaces (a shallow
   copy of cp_ledger_find()'s, one field changed: cp_placer_adopt_cgroup() does so)
   replaces it with a copy of what it shared, not of freed memory. */
static void
test_put_aliased (void **state)
{
  (void) state;
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  struct cp_ledger_entry a = entry ("pod-a", CP_MODE_EXCLUSIVE, "0-3", "0-3");
  a.drift = tu_set ("0-7");
  put_ok (l, &a);
  cp_ledger_entry_clear (&a);
  struct cp_ledger_entry copy = *cp_ledger_find (l, "pod-a");
  copy.cgroup_ino = 4242;
  put_ok (l, &copy);
  const struct cp_ledger_entry *now = cp_ledger_find (l, "pod-a");
  assert_non_null (now);
  assert_string_equal (now->id, "pod-a");
  assert_string_equal (now->cgroup, "/machine/pod-a");
  assert_int_equal (now->cgroup_ino, 4242);
  hwloc_bitmap_t want = tu_set ("0-7");
  assert_true (hwloc_bitmap_isequal (now->drift, want));
  hwloc_bitmap_free (want);
  cp_ledger_close (l);
}

static void
test_put_refuses (void **state)
{
  (void) state;
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);

  struct cp_ledger_entry a = entry ("a", CP_MODE_EXCLUSIVE, "0-3", "0-3,8");
  struct cp_ledger_entry s = entry ("s", CP_MODE_SHARED, "0-15", "");
  put_ok (l, &a);
  put_ok (l, &s); /* shared entries do not conflict */

  struct cp_ledger_entry b = entry ("b", CP_MODE_EXCLUSIVE, "4-7", "4-8");
  assert_int_equal (cp_ledger_put (l, &b, &err), CP_LEDGER_CONFLICT);
  assert_int_equal (cp_error_kind (err), CP_ERR_RUNTIME);
  expect_contains (cp_error_message (err), "CPUs 8 are already held by `a`");
  cp_error_free (&err);
  assert_null (cp_ledger_find (l, "b"));
  hwloc_bitmap_clr (b.held, 8);
  put_ok (l, &b);

  /* Replacing an entry by itself does not conflict with its old self. */
  hwloc_bitmap_set (a.held, 9);
  put_ok (l, &a);
  tu_assert_set (cp_ledger_find (l, "a")->held, "0-3,8-9");

  static const struct
  {
    const char *what;
    const char *needle;
  } bad[] = {
    { "id newline", "`id` has a control character" },
    { "id empty", "`id` is empty" },
    { "id missing", "`id` is missing" },
    { "id too long", "`id` is longer than" },
    { "relative cgroup", "not an absolute path" },
    { "dotdot", "`..` component" },
    { "mount dotdot", "`..` component" },
    { "start without pid", "without a pid" },
    { "negative pid", "negative" },
    { "negative placed_at", "`placed_at`" },
    { "empty cpus", "`cpus` is empty" },
    { "infinite cpus", "past the maximum" },
    { "infinite mems", "`mems` goes past the maximum" },
    { "held misses cpus", "does not include" },
    { "shared with held", "not empty in shared mode" },
    { "bad mode", "`mode` 7" },
    { "id truncated UTF-8", "`id` has a control character or is not valid UTF-8" },
    { "cgroup surrogate", "`cgroup` has a control character or is not valid UTF-8" },
    { "cgroup escape", "`cgroup` has a control character" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      struct cp_ledger_entry e = entry ("z", CP_MODE_EXCLUSIVE, "20", "20");
      spoil (&e, i);
      if (cp_ledger_put (l, &e, &err) != -1)
        fail_msg ("%s: accepted", bad[i].what);
      assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
      expect_contains (cp_error_message (err), bad[i].needle);
      cp_error_free (&err);
      cp_ledger_entry_clear (&e);
    }
  assert_int_equal (cp_ledger_count (l), 3);

  /* And what it accepts reads back. */
  cleanup_free char *text = cp_ledger_serialize (l);
  struct cp_ledger *again = NULL;
  expect_ok (cp_ledger_parse (text, strlen (text), &again, &err), err);
  assert_int_equal (cp_ledger_count (again), 3);
  cp_ledger_close (again);

  cp_ledger_entry_clear (&a);
  cp_ledger_entry_clear (&b);
  cp_ledger_entry_clear (&s);
  cp_ledger_close (l);
}

static void
test_stale_tmp (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *tmp = state_path (&t, CP_LEDGER_TMP_FILE);
  const char *good = LEDGER (ENTRY ("a", "0-1"));
  write_file (file, good, strlen (good));
  write_file (tmp, "{\"version\":1,\"entr", 18);

  struct cp_ledger *l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), 1);
  struct cp_ledger_entry b = entry ("b", CP_MODE_EXCLUSIVE, "2", "2");
  put_ok (l, &b);
  cp_error_t err = NULL;
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  assert_false (exists (tmp));
  l = open_ok (t.state);
  assert_int_equal (cp_ledger_count (l), 2);

  /* A stale tmp that is a symlink (or hard link) to another file: that file is
   * neither followed nor truncated. */
  cleanup_free char *victim = cp_xasprintf ("%s/victim", t.root);
  write_file (victim, "precious", 8);
  assert_int_equal (symlink (victim, tmp), 0);
  assert_true (cp_ledger_remove (l, "a"));
  expect_ok (cp_ledger_commit (l, &err), err);
  assert_int_equal (unlink (victim), 0);
  write_file (victim, "precious", 8);
  assert_int_equal (link (victim, tmp), 0);
  assert_true (cp_ledger_remove (l, "b"));
  expect_ok (cp_ledger_commit (l, &err), err);
  size_t len;
  cleanup_free char *v = read_file (victim, &len);
  assert_int_equal (len, 8);
  assert_memory_equal (v, "precious", 8);
  cp_ledger_close (l);
  l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), 0);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&b);
}

/* ------------------------------------------------------------ state dir */

static void
expect_dir_refused (const char *dir, const char *needle)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (dir, 100, &l, &err) == 0)
    fail_msg ("%s: accepted", dir);
  assert_null (l);
  expect_contains (cp_error_message (err), needle);
  cp_error_free (&err);
}

static void
test_state_dir (void **state)
{
  struct tdir t = *(struct tdir *) *state;

  /* Missing parent. */
  cleanup_free char *deep = cp_xasprintf ("%s/no/such", t.root);
  expect_dir_refused (deep, "its parent must exist");
  assert_false (exists (deep));

  /* World-writable, group-writable. */
  make_state_dir (&t);
  assert_int_equal (chmod (t.state, 0777), 0);
  expect_dir_refused (t.state, "has mode 0777, open to group or others");
  assert_int_equal (chmod (t.state, 0770), 0);
  expect_dir_refused (t.state, "has mode 0770");
  assert_false (state_exists (&t, CP_LEDGER_LOCK_FILE));
  assert_int_equal (chmod (t.state, 0700), 0);
  cp_ledger_close (open_ok (t.state));

  /* A symlink to a good directory, with and without a trailing slash. */
  cleanup_free char *link_path = cp_xasprintf ("%s/link", t.root);
  assert_int_equal (symlink (t.state, link_path), 0);
  expect_dir_refused (link_path, "is a symlink");
  cleanup_free char *link_slash = cp_xasprintf ("%s/", link_path);
  expect_dir_refused (link_slash, "is a symlink");

  /* Not a directory. */
  cleanup_free char *plain = cp_xasprintf ("%s/plain", t.root);
  write_file (plain, "x", 1);
  expect_dir_refused (plain, "open state directory");

  /* Owned by someone else. */
  if (geteuid () == 0)
    {
      assert_int_equal (chown (t.state, 65534, 65534), 0);
      expect_dir_refused (t.state, "is owned by uid 65534");
      assert_int_equal (chown (t.state, 0, 0), 0);
    }
}

/* A directory cachepin did not make for itself (`/`, /var/lib: root's, 0755)
 * was accepted and the ledger, lock and topology cache written into it.
 * cachepin makes its own 0700 (and always did); one that group or others may
 * read or enter is refused with one line, and nothing is written in it. */
static void
test_state_dir_not_ours (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  static const mode_t modes[] = { 0755, 0750, 0711, 0705, 0701 };
  for (size_t i = 0; i < CP_ARRAY_SIZE (modes); i++)
    {
      assert_int_equal (chmod (t.state, modes[i]), 0);
      cleanup_free char *mode = cp_xasprintf ("has mode %04o, open to group or others: not one cachepin made for "
                                              "itself (0700); refusing it",
                                              (unsigned) modes[i]);
      expect_dir_refused (t.state, mode);
      cp_error_t err = NULL;
      int fd = cp_ledger_open_dir (t.state, &err); /* the topology cache's way in */
      if (fd >= 0)
        fail_msg ("mode %04o: cp_ledger_open_dir() accepted it", (unsigned) modes[i]);
      cp_error_free (&err);
      if (state_exists (&t, CP_LEDGER_LOCK_FILE) || state_exists (&t, CP_LEDGER_FILE))
        fail_msg ("mode %04o: files were written in it", (unsigned) modes[i]);
    }
  /* What cachepin makes (and every version made): accepted. */
  assert_int_equal (chmod (t.state, 0700), 0);
  cp_ledger_close (open_ok (t.state));
  assert_int_equal (nftw (t.state, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
  cp_ledger_close (open_ok (t.state)); /* made here, by cachepin */
  struct stat st;
  assert_int_equal (stat (t.state, &st), 0);
  assert_int_equal (st.st_mode & 07777, 0700);
}

/* ------------------------------------------------- hostile files in the dir */

/* Make PATH a file of kind KIND (which the test table below names); for a
 * socket, the bound fd is left open in *SOCK (-1 otherwise). */
enum bad_kind
{
  BAD_SYMLINK,
  BAD_FIFO,
  BAD_DIR,
  BAD_DIR_FULL,
  BAD_SOCKET,
  BAD_KINDS
};
static const char *const bad_kind_names[] = { "symlink", "FIFO", "directory", "non-empty directory", "socket" };

static void
make_bad (const char *path, enum bad_kind kind, int *sock)
{
  *sock = -1;
  switch (kind)
    {
    case BAD_SYMLINK:
      assert_int_equal (symlink ("/dev/null", path), 0);
      break;
    case BAD_FIFO:
      assert_int_equal (mkfifo (path, 0600), 0);
      break;
    case BAD_DIR:
      assert_int_equal (mkdir (path, 0700), 0);
      break;
    case BAD_DIR_FULL:
      {
        assert_int_equal (mkdir (path, 0700), 0);
        cleanup_free char *inside = cp_xasprintf ("%s/inside", path);
        write_file (inside, "x", 1);
        break;
      }
    case BAD_SOCKET:
      {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        assert_true (strlen (path) < sizeof sa.sun_path);
        strcpy (sa.sun_path, path);
        *sock = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true (*sock >= 0);
        assert_int_equal (bind (*sock, (struct sockaddr *) &sa, sizeof sa), 0);
        break;
      }
    default:
      fail_msg ("no kind %d", (int) kind);
    }
}

static mode_t
kind_of (const char *path)
{
  struct stat st;
  if (lstat (path, &st) < 0)
    return 0;
  return st.st_mode & S_IFMT;
}

static const mode_t bad_kind_mode[] = { S_IFLNK, S_IFIFO, S_IFDIR, S_IFDIR, S_IFSOCK };

static void
rm_rf (const char *path)
{
  nftw (path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Open, record, commit and close: the run goes on. */
static void
open_put_commit (const char *dir, const char *id)
{
  struct cp_ledger *l = open_ok (dir);
  struct cp_ledger_entry e = entry (id, CP_MODE_SHARED, "0", "");
  put_ok (l, &e);
  cp_error_t err = NULL;
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&e);
}

/* A ledger.lock that is not a regular file failed every run: now it is set aside
 * once, to ledger.lock.corrupt (replacing an older one), and the run goes on. */
static void
test_bad_lock (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *lock = state_path (&t, CP_LEDGER_LOCK_FILE);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_LOCK_CORRUPT_FILE);
  for (int k = 0; k < BAD_KINDS; k++)
    {
      unlink (lock);
      int sock;
      make_bad (lock, (enum bad_kind) k, &sock);
      cleanup_free char *id = cp_xasprintf ("run-%d", k);
      open_put_commit (t.state, id);
      if (kind_of (lock) != S_IFREG)
        fail_msg ("%s: the lock is not a regular file after the run", bad_kind_names[k]);
      if (kind_of (aside) != bad_kind_mode[k])
        fail_msg ("%s: not set aside to %s", bad_kind_names[k], CP_LEDGER_LOCK_CORRUPT_FILE);
      /* The next run finds a good lock and sets nothing aside. */
      struct stat before, after;
      assert_int_equal (lstat (aside, &before), 0);
      open_put_commit (t.state, "again");
      assert_int_equal (lstat (aside, &after), 0);
      assert_int_equal (before.st_ino, after.st_ino);
      if (sock >= 0)
        close (sock);
      if (k == BAD_DIR_FULL)
        rm_rf (aside); /* a file does not replace a non-empty directory */
    }
  struct cp_ledger *l = open_ok (t.state);
  assert_int_equal (cp_ledger_count (l), BAD_KINDS + 1);
  cp_ledger_close (l);
  struct stat st;
  assert_int_equal (stat ("/dev/null", &st), 0);
  assert_true (S_ISCHR (st.st_mode));
}

/* One counter in the ledger, incremented by many processes at once while the
 * lock starts out bad: if two of them ever held flocks on two different lock
 * files, increments would be lost.  Four rounds per kind: a repair without the
 * directory's flock and the re-check under it (renaming whatever is there) failed
 * 6 runs of 6 so, and 2 of 3 with one round per kind. */
#define RACE_PROCS 16
#define RACE_INCREMENTS 5

static int
race_child (const char *dir, int gate)
{
  char c;
  if (read (gate, &c, 1) != 0)
    return 3;
  for (int i = 0; i < RACE_INCREMENTS; i++)
    {
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_open (dir, 20000, &l, &err) < 0)
        {
          fprintf (stderr, "open: %s\n", cp_error_message (err));
          return 1;
        }
      const struct cp_ledger_entry *old = cp_ledger_find (l, "counter");
      struct cp_ledger_entry e = entry ("counter", CP_MODE_SHARED, "0", "");
      e.placed_at = old ? old->placed_at + 1 : 1;
      /* Widen the window between read and write, most on the first round, the
         one that meets the bad lock and the repairs. */
      usleep (i == 0 ? 5000 : 200);
      int r = cp_ledger_put (l, &e, &err) < 0 || cp_ledger_commit (l, &err) < 0;
      if (r)
        fprintf (stderr, "put/commit: %s\n", cp_error_message (err));
      cp_ledger_entry_clear (&e);
      cp_ledger_close (l);
      if (r)
        return 2;
    }
  return 0;
}

static void
test_bad_lock_race (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *lock = state_path (&t, CP_LEDGER_LOCK_FILE);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_LOCK_CORRUPT_FILE);
  long long want = 0;
  for (int round = 0; round < 4 * BAD_KINDS; round++)
    {
      enum bad_kind k = (enum bad_kind) (round % BAD_KINDS);
      rm_rf (lock);
      rm_rf (aside);
      int sock;
      make_bad (lock, k, &sock);
      int gate[2];
      assert_int_equal (pipe (gate), 0);
      pid_t kids[RACE_PROCS];
      for (int i = 0; i < RACE_PROCS; i++)
        {
          kids[i] = fork ();
          assert_true (kids[i] >= 0);
          if (kids[i] == 0)
            {
              close (gate[1]);
              _exit (race_child (t.state, gate[0]));
            }
        }
      close (gate[0]);
      close (gate[1]); /* all released at once */
      for (int i = 0; i < RACE_PROCS; i++)
        if (wait_status (kids[i]) != 0)
          fail_msg ("%s: child %d failed", bad_kind_names[k], i);
      if (sock >= 0)
        close (sock);
      want += RACE_PROCS * RACE_INCREMENTS;
      struct cp_ledger *l = open_ok (t.state);
      const struct cp_ledger_entry *c = cp_ledger_find (l, "counter");
      assert_non_null (c);
      if (c->placed_at != want)
        fail_msg ("%s: counter %lld, expected %lld: updates were lost", bad_kind_names[k], c->placed_at, want);
      cp_ledger_close (l);
      assert_int_equal (kind_of (lock), S_IFREG);
      assert_int_equal (kind_of (aside), bad_kind_mode[k]);
    }
}

/* A ledger.json that is a socket (open fails with ENXIO) failed every run. */
static void
test_bad_ledger_socket (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *file = state_path (&t, CP_LEDGER_FILE);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_CORRUPT_FILE);
  int sock;
  make_bad (file, BAD_SOCKET, &sock);
  struct cp_ledger *l = open_ok (t.state);
  const char *why;
  assert_true (cp_ledger_was_recovered (l, &why));
  expect_contains (why, "not a regular file");
  cp_ledger_close (l);
  assert_int_equal (kind_of (aside), S_IFSOCK);
  open_put_commit (t.state, "a");
  l = open_ok (t.state);
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), 1);
  cp_ledger_close (l);
  close (sock);
}

/* A ledger.json.tmp that is a directory failed every commit (unlink: EISDIR). */
static void
test_bad_tmp (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  make_state_dir (&t);
  cleanup_free char *tmp = state_path (&t, CP_LEDGER_TMP_FILE);
  cleanup_free char *aside = state_path (&t, CP_LEDGER_TMP_CORRUPT_FILE);
  int sock;
  make_bad (tmp, BAD_DIR_FULL, &sock);
  open_put_commit (t.state, "a");
  assert_int_equal (kind_of (aside), S_IFDIR);
  assert_int_equal (kind_of (tmp), 0);
  /* Again, over the older (non-empty) one: the empty directory is removed. */
  make_bad (tmp, BAD_DIR, &sock);
  open_put_commit (t.state, "b");
  assert_int_equal (kind_of (tmp), 0);
  struct cp_ledger *l = open_ok (t.state);
  assert_int_equal (cp_ledger_count (l), 2);
  cp_ledger_close (l);
}

/* --------------------------------------------------------------- liveness */

/* A child that sleeps until killed. */
static pid_t
sleeper (void)
{
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      alarm (30); /* never outlives a failed test by long */
      for (;;)
        pause ();
    }
  return pid;
}

struct drops
{
  unsigned n;
  char last[256];
};

static void
note_drop (const struct cp_ledger_entry *e, const char *why, void *data)
{
  struct drops *d = data;
  d->n++;
  snprintf (d->last, sizeof d->last, "%s: %s", e->id, why);
}

static void
test_reconcile_real_process (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);

  pid_t child = sleeper ();
  unsigned long long start;
  bool zombie = true;
  expect_ok (cp_proc_start_time (child, &start, &zombie, &err), err);
  assert_false (zombie);
  unsigned long long again;
  assert_int_equal (cp_ledger_pid_start_time (child, &again, NULL), 1);
  assert_int_equal (again, start);

  /* The real checks, with the temporary directory as the cgroup mount. */
  struct cp_ledger_entry e = entry ("proc", CP_MODE_EXCLUSIVE, "0", "0");
  free (e.cgroup_mount);
  e.cgroup_mount = cp_xstrdup (t.root);
  free (e.cgroup);
  e.cgroup = cp_xstrdup ("/");
  e.pid = child;
  e.start_time = start;
  put_ok (l, &e);
  /* Same pid, another start time: the pid was reused. */
  struct cp_ledger_entry r = entry ("reused", CP_MODE_EXCLUSIVE, "1", "1");
  free (r.cgroup_mount);
  r.cgroup_mount = cp_xstrdup (t.root);
  free (r.cgroup);
  r.cgroup = cp_xstrdup ("/");
  r.pid = child;
  r.start_time = start + 1;
  put_ok (l, &r);

  struct drops d = { 0 };
  struct cp_ledger_liveness real = {
    .cgroup_exists = cp_ledger_cgroup_state,
    .pid_start_time = cp_ledger_pid_start_time,
    .dropped = note_drop,
    .data = &d,
  };
  unsigned dropped = 99;
  expect_ok (cp_ledger_reconcile (l, &real, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  assert_int_equal (d.n, 1);
  expect_contains (d.last, "reused: pid");
  expect_contains (d.last, "was reused");
  assert_non_null (cp_ledger_find (l, "proc"));
  assert_null (cp_ledger_find (l, "reused"));

  /* Alive: kept, also with the default checks (NULL). */
  expect_ok (cp_ledger_reconcile (l, NULL, &dropped, &err), err);
  assert_int_equal (dropped, 0);
  assert_int_equal (cp_ledger_count (l), 1);

  /* Killed and reaped: dropped. */
  kill (child, SIGKILL);
  assert_int_equal (wait_status (child), 128 + SIGKILL);
  assert_int_equal (cp_ledger_pid_start_time (child, &again, NULL), 0);
  assert_int_equal (cp_proc_start_time (child, &again, NULL, &err), -1);
  assert_int_equal (cp_error_errno (err), ENOENT);
  cp_error_free (&err);
  expect_ok (cp_ledger_reconcile (l, &real, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  expect_contains (d.last, "proc: pid");
  expect_contains (d.last, "has exited");
  assert_int_equal (cp_ledger_count (l), 0);

  cp_ledger_entry_clear (&e);
  cp_ledger_entry_clear (&r);
  cp_ledger_close (l);
}

static void
test_reconcile_zombie (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  pid_t child = sleeper ();
  unsigned long long start;
  bool zombie = true;
  expect_ok (cp_proc_start_time (child, &start, &zombie, &err), err);
  assert_false (zombie);
  kill (child, SIGKILL);
  /* Not reaped: it stays a zombie, with the same start time. */
  for (int i = 0; i < 200 && !zombie; i++)
    {
      expect_ok (cp_proc_start_time (child, &start, &zombie, &err), err);
      usleep (5000);
    }
  assert_true (zombie);
  unsigned long long st;
  assert_int_equal (cp_ledger_pid_start_time (child, &st, NULL), 0);
  assert_int_equal (wait_status (child), 128 + SIGKILL);
}

/* comm is whatever the process says: the parser counts from the last ')'. */
static void
test_proc_stat_real_comm (void **state)
{
  (void) state;
  int ready[2];
  assert_int_equal (pipe (ready), 0);
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      prctl (PR_SET_NAME, (unsigned long) "x) Z 1 2 (y) ", 0, 0, 0);
      if (write (ready[1], "x", 1) != 1)
        _exit (1);
      alarm (30);
      for (;;)
        pause ();
    }
  cp_error_t err = NULL;
  unsigned long long before, after;
  bool zombie = true;
  expect_ok (cp_proc_start_time (child, &before, &zombie, &err), err);
  char c;
  assert_int_equal (read (ready[0], &c, 1), 1);
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/comm", (int) child);
  cleanup_free char *comm = read_file (path, NULL);
  assert_string_equal (comm, "x) Z 1 2 (y) \n");
  expect_ok (cp_proc_start_time (child, &after, &zombie, &err), err);
  assert_false (zombie);
  assert_int_equal (before, after);
  kill (child, SIGKILL);
  wait_status (child);
  close (ready[0]);
  close (ready[1]);
}

#define STAT_TAIL " 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 12345678 100 18446744073709551615\n"

static void
test_proc_stat_parse (void **state)
{
  (void) state;
  static const char *good[] = {
    "1234 (sleep) S" STAT_TAIL,
    "1234 (a b) c) S" STAT_TAIL,
    "1234 ()) ) )) S" STAT_TAIL,
    "1234 (x) Z 1 2 (y) S" STAT_TAIL,
    "1234 (() S" STAT_TAIL,
    "1234 () S" STAT_TAIL,
    "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654", /* ends at field 22 */
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (good); i++)
    {
      unsigned long long st = 0;
      char state_c = 0;
      cp_error_t err = NULL;
      if (cp_proc_parse_stat (good[i], strlen (good[i]), &st, &state_c, &err) < 0)
        fail_msg ("`%s`: %s", good[i], cp_error_message (err));
      assert_int_equal (st, 987654);
      assert_int_equal (state_c, 'S');
    }
  static const struct
  {
    const char *text;
    const char *needle;
  } bad[] = {
    { "1234 (sleep S" STAT_TAIL, "no `)`" },
    { "1234 (sleep)", "no state" },
    { "1234 (sleep)S 1", "no state" },
    { "1234 (sleep) S 1 2 3", "field" },
    { "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 ", "not a number" },
    { "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98x7 1", "not a number" },
    { "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 -5 1", "not a number" },
    { "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20  1 0 5 1", "field" },
    { "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999 1",
      "out of range" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      unsigned long long st = 0;
      cp_error_t err = NULL;
      if (cp_proc_parse_stat (bad[i].text, strlen (bad[i].text), &st, NULL, &err) == 0)
        fail_msg ("`%s` accepted (%llu)", bad[i].text, st);
      expect_contains (cp_error_message (err), bad[i].needle);
      cp_error_free (&err);
    }
  /* Bounded by LEN, not by a NUL. */
  unsigned long long st;
  cp_error_t err = NULL;
  const char *s = "1234 (sleep) S" STAT_TAIL;
  assert_int_equal (cp_proc_parse_stat (s, 14, &st, NULL, &err), -1);
  cp_error_free (&err);
}

/* MOUNT is a cgroup hierarchy we may make a scratch cgroup in. */
static bool
cgroup_hierarchy (const char *mount)
{
  struct statfs sfs;
  return statfs (mount, &sfs) == 0 && (sfs.f_type == CGROUP_SUPER_MAGIC || sfs.f_type == CGROUP2_SUPER_MAGIC)
         && access (mount, W_OK) == 0;
}

/* The real cgroup check is cp_cgroup_dir_state(): a directory on a cgroup
 * filesystem exists (1), one that is missing or not a directory is gone (0), and
 * anything it cannot vouch for (a plain directory) is "could not tell" (kept). */
static void
test_reconcile_cgroup_removed (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  static const char *const mounts[] = { "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
  const char *mount = NULL;
  for (size_t i = 0; i < CP_ARRAY_SIZE (mounts) && mount == NULL; i++)
    if (cgroup_hierarchy (mounts[i]))
      mount = mounts[i];
  if (mount == NULL)
    tu_skip ();
  cleanup_free char *base = cp_xasprintf ("/cachepin-ledger-test-%d", (int) getpid ());
  cleanup_free char *pod = cp_xasprintf ("%s%s", mount, base);
  cleanup_free char *c1 = cp_xasprintf ("%s%s/c1", mount, base);
  assert_int_equal (mkdir (pod, 0700), 0);
  assert_int_equal (mkdir (c1, 0700), 0);

  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  static const char *const ids[] = { "c1", "c2", "file", "plain" };
  struct cp_ledger_entry e[4];
  for (size_t i = 0; i < 4; i++)
    {
      e[i] = entry (ids[i], CP_MODE_SHARED, "0-3", "");
      free (e[i].cgroup_mount), free (e[i].cgroup);
      e[i].cgroup_mount = cp_xstrdup (i == 3 ? t.root : mount);
      e[i].cgroup = cp_xasprintf ("%s/%s", i == 3 ? "" : base, i == 2 ? "cgroup.procs" : ids[i]);
      e[i].cgroup_ino = 1; /* recorded: judged by the cgroup, not pending */
    }
  cleanup_free char *plain = cp_xasprintf ("%s/plain", t.root); /* a directory, not a cgroup */
  assert_int_equal (mkdir (plain, 0700), 0);
  for (size_t i = 0; i < 4; i++)
    put_ok (l, &e[i]);
  assert_int_equal (cp_ledger_cgroup_state (mount, e[0].cgroup, NULL), 1);
  assert_int_equal (cp_ledger_cgroup_state (mount, e[1].cgroup, NULL), 0); /* never existed */
  assert_int_equal (cp_ledger_cgroup_state (mount, e[2].cgroup, NULL), 0); /* a file */
  assert_int_equal (cp_ledger_cgroup_state (t.root, e[3].cgroup, NULL), -1);

  unsigned dropped;
  expect_ok (cp_ledger_reconcile (l, NULL, &dropped, &err), err);
  assert_int_equal (dropped, 2);
  assert_non_null (cp_ledger_find (l, "c1"));
  assert_non_null (cp_ledger_find (l, "plain"));

  assert_int_equal (rmdir (c1), 0);
  expect_ok (cp_ledger_reconcile (l, NULL, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  assert_int_equal (cp_ledger_count (l), 1);
  assert_non_null (cp_ledger_find (l, "plain"));

  assert_int_equal (rmdir (pod), 0);
  for (size_t i = 0; i < 4; i++)
    cp_ledger_entry_clear (&e[i]);
  cp_ledger_close (l);
}

/* A prepared DRA claim's entry (origin dra) has no cgroup behind it: reconcile keeps
 * it, whatever the real checks say of the path it names, and it is never gone; an
 * NRI entry of the same shape under another id is judged as usual. */
static void
test_reconcile_keeps_claims (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  struct cp_ledger_entry e[2] = { entry (CP_LEDGER_DRA_PREFIX "u-1:0", CP_MODE_EXCLUSIVE, "0-1", "0-1"),
                                  entry ("not-a-claim", CP_MODE_EXCLUSIVE, "2-3", "2-3") };
  for (size_t i = 0; i < 2; i++)
    {
      free (e[i].cgroup_mount), free (e[i].cgroup);
      e[i].cgroup_mount = cp_xstrdup (CP_LEDGER_DRA_MOUNT);
      e[i].cgroup = cp_xasprintf ("/u-1/%zu", i);
      e[i].cgroup_ino = 1; /* recorded: judged by its cgroup (none is there) */
      put_ok (l, &e[i]);
    }
  assert_int_equal (cp_ledger_entry_origin (cp_ledger_find (l, CP_LEDGER_DRA_PREFIX "u-1:0")), CP_ORIGIN_DRA);
  assert_string_equal (cp_ledger_origin_name (CP_ORIGIN_DRA), "dra");
  static const struct cp_ledger_liveness real = { .cgroup_exists = cp_ledger_cgroup_state,
                                                  .pid_start_time = cp_ledger_pid_start_time };
  hwloc_bitmap_t live = hwloc_bitmap_alloc ();
  char *why = cp_ledger_entry_gone (cp_ledger_find (l, CP_LEDGER_DRA_PREFIX "u-1:0"), &real, live);
  assert_null (why);
  hwloc_bitmap_free (live);
  unsigned dropped;
  expect_ok (cp_ledger_reconcile (l, NULL, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  assert_non_null (cp_ledger_find (l, CP_LEDGER_DRA_PREFIX "u-1:0"));
  assert_null (cp_ledger_find (l, "not-a-claim"));
  for (size_t i = 0; i < 2; i++)
    cp_ledger_entry_clear (&e[i]);
  cp_ledger_close (l);
}

/* A fake: cgroups exist unless named "/gone"; pids per the table; -1 is "cannot tell". */
struct fake
{
  unsigned calls;
};

static int
fake_cgroup (const char *mount, const char *cgroup, void *data)
{
  (void) mount;
  ((struct fake *) data)->calls++;
  if (strcmp (cgroup, "/unknown") == 0)
    return -1;
  return strcmp (cgroup, "/gone") != 0;
}

static int
fake_pid (pid_t pid, unsigned long long *start, void *data)
{
  ((struct fake *) data)->calls++;
  switch (pid)
    {
    case 100:
      *start = 5000;
      return 1;
    case 200:
      return 0;
    case 300:
      return -1;
    default:
      *start = 1;
      return 1;
    }
}

static void
test_reconcile_fake (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  static const struct
  {
    const char *id;
    const char *cgroup;
    pid_t pid;
    unsigned long long start;
    bool kept;
  } cases[] = {
    { "alive", "/a", 100, 5000, true },
    { "reused", "/b", 100, 4999, false },
    { "exited", "/c", 200, 7, false },
    { "pid unknown", "/d", 300, 7, true },
    { "cgroup gone", "/gone", 100, 5000, false },
    { "cgroup unknown", "/unknown", 100, 5000, true },
    { "no pid", "/e", 0, 0, true },
    { "no pid, gone", "/gone", 0, 0, false },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      char cpu[8];
      snprintf (cpu, sizeof cpu, "%zu", i);
      struct cp_ledger_entry e = entry (cases[i].id, CP_MODE_EXCLUSIVE, cpu, cpu);
      free (e.cgroup);
      e.cgroup = cp_xstrdup (cases[i].cgroup);
      e.pid = cases[i].pid;
      e.start_time = cases[i].start;
      e.cgroup_ino = cases[i].pid ? 0 : 1; /* the plugin's, its cgroup recorded: not pending */
      put_ok (l, &e);
      cp_ledger_entry_clear (&e);
    }
  struct fake f = { 0 };
  struct cp_ledger_liveness fake = { .cgroup_exists = fake_cgroup, .pid_start_time = fake_pid, .data = &f };
  unsigned dropped;
  expect_ok (cp_ledger_reconcile (l, &fake, &dropped, &err), err);
  assert_int_equal (dropped, 4);
  assert_true (f.calls > 0);
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    if ((cp_ledger_find (l, cases[i].id) != NULL) != cases[i].kept)
      fail_msg ("%s: %s", cases[i].id, cases[i].kept ? "dropped" : "kept");
  /* Order is kept. */
  assert_string_equal (cp_ledger_at (l, 0)->id, "alive");
  assert_string_equal (cp_ledger_at (l, 3)->id, "no pid");

  struct cp_ledger_liveness broken = { .cgroup_exists = fake_cgroup };
  assert_int_equal (cp_ledger_reconcile (l, &broken, &dropped, &err), -1);
  cp_error_free (&err);
  cp_ledger_close (l);
}

/* An entry decided before its cgroup was made (the NRI plugin's: pid 0, no inode)
   is kept while its cgroup does not exist yet, however long ago it was placed (a
   container may start long after it was created), and so is a pinned unit's held
   between its stop and its next start (`apply:unit:`, no inode); one with an inode,
   a pid, or another `apply:` id is dropped. */
static void
test_reconcile_pending (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  long long now = (long long) time (NULL);
  static const struct
  {
    const char *id;
    long long age;
    unsigned long long ino;
    pid_t pid;
    bool kept;
  } cases[] = {
    { "pending", 1, 0, 0, true },
    { "pending, a day old", 86400, 0, 0, true },
    { "apply:/gone", 1, 0, 0, false },
    { "made, then gone", 1, 42, 0, false },
    { "with a pid", 1, 0, 100, false },
    { "apply:unit:held.service", 86400, 0, 0, true }, /* a pinned unit, stopped: held */
    { "apply:unit:ran.service", 1, 42, 0, false },    /* its cgroup gone while it ran */
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      char cpu[8];
      snprintf (cpu, sizeof cpu, "%zu", i);
      struct cp_ledger_entry e = entry (cases[i].id, CP_MODE_EXCLUSIVE, cpu, cpu);
      free (e.cgroup);
      e.cgroup = cp_xstrdup ("/gone");
      e.placed_at = now - cases[i].age;
      e.cgroup_ino = cases[i].ino;
      e.pid = cases[i].pid;
      e.start_time = cases[i].pid ? 5000 : 0;
      put_ok (l, &e);
      cp_ledger_entry_clear (&e);
    }
  struct fake f = { 0 };
  struct cp_ledger_liveness fake = { .cgroup_exists = fake_cgroup, .pid_start_time = fake_pid, .data = &f };
  unsigned dropped;
  expect_ok (cp_ledger_reconcile (l, &fake, &dropped, &err), err);
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    if ((cp_ledger_find (l, cases[i].id) != NULL) != cases[i].kept)
      fail_msg ("%s: %s", cases[i].id, cases[i].kept ? "dropped" : "kept");
  assert_int_equal (dropped, 4);
  assert_true (cp_ledger_entry_pending (cp_ledger_find (l, "pending, a day old")));
  assert_true (cp_ledger_entry_pending (cp_ledger_find (l, "apply:unit:held.service")));
  cp_ledger_close (l);
}

static bool
check_only_askers (const struct cp_ledger_entry *e, void *data)
{
  (void) data;
  return e->sched_cache == CP_ASK_ON;
}

/* A check that says no keeps the entry as it is, unlooked-at: a gone container
   that asked for cache-aware scheduling is dropped, one that did not stays. */
static void
test_reconcile_check (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = LEDGER2 (ENTRY_WITH ("quiet", "exclusive", "0", "0", KERNEL ("none", "false")) ","
                              ENTRY_WITH ("asker", "exclusive", "1", "1", KERNEL ("on", "false")) ","
                              ENTRY_WITH ("quiet2", "exclusive", "2", "2", KERNEL ("off", "false")));
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      struct cp_ledger_entry *e = (struct cp_ledger_entry *) cp_ledger_at (l, i);
      free (e->cgroup);
      e->cgroup = cp_xstrdup ("/gone");
      e->cgroup_ino = e->pid ? 0 : 1; /* not pending */
    }
  struct fake f = { 0 };
  struct cp_ledger_liveness alive
      = { .cgroup_exists = fake_cgroup, .pid_start_time = fake_pid, .check = check_only_askers, .data = &f };
  unsigned dropped;
  expect_ok (cp_ledger_reconcile (l, &alive, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  assert_int_equal (f.calls, 1);
  assert_int_equal (cp_ledger_count (l), 2);
  assert_string_equal (cp_ledger_at (l, 0)->id, "quiet");
  assert_string_equal (cp_ledger_at (l, 1)->id, "quiet2");

  alive.check = NULL;
  expect_ok (cp_ledger_reconcile (l, &alive, &dropped, &err), err);
  assert_int_equal (dropped, 2);
  assert_int_equal (cp_ledger_count (l), 0);
  cp_ledger_close (l);
}

/* Drift: a fake whose cgroups run on what DATA says (NULL: cannot be read). */
struct drift_fake
{
  const char *live;
  unsigned told;
  char before[32];
  unsigned long long ino; /* every cgroup's inode */
  unsigned ino_asked;
};

static int
drift_cgroup (const char *mount, const char *cgroup, hwloc_bitmap_t cpus, unsigned long long *ino, void *data)
{
  (void) mount, (void) cgroup;
  struct drift_fake *f = data;
  if (ino)
    {
      *ino = f->ino;
      f->ino_asked++;
    }
  hwloc_bitmap_zero (cpus);
  if (f->live)
    {
      hwloc_bitmap_t set = tu_set (f->live);
      hwloc_bitmap_copy (cpus, set);
      hwloc_bitmap_free (set);
    }
  return 1;
}

static int
drift_pid (pid_t pid, unsigned long long *start, void *data)
{
  (void) pid, (void) data;
  *start = 0;
  return 1;
}

static void
drift_told (const struct cp_ledger_entry *e, hwloc_const_bitmap_t before, void *data)
{
  (void) e;
  struct drift_fake *f = data;
  f->told++;
  cleanup_free char *b = cp_cpulist_format (before);
  snprintf (f->before, sizeof f->before, "%s", b);
}

/* Reconcile brings each entry's drift up to date, tells once per change, marks
   the ledger for commit only on a change, and usage counts the drifted CPUs.
   (`apply` entries: judged by their cgroup alone; a pending entry of the NRI
   plugin's has no drift judged, test_reconcile_pending_no_drift.) */
static void
test_reconcile_drift (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = LEDGER (ENTRY ("apply:a", "0-1") "," ENTRY_WITH ("apply:s", "shared", "8", "", ""));
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);
  struct drift_fake f = { .live = "0-1" };
  struct cp_ledger_liveness alive
      = { .cgroup_cpus = drift_cgroup, .pid_start_time = drift_pid, .drifted = drift_told, .data = &f };

  l->dirty = false;
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  assert_int_equal (f.told, 1); /* s runs on 0-1, not its 8 */
  tu_assert_set (cp_ledger_find (l, "apply:a")->drift, "");
  tu_assert_set (cp_ledger_find (l, "apply:s")->drift, "0-1");

  f.live = "2-3";
  f.told = 0;
  l->dirty = false;
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  assert_int_equal (f.told, 2);
  assert_string_equal (f.before, "0-1"); /* s's: it had drifted to 0-1 */
  assert_true (l->dirty);
  tu_assert_set (cp_ledger_find (l, "apply:a")->drift, "2-3");
  tu_assert_set (cp_ledger_find (l, "apply:a")->cpus, "0-1");
  tu_assert_set (cp_ledger_find (l, "apply:a")->held, "0-1");

  struct cp_ledger_usage u;
  cp_ledger_usage (l, NULL, &u);
  tu_assert_set (u.held, "0-3");
  assert_int_equal (u.n_shared, 1);
  tu_assert_set (u.shared[0], "2-3,8");
  cp_ledger_usage_release (&u);
  cp_ledger_usage (l, "apply:a", &u);
  tu_assert_set (u.held, "");
  cp_ledger_usage_release (&u);

  /* The same again: nothing told, nothing to commit. */
  f.told = 0;
  l->dirty = false;
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  assert_int_equal (f.told, 0);
  assert_false (l->dirty);

  /* Unreadable: nothing judged, the drift kept. */
  f.live = NULL;
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  assert_int_equal (f.told, 0);
  assert_false (l->dirty);
  tu_assert_set (cp_ledger_find (l, "apply:a")->drift, "2-3");

  /* Back on its own CPUs: the drift forgotten, told once. */
  f.live = "0-1";
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  tu_assert_set (cp_ledger_find (l, "apply:a")->drift, "");
  assert_string_equal (f.before, "2-3"); /* s went from 2-3 to 0-1, told last */
  assert_int_equal (f.told, 2);
  assert_true (l->dirty);
  cp_ledger_usage (l, NULL, &u);
  tu_assert_set (u.held, "0-1");
  cp_ledger_usage_release (&u);
  cp_ledger_close (l);
}

/* A pending entry (the NRI plugin's, its cgroup not recorded yet) whose cgroup
   exists already runs on what the runtime gave it so far: no drift is judged (its
   CPUs would be withheld for what it was never given) until its plugin records
   the cgroup. */
static void
test_reconcile_pending_no_drift (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = LEDGER (ENTRY ("p", "0"));
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);
  assert_true (cp_ledger_entry_pending (cp_ledger_find (l, "p")));
  struct drift_fake f = { .live = "0-3" };
  struct cp_ledger_liveness alive
      = { .cgroup_cpus = drift_cgroup, .pid_start_time = drift_pid, .drifted = drift_told, .data = &f };
  expect_ok (cp_ledger_reconcile (l, &alive, NULL, &err), err);
  assert_int_equal (f.told, 0);
  tu_assert_set (cp_ledger_find (l, "p")->drift, "");
  struct cp_ledger_usage u;
  cp_ledger_usage (l, NULL, &u);
  tu_assert_set (u.held, "0");
  cp_ledger_usage_release (&u);
  cp_ledger_close (l);
}

/* A cgroup removed and made again (a service restart) is another cgroup: the
   entry that recorded the old one's inode is dropped, not judged drifted to the
   new one's CPUs; an entry without an inode (an older ledger's `apply` entry) is judged as before,
   and its cgroup's inode is not even asked for. */
static void
test_reconcile_recreated (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = "{\"version\":3,\"entries\":["
                     "{\"id\":\"r\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/r\",\"cgroup_ino\":7,\"pid\":0,"
                     "\"start_time\":0,\"mode\":\"exclusive\",\"cpus\":\"0\",\"held\":\"0\",\"mems\":\"0\","
                     "\"placed_at\":1,\"sched_cache\":\"none\",\"core_sched\":false,\"drift\":\"\"},"
                     "{\"id\":\"apply:old\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/o\",\"pid\":0,"
                     "\"start_time\":0,\"mode\":\"exclusive\",\"cpus\":\"1\",\"held\":\"1\",\"mems\":\"0\","
                     "\"placed_at\":1,\"sched_cache\":\"none\",\"core_sched\":false,\"drift\":\"\"}]}";
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);
  assert_true (cp_ledger_find (l, "r")->cgroup_ino == 7 && cp_ledger_find (l, "apply:old")->cgroup_ino == 0);
  struct drift_fake f = { .live = "0-3", .ino = 7 };
  struct cp_ledger_liveness alive = { .cgroup_cpus = drift_cgroup, .pid_start_time = drift_pid, .data = &f };
  unsigned dropped = 9;
  expect_ok (cp_ledger_reconcile (l, &alive, &dropped, &err), err);
  assert_int_equal (dropped, 0);
  assert_int_equal (f.ino_asked, 1); /* r's only */
  tu_assert_set (cp_ledger_find (l, "r")->drift, "0-3");

  f.ino = 8; /* both cgroups made again */
  expect_ok (cp_ledger_reconcile (l, &alive, &dropped, &err), err);
  assert_int_equal (dropped, 1);
  assert_null (cp_ledger_find (l, "r"));
  tu_assert_set (cp_ledger_find (l, "apply:old")->drift, "0-3");

  /* The inode is written back, and only where it is known. */
  struct cp_ledger_entry e = *cp_ledger_find (l, "apply:old");
  e.id = "r2";
  e.cgroup = "/r2";
  e.cgroup_ino = 8;
  e.cpus = e.held = tu_set ("2");
  e.drift = NULL;
  expect_ok (cp_ledger_put (l, &e, &err), err);
  hwloc_bitmap_free (e.cpus);
  cleanup_free char *out = cp_ledger_serialize (l);
  assert_non_null (strstr (out, "\"cgroup\":\"/r2\",\"cgroup_ino\":8,"));
  assert_null (strstr (out, "\"cgroup\":\"/o\",\"cgroup_ino\""));
  cp_ledger_close (l);
}

/* A container's name: optional (ledgers without one read as before), kept
   through a commit only when known, and bounded and clean (text.h) when put: a
   name from a hostile annotation is cut and sanitized by the front end first. */
static void
test_entry_name (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = LEDGER3 (ENTRY_WITH ("a", "exclusive", "0", "0", DRIFT ("") NAME ("ns/pod/web")) ","
                              ENTRY_WITH ("b", "exclusive", "1", "1", DRIFT ("")));
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);
  assert_string_equal (cp_ledger_find (l, "a")->name, "ns/pod/web");
  assert_null (cp_ledger_find (l, "b")->name);
  cleanup_free char *out = cp_ledger_serialize (l);
  assert_non_null (strstr (out, "{\"id\":\"a\",\"name\":\"ns/pod/web\","));
  assert_null (strstr (out, "{\"id\":\"b\",\"name\""));

  /* 253 bytes is the most. */
  char longest[CP_LEDGER_MAX_NAME + 2];
  memset (longest, 'n', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0';
  struct cp_ledger_entry e = entry ("c", CP_MODE_EXCLUSIVE, "2", "2");
  e.name = longest;
  assert_int_equal (cp_ledger_put (l, &e, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  expect_contains (cp_error_message (err), "`name` is longer than 253 bytes");
  cp_error_free (&err);
  longest[CP_LEDGER_MAX_NAME] = '\0';
  expect_ok (cp_ledger_put (l, &e, &err), err);

  /* Raw control characters are refused, however they came. */
  char esc[] = "web\x1b]0;owned\x07";
  e.name = esc;
  assert_int_equal (cp_ledger_put (l, &e, &err), -1);
  expect_contains (cp_error_message (err), "`name` has a control character");
  cp_error_free (&err);

  /* What a front end does with a hostile annotation (10 KB, escapes, a cut
     UTF-8 character at the limit): a name the entry check accepts. */
  size_t n = 10240;
  cleanup_free char *hostile = cp_xmalloc0 (n + 1);
  for (size_t i = 0; i < n; i++)
    hostile[i] = "\x1b[31m\xe2\x82\xac\n"[i % 9];
  cleanup_free char *clean = cp_text_clean_copy (hostile, CP_LEDGER_MAX_NAME);
  assert_true (strlen (clean) <= CP_LEDGER_MAX_NAME);
  assert_true (cp_text_valid (clean, strlen (clean)));
  e.name = clean;
  expect_ok (cp_ledger_put (l, &e, &err), err);
  free (e.id);
  free (e.cgroup_mount);
  free (e.cgroup);
  hwloc_bitmap_free (e.cpus);
  hwloc_bitmap_free (e.held);
  hwloc_bitmap_free (e.mems);

  /* Through the text and back, the same names. */
  cleanup_free char *again = cp_ledger_serialize (l);
  struct cp_ledger *l2 = NULL;
  expect_ok (cp_ledger_parse (again, strlen (again), &l2, &err), err);
  assert_string_equal (cp_ledger_find (l2, "c")->name, clean);
  cp_ledger_close (l2);
  cp_ledger_close (l);
}

/* ------------------------------------------------------------------ usage */

static void
test_usage (void **state)
{
  (void) state;
  cp_error_t err = NULL;
  struct cp_ledger *l = NULL;
  const char *text = LEDGER (ENTRY ("a", "0-3") "," ENTRY_WITH ("b", "exclusive", "8", "8-9", "") ","
                             ENTRY_WITH ("s1", "shared", "0-15", "", "") "," ENTRY_WITH ("s2", "shared", "16-31", "", ""));
  expect_ok (cp_ledger_parse (text, strlen (text), &l, &err), err);

  struct cp_ledger_usage u;
  cp_ledger_usage (l, NULL, &u);
  tu_assert_set (u.usage.held, "0-3,8-9");
  assert_int_equal (u.usage.n_shared, 2);
  tu_assert_set (u.usage.shared[0], "0-15");
  tu_assert_set (u.usage.shared[1], "16-31");
  cp_ledger_usage_release (&u);

  cp_ledger_usage (l, "b", &u);
  tu_assert_set (u.usage.held, "0-3");
  assert_int_equal (u.usage.n_shared, 2);
  cp_ledger_usage_release (&u);

  cp_ledger_usage (l, "s1", &u);
  tu_assert_set (u.usage.held, "0-3,8-9");
  assert_int_equal (u.usage.n_shared, 1);
  tu_assert_set (u.usage.shared[0], "16-31");
  /* The usage owns its storage: it outlives the ledger. */
  cp_ledger_close (l);
  tu_assert_set (u.usage.shared[0], "16-31");
  tu_assert_set (u.held, "0-3,8-9");
  cp_ledger_usage_release (&u);

  expect_ok (cp_ledger_parse (LEDGER (""), strlen (LEDGER ("")), &l, &err), err);
  cp_ledger_usage (l, "x", &u);
  assert_true (hwloc_bitmap_iszero (u.usage.held));
  assert_int_equal (u.usage.n_shared, 0);
  cp_ledger_usage_release (&u);
  cp_ledger_close (l);
}

/* -------------------------------------------------------- fault injection */

#ifdef CACHEPIN_FAULT_INJECTION
static enum cp_ledger_fault_point kill_at;

static int
kill_here (enum cp_ledger_fault_point point, void *data)
{
  (void) data;
  if (point == kill_at)
    _exit (42);
  return 0;
}

static int
fail_here (enum cp_ledger_fault_point point, void *data)
{
  (void) data;
  return point == kill_at ? EIO : 0;
}

/* Killed at each step of commit: the next open sees the old or the new ledger. */
static void
test_fault_kill (void **state)
{
  static const enum cp_ledger_fault_point points[] = {
    CP_LEDGER_FAULT_TMP_WRITTEN, CP_LEDGER_FAULT_TMP_SYNCED, CP_LEDGER_FAULT_PREV_KEPT, CP_LEDGER_FAULT_RENAMED,
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (points); i++)
    {
      struct tdir t = *(struct tdir *) *state;
      snprintf (t.state, sizeof t.state, "%s/state-%zu", t.root, i);
      cp_error_t err = NULL;
      struct cp_ledger *l = open_ok (t.state);
      struct cp_ledger_entry old = entry ("old", CP_MODE_EXCLUSIVE, "0", "0");
      put_ok (l, &old);
      expect_ok (cp_ledger_commit (l, &err), err);
      cp_ledger_close (l);

      pid_t child = fork ();
      assert_true (child >= 0);
      if (child == 0)
        {
          kill_at = points[i];
          cp_ledger_set_fault_hook (kill_here, NULL);
          struct cp_ledger_entry e = entry ("new", CP_MODE_EXCLUSIVE, "1", "1");
          if (cp_ledger_open (t.state, 1000, &l, &err) < 0 || cp_ledger_put (l, &e, &err) < 0)
            _exit (1);
          cp_ledger_commit (l, &err);
          _exit (2);
        }
      assert_int_equal (wait_status (child), 42);

      l = open_ok (t.state);
      assert_false (cp_ledger_was_recovered (l, NULL));
      assert_non_null (cp_ledger_find (l, "old"));
      if (points[i] == CP_LEDGER_FAULT_RENAMED)
        assert_non_null (cp_ledger_find (l, "new"));
      else
        assert_null (cp_ledger_find (l, "new"));
      /* The stale tmp (if any) does not stop the next commit. */
      struct cp_ledger_entry e = entry ("next", CP_MODE_EXCLUSIVE, "2", "2");
      put_ok (l, &e);
      expect_ok (cp_ledger_commit (l, &err), err);
      cp_ledger_close (l);
      l = open_ok (t.state);
      assert_non_null (cp_ledger_find (l, "next"));
      cp_ledger_close (l);
      cp_ledger_entry_clear (&e);
      cp_ledger_entry_clear (&old);
    }
}

/* A step that fails: commit reports it, the old ledger stays, a retry works. */
static void
test_fault_fail (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  cp_error_t err = NULL;
  struct cp_ledger *l = open_ok (t.state);
  struct cp_ledger_entry e = entry ("a", CP_MODE_EXCLUSIVE, "0", "0");
  put_ok (l, &e);
  kill_at = CP_LEDGER_FAULT_TMP_WRITTEN;
  cp_ledger_set_fault_hook (fail_here, NULL);
  assert_int_equal (cp_ledger_commit (l, &err), -1);
  expect_contains (cp_error_message (err), "fault injected");
  cp_error_free (&err);
  assert_false (state_exists (&t, CP_LEDGER_TMP_FILE));
  assert_false (state_exists (&t, CP_LEDGER_FILE));
  cp_ledger_set_fault_hook (NULL, NULL);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);
  l = open_ok (t.state);
  assert_int_equal (cp_ledger_count (l), 1);
  cp_ledger_close (l);
  cp_ledger_entry_clear (&e);
}
#endif

/* ---------------------------------------------------------- the parsed-ledger cache */

/* A writer other than this process (the hook, apply): a child, without the cache,
   puts E into DIR's ledger and commits. */
static void
other_writer_puts (const char *dir, const struct cp_ledger_entry *e)
{
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      cp_ledger_cache_keep (false);
      cp_error_t err = NULL;
      struct cp_ledger *l = NULL;
      if (cp_ledger_open (dir, 5000, &l, &err) < 0 || cp_ledger_put (l, e, &err) < 0
          || cp_ledger_commit (l, &err) < 0)
        _exit (1);
      cp_ledger_close (l);
      _exit (0);
    }
  assert_int_equal (wait_status (pid), 0);
}

/* cp_ledger_cache_keep(): an unchanged ledger.json is not read again (its parsed
   entries come back from the cache), and a write by another process, even one of
   the same size, is always read. */
static void
test_cache_other_writer (void **state)
{
  struct tdir t = *(struct tdir *) *state;
  cp_error_t err = NULL;
  unsigned long hits, misses;
  cp_ledger_cache_keep (true);
  struct cp_ledger *l = open_ok (t.state);
  struct cp_ledger_entry a = entry ("a", CP_MODE_EXCLUSIVE, "1", "1");
  put_ok (l, &a);
  expect_ok (cp_ledger_commit (l, &err), err);
  cp_ledger_close (l);

  /* Ours, unchanged: from the cache, twice. */
  for (int i = 0; i < 2; i++)
    {
      l = open_ok (t.state);
      assert_non_null (cp_ledger_find (l, "a"));
      assert_int_equal (cp_ledger_count (l), 1);
      cp_ledger_close (l);
    }
  cp_ledger_cache_stats (&hits, &misses);
  assert_int_equal (hits, 2);

  /* Another process rewrites "a" on another CPU: the same size, another file. */
  struct cp_ledger_entry a2 = entry ("a", CP_MODE_EXCLUSIVE, "2", "2");
  other_writer_puts (t.state, &a2);
  l = open_ok (t.state);
  cp_ledger_cache_stats (&hits, &misses);
  assert_int_equal (hits, 2);
  assert_int_equal (misses, 1);
  tu_assert_set (cp_ledger_find (l, "a")->cpus, "2");
  cp_ledger_close (l);

  /* Another process adds "b": read again. */
  struct cp_ledger_entry b = entry ("b", CP_MODE_EXCLUSIVE, "3", "3");
  other_writer_puts (t.state, &b);
  l = open_ok (t.state);
  assert_non_null (cp_ledger_find (l, "b"));
  assert_int_equal (cp_ledger_count (l), 2);
  /* Changed in memory and not committed: not cached; the file is read next time. */
  assert_true (cp_ledger_remove (l, "b"));
  cp_ledger_close (l);
  l = open_ok (t.state);
  assert_non_null (cp_ledger_find (l, "b"));
  cp_ledger_cache_stats (&hits, &misses);
  assert_int_equal (hits, 2);
  assert_int_equal (misses, 3);
  cp_ledger_close (l);
  /* Then unchanged again: from the cache. */
  l = open_ok (t.state);
  assert_non_null (cp_ledger_find (l, "b"));
  cp_ledger_close (l);
  cp_ledger_cache_stats (&hits, &misses);
  assert_int_equal (hits, 3);

  cp_ledger_cache_keep (false);
  cp_ledger_entry_clear (&a);
  cp_ledger_entry_clear (&a2);
  cp_ledger_entry_clear (&b);
}

/* cp_ledger_usage(): one shared set per shared entry, in the ledger's order, equal
 * sets one bitmap (issue 22), a drifted entry's drift counted, the excluded entry
 * and the exclusive ones left out of the shared sets. */
static void
test_usage_shared_sets (void **state)
{
  (void) state;
  cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
  static const char *const cpus[] = { "0", "0", "1", "0", "0-1", "1", "0" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cpus); i++)
    {
      char id[16];
      snprintf (id, sizeof id, "s%zu", i);
      struct cp_ledger_entry e = entry (id, CP_MODE_SHARED, cpus[i], "");
      if (i == 6)
        e.drift = tu_set ("3");
      put_ok (l, &e);
      cp_ledger_entry_clear (&e);
    }
  struct cp_ledger_entry x = entry ("x", CP_MODE_EXCLUSIVE, "4-5", "4-5");
  put_ok (l, &x);
  cp_ledger_entry_clear (&x);
  struct cp_ledger_usage u;
  cp_ledger_usage (l, "s1", &u);
  static const char *const want[] = { "0", "1", "0", "0-1", "1", "0,3" };
  assert_int_equal (u.n_shared, CP_ARRAY_SIZE (want));
  for (size_t i = 0; i < u.n_shared; i++)
    tu_assert_set (u.shared[i], want[i]);
  assert_ptr_equal (u.shared[0], u.shared[2]);
  assert_ptr_equal (u.shared[1], u.shared[4]);
  assert_true (u.shared[0] != u.shared[5]);
  assert_int_equal (u.n_distinct, 4);
  tu_assert_set (u.held, "4-5");
  assert_int_equal (u.usage.n_shared, u.n_shared);
  cp_ledger_usage_release (&u);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_usage_shared_sets),
    cmocka_unit_test_setup_teardown (test_round_trip, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_cache_other_writer, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_lock_timeout, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_on_commit, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_lock_replaced_while_held, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_concurrency, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_corruption, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_kernel_fields, tdir_setup, tdir_teardown),
    cmocka_unit_test (test_utf8_text),
    cmocka_unit_test_setup_teardown (test_corruption_files, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_prev_generation, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_prev_kept, tdir_setup, tdir_teardown),
    cmocka_unit_test (test_put_refuses),
    cmocka_unit_test (test_put_aliased),
    cmocka_unit_test_setup_teardown (test_stale_tmp, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_state_dir, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_state_dir_not_ours, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_bad_lock, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_bad_lock_race, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_bad_ledger_socket, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_bad_tmp, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_reconcile_real_process, tdir_setup, tdir_teardown),
    cmocka_unit_test (test_reconcile_zombie),
    cmocka_unit_test (test_proc_stat_real_comm),
    cmocka_unit_test (test_proc_stat_parse),
    cmocka_unit_test_setup_teardown (test_reconcile_cgroup_removed, tdir_setup, tdir_teardown),
    cmocka_unit_test (test_reconcile_keeps_claims),
    cmocka_unit_test (test_reconcile_fake),
    cmocka_unit_test (test_reconcile_pending),
    cmocka_unit_test (test_reconcile_pending_no_drift),
    cmocka_unit_test (test_reconcile_drift),
    cmocka_unit_test (test_reconcile_recreated),
    cmocka_unit_test (test_entry_name),
    cmocka_unit_test (test_reconcile_check),
    cmocka_unit_test (test_usage),
#ifdef CACHEPIN_FAULT_INJECTION
    cmocka_unit_test_setup_teardown (test_fault_kill, tdir_setup, tdir_teardown),
    cmocka_unit_test_setup_teardown (test_fault_fail, tdir_setup, tdir_teardown),
#endif
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
