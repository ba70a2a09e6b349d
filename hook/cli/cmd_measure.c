/* `cachepin measure`: the win of cachepin's placement measured on this host
 * (hook/engine/measure.h): a communicating workload on the CPUs cachepin would
 * choose and on as many spread across the L3s, interleaved, and an L3-to-L3 table
 * of cache-line round trips.  Writes nothing; needs no root. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "measure.h"
#include "workload.h"

static const char measure_usage[] =
  "Usage: cachepin measure [OPTIONS]\n"
  "Time a communicating workload (a ring of threads handing a token and updating\n"
  "shared cache lines) on the CPUs cachepin would choose for the request (one L3,\n"
  "PE0 first: plan's choice on the empty machine) and on as many CPUs spread over\n"
  "the L3s (one per L3 in turn), interleaved; print the median of each, their\n"
  "ratio, and an L3-to-L3 table of cache-line round trips.  Writes nothing.\n\n" CP_REQUEST_OPTIONS_HELP
  "                      (default --cpus: one L3's cores, at most 8, at least 2)\n"
  "  --rounds K          runs of each set, interleaved (default 7; 1..1000)\n"
  "  --seconds S         the whole run, about (default 6; 0.1..600): four fifths\n"
  "                      for the rounds, one fifth for the table\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH "):\n"
  "                      its cpus, reserved and defaults\n"
  "  --json              print the result as one JSON object\n"
  "  -h, --help          this text\n";

enum
{
  OPT_ROUNDS = 0x200,
  OPT_SECONDS,
};

struct measure_args
{
  struct cp_cli_common c;
  unsigned given;
  struct cp_request req;
  struct cp_measure_options o;
};

/* A decimal number of seconds, 0.1 to 600, at most 3 decimals: "2", "0.5". */
static int
parse_seconds (const char *s, double *out, cp_error_t *err)
{
  unsigned long whole = 0, frac = 0, scale = 1;
  const char *p = s;
  for (; *p >= '0' && *p <= '9' && whole <= 600; p++)
    whole = whole * 10 + (unsigned long) (*p - '0');
  bool digits = p != s;
  if (*p == '.' && p[1] != '\0')
    for (p++; *p >= '0' && *p <= '9' && scale < 1000; p++, scale *= 10)
      frac = frac * 10 + (unsigned long) (*p - '0');
  double v = (double) whole + (double) frac / (double) scale;
  if (!digits || *p != '\0' || v < 0.1 || v > 600)
    return cp_fail_input (err, "--seconds: invalid value `%.64s`: expected seconds from 0.1 to 600 (\"6\", \"0.5\")",
                          s);
  *out = v;
  return 0;
}

static int
measure_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct measure_args *a = args;
  int r = cp_cli_request_option (opt, arg, &a->req, err);
  if (r > 0)
    a->given |= CP_CLI_GIVEN (opt);
  if (r != 0)
    return r;
  switch (opt)
    {
    case OPT_ROUNDS:
      return cp_parse_count (arg, 1000, &a->o.rounds, err) < 0 ? cp_error_wrap (err, "--rounds") : 1;
    case OPT_SECONDS:
      return parse_seconds (arg, &a->o.seconds, err) < 0 ? -1 : 1;
    default:
      return 0;
    }
}

static const struct option measure_options[] = {
  { "rounds", required_argument, NULL, OPT_ROUNDS },
  { "seconds", required_argument, NULL, OPT_SECONDS },
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  CP_REQUEST_LONG_OPTIONS,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec measure_spec = {
  .name = "measure",
  .usage = measure_usage,
  .shortopts = "+:h",
  .options = measure_options,
  .option = measure_option,
};

/* "0,4,8,12" in ring order (a cpulist would hide the order). */
static char *
cpus_text (const unsigned *cpus, unsigned n)
{
  cleanup_free char *s = cp_xstrdup ("");
  for (unsigned i = 0; i < n; i++)
    {
      char *next = cp_xasprintf ("%s%s%u", s, i ? "," : "", cpus[i]);
      free (s);
      s = next;
    }
  return cp_steal_pointer (&s);
}

/* ---- JSON ---- */

static json_object *
stats_json (const unsigned *cpus, unsigned n, unsigned l3s, const double *ns, unsigned rounds,
            const struct cp_measure_stats *st, unsigned long long hops)
{
  json_object *o = json_object_new_object (), *order = json_object_new_array (), *samples = json_object_new_array ();
  for (unsigned i = 0; i < n; i++)
    json_object_array_add (order, json_object_new_int64 (cpus[i]));
  for (unsigned k = 0; k < rounds; k++)
    json_object_array_add (samples, json_object_new_double (ns[k]));
  json_object_object_add (o, "cpus", order);
  json_object_object_add (o, "l3s", json_object_new_int64 (l3s));
  json_object_object_add (o, "hops", json_object_new_int64 ((int64_t) hops));
  json_object_object_add (o, "median_ns", json_object_new_double (st->median));
  json_object_object_add (o, "q1_ns", json_object_new_double (st->q1));
  json_object_object_add (o, "q3_ns", json_object_new_double (st->q3));
  json_object_object_add (o, "samples_ns", samples);
  return o;
}

static json_object *
table_json (const struct cp_measure_sets *s, const struct cp_measure_result *r, json_object **l3s)
{
  json_object *rows = json_object_new_array ();
  *l3s = json_object_new_array ();
  for (unsigned i = 0; i < s->n_l3; i++)
    {
      json_object *l3 = json_object_new_object (), *row = json_object_new_array ();
      json_object_object_add (l3, "index", json_object_new_int64 (s->l3[i].index));
      cleanup_free char *cpus = cp_cpulist_format (s->l3[i].cpus);
      json_object_object_add (l3, "cpus", json_object_new_string (cpus));
      json_object_object_add (l3, "cpu", json_object_new_int64 (s->l3[i].order[0]));
      json_object_object_add (l3, "peer", s->l3[i].n_order > 1 ? json_object_new_int64 (s->l3[i].order[1]) : NULL);
      json_object_array_add (*l3s, l3);
      for (unsigned j = 0; j < s->n_l3; j++)
        {
          double v = r->latency_ns[i * s->n_l3 + j];
          json_object_array_add (row, v < 0 ? NULL : json_object_new_double (v));
        }
      json_object_array_add (rows, row);
    }
  return rows;
}

static void
print_json (const struct cp_measure_sets *s, const struct cp_measure_options *o, const struct cp_measure_result *r)
{
  json_object *j = json_object_new_object (), *l3s, *overhead = json_object_new_object ();
  json_object_object_add (j, "format", json_object_new_int (CP_MEASURE_FORMAT));
  json_object_object_add (j, "threads", json_object_new_int64 (s->n));
  json_object_object_add (j, "lines", json_object_new_int64 (CP_MEASURE_LINES));
  json_object_object_add (j, "rounds", json_object_new_int64 (o->rounds));
  json_object_object_add (j, "run_seconds", json_object_new_double (r->run_seconds));
  json_object_object_add (j, "level", json_object_new_string (s->level));
  json_object_object_add (j, "reason", json_object_new_string (s->reason));
  json_object_object_add (j, "chosen", stats_json (s->chosen, s->n, s->chosen_l3s, r->chosen_ns, o->rounds,
                                                   &r->chosen, r->chosen_hops));
  json_object_object_add (j, "spread", r->spread_ns ? stats_json (s->spread, s->n, s->spread_l3s, r->spread_ns,
                                                                  o->rounds, &r->spread, r->spread_hops)
                                                    : NULL);
  json_object_object_add (j, "ratio", r->spread_ns ? json_object_new_double (r->ratio) : NULL);
  json_object_object_add (j, "verdict", json_object_new_string (cp_measure_verdict_name (r->verdict)));
  json_object_object_add (j, "latency_ns", table_json (s, r, &l3s));
  json_object_object_add (j, "l3", l3s);
  json_object_object_add (j, "pair_seconds", json_object_new_double (r->pair_seconds));
  json_object_object_add (overhead, "clock_ns", json_object_new_double (r->clock_ns));
  json_object_object_add (overhead, "loop_ns", json_object_new_double (r->loop_ns));
  json_object_object_add (j, "overhead", overhead);
  puts (json_object_to_json_string_ext (j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (j);
}

/* ---- text ---- */

/* LABEL, then TEXT wrapped at 80 columns after spaces, continued under its start. */
static void
print_wrapped (const char *label, const char *text)
{
  enum { INDENT = 19, COLS = 80 };
  int col = printf ("%-18s", label);
  for (const char *p = text; *p;)
    {
      size_t word = strcspn (p, " ");
      if (col > INDENT && col + 1 + (int) word > COLS)
        col = printf ("\n%-18s", "") - 1;
      col += printf (" %.*s", (int) word, p);
      p += word;
      p += strspn (p, " ");
    }
  printf ("\n");
}

static void
print_set (const char *what, const unsigned *cpus, unsigned n, unsigned l3s, const char *level,
           const struct cp_measure_stats *st)
{
  cleanup_free char *list = cpus_text (cpus, n);
  cleanup_free char *where = cp_xasprintf ("CPUs %s (%u %s%s)", list, l3s, level, l3s == 1 ? "" : "s");
  printf ("%-18s %-28s %8.1f ns per hand-off (middle half %.1f-%.1f)\n", what, where, st->median, st->q1, st->q3);
}

static void
print_verdict (const struct cp_measure_sets *s, const struct cp_measure_result *r)
{
  switch (r->verdict)
    {
    case CP_MEASURE_CHOSEN_FASTER:
      printf ("%-18s %.2f: a hand-off takes %.2f times as long spread over the %ss as on cachepin's choice\n", "ratio",
              r->ratio, r->ratio, s->level);
      break;
    case CP_MEASURE_SPREAD_FASTER:
      printf ("%-18s %.2f: the spread set was faster here (docs/benchmarks.md says what that can mean)\n", "ratio",
              r->ratio);
      break;
    default:
      printf ("%-18s %.2f of the medians, too noisy to tell: the middle halves overlap (more --rounds or\n"
              "%-18s --seconds, or a quieter host)\n", "ratio", r->ratio, "");
      break;
    }
}

static void
print_table (const struct cp_measure_sets *s, const struct cp_measure_result *r)
{
  printf ("%s-to-%s round trip, ns (a cache-line ping-pong between the first CPU of each; the diagonal:\n"
          "two CPUs of one %s, %.3f s a pair)\n%-8s", s->level, s->level, s->level, r->pair_seconds, "");
  char label[32];
  for (unsigned j = 0; j < s->n_l3; j++)
    {
      snprintf (label, sizeof label, "%s#%u", s->level, s->l3[j].index);
      printf (" %7s", label);
    }
  printf ("\n");
  for (unsigned i = 0; i < s->n_l3; i++)
    {
      snprintf (label, sizeof label, "%s#%u", s->level, s->l3[i].index);
      printf ("%-8s", label);
      for (unsigned j = 0; j < s->n_l3; j++)
        {
          double v = r->latency_ns[i * s->n_l3 + j];
          if (v < 0)
            printf (" %7s", "-");
          else
            printf (" %7.0f", v);
        }
      printf ("\n");
    }
}

static void
print_text (const struct cp_measure_sets *s, const struct cp_measure_options *o, const struct cp_measure_result *r)
{
  printf ("measure: %u threads in a ring, each hand-off moving the token and %u shared cache lines;\n"
          "%u rounds of %.3f s per set%s\n", s->n, CP_MEASURE_LINES, o->rounds, r->run_seconds,
          r->spread_ns ? ", interleaved" : "");
  if (r->verdict == CP_MEASURE_ONE_L3)
    {
      cleanup_free char *cpus = cp_cpulist_format (s->l3[0].cpus);
      printf ("%-18s the CPUs this run may use (%s) share one %s: nothing to compare, no spread run\n", "one L3", cpus,
              s->level);
    }
  if (r->verdict == CP_MEASURE_SAME_L3S)
    printf ("%-18s cachepin's choice spans as many %ss as one CPU per %s would (%u): nothing to\n"
            "%-18s compare, no spread run\n", "same L3s", s->level, s->level, s->chosen_l3s, "");
  print_wrapped ("why these CPUs", s->reason);
  print_set ("cachepin's choice", s->chosen, s->n, s->chosen_l3s, s->level, &r->chosen);
  if (r->spread_ns)
    {
      print_set ("spread over L3s", s->spread, s->n, s->spread_l3s, s->level, &r->spread);
      print_verdict (s, r);
    }
  printf ("%-18s clock_gettime %.0f ns (one thread reads it every 64 hand-offs); the loop alone %.1f ns\n"
          "%-18s per hand-off (one thread, no transfer); thread start and pinning are outside the windows\n",
          "overhead", r->clock_ns, r->loop_ns, "");
  print_table (s, r);
}

static int
run_measure (struct measure_args *a, struct cp_hostconfig *hc, struct cp_measure_sets *s, struct cp_measure_result *r,
             cp_error_t *err)
{
  if (cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  struct cp_container_request creq = { .cpus_source = "--cpus" };
  cp_cli_merge_defaults (&creq.req, &a->req, a->given, &hc->defaults);
  cleanup_bitmap hwloc_bitmap_t allowed = cp_bitmap_new ();
  if (cp_workload_allowed (allowed, err) < 0 || cp_measure_choose (hc, NULL, allowed, &creq, s, err) < 0
      || cp_measure_run (s, &a->o, r, err) < 0)
    return -1;
  if (a->c.json)
    print_json (s, &a->o, r);
  else
    print_text (s, &a->o, r);
  return 0;
}

int
cp_cmd_measure (int argc, char **argv, cp_error_t *err)
{
  struct measure_args a = { .o = { .rounds = CP_MEASURE_DEFAULT_ROUNDS, .seconds = CP_MEASURE_DEFAULT_SECONDS } };
  cp_request_init (&a.req);
  int r = cp_cli_begin (&measure_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  struct cp_hostconfig hc = { 0 };
  struct cp_measure_sets s = { 0 };
  struct cp_measure_result res = { 0 };
  int ret = run_measure (&a, &hc, &s, &res, err);
  cp_measure_result_clear (&res);
  cp_measure_sets_clear (&s);
  cp_hostconfig_free (&hc);
  return ret;
}
