#define _GNU_SOURCE
#include "cli.h"
#include "bitmap.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
#include "text.h"
#include "util.h"

int
cp_cli_request_option (int opt, const char *arg, struct cp_request *req, cp_error_t *err)
{
  int r = 0;
  switch (opt)
    {
    case CP_OPT_CPUS:
      if ((r = cp_parse_count (arg, CP_REQUEST_MAX_CPUS, &req->cpus, err)) < 0)
        return cp_error_wrap (err, "--cpus");
      return 1;
    case CP_OPT_ALIGN:
      if ((r = cp_parse_align (arg, &req->align, err)) < 0)
        return cp_error_wrap (err, "--align");
      return 1;
    case CP_OPT_SMT:
      if ((r = cp_parse_smt (arg, &req->smt, err)) < 0)
        return cp_error_wrap (err, "--smt");
      return 1;
    case CP_OPT_MODE:
      if ((r = cp_parse_mode (arg, &req->mode, err)) < 0)
        return cp_error_wrap (err, "--mode");
      return 1;
    case CP_OPT_STRICT:
      req->strict = true;
      return 1;
    default:
      return 0;
    }
}

int
cp_cli_check_count (const struct cp_request *req, hwloc_const_bitmap_t allowed, const char *by, cp_error_t *err)
{
  if (req->cpus <= (unsigned) hwloc_bitmap_weight (allowed))
    return 0;
  cleanup_free char *msg = cp_place_too_many ("--cpus", req->cpus, allowed, by, NULL);
  return cp_fail_unsatisfiable (err, "%s", msg);
}

/* The long option of SPEC closest to the mistyped WORD ("--algin=l3": `align`),
   or NULL (cp_text_closest()). */
static const char *
closest_option (const struct cp_cli_spec *spec, const char *word)
{
  if (strncmp (word, "--", 2) != 0)
    return NULL;
  cleanup_free char *name = cp_xstrndup (word + 2, strcspn (word + 2, "="));
  size_t n = 0;
  while (spec->options[n].name)
    n++;
  cleanup_free const char **names = cp_xcalloc (n ? n : 1, sizeof *names);
  for (size_t i = 0; i < n; i++)
    names[i] = spec->options[i].name;
  return cp_text_closest (name, names, n);
}

int
cp_cli_option_error (int opt, char **argv, const struct cp_cli_spec *spec, cp_error_t *err)
{
  const char *cmd = spec->name;
  if (opt == ':')
    return cp_fail_input (err, "%s: a value is required", argv[optind - 1]);
  /* An unknown short option inside a cluster ("-qz") leaves optind on its word,
     so argv[optind - 1] would name the previous argument. */
  if (optopt != 0 && optopt >= CHAR_MIN && optopt < 0x100)
    {
      /* glibc keeps the byte as a (signed) char: "-\xc2" gives optopt -62, and
         the message shows that one byte (as '?': policy/base/text.h). */
      return cp_fail_input (err, "-%c: unknown option (see `cachepin %s --help`)", (unsigned char) optopt, cmd);
    }
  const char *word = argv[optind - 1];
  const char *near = closest_option (spec, word);
  if (near)
    return cp_fail_input (err, "%s: unknown option (did you mean `--%s`? see `cachepin %s --help`)", word, near, cmd);
  return cp_fail_input (err, "%s: unknown option (see `cachepin %s --help`)", word, cmd);
}

int
cp_cli_cpulist_option (const char *name, const char *arg, hwloc_bitmap_t out, cp_error_t *err)
{
  if (cp_cpulist_parse (arg, CP_CPULIST_ALLOW_EMPTY, out, err) < 0)
    return cp_error_wrap (err, "%s", name);
  return 0;
}

static void
json_add_cpulist (json_object *obj, const char *key, hwloc_const_bitmap_t set)
{
  cleanup_free char *s = cp_cpulist_format (set);
  json_object_object_add (obj, key, json_object_new_string (s));
}

static const char *
level_json_name (enum cp_level level)
{
  return level == CP_LEVEL_MACHINE ? "machine" : cp_align_name (level);
}

void
cp_cli_print_plan_json (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan)
{
  json_object *root = json_object_new_object ();
  json_add_cpulist (root, "cpus", plan->cpus);
  json_add_cpulist (root, "mems", plan->mems);
  json_add_cpulist (root, "held", plan->held);
  json_object *domains = json_object_new_array ();
  for (size_t i = 0; i < plan->n_domains; i++)
    {
      const struct cp_plan_domain *d = &plan->domains[i];
      json_object *o = json_object_new_object ();
      json_object_object_add (o, "level", json_object_new_string (level_json_name (d->level)));
      json_object_object_add (o, "name", json_object_new_string (cp_topo_level_label (topo, d->level)));
      json_object_object_add (o, "index", json_object_new_int ((int) d->index));
      json_add_cpulist (o, "cpus", d->cpus);
      json_add_cpulist (o, "domain_cpus", topo->domains[d->level][d->index].cpus);
      json_object_array_add (domains, o);
    }
  json_object_object_add (root, "domains", domains);
  json_object_object_add (root, "split", json_object_new_boolean (plan->split));
  json_object_object_add (root, "mode", json_object_new_string (cp_mode_name (plan->mode)));
  json_object_object_add (root, "align", json_object_new_string (cp_align_name (req->align)));
  json_object_object_add (root, "smt", json_object_new_string (cp_smt_name (req->smt)));
  json_object_object_add (root, "reason", json_object_new_string (plan->reason));
  puts (json_object_to_json_string_ext (root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (root);
}

/* One character per PU: what the plan and the others do with it. */
static char
pu_mark (unsigned pu, const struct cp_plan *plan, hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t occupied)
{
  if (hwloc_bitmap_isset (plan->cpus, pu))
    return '#';
  if (hwloc_bitmap_isset (plan->held, pu))
    return '+';
  if (!hwloc_bitmap_isset (allowed, pu))
    return '-';
  if (occupied && hwloc_bitmap_isset (occupied, pu))
    return 'x';
  return '.';
}

static void
print_domain_row (const struct cp_topo *topo, const struct cp_domain *dom, const struct cp_plan *plan,
                  hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t occupied)
{
  char label[32];
  snprintf (label, sizeof label, "%s#%u", cp_topo_level_label (topo, CP_LEVEL_LLC), dom->index);
  const struct cp_core *first = &topo->cores[dom->cores[0]];
  hwloc_bitmap_t nodes = cp_bitmap_new ();
  for (unsigned i = 0; i < topo->n_nodes; i++)
    if (hwloc_bitmap_intersects (topo->nodes_info[i].cpus, dom->cpus))
      hwloc_bitmap_set (nodes, topo->nodes_info[i].os_index);
  cleanup_free char *nodes_s = cp_cpulist_format (nodes);
  hwloc_bitmap_free (nodes);
  printf ("  %-7s pkg %-2u node %-5s ", label, first->domain[CP_LEVEL_PACKAGE], *nodes_s ? nodes_s : "-");
  for (unsigned i = 0; i < dom->n_cores; i++)
    {
      int pu;
      hwloc_bitmap_foreach_begin (pu, topo->cores[dom->cores[i]].pus)
        putchar (pu_mark ((unsigned) pu, plan, allowed, occupied));
      hwloc_bitmap_foreach_end ();
      putchar (i + 1 < dom->n_cores ? ' ' : '\n');
    }
}

void
cp_cli_print_plan_human (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                         hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t occupied)
{
  cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
  cleanup_free char *mems = cp_cpulist_format (plan->mems);
  cleanup_free char *held = cp_cpulist_format (plan->held);
  printf ("cpus:    %s\n", cpus);
  printf ("mems:    %s\n", mems);
  if (plan->mode == CP_MODE_EXCLUSIVE && !hwloc_bitmap_isequal (plan->held, plan->cpus))
    printf ("held:    %s\n", held);
  printf ("request: cpus=%u align=%s smt=%s mode=%s%s\n", req->cpus, cp_align_name (req->align),
          cp_smt_name (req->smt), cp_mode_name (req->mode), req->strict ? " strict" : "");
  printf ("domains:");
  for (size_t i = 0; i < plan->n_domains; i++)
    {
      cleanup_free char *d = cp_cpulist_format (plan->domains[i].cpus);
      printf (" %s#%u(%s)", cp_topo_level_label (topo, plan->domains[i].level), plan->domains[i].index, d);
    }
  printf ("%s\n", plan->split ? "  [split]" : "");
  printf ("reason:  %s\n\n", plan->reason);
  printf ("%s map (a core's threads side by side; # this plan, + held for it, x occupied, . free, - not allowed):\n",
          cp_topo_level_label (topo, CP_LEVEL_LLC));
  for (unsigned d = 0; d < topo->n_domains[CP_LEVEL_LLC]; d++)
    print_domain_row (topo, &topo->domains[CP_LEVEL_LLC][d], plan, allowed, occupied);
}
