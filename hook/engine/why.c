/* cachepin: `cachepin why` gathered (why.h): the container a word names, its
 * journal records and its ledger entry; and the records `status` leads with. */
#define _GNU_SOURCE
#include "why.h"

#include <string.h>
#include <time.h>

#include "bitmap.h"
#include "hostconfig.h"
#include "ledger.h"
#include "status_internal.h"
#include "text.h"

json_object *
cp_why_record_json (const struct cp_journal_record *r)
{
  json_object *o = json_object_new_object ();
  add (o, "time", json_object_new_int64 (r->time));
  add (o, "front", jstr (cp_journal_front_name (r->front)));
  add (o, "kind", jstr (cp_journal_kind_name (r->kind)));
  add (o, "id", jstr (r->id));
  add (o, "name", jstr (r->name ? r->name : ""));
  add (o, "cgroup", jstr (r->cgroup ? r->cgroup : ""));
  add (o, "cpus", r->cpus ? jcpulist (r->cpus) : jstr (""));
  add (o, "mems", r->mems ? jcpulist (r->mems) : jstr (""));
  add (o, "reason", jstr (r->reason ? r->reason : ""));
  return o;
}

/* ------------------------------------------------------------------ attention */

/* Whether R decides a container's fate (a switch record does not: it is the
   host's). */
static bool
decides (const struct cp_journal_record *r)
{
  return r->kind != CP_JOURNAL_SWITCH;
}

/* The newest record of L before index END about ID of kind KIND, or NULL. */
static const struct cp_journal_record *
newest_of (const struct cp_journal_list *l, size_t end, const char *id, enum cp_journal_kind kind)
{
  for (size_t i = end; i > 0; i--)
    if (l->records[i - 1].kind == kind && strcmp (l->records[i - 1].id, id) == 0)
      return &l->records[i - 1];
  return NULL;
}

/* Whether L's record I is its container's newest deciding one. */
static bool
newest_for_its_id (const struct cp_journal_list *l, size_t i)
{
  for (size_t j = i + 1; j < l->n; j++)
    if (decides (&l->records[j]) && strcmp (l->records[j].id, l->records[i].id) == 0)
      return false;
  return true;
}

static bool
needs_attention (const struct cp_journal_list *l, size_t i)
{
  const struct cp_journal_record *r = &l->records[i];
  if (r->kind == CP_JOURNAL_UNPLACED || r->kind == CP_JOURNAL_REFUSED)
    return true;
  if (r->kind != CP_JOURNAL_DRIFT)
    return false;
  /* Back where it was placed: the drift is over. */
  const struct cp_journal_record *placed = newest_of (l, i, r->id, CP_JOURNAL_PLACED);
  return placed == NULL || r->cpus == NULL || placed->cpus == NULL || !hwloc_bitmap_isequal (r->cpus, placed->cpus);
}

json_object *
cp_why_attention (const struct cp_journal_list *l, long long now)
{
  json_object *a = json_object_new_array ();
  for (size_t i = 0; i < l->n; i++)
    if (l->records[i].time >= now - CP_WHY_ATTENTION_SECONDS && decides (&l->records[i])
        && newest_for_its_id (l, i) && needs_attention (l, i))
      json_object_array_add (a, cp_why_record_json (&l->records[i]));
  return a;
}

/* ------------------------------------------------------------------ the match */

/* One container the journal or the ledger knows: its id, its newest name ("":
   none) and the time of its newest record (or placement). */
struct candidate
{
  const char *id;
  const char *name;
  long long time;
};

struct candidates
{
  struct candidate *c;
  size_t n;
};

static struct candidate *
candidate_of (struct candidates *cs, const char *id)
{
  for (size_t i = 0; i < cs->n; i++)
    if (strcmp (cs->c[i].id, id) == 0)
      return &cs->c[i];
  cs->c = cp_xrealloc (cs->c, (cs->n + 1) * sizeof *cs->c);
  cs->c[cs->n] = (struct candidate) { .id = id, .name = "" };
  return &cs->c[cs->n++];
}

static void
note (struct candidates *cs, const char *id, const char *name, long long time)
{
  struct candidate *c = candidate_of (cs, id);
  if (time >= c->time)
    {
      c->time = time;
      if (name && *name)
        c->name = name;
    }
  else if (*c->name == '\0' && name)
    c->name = name;
}

/* Every container of the journal (L) and the ledger (LEDGER, may be NULL). */
static void
gather_candidates (const struct cp_journal_list *l, const struct cp_ledger *ledger, struct candidates *cs)
{
  for (size_t i = 0; i < l->n; i++)
    if (decides (&l->records[i]))
      note (cs, l->records[i].id, l->records[i].name, l->records[i].time);
  for (size_t i = 0; ledger && i < cp_ledger_count (ledger); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (ledger, i);
      note (cs, e->id, e->name, e->placed_at);
    }
}

/* "`q`: ambiguous, ..." naming the candidates whose id begins with Q. */
static int
ambiguous (const struct candidates *cs, const char *q, size_t n, cp_error_t *err)
{
  char *list = cp_xstrdup ("");
  size_t shown = 0;
  for (size_t i = 0; i < cs->n && shown < CP_WHY_MAX_CANDIDATES; i++)
    if (strncmp (cs->c[i].id, q, strlen (q)) == 0)
      {
        char *more = cp_xasprintf ("%s%s%.64s%s%.64s%s", list, shown ? ", " : "", cs->c[i].id,
                                   *cs->c[i].name ? " (" : "", cs->c[i].name, *cs->c[i].name ? ")" : "");
        free (list);
        list = more;
        shown++;
      }
  int r = cp_fail_input (err, "`%.64s`: ambiguous, the ids of %zu containers begin with it: %s%s; give more of the id",
                         q, n, list, n > shown ? ", ..." : "");
  free (list);
  return r;
}

/* The candidate Q names (why.h's order) into *ID; *HOW says how. */
static int
resolve (const struct candidates *cs, const char *q, const char **id, const char **how, cp_error_t *err)
{
  for (size_t i = 0; i < cs->n; i++)
    if (strcmp (cs->c[i].id, q) == 0)
      {
        *id = cs->c[i].id;
        *how = "id";
        return 0;
      }
  const struct candidate *named = NULL;
  for (size_t i = 0; i < cs->n; i++)
    if (strcmp (cs->c[i].name, q) == 0 && (named == NULL || cs->c[i].time > named->time))
      named = &cs->c[i];
  if (named)
    {
      *id = named->id;
      *how = "name";
      return 0;
    }
  size_t n = 0;
  for (size_t i = 0; i < cs->n; i++)
    if (strncmp (cs->c[i].id, q, strlen (q)) == 0)
      {
        *id = cs->c[i].id;
        n++;
      }
  *how = "prefix";
  if (n == 1)
    return 0;
  if (n > 1)
    return ambiguous (cs, q, n, err);
  return cp_fail_input (err,
                        "`%.64s`: no container of that id, id prefix or name in the journal of decisions or the ledger "
                        "(the journal keeps the last %d decisions; `cachepin status` shows the recent ones)",
                        q, CP_JOURNAL_MAX_RECORDS);
}

/* ------------------------------------------------------------------ the answer */

static json_object *
entry_json (const struct cp_ledger_entry *e)
{
  json_object *o = json_object_new_object ();
  add (o, "origin", jstr (cp_ledger_origin_name (cp_ledger_entry_origin (e))));
  add (o, "cgroup_mount", jstr (e->cgroup_mount));
  add (o, "cgroup", jstr (e->cgroup));
  add (o, "pid", e->pid > 0 ? json_object_new_int ((int) e->pid) : NULL);
  add (o, "mode", jstr (cp_mode_name (e->mode)));
  add (o, "cpus", jcpulist (e->cpus));
  add (o, "held", jcpulist (e->held));
  add (o, "mems", jcpulist (e->mems));
  add (o, "placed_at", json_object_new_int64 (e->placed_at));
  add (o, "drift", e->drift && !hwloc_bitmap_iszero (e->drift) ? jcpulist (e->drift) : NULL);
  return o;
}

/* "entry" (ID's ledger entry now, null: none) and "entry_error" into O. */
static void
entry_part (json_object *o, const struct cp_ledger *ledger, cp_error_t ledger_err, const char *id)
{
  const struct cp_ledger_entry *e = ledger ? cp_ledger_find (ledger, id) : NULL;
  add (o, "entry", e ? entry_json (e) : NULL);
  add (o, "entry_error", ledger ? NULL : jstr (cp_error_message (ledger_err)));
}

static json_object *
answer (const struct candidates *cs, const struct cp_journal_list *l, const char *q, const char *id, const char *how)
{
  json_object *o = json_object_new_object ();
  add (o, "format", json_object_new_int (CP_WHY_FORMAT));
  add (o, "query", jstr (q));
  add (o, "matched_by", jstr (how));
  add (o, "id", jstr (id));
  const char *name = "";
  json_object *others = json_object_new_array ();
  for (size_t i = 0; i < cs->n; i++)
    if (strcmp (cs->c[i].id, id) == 0)
      name = cs->c[i].name;
  for (size_t i = 0; *name && i < cs->n; i++)
    if (strcmp (cs->c[i].id, id) != 0 && strcmp (cs->c[i].name, name) == 0)
      json_object_array_add (others, jstr (cs->c[i].id));
  add (o, "name", jstr (name));
  add (o, "also_named", others);
  json_object *records = json_object_new_array ();
  for (size_t i = 0; i < l->n; i++)
    if (strcmp (l->records[i].id, id) == 0)
      json_object_array_add (records, cp_why_record_json (&l->records[i]));
  add (o, "records", records);
  return o;
}

int
cp_why_gather (const char *config, const char *query, json_object **out, cp_error_t *err)
{
  if (query == NULL || *query == '\0')
    return cp_fail_input (err, "ID|NAME: required (see `cachepin why --help`)");
  cleanup_free char *q = cp_text_clean_copy (query, CP_JOURNAL_MAX_ID);
  struct cp_hostconfig hc = { 0 };
  if (cp_hostconfig_load (config, &hc, err) < 0)
    return -1;
  cleanup_journal_list struct cp_journal_list *l = NULL;
  if (cp_journal_read (hc.state_dir, 0, &l, err) < 0)
    {
      cp_hostconfig_free (&hc);
      return cp_error_wrap (err, "journal of decisions");
    }
  cleanup_ledger struct cp_ledger *ledger = NULL;
  cleanup_error cp_error_t ledger_err = NULL;
  const char *state;
  if (cp_ledger_read (hc.state_dir, &state, &ledger, &ledger_err) < 0)
    ledger = NULL;
  cp_hostconfig_free (&hc);
  struct candidates cs = { 0 };
  gather_candidates (l, ledger, &cs);
  const char *id = NULL, *how = NULL;
  int r = resolve (&cs, q, &id, &how, err);
  if (r == 0)
    {
      *out = answer (&cs, l, q, id, how);
      entry_part (*out, ledger, ledger_err, id);
    }
  free (cs.c);
  return r;
}
