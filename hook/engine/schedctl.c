/* cachepin: the cache-aware scheduling switch under the host setting and the
 * ledger (see schedctl.h). */
#define _GNU_SOURCE
#include "schedctl.h"
#include "events.h"

#include <errno.h>
#include <string.h>

#include "util.h"
#include "fault.h"
#include "ledger.h"
#include "log.h"

CP_FAULT_HOOK (cp_schedctl_set_fault_hook, cp_schedctl_fault_fn);

static const char *
on_off (int v)
{
  return v ? "on" : "off";
}

void
cp_schedctl_decide (enum cp_sched_cache_setting setting, size_t askers, int restore, int current,
                    struct cp_schedctl_step *out)
{
  /* What the switch was before cachepin took it: the kept value, else now's. */
  int found = restore >= 0 ? restore : current;
  *out = (struct cp_schedctl_step) { .target = found, .restore_after = -1 };
  switch (setting)
    {
    case CP_SCHED_CACHE_ON_DEMAND:
      if (askers > 0)
        *out = (struct cp_schedctl_step) { .target = 1, .restore_after = found };
      return;
    /* These set the switch whatever was found, but a value kept by an earlier
       on-demand run stays kept: the setting that follows gives it back. */
    case CP_SCHED_CACHE_ALWAYS:
      *out = (struct cp_schedctl_step) { .target = 1, .restore_after = restore };
      return;
    case CP_SCHED_CACHE_NEVER:
      *out = (struct cp_schedctl_step) { .target = 0, .restore_after = restore };
      return;
    case CP_SCHED_CACHE_LEAVE:
    default:
      return;
    }
}

static int
probe (struct cp_schedctl *sc, cp_error_t *err)
{
  sc->deferred = false;
  return cp_sched_cas_open (sc->kernel_root, &sc->cas, &sc->handle, err);
}

int
cp_schedctl_open (const struct cp_hostconfig *hc, struct cp_schedctl *out, cp_error_t *err)
{
  *out = (struct cp_schedctl) { .setting = hc->sched_cache, .kernel_root = hc->kernel_root,
                                .cas = { .avail = CP_SCHED_UNSUPPORTED, .enabled = -1 }, .handle = { .fd = -1 } };
  /* Leave writes only to give back a value an earlier on-demand run kept, and
     reads only for a container that asks: probed when one of them shows. */
  if (hc->sched_cache == CP_SCHED_CACHE_LEAVE)
    {
      out->deferred = true;
      return 0;
    }
  return probe (out, err);
}

/* The probe leave put off; a failure is logged and the switch left alone, as
   the placer does with cp_schedctl_open()'s. */
static void
probe_late (struct cp_schedctl *sc)
{
  if (!sc->deferred)
    return;
  cleanup_error cp_error_t e = NULL;
  if (probe (sc, &e) < 0)
    {
      cp_log (CP_LOG_WARNING, "%s; left as it is", cp_error_message (e)); /* prefixed by sched_cas.c */
      cp_sched_cas_close (&sc->handle);
      sc->cas = (struct cp_sched_cas) { .avail = CP_SCHED_UNSUPPORTED, .enabled = -1 };
    }
}

void
cp_schedctl_ledger_opened (struct cp_schedctl *sc, const struct cp_ledger *l)
{
  if (sc->deferred && cp_ledger_cas_restore (l) >= 0)
    probe_late (sc);
}

void
cp_schedctl_close (struct cp_schedctl *sc)
{
  cp_sched_cas_close (&sc->handle);
}

/* "not in this kernel", "denied (Permission denied)", ... for messages. */
static char *
unavailable_text (const struct cp_sched_cas *cas)
{
  switch (cas->avail)
    {
    case CP_SCHED_NO_DEBUGFS:
      return cp_xstrdup ("not reachable: debugfs is not mounted");
    case CP_SCHED_DENIED:
      return cp_xasprintf ("denied (%s)", strerror (cas->errnum ? cas->errnum : EACCES));
    case CP_SCHED_UNSUPPORTED:
      return cp_xstrdup ("not in this kernel (no CONFIG_SCHED_CACHE)");
    case CP_SCHED_SUPPORTED:
    default:
      return cp_xstrdup ("available");
    }
}

int
cp_schedctl_check_request (struct cp_schedctl *sc, const char *id, enum cp_ask ask, bool strict, cp_error_t *err)
{
  if (ask != CP_ASK_NONE)
    probe_late (sc);
  const char *setting = cp_sched_cache_setting_name (sc->setting);
  bool usable = sc->handle.fd >= 0;
  cleanup_free char *state
      = usable ? cp_xasprintf ("%s", on_off (sc->cas.enabled)) : unavailable_text (&sc->cas);
  if (ask == CP_ASK_ON)
    {
      if (sc->setting == CP_SCHED_CACHE_LEAVE)
        cp_log (CP_LOG_INFO, "%s asks cachepin.io/sched-cache=on; host setting sched_cache is leave: the kernel's "
                             "switch is left as it is (%s)", id, state);
      else if (sc->setting == CP_SCHED_CACHE_NEVER)
        cp_log (CP_LOG_WARNING, "%s asks cachepin.io/sched-cache=on; host setting sched_cache is never: it stays off",
                id);
      else if (!usable && strict)
        return cp_fail_unsatisfiable (err, "cachepin.io/sched-cache=on: cache-aware scheduling is %s", state);
      else if (!usable)
        cp_log (CP_LOG_WARNING, "%s asks cachepin.io/sched-cache=on, but cache-aware scheduling is %s: placed "
                                "without it", id, state);
    }
  else if (ask == CP_ASK_OFF)
    {
      if (sc->setting == CP_SCHED_CACHE_ALWAYS)
        cp_log (CP_LOG_WARNING, "%s asks cachepin.io/sched-cache=off; host setting sched_cache is always: it stays on",
                id);
      else if (usable && sc->cas.enabled == 1)
        cp_log (CP_LOG_INFO, "%s asks cachepin.io/sched-cache=off; the switch is host-wide and stays on (sched_cache "
                             "%s)", id, setting);
    }
  return 0;
}

static const char *
why_text (enum cp_sched_cache_setting setting, size_t askers, int target, char **buf)
{
  if (setting == CP_SCHED_CACHE_ON_DEMAND && askers > 0)
    return *buf = cp_xasprintf ("sched_cache on-demand: %zu placed container%s ask%s", askers,
                                askers == 1 ? "" : "s", askers == 1 ? "s" : "");
  if (setting == CP_SCHED_CACHE_ALWAYS || setting == CP_SCHED_CACHE_NEVER)
    return *buf = cp_xasprintf ("sched_cache %s", cp_sched_cache_setting_name (setting));
  return *buf = cp_xasprintf ("sched_cache %s: no placed container asks; back to %s, the value found before",
                              cp_sched_cache_setting_name (setting), on_off (target));
}

int
cp_schedctl_sync (struct cp_schedctl *sc, struct cp_ledger *l, cp_error_t *err)
{
  /* For a caller that did not say when the ledger was opened (inside the
     sandbox, the probe fails: one warning, and the next run tries again). */
  cp_schedctl_ledger_opened (sc, l);
  if (sc->handle.fd < 0)
    return 0;
  int current;
  if (cp_sched_cas_read (&sc->handle, &current, err) < 0)
    return cp_error_wrap (err, CP_SCHED_CAS_PREFIX);
  size_t askers = cp_ledger_cas_askers (l);
  int kept = cp_ledger_cas_restore (l);
  struct cp_schedctl_step step;
  cp_schedctl_decide (sc->setting, askers, kept, current, &step);

  /* Keep the value to give back before the switch moves away from it. */
  if (step.restore_after >= 0 && step.restore_after != kept)
    {
      cp_ledger_set_cas_restore (l, step.restore_after);
      if (cp_ledger_commit (l, err) < 0)
        return cp_error_wrap (err, "cache-aware scheduling: keep the value to restore");
      FAULT (CP_SCHEDCTL_FAULT_KEPT);
    }
  if (step.target != current)
    {
      struct cp_sched_cas_change ch;
      cleanup_free char *why = NULL;
      if (cp_sched_cas_write (&sc->handle, step.target, &ch, err) < 0)
        return cp_error_wrap (err, CP_SCHED_CAS_PREFIX);
      cleanup_free char *what = cp_xasprintf ("cache-aware scheduling (%s): %s -> %s (%s)", sc->handle.name,
                                              on_off (ch.before), on_off (ch.after),
                                              why_text (sc->setting, askers, step.target, &why));
      cp_log (CP_LOG_INFO, "%s", what);
      cp_event_emit (&(struct cp_event) { .kind = CP_EVENT_SWITCH, .id = "kernel", .what = what });
      sc->cas.enabled = ch.after;
      FAULT (CP_SCHEDCTL_FAULT_WRITTEN);
    }
  /* Forget it only once it was given back. */
  if (step.restore_after < 0 && kept >= 0)
    {
      cp_ledger_set_cas_restore (l, -1);
      if (cp_ledger_commit (l, err) < 0)
        return cp_error_wrap (err, "cache-aware scheduling: forget the value restored");
    }
  return 0;
}
