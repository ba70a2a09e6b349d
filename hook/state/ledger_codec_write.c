/* cachepin: a ledger as ledger.json text (see ledger_codec.h; the reader is
 * ledger_codec.c).  It prints straight into one growing buffer, one entry per
 * line, with no json-c object on the way (issue 12: the hook writes the whole
 * ledger back on most runs). */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <stdint.h>
#include <string.h>

#include "cpulist.h"
#include "ledger_codec.h"
#include "util.h"

struct out
{
  char *buf;
  size_t len, cap;
};

static void
grow (struct out *o, size_t more)
{
  while (o->len + more + 1 > o->cap)
    o->cap = o->cap ? 2 * o->cap : 4096;
  o->buf = cp_xrealloc (o->buf, o->cap);
}

/* Inlined: a literal's memcpy becomes a few moves (issue 22: the NRI plugin commits
   the 1,000-entry ledger at every call, and these calls were most of it). */
static inline __attribute__ ((always_inline)) void
reserve (struct out *o, size_t more)
{
  if (__builtin_expect (o->len + more + 1 > o->cap, 0))
    grow (o, more);
}

static inline __attribute__ ((always_inline)) void
put (struct out *o, const char *s, size_t n)
{
  reserve (o, n);
  memcpy (o->buf + o->len, s, n);
  o->len += n;
}
#define PUT(o, literal) put (o, literal, sizeof literal - 1)

/* Whether none of the 8 bytes of V needs an escape: none below 0x20, none a `"` or
   a `\` (the classic "has a byte less than / equal to" word tests; a borrow only
   ever follows a byte that matches, so "none" is exact). */
static inline bool
plain_word (uint64_t v)
{
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');
  uint64_t hits = ((v - ones * 0x20) & ~v) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash);
  return (hits & highs) == 0;
}

/* One byte of a JSON string at P: the byte, or its escape. */
static inline char *
put_char (char *p, unsigned char c)
{
  static const char hex[] = "0123456789abcdef";
  if (c == '"' || c == '\\')
    {
      *p++ = '\\';
      *p++ = (char) c;
    }
  else if (c < 0x20)
    {
      memcpy (p, "\\u00", 4);
      p[4] = hex[c >> 4];
      p[5] = hex[c & 0xf];
      p += 6;
    }
  else
    *p++ = (char) c;
  return p;
}

/* S as a JSON string.  The entry check lets through no control character, but
 * escape them anyway: the writer never makes text the reader refuses.  Eight
 * bytes at a time while none needs an escape. */
static void
put_string (struct out *o, const char *s)
{
  size_t n = strlen (s);
  reserve (o, 6 * n + 2); /* the worst case: every byte a \u00XX */
  char *p = o->buf + o->len;
  const unsigned char *c = (const unsigned char *) s, *end = c + n;
  *p++ = '"';
  while (end - c >= 8)
    {
      uint64_t v;
      memcpy (&v, c, 8);
      if (plain_word (v))
        {
          memcpy (p, &v, 8);
          p += 8;
          c += 8;
        }
      else
        for (int k = 0; k < 8; k++)
          p = put_char (p, *c++);
    }
  while (c < end)
    p = put_char (p, *c++);
  *p++ = '"';
  o->len = (size_t) (p - o->buf);
}

static void
put_uint (struct out *o, unsigned long long v)
{
  char digits[24];
  size_t n = sizeof digits;
  do
    digits[--n] = (char) ('0' + v % 10);
  while (v /= 10);
  put (o, digits + n, sizeof digits - n);
}

/* The range FIRST-LAST of a cpulist, after a comma unless it is the first. */
static void
put_range (struct out *o, int first, int last, bool *any)
{
  if (*any)
    PUT (o, ",");
  *any = true;
  put_uint (o, (unsigned) first);
  if (last > first)
    {
      PUT (o, "-");
      put_uint (o, (unsigned) last);
    }
}

/* An infinite SET (no checked entry has one), as cp_cpulist_format() writes it:
   stopped at CP_CPULIST_MAX. */
static void
put_infinite_cpulist (struct out *o, hwloc_const_bitmap_t set)
{
  bool any = false;
  for (int i = hwloc_bitmap_first (set); i >= 0 && i <= CP_CPULIST_MAX;)
    {
      int j = i;
      while (j < CP_CPULIST_MAX && hwloc_bitmap_isset (set, (unsigned) j + 1))
        j++;
      put_range (o, i, j, &any);
      i = hwloc_bitmap_next (set, j);
    }
}

/* SET as a quoted cpulist, as cp_cpulist_format() writes it; its words read one
   by one, each set bit found by its position (a walk of hwloc calls per CPU was a
   third of a commit). */
static void
put_cpulist (struct out *o, hwloc_const_bitmap_t set)
{
  PUT (o, "\"");
  int words = set ? hwloc_bitmap_nr_ulongs (set) : 0;
  if (words < 0)
    put_infinite_cpulist (o, set);
  bool any = false;
  int first = -1, last = -2;
  const int bits = (int) (8 * sizeof (unsigned long));
  for (int w = words > 0 ? hwloc_bitmap_first (set) / bits : 0; w < words; w++)
    for (unsigned long v = hwloc_bitmap_to_ith_ulong (set, (unsigned) w); v; v &= v - 1)
      {
        int cpu = w * bits + __builtin_ctzl (v);
        if (cpu != last + 1)
          {
            if (first >= 0)
              put_range (o, first, last, &any);
            first = cpu;
          }
        last = cpu;
      }
  if (first >= 0)
    put_range (o, first, last, &any);
  PUT (o, "\"");
}

static void
put_entry (struct out *o, const struct cp_ledger_entry *e)
{
  PUT (o, "{\"id\":");
  put_string (o, e->id);
  if (e->name && *e->name)
    {
      PUT (o, ",\"name\":");
      put_string (o, e->name);
    }
  PUT (o, ",\"cgroup_mount\":");
  put_string (o, e->cgroup_mount);
  PUT (o, ",\"cgroup\":");
  put_string (o, e->cgroup);
  if (e->cgroup_ino)
    {
      PUT (o, ",\"cgroup_ino\":");
      put_uint (o, e->cgroup_ino);
    }
  PUT (o, ",\"pid\":");
  put_uint (o, (unsigned long long) e->pid);
  PUT (o, ",\"start_time\":");
  put_uint (o, e->start_time);
  PUT (o, ",\"mode\":");
  put_string (o, cp_mode_name (e->mode));
  PUT (o, ",\"cpus\":");
  put_cpulist (o, e->cpus);
  PUT (o, ",\"held\":");
  put_cpulist (o, e->held);
  PUT (o, ",\"mems\":");
  put_cpulist (o, e->mems);
  PUT (o, ",\"placed_at\":");
  put_uint (o, (unsigned long long) e->placed_at);
  PUT (o, ",\"sched_cache\":");
  put_string (o, cp_ask_name (e->sched_cache));
  PUT (o, ",\"core_sched\":");
  if (e->core_sched)
    PUT (o, "true");
  else
    PUT (o, "false");
  PUT (o, ",\"drift\":");
  put_cpulist (o, e->drift);
  if (e->isolated)
    PUT (o, ",\"isolated\":true");
  if (e->runtime)
    {
      PUT (o, ",\"runtime\":");
      put_string (o, e->runtime);
    }
  PUT (o, "}");
}

/* "partitions": [...], one record a line; only while there is one. */
static void
put_partitions (struct out *o, const struct cp_ledger *l)
{
  if (l->n_parts == 0)
    return;
  PUT (o, ",\"partitions\":[");
  for (size_t i = 0; i < l->n_parts; i++)
    {
      const struct cp_ledger_partition *p = &l->parts[i];
      if (i > 0)
        PUT (o, ",");
      PUT (o, "\n {\"id\":");
      put_string (o, p->id);
      PUT (o, ",\"cgroup_mount\":");
      put_string (o, p->cgroup_mount);
      PUT (o, ",\"cgroup\":");
      put_string (o, p->cgroup);
      PUT (o, ",\"added\":");
      put_cpulist (o, p->added);
      if (p->root)
        PUT (o, ",\"root\":true");
      else
        PUT (o, ",\"root\":false");
      if (p->invalid)
        PUT (o, ",\"invalid\":true");
      PUT (o, "}");
    }
  PUT (o, "\n]");
}

/* {"version":3,"sched_cache_restore":"off","entries":[
 *  {"id":...},
 *  {"id":...}
 * ]}
 * One entry per line: a diff or a grep of the file shows whole entries. */
char *
cp_ledger_serialize (const struct cp_ledger *l)
{
  struct out o = { 0 };
  reserve (&o, 64 + l->n * 320);
  PUT (&o, "{\"version\":");
  put_uint (&o, CP_LEDGER_VERSION);
  if (l->cas_restore >= 0)
    {
      PUT (&o, ",\"sched_cache_restore\":");
      put_string (&o, l->cas_restore ? "on" : "off");
    }
  put_partitions (&o, l);
  PUT (&o, ",\"entries\":[");
  for (size_t i = 0; i < l->n; i++)
    {
      if (i > 0)
        PUT (&o, ",");
      PUT (&o, "\n ");
      put_entry (&o, &l->entries[i]);
    }
  PUT (&o, "\n]}\n");
  o.buf[o.len] = '\0';
  return o.buf;
}
