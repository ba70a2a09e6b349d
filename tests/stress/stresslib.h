/* Helpers shared by the stress and crash tests (tests/stress/).
 *
 * These programs fork many processes, so they do not use cmocka: a check that
 * fails prints one line and exits 1 (the children die with the parent through
 * PR_SET_PDEATHSIG).  The temporary directory is kept for a post-mortem then. */
#ifndef CP_STRESSLIB_H
#define CP_STRESSLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "topo.h"

/* The topology the hooks place on: the captured 2x EPYC 9654 (384 PUs) from
 * $CACHEPIN_TOPOLOGIES when it exists, else the synthetic equivalent.  Prints
 * which one ran. */
struct cp_topo *st_topology (void);

/* A fresh directory /tmp/cp-<TAG>-XXXXXX (or under $TMPDIR); caller frees. */
char *st_make_root (const char *tag);
/* Remove it (on success only: st_fail keeps it). */
void st_remove_tree (const char *root);

/* The ledger's reconcile vouches only for cgroup directories on a cgroup
 * filesystem (cp_cgroup_dir_state()), so the tests' "cgroups" are directories of
 * a private, controller-less hierarchy (name=cachepin-stress-<pid>-<n>) mounted
 * on DIR (an empty directory) in a mount namespace of the process's own, made on
 * the first call and shared by its forked children: nothing the host or other
 * tests see.  Needs root.  st_cgroup_unmount() removes the cgroups left below DIR,
 * unmounts it and makes sure the hierarchy is destroyed (a v1 hierarchy outlives
 * an umount that comes before its removed children are released, and then stays
 * in every process's /proc/<pid>/cgroup, which the hook reads at every run).
 * st_cgroup_check_gone() fails the test if one of its hierarchies is still listed
 * in /proc/self/cgroup: each test calls it at its end. */
void st_cgroup_mount (const char *dir);
void st_cgroup_unmount (const char *dir);
void st_cgroup_check_gone (void);

__attribute__ ((noreturn, format (printf, 1, 2))) void st_fail (const char *fmt, ...);
#define st_check(cond, ...)   \
  do                          \
    {                         \
      if (!(cond))            \
        st_fail (__VA_ARGS__); \
    }                         \
  while (0)

long long st_now_us (void);

/* The whole file (NUL-terminated; *LEN its size), or NULL when it does not exist. */
char *st_read_file (const char *path, size_t *len);
bool st_exists (const char *path);

/* A process standing for a container's init: it sleeps until killed, and dies
 * with the test.  st_kill_holder() SIGKILLs and reaps it, so its pid is dead. */
pid_t st_spawn_holder (void);
void st_kill_holder (pid_t pid);

/* In a freshly forked child: die with the parent. */
void st_die_with_parent (void);

/* The ledger as this test reads it, independently of hook/state/ledger.c's validator:
 * json-c for the syntax, our own cpulist reader, our own invariant checks. */
struct st_entry
{
  char *id;
  pid_t pid;
  unsigned long long start_time;
  bool exclusive;
  char *cpus; /* cpulist text as in the file */
  char *held;
  unsigned n_cpus, n_held;
};

struct st_ledger
{
  struct st_entry *e;
  size_t n;
};

/* Check TEXT: hook/state/ledger.c's own parser accepts it (cp_ledger_parse), and
 * independently: version 1, ids unique, cpulists well formed, exclusive entries
 * with cpus inside held and no CPU in two exclusive helds, shared entries with
 * an empty held.  0, or -1 with *WHY (caller frees). */
int st_ledger_check (const char *text, size_t len, struct st_ledger *out, char **why);
void st_ledger_free (struct st_ledger *l);
const struct st_entry *st_ledger_find (const struct st_ledger *l, const char *id);

/* Deterministic PRNG (xorshift64*), one state per process. */
void st_seed (unsigned long long seed);
unsigned st_rnd (unsigned n);

#endif
