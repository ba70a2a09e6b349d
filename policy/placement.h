/* cachepin: the placement engine.
 *
 * Pure: a topology model, the CPUs a container may use, the CPUs other containers
 * hold and a request in; a plan and its reason out.  Deterministic: the same
 * inputs always give the same plan.  See docs/placement.md for the choices. */
#ifndef CP_PLACEMENT_H
#define CP_PLACEMENT_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "request.h"
#include "topo.h"

/* What other containers already use. */
struct cp_usage
{
  hwloc_const_bitmap_t held;            /* CPUs held exclusively (NULL: none) */
  const hwloc_const_bitmap_t *shared;   /* CPU sets of shared-mode placements */
  size_t n_shared;
};

struct cp_plan_domain
{
  enum cp_level level;
  unsigned index;        /* position in cp_topo.domains[level] */
  hwloc_bitmap_t cpus;   /* the plan's CPUs inside this domain */
};

struct cp_plan
{
  enum cp_mode mode;
  hwloc_bitmap_t cpus;   /* the container's cpuset */
  hwloc_bitmap_t held;   /* what the ledger holds for it: cpus, plus under smt=pe0 the
                            idle siblings of its cores; empty in shared mode */
  hwloc_bitmap_t mems;   /* NUMA nodes local to cpus (never empty) */
  struct cp_plan_domain *domains;
  size_t n_domains;
  bool split;            /* more than one domain */
  char *reason;          /* one human-readable line */
};

/* Compute a plan.  ALLOWED (NULL: the topology's allowed CPUs) bounds every choice;
 * ALLOWED_MEMS (NULL: the topology's allowed nodes) is the fallback for mems.
 * The error's kind is final (callers need not, and must not, change it):
 *   CP_ERR_INPUT          the request is malformed: cpus 0 in exclusive mode, or
 *                         smt=cores with a count no set of whole allowed cores has
 *                         (1 CPU where every core has 2 threads), whatever is free;
 *   CP_ERR_UNSATISFIABLE  a well-formed request this host cannot meet: more CPUs than
 *                         it allows (or none of the allowed online), not enough free,
 *                         no exact set of wholly free cores, or, with strict, not
 *                         inside one domain. */
int cp_place (const struct cp_topo *topo, hwloc_const_bitmap_t allowed, hwloc_const_bitmap_t allowed_mems,
              const struct cp_usage *usage, const struct cp_request *req, struct cp_plan **out,
              cp_error_t *err);

void cp_plan_free (struct cp_plan *plan);

/* The refusal of a request for WANT CPUs (WHAT: the option or key that asked)
 * where only the CPUs of LIMIT may be given, saying what set that limit: BY
 * completes "the 1 CPU ..." ("the parent cgroup /x allows"), DETAIL is where it
 * can be read ("cpuset.cpus.effective: 1"; NULL: the CPUs of LIMIT).  One line,
 * newly allocated:
 *   "--cpus: 2 is more than the 1 CPU the parent cgroup /x allows (cpuset.cpus.effective: 1)".
 * The same words from every command, so that a user sees one refusal, which
 * exits as unsatisfiable (CP_ERR_UNSATISFIABLE) wherever it is made. */
char *cp_place_too_many (const char *what, unsigned want, hwloc_const_bitmap_t limit, const char *by,
                         const char *detail);

#define cleanup_plan __attribute__ ((cleanup (cp_plan_freep)))
static inline void
cp_plan_freep (struct cp_plan **p)
{
  cp_plan_free (*p);
}

#endif
