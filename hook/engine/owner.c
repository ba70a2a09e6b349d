/* cachepin: which front end may settle which entry (owner.h). */
#include <string.h>

#include "owner.h"
#include "util.h"

bool
cp_owner_owns (const struct cp_owner *o, const struct cp_ledger_entry *e)
{
  if (cp_ledger_entry_origin (e) != o->origin)
    return false;
  if (o->origin != CP_ORIGIN_NRI || e->runtime == NULL || o->runtime == NULL)
    return true;
  return strcmp (e->runtime, o->runtime) == 0;
}

char *
cp_owner_not_owned (const struct cp_owner *o, const struct cp_ledger_entry *e)
{
  if (cp_owner_owns (o, e))
    return NULL;
  enum cp_ledger_origin origin = cp_ledger_entry_origin (e);
  if (origin != o->origin)
    return cp_xasprintf ("it is %s's entry", origin == CP_ORIGIN_HOOK    ? "the hook"
                                             : origin == CP_ORIGIN_APPLY ? "`cachepin apply`"
                                             : origin == CP_ORIGIN_DRA   ? "a DRA claim"
                                                                          : "the NRI plugin");
  return cp_xasprintf ("it is the NRI plugin's of the runtime at %.256s", e->runtime);
}

enum cp_settle
cp_owner_settle (const struct cp_owner *o, const struct cp_ledger_entry *e, enum cp_seen seen,
                 hwloc_const_bitmap_t spec_cpus)
{
  if (!cp_owner_owns (o, e))
    return CP_SETTLE_KEEP;
  switch (seen)
    {
    case CP_SEEN_STOPPED:
      return CP_SETTLE_RELEASE;
    case CP_SEEN_ABSENT:
      /* Its runtime lists every container it has: one it does not list never
         starts.  An entry whose cgroup is recorded is left to reconcile, which
         judges it by that cgroup: not being listed proves nothing of a cgroup
         that stands. */
      return cp_ledger_entry_pending (e) ? CP_SETTLE_RELEASE : CP_SETTLE_KEEP;
    case CP_SEEN_RUNNING:
      if (e->cgroup_ino != 0)
        return CP_SETTLE_KEEP;
      if (spec_cpus && !hwloc_bitmap_isequal (spec_cpus, e->cpus))
        return CP_SETTLE_UNAPPLIED;
      return CP_SETTLE_ADOPT;
    case CP_SEEN_CREATED:
    case CP_SEEN_UNKNOWN:
    default:
      return CP_SETTLE_KEEP;
    }
}

const char *
cp_settle_reason (enum cp_seen seen)
{
  return seen == CP_SEEN_STOPPED ? "the runtime says it stopped" : "its runtime no longer has it";
}
