/* cachepin: strict Linux cpulist parsing and formatting ("0-3,8,10-11").
 *
 * hwloc_bitmap_list_sscanf() is lenient ("0-" is an infinite set, "010" is octal,
 * trailing garbage is ignored, "5\n" yields an empty set), and a cpulist that comes
 * from a user decides which CPUs a root process writes into a cgroup, so we parse
 * our own: base-10 numbers without leading zeros, start <= end, values capped,
 * nothing else. */
#ifndef CP_CPULIST_H
#define CP_CPULIST_H

#include <hwloc.h>
#include <stdbool.h>

#include "error.h"

/* Largest CPU or NUMA node number we accept (Linux's NR_CPUS tops out at 8192). */
#define CP_CPULIST_MAX 8191

/* Longest cpulist text we read: a bound on hostile input, far above any real list. */
#define CP_CPULIST_MAX_LEN 65536

enum cp_cpulist_flags
{
  CP_CPULIST_ALLOW_EMPTY = 1 << 0,    /* "" is the empty set */
  CP_CPULIST_ALLOW_NEWLINE = 1 << 1,  /* one trailing '\n' (kernel files) */
  /* What the kernel takes when written into cpuset.cpus (cpulist_parse() after
     strstrip()), as an OCI spec's linux.resources.cpu.cpus is: numbers in base 10
     with leading zeros ("010" is ten, never octal), items separated by any run of
     commas and white space, which may also lead and trail ("0-3\n", " 1,,2 ").
     Still refused, though the kernel takes them: "all", "N" (the last CPU) and
     the "0-7:1/2" groups (cachepin would have to know nr_cpu_ids). */
  CP_CPULIST_KERNEL = 1 << 2,
};

/* Parse S into OUT (emptied first).  On error OUT is left empty and *err says
 * what is wrong and where, e.g. "`3-1`: range end 1 is before start 3". */
int cp_cpulist_parse (const char *s, unsigned flags, hwloc_bitmap_t out, cp_error_t *err);

/* Format a finite set as a Linux cpulist; the empty set is "".  Caller frees. */
char *cp_cpulist_format (hwloc_const_bitmap_t set);

#endif
