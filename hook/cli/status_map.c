/* `cachepin status`'s map of the ledger's occupancy: the one `plan` draws
 * (cpumap.h), from the status object's "occupancy" part. */
#define _GNU_SOURCE
#include "cli.h"

#include <inttypes.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "text.h"
#include "util.h"
#include "cpumap.h"
#include "status_view.h"

/* The cpulist V as a bitmap (empty when it is not one). */
static hwloc_bitmap_t
cpus_of (json_object *v)
{
  hwloc_bitmap_t set = cp_bitmap_new ();
  cleanup_error cp_error_t e = NULL;
  if (!json_object_is_type (v, json_type_string)
      || cp_cpulist_parse (json_object_get_string (v), CP_CPULIST_ALLOW_EMPTY, set, &e) < 0)
    hwloc_bitmap_zero (set);
  return set;
}

static hwloc_bitmap_t
cpus_at (json_object *o, const char *key)
{
  return cpus_of (get (o, key));
}

/* The CPUs the object's "map" (one character per CPU of its "cpus", in number
   order) marks as not to be handed out: reserved, or not allowed at all. */
static hwloc_bitmap_t
not_handed_out (json_object *o)
{
  cleanup_bitmap hwloc_bitmap_t cpus = cpus_at (o, "cpus");
  hwloc_bitmap_t out = cp_bitmap_new ();
  json_object *map = get (o, "map");
  const char *m = json_object_is_type (map, json_type_string) ? json_object_get_string (map) : "";
  size_t k = 0, n = strlen (m);
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, cpus)
    {
      if (k < n && m[k] == '-')
        hwloc_bitmap_set (out, (unsigned) cpu);
      k++;
    }
  hwloc_bitmap_foreach_end ();
  return out;
}

static char
status_mark (unsigned cpu, hwloc_const_bitmap_t held, hwloc_const_bitmap_t shared, hwloc_const_bitmap_t reserved,
             hwloc_const_bitmap_t denied)
{
  if (hwloc_bitmap_isset (held, cpu))
    return CP_MARK_HELD;
  if (hwloc_bitmap_isset (shared, cpu))
    return CP_MARK_SHARED;
  if (hwloc_bitmap_isset (reserved, cpu))
    return CP_MARK_RESERVED;
  return hwloc_bitmap_isset (denied, cpu) ? CP_MARK_NOT_ALLOWED : CP_MARK_FREE;
}

/* "by a1b2c3d4e5f6 ~/system.slice" under a domain's line: who holds its marks. */
static void
print_holders (FILE *out, json_object *o, int indent)
{
  if (len (o, "holders") == 0)
    return;
  char line[CP_CPUMAP_COLS + 1];
  int n = snprintf (line, sizeof line, "%*sby", indent, "");
  for (size_t i = 0; i < len (o, "holders") && n < (int) sizeof line; i++)
    {
      char buf[TEXT_MAX], id[4 * CP_STATUS_ID_COLS + 8];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (at (o, "holders", i)));
      cp_text_sanitize (buf);
      cp_status_short_id (buf, NULL, id, sizeof id);
      n += snprintf (line + n, sizeof line - n, " %s", id);
    }
  fprintf (out, "%s\n", line);
}

static void
print_domain_map (FILE *out, json_object *o, const char *label, int label_w, int note_w)
{
  cleanup_bitmap hwloc_bitmap_t held = cpus_at (o, "held"), shared = cpus_at (o, "shared");
  cleanup_bitmap hwloc_bitmap_t reserved = cpus_at (o, "reserved"), denied = not_handed_out (o);
  cleanup_free char *name = cp_xasprintf ("%s#%" PRId64, label, num (o, "index"));
  cleanup_free char *note = cp_xasprintf ("%" PRId64 "/%" PRId64 " held", num (o, "held_count"), num (o, "size"));
  struct cp_cpumap_domain m = { .label = name, .note = note };
  size_t n_cores = len (o, "core_cpus");
  for (size_t c = 0; c < (n_cores ? n_cores : 1); c++)
    {
      cleanup_bitmap hwloc_bitmap_t core = n_cores ? cpus_of (at (o, "core_cpus", c)) : cpus_at (o, "cpus");
      int cpu;
      cp_cpumap_core (&m);
      hwloc_bitmap_foreach_begin (cpu, core)
        {
          if (n_cores == 0 && m.n > 0)
            cp_cpumap_core (&m); /* no cores in the object: one CPU each */
          cp_cpumap_cpu (&m, (unsigned) cpu, status_mark ((unsigned) cpu, held, shared, reserved, denied));
        }
      hwloc_bitmap_foreach_end ();
    }
  cp_cpumap_print (out, &m, label_w, note_w);
  cp_cpumap_clear (&m);
  print_holders (out, o, 2 + label_w + 1);
}

/* The ledger's occupancy of the LLCs, as `plan` draws its map. */
void
cp_status_print_map (FILE *out, json_object *l, const char *label)
{
  if (is_null (l, "occupancy"))
    return;
  char label_buf[16];
  snprintf (label_buf, sizeof label_buf, "%s", label);
  json_object *occ = get (l, "occupancy");
  int label_w = 0, note_w = 0;
  for (size_t i = 0; i < len (l, "occupancy"); i++)
    {
      json_object *o = json_object_array_get_idx (occ, i);
      int lw = snprintf (NULL, 0, "%s#%" PRId64, label_buf, num (o, "index"));
      int nw = snprintf (NULL, 0, "%" PRId64 "/%" PRId64 " held", num (o, "held_count"), num (o, "size"));
      label_w = lw > label_w ? lw : label_w;
      note_w = nw > note_w ? nw : note_w;
    }
  fputs ("  ", out);
  cp_cpumap_legend (out, label_buf, "xsr.-");
  for (size_t i = 0; i < len (l, "occupancy"); i++)
    print_domain_map (out, json_object_array_get_idx (occ, i), label_buf, label_w, note_w);
  if (*S (l, "held_outside_topology"))
    fprintf (out, "  held CPUs this topology does not have: %s\n", S (l, "held_outside_topology"));
}
