/* Helpers shared by the unit tests. */
#ifndef CP_TESTUTIL_H
#define CP_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hwloc.h>

#include "policy/topo.h"

/* Load a synthetic or XML topology; fails the test on error. */
struct cp_topo *tu_topo (const char *source);

/* A bitmap from a cpulist literal (test-side, via our strict parser). */
hwloc_bitmap_t tu_set (const char *cpulist);

/* Assert that SET equals the cpulist EXPECTED, printing both when not. */
#define tu_assert_set(set, expected) tu_assert_set_ (set, expected, __FILE__, __LINE__)
void tu_assert_set_ (hwloc_const_bitmap_t set, const char *expected, const char *file, int line);

#endif
