/* The engine and the ledger together at scale: long random sequences of placements
 * and releases on a 384-CPU topology, the ledger in a temporary directory, with the
 * invariants checked independently of the engine after every step:
 *   - no CPU is held by two exclusive containers (counted here, not by the ledger);
 *   - every exclusive container got exactly what it asked, inside its held set;
 *   - a refusal is real: the free CPUs (or wholly free cores under smt=pe0) could
 *     not hold the request;
 *   - the ledger file reads back after every commit. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ledger.h"
#include "cpulist.h"
#include "placement.h"
#include "util.h"

#define STEPS 3000

struct live
{
  char id[32];
  unsigned cpus;
  enum cp_mode mode;
};

static unsigned long long rng_state;

static unsigned
rnd (unsigned n)
{
  /* xorshift64*: deterministic across runs and platforms. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (unsigned) ((rng_state * 2685821657736338717ULL) >> 33) % n;
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

/* Free capacity computed from the topology model's cores alone: free allowed PUs,
   and cores none of whose PUs is held. */
static void
free_capacity (const struct cp_topo *topo, hwloc_const_bitmap_t held, unsigned *free_pus, unsigned *free_cores)
{
  *free_pus = 0;
  *free_cores = 0;
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      int w = hwloc_bitmap_weight (topo->cores[c].pus);
      hwloc_bitmap_t f = hwloc_bitmap_alloc ();
      hwloc_bitmap_andnot (f, topo->cores[c].pus, held);
      int fw = hwloc_bitmap_weight (f);
      hwloc_bitmap_free (f);
      *free_pus += (unsigned) fw;
      *free_cores += fw == w;
    }
}

/* Re-read the ledger from disk and check the invariants against what we asked. */
static void
check_ledger (const char *state_dir, const struct live *live, size_t n_live)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (state_dir, 5000, &l, &err) < 0)
    fail_msg ("reopen: %s", cp_error_message (err));
  assert_false (cp_ledger_was_recovered (l, NULL));
  assert_int_equal (cp_ledger_count (l), n_live);
  hwloc_bitmap_t seen = hwloc_bitmap_alloc ();
  for (size_t i = 0; i < n_live; i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_find (l, live[i].id);
      assert_non_null (e);
      if (live[i].mode == CP_MODE_SHARED)
        {
          assert_true (hwloc_bitmap_iszero (e->held));
          continue;
        }
      assert_int_equal (hwloc_bitmap_weight (e->cpus), live[i].cpus);
      assert_true (hwloc_bitmap_isincluded (e->cpus, e->held));
      if (hwloc_bitmap_intersects (seen, e->held))
        fail_msg ("%s holds a CPU someone else holds", e->id);
      hwloc_bitmap_or (seen, seen, e->held);
    }
  hwloc_bitmap_free (seen);
  cp_ledger_close (l);
}

static void
run_sequence (const char *source, unsigned long long seed)
{
  struct cp_topo *topo = tu_topo (source);
  char root[] = "/tmp/cp-scale-XXXXXX";
  assert_non_null (mkdtemp (root));
  char state[64], cgroups[64];
  snprintf (state, sizeof state, "%s/state", root);
  snprintf (cgroups, sizeof cgroups, "%s/cg", root);
  mkdir (cgroups, 0700);

  struct live *live = cp_xcalloc (STEPS, sizeof *live);
  size_t n_live = 0;
  unsigned placed = 0, released = 0, refused = 0, split = 0;
  static const unsigned sizes[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 };
  static const enum cp_level aligns[] = { CP_LEVEL_LLC, CP_LEVEL_LLC, CP_LEVEL_L2, CP_LEVEL_NUMA, CP_LEVEL_MACHINE };
  rng_state = seed;
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);

  for (unsigned step = 0; step < STEPS; step++)
    {
      struct cp_ledger *l = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_open (state, 5000, &l, &err) < 0)
        fail_msg ("open: %s", cp_error_message (err));

      if (n_live > 0 && rnd (100) < 40)
        {
          size_t k = rnd ((unsigned) n_live);
          assert_true (cp_ledger_remove (l, live[k].id));
          live[k] = live[--n_live];
          released++;
        }
      else
        {
          struct cp_request req;
          cp_request_init (&req);
          req.cpus = sizes[rnd (CP_ARRAY_SIZE (sizes))];
          req.smt = (enum cp_smt) rnd (4);
          req.align = aligns[rnd (CP_ARRAY_SIZE (aligns))];
          req.mode = rnd (10) == 0 ? CP_MODE_SHARED : CP_MODE_EXCLUSIVE;
          if (req.smt == CP_SMT_CORES && req.cpus % 2)
            req.cpus++;
          struct cp_ledger_usage usage;
          cp_ledger_usage (l, NULL, &usage);
          struct cp_plan *plan = NULL;
          if (cp_place (topo, NULL, NULL, &usage.usage, &req, &plan, &err) < 0)
            {
              assert_int_equal (err->kind, CP_ERR_UNSATISFIABLE);
              unsigned free_pus, free_cores;
              free_capacity (topo, usage.held, &free_pus, &free_cores);
              if (req.mode == CP_MODE_EXCLUSIVE && req.smt != CP_SMT_CORES)
                {
                  unsigned room = req.smt == CP_SMT_PE0 ? free_cores : free_pus;
                  if (room >= req.cpus)
                    fail_msg ("step %u: refused %u CPUs (smt=%s align=%s) with %u free: %s", step, req.cpus,
                              cp_smt_name (req.smt), cp_align_name (req.align), room, cp_error_message (err));
                }
              cp_error_free (&err);
              refused++;
            }
          else
            {
              struct live *lv = &live[n_live++];
              snprintf (lv->id, sizeof lv->id, "c%u", step);
              lv->cpus = req.cpus;
              lv->mode = req.mode;
              split += plan->split;
              struct cp_ledger_entry e = {
                .id = lv->id, .cgroup_mount = cgroups, .cgroup = (char *) "/c", .pid = 0,
                .mode = plan->mode, .cpus = plan->cpus, .held = plan->held, .mems = plan->mems,
              };
              if (cp_ledger_put (l, &e, &err) < 0)
                fail_msg ("step %u: the engine handed out held CPUs: %s", step, cp_error_message (err));
              placed++;
            }
          cp_plan_free (plan);
          cp_ledger_usage_release (&usage);
        }
      if (cp_ledger_commit (l, &err) < 0)
        fail_msg ("commit: %s", cp_error_message (err));
      cp_ledger_close (l);
      if (step % 50 == 0 || step == STEPS - 1)
        check_ledger (state, live, n_live);
    }
  clock_gettime (CLOCK_MONOTONIC, &t1);
  double ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
  print_message ("%s: %u steps: %u placed (%u split), %u released, %u refused, %zu live at the end; %.0f ms\n",
                 source, STEPS, placed, split, released, refused, n_live, ms);
  assert_true (placed > STEPS / 3);
  assert_true (refused > 0); /* the sequence does reach a full machine */
  free (live);
  nftw (root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  cp_topo_free (topo);
}

static void
test_synthetic_epyc (void **state)
{
  (void) state;
  /* The shape of a 2x EPYC 9654: 24 L3s of 8 cores, SMT2 numbered N and N+192. */
  run_sequence ("package:2 l3cache:12 core:8 pu:2(indexes=core)", 42);
}

static void
test_captured_9654 (void **state)
{
  (void) state;
  cleanup_free char *path = tu_topology_file_or_skip ("hwloc/x86-AMD-19h-Zen4-2xEpyc-9654.xml");
  run_sequence (path, 7);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_synthetic_epyc),
    cmocka_unit_test (test_captured_9654),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
