#include "bitmap.h"

#include <stdio.h>
#include <stdlib.h>

hwloc_bitmap_t
cp_bitmap_new (void)
{
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  if (b == NULL)
    {
      fputs ("cachepin: out of memory\n", stderr);
      abort ();
    }
  return b;
}

hwloc_bitmap_t
cp_bitmap_dup (hwloc_const_bitmap_t src)
{
  hwloc_bitmap_t b = hwloc_bitmap_dup (src);
  if (b == NULL)
    {
      fputs ("cachepin: out of memory\n", stderr);
      abort ();
    }
  return b;
}
