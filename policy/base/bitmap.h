/* cachepin: hwloc bitmaps that abort on allocation failure, and their cleanup.
 *
 * hwloc_bitmap_alloc() and _dup() return NULL when out of memory; like every
 * other allocation here (policy/base/util.h), that aborts instead of being threaded
 * through every caller. */
#ifndef CP_BITMAP_H
#define CP_BITMAP_H

#include <hwloc.h>

hwloc_bitmap_t cp_bitmap_new (void);
hwloc_bitmap_t cp_bitmap_dup (hwloc_const_bitmap_t src);

static inline void
cp_cleanup_bitmap_fn (hwloc_bitmap_t *b)
{
  if (*b)
    hwloc_bitmap_free (*b);
}
#define cleanup_bitmap __attribute__ ((cleanup (cp_cleanup_bitmap_fn)))

#endif
