/* Bench: the ledger codec (hook/state/ledger_codec*.c) against the json-c reference it
 * replaced (tests/support/ledger_codec_dom.c), side by side in one run, on a ledger of
 * ENTRIES entries shaped like the hook's (podman ids and scopes, exclusive and
 * shared entries, a few drifted).
 *   cmake --build build --target bench-ledger-codec
 *   build/bench/bench-ledger-codec [ENTRIES [ROUNDS]]     (default 1000 200)
 * Prints microseconds per operation and the ratio reference / fast. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger.h"
#include "ledger_codec_dom.h"
#include "ledger_internal.h"
#include "bitmap.h"
#include "util.h"

static double
now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static struct cp_ledger *
make_ledger (unsigned n)
{
  struct cp_ledger *l = cp_ledger_new ();
  for (unsigned i = 0; i < n; i++)
    {
      char id[65]; /* 64 hex digits, as podman's; unique by the first 8 */
      unsigned h = i * 2654435761u;
      snprintf (id, sizeof id, "%08x%08x%08x%08x%08x%08x%08x%08x", i, h, h ^ 0x5bd1e995u, h * 3, h * 5, h * 7,
                h * 11, h * 13);
      bool exclusive = i % 4 != 3;
      struct cp_ledger_entry e = {
        .id = id,
        .cgroup_mount = "/sys/fs/cgroup",
        .cgroup = cp_xasprintf ("/machine.slice/libpod-%s.scope/container", id),
        .pid = (pid_t) (100000 + i),
        .start_time = 123456789ULL + i,
        .mode = exclusive ? CP_MODE_EXCLUSIVE : CP_MODE_SHARED,
        .cpus = cp_bitmap_new (),
        .held = cp_bitmap_new (),
        .mems = cp_bitmap_new (),
        .placed_at = 1764500000 + i,
        .sched_cache = (enum cp_ask) (i % 3),
        .core_sched = i % 5 == 0,
        .drift = cp_bitmap_new (),
      };
      /* Exclusive: 4 CPUs and their 4 siblings, each entry its own; shared: a wide range. */
      if (exclusive)
        {
          unsigned base = (i * 4) % 4096;
          hwloc_bitmap_set_range (e.cpus, base, base + 3);
          hwloc_bitmap_set_range (e.held, base, base + 3);
          hwloc_bitmap_set_range (e.held, base + 4096, base + 4099);
        }
      else
        hwloc_bitmap_set_range (e.cpus, 0, 63);
      hwloc_bitmap_set (e.mems, i % 2);
      if (i % 50 == 0)
        hwloc_bitmap_set_range (e.drift, 64, 71);
      cp_error_t err = NULL;
      if (cp_ledger_put (l, &e, &err) < 0)
        {
          fprintf (stderr, "bench-ledger-codec: entry %u: %s\n", i, cp_error_message (err));
          exit (1);
        }
      free (e.cgroup);
      hwloc_bitmap_free (e.cpus);
      hwloc_bitmap_free (e.held);
      hwloc_bitmap_free (e.mems);
      hwloc_bitmap_free (e.drift);
    }
  return l;
}

typedef int (*parse_fn) (const char *, size_t, struct cp_ledger **, cp_error_t *);
typedef char *(*serialize_fn) (const struct cp_ledger *);

static double
time_parse (parse_fn parse, const char *text, unsigned rounds)
{
  size_t len = strlen (text);
  double best = 1e300;
  for (unsigned r = 0; r < rounds; r++)
    {
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      double t0 = now_us ();
      if (parse (text, len, &l, &err) < 0)
        {
          fprintf (stderr, "bench-ledger-codec: parse: %s\n", cp_error_message (err));
          exit (1);
        }
      double t = now_us () - t0;
      best = t < best ? t : best;
      cp_ledger_close (l);
    }
  return best;
}

static double
time_serialize (serialize_fn serialize, const struct cp_ledger *l, unsigned rounds)
{
  double best = 1e300;
  for (unsigned r = 0; r < rounds; r++)
    {
      double t0 = now_us ();
      char *text = serialize (l);
      double t = now_us () - t0;
      best = t < best ? t : best;
      free (text);
    }
  return best;
}

int
main (int argc, char **argv)
{
  unsigned n = argc > 1 ? (unsigned) strtoul (argv[1], NULL, 10) : 1000;
  unsigned rounds = argc > 2 ? (unsigned) strtoul (argv[2], NULL, 10) : 200;
  struct cp_ledger *l = make_ledger (n);
  char *fast_text = cp_ledger_serialize (l);
  char *dom_text = cp_ledger_serialize_dom (l);

  /* Each reader on the text it is used with (the fast writer's is what the hook
     now writes; the reference's, json-c's pretty print, what it wrote before). */
  double pf = time_parse (cp_ledger_parse, fast_text, rounds);
  double pd = time_parse (cp_ledger_parse_dom, dom_text, rounds);
  double pd_same = time_parse (cp_ledger_parse_dom, fast_text, rounds);
  double sf = time_serialize (cp_ledger_serialize, l, rounds);
  double sd = time_serialize (cp_ledger_serialize_dom, l, rounds);

  printf ("ledger of %u entries: %zu bytes as written now, %zu bytes as json-c wrote it; best of %u rounds\n", n,
          strlen (fast_text), strlen (dom_text), rounds);
  printf ("%-28s %12s %12s %8s\n", "operation", "fast (us)", "json-c (us)", "ratio");
  printf ("%-28s %12.1f %12.1f %7.1fx\n", "parse (own text)", pf, pd, pd / pf);
  printf ("%-28s %12.1f %12.1f %7.1fx\n", "parse (the fast text)", pf, pd_same, pd_same / pf);
  printf ("%-28s %12.1f %12.1f %7.1fx\n", "serialize", sf, sd, sd / sf);
  printf ("%-28s %12.1f %12.1f %7.1fx\n", "parse + serialize", pf + sf, pd + sd, (pd + sd) / (pf + sf));
  free (fast_text);
  free (dom_text);
  cp_ledger_close (l);
  return 0;
}
