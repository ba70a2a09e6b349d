/* Bench: one append to the journal of decisions (hook/state/journal.h: lock, read,
 * add, rewrite with fsync and rename) beside one ledger commit (open with its
 * lock, put one entry, commit, close), side by side in one run, in the same
 * directory: what recording a decision adds to a hook run that commits the ledger.
 *   cmake --build build --target bench-journal
 *   build/bench/bench-journal [PARENT_DIR [ROUNDS [LEDGER_ENTRIES]]]
 *       (default /tmp 200 10; PARENT_DIR a tmpfs such as /dev/shm shows the cost
 *        without the disk, as /run/cachepin is on most hosts)
 * The journal is full (64 records shaped like the hook's) before timing starts.
 * Prints the median and the best microseconds per operation and the ratio
 * journal / ledger, for the files and for the codecs alone (no I/O). */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "ledger.h"
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

static void
die (const char *what, cp_error_t err)
{
  fprintf (stderr, "bench-journal: %s: %s\n", what, cp_error_message (err));
  exit (1);
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

struct stat2
{
  double median, best;
};

static struct stat2
summarize (double *t, unsigned n)
{
  qsort (t, n, sizeof *t, cmp_double);
  return (struct stat2){ .median = t[n / 2], .best = t[0] };
}

static void
podman_id (unsigned i, char id[65])
{
  unsigned h = i * 2654435761u;
  snprintf (id, 65, "%08x%08x%08x%08x%08x%08x%08x%08x", i, h, h ^ 0x5bd1e995u, h * 3, h * 5, h * 7, h * 11, h * 13);
}

/* A record like the hook's: a podman id, its scope, 4 CPUs, a reason line. */
static struct cp_journal_record
hook_record (unsigned i, char id[65], char *cgroup, size_t cgroup_size)
{
  podman_id (i, id);
  snprintf (cgroup, cgroup_size, "/machine.slice/libpod-%s.scope/container", id);
  hwloc_bitmap_t cpus = cp_bitmap_new ();
  hwloc_bitmap_set_range (cpus, (i * 4) % 64, (i * 4) % 64 + 3);
  hwloc_bitmap_t mems = cp_bitmap_new ();
  hwloc_bitmap_set (mems, 0);
  return (struct cp_journal_record){
    .front = CP_JOURNAL_HOOK,
    .kind = i % 5 == 4 ? CP_JOURNAL_UNPLACED : CP_JOURNAL_PLACED,
    .id = id,
    .name = (char *) "web-frontend",
    .cgroup = cgroup,
    .cpus = cpus,
    .mems = mems,
    .reason = (char *) "4 CPUs in L3#2 (8 free there), one thread per core (pe0-first), mems 0",
  };
}

static void
append (const char *dir, unsigned i)
{
  char id[65], cgroup[160];
  struct cp_journal_record r = hook_record (i, id, cgroup, sizeof cgroup);
  struct cp_journal *j = NULL;
  cp_error_t err = NULL;
  if (cp_journal_open (dir, 5000, &j, &err) < 0)
    die ("journal open", err);
  cp_journal_add (j, &r);
  if (cp_journal_commit (j, &err) < 0)
    die ("journal commit", err);
  cp_journal_close (j);
  hwloc_bitmap_free (r.cpus);
  hwloc_bitmap_free (r.mems);
}

static struct cp_ledger_entry
ledger_entry (unsigned i, char id[65], char *cgroup, size_t cgroup_size)
{
  podman_id (i, id);
  snprintf (cgroup, cgroup_size, "/machine.slice/libpod-%s.scope/container", id);
  struct cp_ledger_entry e = {
    .id = id,
    .cgroup_mount = (char *) "/sys/fs/cgroup",
    .cgroup = cgroup,
    .pid = (pid_t) (100000 + i),
    .start_time = 123456789ULL + i,
    .mode = CP_MODE_EXCLUSIVE,
    .cpus = cp_bitmap_new (),
    .held = cp_bitmap_new (),
    .mems = cp_bitmap_new (),
    .placed_at = 1764500000 + i,
    .drift = cp_bitmap_new (),
  };
  hwloc_bitmap_set_range (e.cpus, i * 4, i * 4 + 3);
  hwloc_bitmap_copy (e.held, e.cpus);
  hwloc_bitmap_set (e.mems, 0);
  return e;
}

/* Open, put entry I (a new id each time, its CPUs its own), commit, close; then
 * the same to remove it, untimed, so that the ledger keeps its size. */
static double
ledger_commit (const char *dir, unsigned i)
{
  char id[65], cgroup[160];
  struct cp_ledger_entry e = ledger_entry (i, id, cgroup, sizeof cgroup);
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  double t0 = now_us ();
  if (cp_ledger_open (dir, 5000, &l, &err) < 0 || cp_ledger_put (l, &e, &err) < 0 || cp_ledger_commit (l, &err) < 0)
    die ("ledger commit", err);
  cp_ledger_close (l);
  double t = now_us () - t0;
  if (cp_ledger_open (dir, 5000, &l, &err) < 0)
    die ("ledger open", err);
  cp_ledger_remove (l, id);
  if (cp_ledger_commit (l, &err) < 0)
    die ("ledger commit", err);
  cp_ledger_close (l);
  hwloc_bitmap_free (e.cpus);
  hwloc_bitmap_free (e.held);
  hwloc_bitmap_free (e.mems);
  hwloc_bitmap_free (e.drift);
  return t;
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

int
main (int argc, char **argv)
{
  const char *parent = argc > 1 ? argv[1] : "/tmp";
  unsigned rounds = argc > 2 ? (unsigned) strtoul (argv[2], NULL, 10) : 200;
  unsigned entries = argc > 3 ? (unsigned) strtoul (argv[3], NULL, 10) : 10;
  if (rounds == 0)
    rounds = 1;
  char *root = cp_xasprintf ("%s/bench-journal-XXXXXX", parent);
  if (mkdtemp (root) == NULL)
    {
      fprintf (stderr, "bench-journal: mkdtemp in %s: %s\n", parent, strerror (errno));
      return 1;
    }
  char *dir = cp_xasprintf ("%s/state", root);

  /* A full journal, and a ledger of ENTRIES entries (CPUs above those the timed
     entries take). */
  for (unsigned i = 0; i < CP_JOURNAL_MAX_RECORDS; i++)
    append (dir, i);
  {
    struct cp_ledger *l = NULL;
    cp_error_t err = NULL;
    if (cp_ledger_open (dir, 5000, &l, &err) < 0)
      die ("ledger open", err);
    for (unsigned i = 0; i < entries; i++)
      {
        char id[65], cgroup[160];
        struct cp_ledger_entry e = ledger_entry (100000 + i, id, cgroup, sizeof cgroup);
        hwloc_bitmap_zero (e.cpus);
        hwloc_bitmap_set (e.cpus, 4096 + i);
        hwloc_bitmap_copy (e.held, e.cpus);
        if (cp_ledger_put (l, &e, &err) < 0)
          die ("ledger put", err);
        hwloc_bitmap_free (e.cpus);
        hwloc_bitmap_free (e.held);
        hwloc_bitmap_free (e.mems);
        hwloc_bitmap_free (e.drift);
      }
    if (cp_ledger_commit (l, &err) < 0)
      die ("ledger commit", err);
    cp_ledger_close (l);
  }

  double *tj = cp_xcalloc (rounds, sizeof *tj), *tl = cp_xcalloc (rounds, sizeof *tl);
  for (unsigned r = 0; r < rounds; r++)
    {
      /* Interleaved, so that both see the same disk and the same load. */
      double t0 = now_us ();
      append (dir, 1000 + r);
      tj[r] = now_us () - t0;
      tl[r] = ledger_commit (dir, r % 1000);
    }
  struct stat2 j = summarize (tj, rounds), l = summarize (tl, rounds);

  /* The codecs alone: parse + serialize of the full journal and of the ledger. */
  char *jpath = cp_xasprintf ("%s/%s", dir, CP_JOURNAL_FILE);
  FILE *f = fopen (jpath, "re");
  char *jtext = cp_xmalloc0 (CP_JOURNAL_MAX_BYTES + 1);
  size_t jlen = f ? fread (jtext, 1, CP_JOURNAL_MAX_BYTES, f) : 0;
  if (f)
    fclose (f);
  struct cp_ledger *led = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (dir, 5000, &led, &err) < 0)
    die ("ledger open", err);
  char *ltext = cp_ledger_serialize (led);
  cp_ledger_close (led);
  for (unsigned r = 0; r < rounds; r++)
    {
      struct cp_journal_list *jl = NULL;
      double t0 = now_us ();
      if (cp_journal_parse (jtext, jlen, &jl, &err) < 0)
        die ("journal parse", err);
      free (cp_journal_serialize (jl, NULL));
      tj[r] = now_us () - t0;
      cp_journal_list_free (jl);
      struct cp_ledger *pl = NULL;
      t0 = now_us ();
      if (cp_ledger_parse (ltext, strlen (ltext), &pl, &err) < 0)
        die ("ledger parse", err);
      free (cp_ledger_serialize (pl));
      tl[r] = now_us () - t0;
      cp_ledger_close (pl);
    }
  struct stat2 jc = summarize (tj, rounds), lc = summarize (tl, rounds);

  printf ("state directory in %s; journal of %d records (%zu bytes), ledger of %u entries (%zu bytes); %u rounds\n",
          parent, CP_JOURNAL_MAX_RECORDS, jlen, entries, strlen (ltext), rounds);
  printf ("%-34s %12s %12s %8s\n", "operation (us)", "median", "best", "ratio");
  printf ("%-34s %12.1f %12.1f\n", "ledger commit (open, put, commit)", l.median, l.best);
  printf ("%-34s %12.1f %12.1f %7.2fx\n", "journal append (open, add, commit)", j.median, j.best, j.median / l.median);
  printf ("%-34s %12.1f %12.1f\n", "ledger parse + serialize", lc.median, lc.best);
  printf ("%-34s %12.1f %12.1f %7.2fx\n", "journal parse + serialize", jc.median, jc.best, jc.median / lc.median);
  free (jtext);
  free (ltext);
  free (jpath);
  free (tj);
  free (tl);
  nftw (root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free (dir);
  free (root);
  return 0;
}
