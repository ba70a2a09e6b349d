/* `cachepin why` and status's attention (hook/engine/why.c): which records need
 * attention (the hour, the newest decision of each container, a drift back) and
 * which container a word names (id, name, prefix; ambiguous, nothing), on journals
 * written into a temporary state directory. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "journal.h"
#include "util.h"
#include "why.h"

#define NOW 1800000000LL

static void
push (struct cp_journal_list *l, long long time, enum cp_journal_kind kind, const char *id, const char *name,
      const char *cpus)
{
  struct cp_journal_record *r = cp_journal_list_push (l);
  r->time = time;
  r->front = CP_JOURNAL_HOOK;
  r->kind = kind;
  r->id = cp_xstrdup (id);
  r->name = cp_xstrdup (name ? name : "");
  r->cgroup = cp_xstrdup ("");
  r->reason = cp_xstrdup ("because");
  r->cpus = cp_bitmap_new ();
  if (cpus)
    hwloc_bitmap_list_sscanf (r->cpus, cpus);
  r->mems = cp_bitmap_new ();
}

/* The ids of ATTENTION, space-separated, into a static buffer. */
static const char *
ids (json_object *attention)
{
  static char buf[512];
  buf[0] = '\0';
  for (size_t i = 0; i < json_object_array_length (attention); i++)
    {
      json_object *id = NULL;
      json_object_object_get_ex (json_object_array_get_idx (attention, i), "id", &id);
      snprintf (buf + strlen (buf), sizeof buf - strlen (buf), "%s%s", i ? " " : "", json_object_get_string (id));
    }
  return buf;
}

static void
test_attention (void **state)
{
  (void) state;
  struct cp_journal_list *l = cp_xmalloc0 (sizeof *l);
  push (l, NOW - 4000, CP_JOURNAL_UNPLACED, "old", NULL, NULL);          /* past the hour */
  push (l, NOW - 100, CP_JOURNAL_UNPLACED, "unplaced", NULL, NULL);
  push (l, NOW - 90, CP_JOURNAL_REFUSED, "refused-then-placed", NULL, NULL);
  push (l, NOW - 80, CP_JOURNAL_PLACED, "refused-then-placed", NULL, "0");
  push (l, NOW - 70, CP_JOURNAL_PLACED, "drifted", NULL, "1");
  push (l, NOW - 60, CP_JOURNAL_DRIFT, "drifted", NULL, "0");
  push (l, NOW - 50, CP_JOURNAL_PLACED, "back", NULL, "2");
  push (l, NOW - 45, CP_JOURNAL_DRIFT, "back", NULL, "3");
  push (l, NOW - 40, CP_JOURNAL_DRIFT, "back", NULL, "2");               /* back where placed */
  push (l, NOW - 30, CP_JOURNAL_REFUSED, "refused", NULL, NULL);
  push (l, NOW - 20, CP_JOURNAL_SWITCH, "refused", NULL, NULL);          /* not a decision of its */
  push (l, NOW - 10, CP_JOURNAL_DRIFT, "drift-then-released", NULL, "5");
  push (l, NOW - 5, CP_JOURNAL_RELEASED, "drift-then-released", NULL, "4");
  json_object *a = cp_why_attention (l, NOW);
  assert_string_equal (ids (a), "unplaced drifted refused");
  json_object_put (a);
  /* An hour later, nothing. */
  a = cp_why_attention (l, NOW + CP_WHY_ATTENTION_SECONDS + 1);
  assert_string_equal (ids (a), "");
  json_object_put (a);
  cp_journal_list_free (l);
}

/* ---------------------------------------------------------------- the match */

struct tdir
{
  char root[64];
  char config[128];
};

static int
tdir_setup (void **state)
{
  struct tdir *t = cp_xmalloc0 (sizeof *t);
  strcpy (t->root, "/tmp/cp-why-XXXXXX");
  if (mkdtemp (t->root) == NULL)
    fail_msg ("mkdtemp: %s", strerror (errno));
  snprintf (t->config, sizeof t->config, "%s/config.json", t->root);
  FILE *f = fopen (t->config, "w");
  assert_non_null (f);
  fprintf (f, "{\"state_dir\": \"%s/state\"}\n", t->root);
  fclose (f);
  struct cp_journal_list *l = cp_xmalloc0 (sizeof *l);
  push (l, NOW - 50, CP_JOURNAL_PLACED, "4f1c2e8a9b0d1111", "prod/shop/web", "0");
  push (l, NOW - 40, CP_JOURNAL_RELEASED, "4f1c2e8a9b0d1111", "prod/shop/web", "0");
  push (l, NOW - 30, CP_JOURNAL_PLACED, "77aa00bb11cc2222", "prod/shop/web", "1"); /* the name again */
  push (l, NOW - 20, CP_JOURNAL_UNPLACED, "ambi-one", NULL, NULL);
  push (l, NOW - 10, CP_JOURNAL_UNPLACED, "ambi-two", NULL, NULL);
  char *text = cp_journal_serialize (l, NULL);
  cp_journal_list_free (l);
  char path[160];
  snprintf (path, sizeof path, "%s/state", t->root);
  assert_int_equal (mkdir (path, 0700), 0);
  snprintf (path, sizeof path, "%s/state/%s", t->root, CP_JOURNAL_FILE);
  f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  fclose (f);
  free (text);
  *state = t;
  return 0;
}

static int
tdir_teardown (void **state)
{
  struct tdir *t = *state;
  char cmd[128];
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", t->root);
  if (system (cmd) != 0)
    fail_msg ("%s failed", cmd);
  free (t);
  return 0;
}

static const char *
key (json_object *o, const char *k)
{
  json_object *v = NULL;
  return json_object_object_get_ex (o, k, &v) ? json_object_get_string (v) : NULL;
}

static void
test_match (void **state)
{
  struct tdir *t = *state;
  json_object *o = NULL;
  cp_error_t err = NULL;
  /* A name: its newest container, the other listed. */
  assert_int_equal (cp_why_gather (t->config, "prod/shop/web", &o, &err), 0);
  assert_string_equal (key (o, "matched_by"), "name");
  assert_string_equal (key (o, "id"), "77aa00bb11cc2222");
  json_object *others = NULL;
  json_object_object_get_ex (o, "also_named", &others);
  assert_int_equal (json_object_array_length (others), 1);
  assert_string_equal (json_object_get_string (json_object_array_get_idx (others, 0)), "4f1c2e8a9b0d1111");
  json_object_put (o);
  /* A prefix: the records of that container only. */
  assert_int_equal (cp_why_gather (t->config, "4f1c", &o, &err), 0);
  assert_string_equal (key (o, "matched_by"), "prefix");
  json_object *records = NULL;
  json_object_object_get_ex (o, "records", &records);
  assert_int_equal (json_object_array_length (records), 2);
  assert_string_equal (key (json_object_array_get_idx (records, 1), "kind"), "released");
  json_object *entry = records;
  assert_true (json_object_object_get_ex (o, "entry", &entry));
  assert_null (entry); /* released: nothing held */
  json_object_put (o);
  /* An exact id before a prefix of another. */
  assert_int_equal (cp_why_gather (t->config, "ambi-one", &o, &err), 0);
  assert_string_equal (key (o, "matched_by"), "id");
  json_object_put (o);
  /* Ambiguous: both named, input error. */
  assert_int_equal (cp_why_gather (t->config, "ambi", &o, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_non_null (strstr (cp_error_message (err), "ambi-one"));
  assert_non_null (strstr (cp_error_message (err), "ambi-two"));
  assert_null (strchr (cp_error_message (err), '\n'));
  cp_error_free (&err);
  /* Nothing. */
  assert_int_equal (cp_why_gather (t->config, "nope", &o, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  assert_non_null (strstr (cp_error_message (err), "`nope`"));
  cp_error_free (&err);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_attention),
    cmocka_unit_test_setup_teardown (test_match, tdir_setup, tdir_teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
