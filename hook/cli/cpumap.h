/* cachepin: the one map of CPUs that `plan` and `status` print.
 *
 * A line per domain (an L3, an L2, a NUMA node, a package: what the map is of),
 * its label and a note, then its cores, each as its first CPU's number and one
 * mark per thread ("12:#+": CPU 12 is this plan's, its sibling held for it), in
 * topology order.  Lines stay within CP_CPUMAP_COLS columns: a domain wraps onto
 * continuation lines, and one too big for CP_CPUMAP_MAX_LINES of them (a NUMA node
 * of 96 cores) is summarized as a cpulist per mark.  One legend, the same letters
 * and words wherever a map is printed. */
#ifndef CP_CPUMAP_H
#define CP_CPUMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CP_CPUMAP_COLS 80
#define CP_CPUMAP_MAX_LINES 4

/* The marks, in the legend's order. */
#define CP_MARK_PLAN '#'        /* this plan */
#define CP_MARK_PLAN_HELD '+'   /* held for it: its cores' other threads (exclusive mode) */
#define CP_MARK_HELD 'x'        /* held by a placed container (exclusive) */
#define CP_MARK_SHARED 's'      /* used by shared placements */
#define CP_MARK_RESERVED 'r'    /* kept back by the host config: `reserved`, or outside `cpus` */
#define CP_MARK_FREE '.'        /* free */
#define CP_MARK_NOT_ALLOWED '-' /* not allowed: outside the parent cgroup, --allowed, or the topology's */
#define CP_CPUMAP_MARKS "#+xsr.-"

/* One domain's line, built CPU by CPU. */
struct cp_cpumap_domain
{
  const char *label; /* "L3#0" (the caller's) */
  const char *note;  /* "pkg 0 node 0", "2/16 held" (the caller's; may be "") */
  unsigned *cpus;    /* core by core, each core's threads together */
  char *marks;       /* one per CPU */
  size_t n, size;
  size_t *core_start; /* index in CPUS of each core's first thread */
  size_t n_cores;
};

/* "L3 map, a core as its first CPU and a mark per thread:" and the legend of
   the marks in MARKS (a subset of CP_CPUMAP_MARKS: the ones the caller can
   show), on OUT. */
void cp_cpumap_legend (FILE *out, const char *level_label, const char *marks);

/* Start a new core in D, then add its CPUs in the order shown (PE0 first). */
void cp_cpumap_core (struct cp_cpumap_domain *d);
void cp_cpumap_cpu (struct cp_cpumap_domain *d, unsigned cpu, char mark);

/* D's line (and its continuations, or its summary) on OUT: the label padded to
   LABEL_W, the note to NOTE_W. */
void cp_cpumap_print (FILE *out, const struct cp_cpumap_domain *d, int label_w, int note_w);

/* Free what D holds and empty it (its label and note are the caller's). */
void cp_cpumap_clear (struct cp_cpumap_domain *d);

#endif
