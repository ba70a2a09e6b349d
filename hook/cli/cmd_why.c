/* `cachepin why ID|NAME`: one container's fate, from the journal of decisions and
 * the ledger (gathered by the engine, hook/engine/why.h): placed where and why,
 * started unplaced or refused and why, released when.  Read-only, as status is:
 * a word that names nothing, or a prefix of several ids, is one line on stderr. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "status_view.h"
#include "why.h"

static const char why_usage[] =
  "Usage: cachepin why [--json] [--config PATH] ID|NAME\n"
  "Explain a container's (or an apply target's) fate from the journal of decisions\n"
  "and the ledger: placed where and why, started unplaced or refused and why,\n"
  "released when; writes nothing.\n\n"
  "  ID|NAME             a container id, the start of one (podman ps and crictl ps\n"
  "                      print 12 characters), apply:<cgroup>, or a name as the\n"
  "                      journal records it (namespace/pod/container, apply's name)\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --json              print one JSON object (keys in docs/status.md)\n"
  "  -h, --help          this text\n";

struct why_args
{
  struct cp_cli_common c;
  const char *query;
};

static int
why_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  (void) err;
  struct why_args *a = args;
  if (opt != 1 || a->query != NULL)
    return 0; /* a second operand: the frame's "unexpected argument" */
  a->query = arg;
  return 1;
}

static const struct option why_options[] = {
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec why_spec = {
  .name = "why",
  .usage = why_usage,
  .shortopts = "-:h",
  .options = why_options,
  .option = why_option,
};

/* ------------------------------------------------------------------ the text */

static const char *
when (json_object *r, char *buf, size_t size)
{
  time_t t = (time_t) num (r, "time");
  struct tm tm;
  if (gmtime_r (&t, &tm) == NULL || strftime (buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
    snprintf (buf, size, "?");
  return buf;
}

/* The newest record of RECORDS that decides the container's fate (a switch
   record is the host's), or NULL. */
static json_object *
last_decision (json_object *records)
{
  for (size_t i = json_object_array_length (records); i > 0; i--)
    {
      json_object *r = json_object_array_get_idx (records, i - 1);
      if (strcmp (S (r, "kind"), "switch") != 0)
        return r;
    }
  return NULL;
}

/* ": REASON", or "" when there is none. */
static const char *
because (json_object *r, char *buf, size_t size)
{
  const char *reason = r ? S (r, "reason") : "";
  snprintf (buf, size, "%s%s", *reason ? ": " : "", reason);
  return buf;
}

/* One line: what became of it, from its entry now (held) or its last decision. */
static void
print_fate (const struct cp_view *v, json_object *why)
{
  json_object *entry = get (why, "entry"), *records = get (why, "records");
  json_object *last = last_decision (records);
  char t[32], why_buf[TEXT_MAX + 8];
  if (entry)
    {
      json_object *placed = NULL;
      for (size_t i = len (why, "records"); i > 0 && placed == NULL; i--)
        if (strcmp (S (at (why, "records", i - 1), "kind"), "placed") == 0)
          placed = at (why, "records", i - 1);
      time_t at_ = (time_t) num (entry, "placed_at");
      struct tm tm;
      if (gmtime_r (&at_, &tm) == NULL || strftime (t, sizeof t, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf (t, sizeof t, "?");
      cp_view_line (v, 10, "%-10splaced on CPUs %s (%s, NUMA nodes %s) since %s UTC, held now%s", "fate",
                    S (entry, "cpus"), S (entry, "mode"), *S (entry, "mems") ? S (entry, "mems") : "none", t,
                    because (placed, why_buf, sizeof why_buf));
      if (!is_null (entry, "drift"))
        cp_view_line (v, 10, "%-10sdrifted: another manager moved it onto CPUs %s (cachepin status shows it)", "",
                      S (entry, "drift"));
      return;
    }
  if (last == NULL)
    {
      cp_view_line (v, 10, "%-10snothing recorded", "fate");
      return;
    }
  const char *kind = S (last, "kind");
  when (last, t, sizeof t);
  because (last, why_buf, sizeof why_buf);
  if (strcmp (kind, "unplaced") == 0)
    cp_view_line (v, 10, "%-10sstarted unplaced at %s UTC, on the CPUs its runtime gave it%s", "fate", t, why_buf);
  else if (strcmp (kind, "refused") == 0)
    cp_view_line (v, 10, "%-10srefused at %s UTC (nothing placed)%s", "fate", t, why_buf);
  else if (strcmp (kind, "released") == 0)
    cp_view_line (v, 10, "%-10sreleased at %s UTC (its CPUs %s given back)%s", "fate", t,
                  *S (last, "cpus") ? S (last, "cpus") : "-", why_buf);
  else
    cp_view_line (v, 10, "%-10s%s at %s UTC, no longer in the ledger%s", "fate", kind, t, why_buf);
}

static void
print_record (const struct cp_view *v, json_object *r)
{
  char t[32], sets[2 * TEXT_MAX] = "";
  const char *cpus = S (r, "cpus"), *mems = S (r, "mems"), *reason = S (r, "reason");
  if (*cpus)
    snprintf (sets, sizeof sets, " cpus %s%s%s", cpus, *mems ? " mems " : "", mems);
  cp_view_line (v, 23, "  %s  %-7s %-8s%s%s%s", when (r, t, sizeof t), S (r, "front"), S (r, "kind"), sets,
                *reason || *sets ? ": " : "", *reason ? reason : "-");
}

static void
print_why (json_object *why, FILE *out)
{
  const struct cp_view v = { .out = out };
  cp_view_line (&v, 10, "%-10s%s", "id", S (why, "id"));
  cp_view_line (&v, 10, "%-10s%s", "name", *S (why, "name") ? S (why, "name") : "none recorded");
  for (size_t i = 0; i < len (why, "also_named"); i++)
    {
      char buf[TEXT_MAX];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (at (why, "also_named", i)));
      cp_text_sanitize (buf);
      cp_view_line (&v, 10, "%-10salso named so, earlier: %s (cachepin why %s)", "", buf, buf);
    }
  print_fate (&v, why);
  if (!is_null (why, "entry_error"))
    cp_view_line (&v, 10, "%-10scould not be read: %s", "ledger", S (why, "entry_error"));
  size_t n = len (why, "records");
  if (n == 0)
    {
      fprintf (out, "journal   no record of it (the journal keeps the last %d decisions)\n", CP_JOURNAL_MAX_RECORDS);
      return;
    }
  fprintf (out, "journal   %zu %s (UTC, oldest first)\n", n, n == 1 ? "record" : "records");
  for (size_t i = 0; i < n; i++)
    print_record (&v, at (why, "records", i));
}

int
cp_cmd_why (int argc, char **argv, cp_error_t *err)
{
  struct why_args a = { 0 };
  int r = cp_cli_begin (&why_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  json_object *why = NULL;
  if (cp_why_gather (a.c.config, a.query, &why, err) < 0)
    return -1;
  if (a.c.json)
    puts (json_object_to_json_string_ext (why, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  else
    print_why (why, stdout);
  json_object_put (why);
  return 0;
}
