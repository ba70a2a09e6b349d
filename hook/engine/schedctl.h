/* cachepin: what the hook does with the kernel's cache-aware scheduling switch
 * (hook/host/sched.h), following the host setting `sched_cache` and what the placed
 * containers ask (`cachepin.io/sched-cache: on|off`).
 *
 * The switch is host-wide: one container cannot have it on for itself alone.  So
 * a container's annotation is a request that the host setting answers:
 *
 *   leave      (default) the switch is never written; a container that asks is
 *              logged, with the switch's value;
 *   on-demand  on while at least one placed container asks `on` (the ledger's
 *              entries are the count: a container that died without a poststop
 *              stops counting at the next run's reconcile), then back to the value
 *              found before cachepin turned it on, which the ledger keeps
 *              (`sched_cache_restore`, in its own file of the state directory as
 *              well as in ledger.json: ledger_store.h) so that neither a crash nor
 *              a lost ledger.json loses it;
 *   always     on at every run;  never  off at every run.
 * A value kept from an earlier on-demand run is given back under leave and
 * on-demand (once nobody asks), and stays kept under always and never, which set
 * the switch whatever was found: changing the setting away from on-demand, even
 * through always or never, does not lose what the switch was before cachepin.
 * `off` asks nothing that on-demand would do (the switch is only ever turned on
 * for containers; a value an admin chose is given back, never overridden by a
 * container); it is recorded and shown by `cachepin status`.
 *
 * Crash safety: the value to give back is committed (its file synced first, then
 * ledger.json) BEFORE the switch is turned on, and cleared only AFTER it is given back; a kill in between
 * leaves a ledger from which the next run (any run: hook, apply, release) finishes
 * the job.  Writes are idempotent (written only when the value differs) and each
 * is logged with the value before and after.
 *
 * Where the switch cannot be written (no CONFIG_SCHED_CACHE, debugfs unmounted or
 * denied) a container asking `on` under on-demand or always gets a warning, or,
 * when it is strict, a refusal before anything is written: the host cannot meet
 * what it asks.  Under leave or never, asking is never refused (that is the
 * admin's decision, logged). */
#ifndef CP_SCHEDCTL_H
#define CP_SCHEDCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"
#include "error.h"
#include "hostconfig.h"
#include "sched.h"

struct cp_ledger;

/* One run's view of the switch: probed, and opened for writing when the setting
 * may write it, before the sandbox is entered.
 *
 * Under leave (the default) the probe (mountinfo, debugfs) is only needed for a
 * container that asks (its request is logged with the switch's value) or for a
 * value an earlier on-demand run kept in the ledger (it is given back): it is
 * made then, by cp_schedctl_check_request() or cp_schedctl_ledger_opened(), and
 * a run where nobody asks and nothing is kept never probes. */
struct cp_schedctl
{
  enum cp_sched_cache_setting setting;
  const char *kernel_root;           /* the host config's, for the probe put off */
  bool deferred;                     /* leave: not probed yet (cas and handle are not the probe's) */
  struct cp_sched_cas cas;           /* the probe's result */
  struct cp_sched_cas_handle handle; /* fd -1 unless the setting writes and CAS is supported */
};

/* What to do, from the setting, how many placed containers ask `on`, the value
 * kept to give back (-1: none) and the switch's current value (0, 1). */
struct cp_schedctl_step
{
  int target;        /* the value the switch should have: 0 or 1 */
  int restore_after; /* the value to keep in the ledger afterwards, or -1 */
};

/* Pure: the rules above. */
void cp_schedctl_decide (enum cp_sched_cache_setting setting, size_t askers, int restore, int current,
                         struct cp_schedctl_step *out);

/* Probe the switch under HC->kernel_root and open it for writing (opening writes
 * nothing), unless the setting is leave: then only later, when needed (above).
 * Unsupported, unmounted and denied are states (in OUT->cas), not errors; an
 * error is what the probe cannot classify.  HC must outlive OUT. */
int cp_schedctl_open (const struct cp_hostconfig *hc, struct cp_schedctl *out, cp_error_t *err);

/* The ledger L is open and locked, the sandbox not yet entered: under leave,
 * probe now if L keeps a value to give back.  A probe that fails is logged and
 * the switch left as it is. */
void cp_schedctl_ledger_opened (struct cp_schedctl *sc, const struct cp_ledger *l);
void cp_schedctl_close (struct cp_schedctl *sc);

/* Before placing container ID, which asks ASK (STRICT: it is strict): log what
 * will be done with its request, and refuse it (CP_ERR_UNSATISFIABLE) when it is
 * strict, asks `on`, the setting would turn the switch on, and the kernel does
 * not let us.  Probes first (before the sandbox) when ID asks and the switch was
 * not probed yet (leave). */
int cp_schedctl_check_request (struct cp_schedctl *sc, const char *id, enum cp_ask ask, bool strict,
                               cp_error_t *err);

/* Bring the switch where the rules want it for the ledger L (locked; its entries
 * are this run's final ones), committing L around the write as said above.
 * Nothing to do when the switch is not open.  A failure leaves the ledger
 * consistent (the next run tries again); the caller logs it. */
int cp_schedctl_sync (struct cp_schedctl *sc, struct cp_ledger *l, cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only: called at the steps of cp_schedctl_sync(); may raise(SIGKILL). */
enum cp_schedctl_fault_point
{
  CP_SCHEDCTL_FAULT_KEPT,    /* the value to give back committed, the switch not yet written */
  CP_SCHEDCTL_FAULT_WRITTEN, /* the switch written, the ledger not yet committed */
};
typedef void (*cp_schedctl_fault_fn) (enum cp_schedctl_fault_point point, void *data);
void cp_schedctl_set_fault_hook (cp_schedctl_fault_fn fn, void *data);
#endif

#endif
