/* The map of CPUs (cpumap.h), for `plan` and `status` alike. */
#define _GNU_SOURCE
#include "cpumap.h"

#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

static const struct
{
  char mark;
  const char *words;
} legend[] = {
  { CP_MARK_PLAN, "this plan" },   { CP_MARK_PLAN_HELD, "held for it" }, { CP_MARK_HELD, "held" },
  { CP_MARK_SHARED, "shared" },    { CP_MARK_RESERVED, "reserved" },     { CP_MARK_FREE, "free" },
  { CP_MARK_NOT_ALLOWED, "not allowed" },
};

void
cp_cpumap_legend (FILE *out, const char *level_label, const char *marks)
{
  fprintf (out, "%s map, a core as its first CPU and a mark per thread:\n ", level_label);
  for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++)
    if (strchr (marks, legend[i].mark))
      fprintf (out, " %c=%s", legend[i].mark, legend[i].words);
  fputc ('\n', out);
}

void
cp_cpumap_core (struct cp_cpumap_domain *d)
{
  d->core_start = cp_xrealloc (d->core_start, (d->n_cores + 1) * sizeof *d->core_start);
  d->core_start[d->n_cores++] = d->n;
}

void
cp_cpumap_cpu (struct cp_cpumap_domain *d, unsigned cpu, char mark)
{
  if (d->n == d->size)
    {
      d->size = d->size ? 2 * d->size : 16;
      d->cpus = cp_xrealloc (d->cpus, d->size * sizeof *d->cpus);
      d->marks = cp_xrealloc (d->marks, d->size);
    }
  if (d->n_cores == 0)
    cp_cpumap_core (d);
  d->cpus[d->n] = cpu;
  d->marks[d->n++] = mark;
}

void
cp_cpumap_clear (struct cp_cpumap_domain *d)
{
  free (d->cpus);
  free (d->marks);
  free (d->core_start);
  *d = (struct cp_cpumap_domain) { .label = d->label, .note = d->note };
}

/* Items laid out within CP_CPUMAP_COLS, continuation lines indented to INDENT;
   OUT NULL only counts the lines. */
struct layout
{
  FILE *out;
  int indent, col, lines;
};

/* ITEM, after a space (GLUED: none, the rest of a cpulist cut at a comma), or
   on a new line when it would pass the last column. */
static void
put (struct layout *ly, const char *item, bool glued)
{
  int n = (int) strlen (item);
  int sep = glued ? 0 : 1;
  if (ly->col > ly->indent && ly->col + sep + n > CP_CPUMAP_COLS)
    {
      if (ly->out)
        fprintf (ly->out, "\n%*s", ly->indent, "");
      ly->col = ly->indent;
      ly->lines++;
      sep = 0;
    }
  if (ly->out)
    fprintf (ly->out, "%*s%s", sep, "", item);
  ly->col += sep + n;
}

static void
put_grid (struct layout *ly, const struct cp_cpumap_domain *d)
{
  for (size_t c = 0; c < d->n_cores; c++)
    {
      size_t from = d->core_start[c], to = c + 1 < d->n_cores ? d->core_start[c + 1] : d->n;
      char item[32 + 16];
      int k = snprintf (item, sizeof item, "%u:", d->cpus[from]);
      for (size_t i = from; i < to && k < (int) sizeof item - 1; i++)
        item[k++] = d->marks[i];
      item[k] = '\0';
      put (ly, item, false);
    }
}

/* "x=0-3,8" for each mark D has, a long cpulist cut after a comma. */
static void
put_summary (struct layout *ly, const struct cp_cpumap_domain *d)
{
  char count[48];
  snprintf (count, sizeof count, "%zu CPUs, %zu cores:", d->n, d->n_cores);
  put (ly, count, false);
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  for (const char *m = CP_CPUMAP_MARKS; *m; m++)
    {
      hwloc_bitmap_zero (set);
      for (size_t i = 0; i < d->n; i++)
        if (d->marks[i] == *m)
          hwloc_bitmap_set (set, d->cpus[i]);
      if (hwloc_bitmap_iszero (set))
        continue;
      cleanup_free char *list = cp_cpulist_format (set);
      cleanup_free char *first = cp_xasprintf ("%c=", *m);
      bool glued = false;
      char *save = NULL;
      for (char *part = strtok_r (list, ",", &save); part; part = strtok_r (NULL, ",", &save))
        {
          bool last = *save == '\0';
          cleanup_free char *item = cp_xasprintf ("%s%s%s", glued ? "" : first, part, last ? "" : ",");
          put (ly, item, glued);
          glued = true;
        }
    }
}

void
cp_cpumap_print (FILE *out, const struct cp_cpumap_domain *d, int label_w, int note_w)
{
  int indent = 2 + label_w + 1 + note_w + 2;
  struct layout count = { .out = NULL, .indent = indent, .col = indent, .lines = 1 };
  put_grid (&count, d);
  fprintf (out, "  %-*s %-*s ", label_w, d->label, note_w, d->note);
  struct layout ly = { .out = out, .indent = indent, .col = indent, .lines = 1 };
  if (count.lines <= CP_CPUMAP_MAX_LINES)
    put_grid (&ly, d);
  else
    put_summary (&ly, d);
  fputc ('\n', out);
}
