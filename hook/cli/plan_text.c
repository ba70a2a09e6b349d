/* A plan, printed: as JSON, and for people with the map of its domains
 * (cpumap.h) and the line saying where its inputs came from. */
#define _GNU_SOURCE
#include "cli.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "topo.h"
#include "util.h"
#include "isolate.h"
#include "partition.h"
#include "log.h"
#include "ledger.h"
#include "cpumap.h"
#include "status_view.h"

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
cp_cli_print_plan_json (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                        json_object *inputs, json_object *isolate)
{
  json_object *root = json_object_new_object ();
  json_object_object_add (root, "format", json_object_new_int (CP_PLAN_FORMAT));
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
  if (inputs)
    json_object_object_add (root, "inputs", inputs);
  if (isolate)
    json_object_object_add (root, "isolate", isolate);
  puts (json_object_to_json_string_ext (root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (root);
}

/* ------------------------------------------------------------------ the map */

static bool
in (hwloc_const_bitmap_t set, unsigned cpu)
{
  return set && hwloc_bitmap_isset (set, cpu);
}

/* What the plan and the others do with CPU: the legend's order is the priority. */
static char
cpu_mark (unsigned cpu, const struct cp_plan *plan, const struct cp_cli_plan_view *v)
{
  if (hwloc_bitmap_isset (plan->cpus, cpu))
    return CP_MARK_PLAN;
  if (hwloc_bitmap_isset (plan->held, cpu))
    return CP_MARK_PLAN_HELD;
  if (in (v->held, cpu))
    return CP_MARK_HELD;
  if (in (v->shared, cpu))
    return CP_MARK_SHARED;
  if (in (v->reserved, cpu))
    return CP_MARK_RESERVED;
  return in (v->allowed, cpu) ? CP_MARK_FREE : CP_MARK_NOT_ALLOWED;
}

/* "pkg 0 node 0-1": where a domain is. */
static char *
domain_note (const struct cp_topo *topo, const struct cp_domain *dom)
{
  const struct cp_core *first = &topo->cores[dom->cores[0]];
  cleanup_bitmap hwloc_bitmap_t nodes = cp_bitmap_new ();
  for (unsigned i = 0; i < topo->n_nodes; i++)
    if (hwloc_bitmap_intersects (topo->nodes_info[i].cpus, dom->cpus))
      hwloc_bitmap_set (nodes, topo->nodes_info[i].os_index);
  cleanup_free char *nodes_s = cp_cpulist_format (nodes);
  return cp_xasprintf ("pkg %u node %s", first->domain[CP_LEVEL_PACKAGE], *nodes_s ? nodes_s : "-");
}

static void
print_map (const struct cp_topo *topo, enum cp_level level, const struct cp_plan *plan,
           const struct cp_cli_plan_view *v)
{
  const char *label = cp_topo_level_label (topo, level);
  cp_cpumap_legend (stdout, label, CP_CPUMAP_MARKS);
  int label_w = 0, note_w = 0;
  for (unsigned d = 0; d < topo->n_domains[level]; d++)
    {
      const struct cp_domain *dom = &topo->domains[level][d];
      cleanup_free char *note = domain_note (topo, dom);
      int lw = snprintf (NULL, 0, "%s#%u", label, dom->index), nw = (int) strlen (note);
      label_w = lw > label_w ? lw : label_w;
      note_w = nw > note_w ? nw : note_w;
    }
  for (unsigned d = 0; d < topo->n_domains[level]; d++)
    {
      const struct cp_domain *dom = &topo->domains[level][d];
      cleanup_free char *name = cp_xasprintf ("%s#%u", label, dom->index);
      cleanup_free char *note = domain_note (topo, dom);
      struct cp_cpumap_domain m = { .label = name, .note = note };
      for (unsigned i = 0; i < dom->n_cores; i++)
        {
          int pu;
          cp_cpumap_core (&m);
          hwloc_bitmap_foreach_begin (pu, topo->cores[dom->cores[i]].pus)
            cp_cpumap_cpu (&m, (unsigned) pu, cpu_mark ((unsigned) pu, plan, v));
          hwloc_bitmap_foreach_end ();
        }
      cp_cpumap_print (stdout, &m, label_w, note_w);
      cp_cpumap_clear (&m);
    }
}

void
cp_cli_print_plan_human (const struct cp_topo *topo, const struct cp_request *req, const struct cp_plan *plan,
                         const struct cp_cli_plan_view *view)
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
  /* The lines that grow with the machine and the request, in 80 columns as
     `status` is, each continuation under the value (9 columns in); a domain is
     never split over two lines. */
  const struct cp_view v = { .out = stdout };
  cleanup_free char *domains = NULL;
  size_t size = 0;
  FILE *m = open_memstream (&domains, &size);
  if (m == NULL)
    return;
  fputs ("domains:", m);
  for (size_t i = 0; i < plan->n_domains; i++)
    {
      cleanup_free char *d = cp_cpulist_format (plan->domains[i].cpus);
      fprintf (m, " %s#%u(%s)", cp_topo_level_label (topo, plan->domains[i].level), plan->domains[i].index, d);
    }
  fputs (plan->split ? "  [split]" : "", m);
  if (fclose (m) != 0)
    return;
  cp_view_items (&v, 9, domains);
  cp_view_line (&v, 9, "reason:  %s", plan->reason);
  if (view->isolate)
    cp_view_line (&v, 9, "isolate: %s", view->isolate);
  if (view->inputs)
    cp_view_line (&v, 9, "inputs:  %s", view->inputs);
  putchar ('\n');
  /* align=none places in the allowed CPUs as one domain: its map is the LLCs'. */
  enum cp_level level = req->align == CP_LEVEL_MACHINE ? CP_LEVEL_LLC : req->align;
  print_map (topo, level, plan, view);
}

/* ------------------------------------------------------------------ isolate */

int
cp_cli_isolate_verdict (const struct cp_hostconfig *hc, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                        const struct cp_cgroup *probe, bool probe_host, bool *kernel_checked, cp_error_t *err)
{
  *kernel_checked = false;
  if (hc->isolate == CP_ISOLATE_DENY)
    return cp_fail_unsatisfiable (err, "cachepin.io/isolate: host setting isolate is deny");
  if (probe || probe_host)
    {
      /* What the engine's open judges; a probe that cannot tell leaves it to
         the placement, as before. */
      cleanup_free char *missing = NULL;
      cleanup_error cp_error_t e = NULL;
      int r = probe ? cp_partition_supported (probe, &missing, &e) : cp_partition_supported_host (NULL, &missing, &e);
      if (r < 0)
        cp_log (CP_LOG_DEBUG, "--isolate: the kernel's support not judged: %s", cp_error_message (e));
      *kernel_checked = r >= 0;
      if (r == 0)
        return cp_fail_unsatisfiable (err, "cachepin.io/isolate: unsupported here (%s)", missing);
    }
  return cp_isolate_check (topo, cpus, err); /* what the engine judges at decide */
}

#define GRANTED_RULES "the host config allows it and the CPUs leave the first core of each NUMA node to the host"
#define GRANTED_KERNEL GRANTED_RULES ", and this kernel makes cgroup v2 partitions (cpuset.cpus.exclusive)"
#define GRANTED                                                                                   \
  GRANTED_RULES "; the kernel's support (cgroup v2, cpuset.cpus.exclusive) is checked when placing, " \
                "not here"

/* The reason without the key the line already names. */
static const char *
isolate_reason (cp_error_t why)
{
  const char *m = cp_error_message (why);
  static const char key[] = "cachepin.io/isolate: ";
  return strncmp (m, key, sizeof key - 1) == 0 ? m + sizeof key - 1 : m;
}

char *
cp_cli_isolate_line (cp_error_t why, bool kernel_checked)
{
  if (why == NULL)
    return cp_xstrdup (kernel_checked ? "yes: " GRANTED_KERNEL : "yes: " GRANTED);
  return cp_xasprintf ("no, placed without isolation: %s", isolate_reason (why));
}

json_object *
cp_cli_isolate_json (cp_error_t why, bool kernel_checked)
{
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "granted", json_object_new_boolean (why == NULL));
  json_object_object_add (o, "reason", json_object_new_string (why                ? isolate_reason (why)
                                                              : kernel_checked ? GRANTED_KERNEL
                                                                               : GRANTED));
  json_object_object_add (o, "kernel_checked", json_object_new_boolean (kernel_checked));
  return o;
}

/* ------------------------------------------------------------------ inputs */

/* "config PATH (cpus 0-7, reserved 0)", or why there is none. */
static char *
config_phrase (const struct cp_hostconfig *hc, bool config_read)
{
  if (!config_read)
    return cp_xstrdup ("no host config (--config names one)");
  cleanup_free char *reserved = cp_cpulist_format (hc->reserved);
  cleanup_free char *cpus = hwloc_bitmap_weight (hc->cpus) < 0 ? NULL : cp_cpulist_format (hc->cpus);
  return cp_xasprintf ("config %s%s (%s%s%sreserved %s)", hc->path ? hc->path : CP_HOSTCONFIG_DEFAULT_PATH,
                       hc->path ? "" : " not found: the defaults", cpus ? "cpus " : "", cpus ? cpus : "",
                       cpus ? ", " : "", *reserved ? reserved : "none");
}

char *
cp_cli_inputs_line (const struct cp_preview *pv, const struct cp_hostconfig *hc, bool config_read,
                    const char *empty_why)
{
  cleanup_free char *config = config_phrase (hc, config_read);
  if (empty_why)
    return cp_xasprintf ("%s: no ledger; %s", empty_why, config);
  size_t n = cp_ledger_count (pv->ledger);
  cleanup_free char *gone = pv->gone ? cp_xasprintf (" (%u more gone, not counted)", pv->gone) : NULL;
  if (strcmp (pv->ledger_state, "missing") == 0)
    return cp_xasprintf ("ledger %s (none yet); %s", pv->ledger_path, config);
  return cp_xasprintf ("ledger %s, %zu %s%s; %s", pv->ledger_path, n, n == 1 ? "entry" : "entries",
                       gone ? gone : "", config);
}

json_object *
cp_cli_inputs_json (const struct cp_preview *pv, const struct cp_hostconfig *hc, bool config_read,
                    const char *empty_why)
{
  json_object *o = json_object_new_object ();
  bool ledger = empty_why == NULL;
  json_object_object_add (o, "ledger", ledger ? json_object_new_string (pv->ledger_path) : NULL);
  json_object_object_add (o, "ledger_entries",
                          ledger ? json_object_new_int ((int) cp_ledger_count (pv->ledger)) : NULL);
  json_object_object_add (o, "gone", ledger ? json_object_new_int ((int) pv->gone) : NULL);
  const char *path = hc->path ? hc->path : CP_HOSTCONFIG_DEFAULT_PATH;
  json_object_object_add (o, "config", config_read ? json_object_new_string (path) : NULL);
  json_object_object_add (o, "empty", json_object_new_boolean (!ledger));
  return o;
}
