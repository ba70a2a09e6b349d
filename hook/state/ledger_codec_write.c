/* cachepin: a ledger as ledger.json text (see ledger_codec.h; the reader is
 * ledger_codec.c).  It prints straight into one growing buffer, one entry per
 * line, with no json-c object on the way (issue 12: the hook writes the whole
 * ledger back on most runs). */
#define _GNU_SOURCE
#include "ledger_internal.h"

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
reserve (struct out *o, size_t more)
{
  if (o->len + more + 1 <= o->cap)
    return;
  while (o->len + more + 1 > o->cap)
    o->cap = o->cap ? 2 * o->cap : 4096;
  o->buf = cp_xrealloc (o->buf, o->cap);
}

static void
put (struct out *o, const char *s, size_t n)
{
  reserve (o, n);
  memcpy (o->buf + o->len, s, n);
  o->len += n;
}
#define PUT(o, literal) put (o, literal, sizeof literal - 1)

/* S as a JSON string.  The entry check lets through no control character, but
 * escape them anyway: the writer never makes text the reader refuses. */
static void
put_string (struct out *o, const char *s)
{
  size_t n = strlen (s);
  reserve (o, 6 * n + 2); /* the worst case: every byte a \u00XX */
  char *p = o->buf + o->len;
  *p++ = '"';
  for (const unsigned char *c = (const unsigned char *) s; *c; c++)
    {
      if (*c == '"' || *c == '\\')
        {
          *p++ = '\\';
          *p++ = (char) *c;
        }
      else if (*c < 0x20)
        {
          static const char hex[] = "0123456789abcdef";
          memcpy (p, "\\u00", 4);
          p[4] = hex[*c >> 4];
          p[5] = hex[*c & 0xf];
          p += 6;
        }
      else
        *p++ = (char) *c;
    }
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

/* SET as a quoted cpulist, as cp_cpulist_format() writes it (an infinite set,
 * which no checked entry has, stops at CP_CPULIST_MAX). */
static void
put_cpulist (struct out *o, hwloc_const_bitmap_t set)
{
  PUT (o, "\"");
  if (set != NULL)
    {
      int limit = hwloc_bitmap_weight (set) < 0 ? CP_CPULIST_MAX : hwloc_bitmap_last (set);
      bool first = true;
      for (int i = hwloc_bitmap_first (set); i >= 0 && i <= limit;)
        {
          int j = i;
          while (j < limit && hwloc_bitmap_isset (set, (unsigned) j + 1))
            j++;
          if (!first)
            PUT (o, ",");
          first = false;
          put_uint (o, (unsigned) i);
          if (j > i)
            {
              PUT (o, "-");
              put_uint (o, (unsigned) j);
            }
          i = hwloc_bitmap_next (set, j);
        }
    }
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
