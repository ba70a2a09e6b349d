/* cachepin: the other managers of a container's cpuset, as one table.
 *
 * cachepin writes a placement into the cgroup's cpuset.cpus and cpuset.mems
 * itself (cgroupfs).  Others may own that cgroup too and must be told, or at
 * least the operator must be: systemd owns a unit's own cgroup and rewrites it
 * from AllowedCPUs= (systemd.h), the kubelet's static CPU manager rewrites every
 * container's cpuset (kubelet.h).  Each is one `struct cp_manager`, and
 * cp_manager_table lists them, in the way crun's cgroup managers are a
 * `struct libcrun_cgroup_manager` each: the placer and `cachepin status` only
 * ever go through the table, never to a manager by name.
 *
 * Unlike crun's (one manager per cgroup), every entry that detects itself takes
 * part: the cgroupfs write always (it is the placement), systemd where the cgroup
 * is a unit's own, the kubelet wherever its state file names a policy.
 *
 * The steps, as the placer calls them:
 *   cp_managers_attach()  each entry's detect(), before the ledger's lock and the
 *                         sandbox (a bus is opened and asked here); report() says
 *                         what it found, in the manager's own words;
 *   cp_managers_fd()      what the sandbox must keep usable (sandbox.h: one bus);
 *   cp_managers_apply()   after the decision: the placement, to each in table
 *                         order: cgroupfs first, whose failure fails the placement
 *                         (`required`); then the others, whose failures are one
 *                         warning each, the direct write standing;
 *   cp_managers_clear()   at a release, the same with the cgroup widened again;
 *   cp_managers_status()  `cachepin status`: each entry's part, under its name.
 *
 * Adding a manager (say, a node agent with its own view of cpusets):
 *   1. one file, hook/host/<name>.c (and its .h for what tests reach), that defines
 *      `const struct cp_manager cp_manager_<name> = { .name = "<name>", ... }`:
 *      detect() at least; the others may be NULL (nothing to tell, no fd to keep,
 *      no status part).  It may use hook/host and policy/base only (the layers,
 *      cmake/layers.cmake): what it needs from the host config comes in
 *      `struct cp_manager_ctx` (add a field there and fill it in placer.c and
 *      cmd_status.c);
 *   2. one entry: its extern declaration below and its line in cp_manager_table
 *      (manager.c), after cgroupfs (the others are told after the direct write);
 *   3. a status part is a new key of `cachepin status --json` (docs/status.md,
 *      status_text.c to print it); an fd to keep means the sandbox learns about it
 *      (sandbox.h keeps one bus fd today: cp_managers_fd() refuses a second);
 *   4. its detect() on fake inputs in tests/unit/test_manager.c.
 * Nothing else changes: tests/unit/test_manager.c adds a dummy entry to a copy of
 * the table and sees it attached, applied, cleared and shown. */
#ifndef CP_MANAGER_H
#define CP_MANAGER_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup.h"
#include "error.h"

/* Why a manager is asked. */
enum cp_manager_step
{
  CP_MANAGER_PLACE,   /* a placement (the hook's createRuntime/prestart, `apply`) */
  CP_MANAGER_RELEASE, /* a release (poststop, `cachepin release`) */
  CP_MANAGER_STATUS,  /* `cachepin status`: the host only, nothing is told */
};

/* What a manager is given: the host layer cannot read the host config itself. */
struct cp_manager_ctx
{
  enum cp_manager_step step;
  const struct cp_cgroup *cgroup; /* the container's cgroup; NULL: none (status, a release of a gone one) */
  const char *kubelet_state;      /* the host config's kubelet_state: NULL or "": not looked at */
};

struct cp_manager
{
  /* Its name: log lines, and its key in `cachepin status --json`. */
  const char *name;
  /* Its apply() and clear() are the placement itself: their failure fails it.
     Only cgroupfs, the direct write. */
  bool required;
  /* What a failed apply() or clear() means, the start of its warning line
     ("systemd may undo the placement at its next reload"). */
  const char *on_failure;
  /* Whether it manages CTX (its cgroup, or the host): 1, with *HANDLE what the
     other calls need (a connection; may stay NULL); 0 when it does not (*WHY says
     why, a static string); -1 when it does but cannot be asked (ERR).  Runs
     before the sandbox; does not log.  Required. */
  int (*detect) (const struct cp_manager_ctx *ctx, void **handle, const char **why, cp_error_t *err);
  /* Says what detect() found (R, HANDLE, WHY, ERR as it returned them), at the
     level the manager chooses: the kubelet's warning, systemd's unreachable bus.
     NULL: silent. */
  void (*report) (const struct cp_manager_ctx *ctx, int r, const void *handle, const char *why, cp_error_t err);
  /* Tell it the placement: CPUS, and MEMS (NULL: mems=keep, left as they are).
     NULL: nothing to tell. */
  int (*apply) (void *handle, const struct cp_manager_ctx *ctx, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
                cp_error_t *err);
  /* Tell it the cgroup is no longer placed (a release widens it).  NULL: nothing. */
  int (*clear) (void *handle, const struct cp_manager_ctx *ctx, cp_error_t *err);
  /* The fd the sandbox must keep usable for apply() and clear() (a bus), or -1.
     NULL: none. */
  int (*fd) (const void *handle);
  /* Its part of `cachepin status` (an object whose keys are stable: null values
     when there is nothing to say), or NULL for none.  NULL: no part. */
  json_object *(*status) (const struct cp_manager_ctx *ctx);
  /* Frees HANDLE (never NULL when called).  NULL: it keeps none. */
  void (*close) (void *handle);
};

/* The entries: cgroupfs (manager.c, always, first), the kubelet's CPU manager
   (kubelet.c), systemd (systemd.c). */
extern const struct cp_manager cp_manager_cgroupfs;
extern const struct cp_manager cp_manager_systemd;
extern const struct cp_manager cp_manager_kubelet;

/* The table, NULL-terminated, in the order they are told. */
extern const struct cp_manager *const cp_manager_table[];

#define CP_MANAGERS_MAX 8

/* The managers attached for one run. */
struct cp_managers
{
  struct cp_manager_ctx ctx; /* a copy: the pointers in it must outlive the set */
  size_t n;
  struct
  {
    const struct cp_manager *m;
    void *handle;
  } on[CP_MANAGERS_MAX];
};

/* Each entry of TABLE (NULL-terminated; NULL: cp_manager_table) whose detect()
 * says it manages CTX goes into *OUT, after its report().  Never fails: a manager
 * that cannot be asked is reported and left out. */
void cp_managers_attach (const struct cp_manager *const *table, const struct cp_manager_ctx *ctx,
                         struct cp_managers *out);

/* The one fd the sandbox must keep (-1: none).  Fails (CP_ERR_RUNTIME) when two
 * managers each want one: the sandbox keeps one (sandbox.h). */
int cp_managers_fd (const struct cp_managers *set, int *fd, cp_error_t *err);

/* apply() of each attached manager, in table order.  A required one's failure is
 * returned at once (the others are not told); another's is one warning line. */
int cp_managers_apply (struct cp_managers *set, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems, cp_error_t *err);

/* clear() of each, as cp_managers_apply() does. */
int cp_managers_clear (struct cp_managers *set, cp_error_t *err);

/* Each entry's status part for CTX, into OBJ under its name (table order). */
void cp_managers_status (const struct cp_manager *const *table, const struct cp_manager_ctx *ctx, json_object *obj);

void cp_managers_close (struct cp_managers *set);
#define cleanup_managers __attribute__ ((cleanup (cp_managers_close)))

#endif
