/* cachepin: the ledger's entries as a long-running front end reads them (the NRI
 * agent's Synchronize and its events): copies taken under the ledger's lock after
 * reconcile, the lock released before the caller goes on, so that each step it
 * then takes locks the ledger again as an event would.  A front end asks its
 * ledger questions here (and in placer.h, owner.h), never of the ledger itself. */
#ifndef CP_ENTRIES_H
#define CP_ENTRIES_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "hostconfig.h"
#include "owner.h"

/* One entry, copied (its strings and bitmaps its own), and whether it is the
   reader's (cp_owner_owns()). */
struct cp_entry_view
{
  struct cp_ledger_entry e;
  bool owned;
};

/* Every entry, sorted by id. */
struct cp_entries
{
  struct cp_entry_view *v;
  size_t n;
};

/* The ledger of HC read (cp_placer_open_ledger(): locked, reconciled, nothing
   written), every entry copied into *OUT with whether it is OWNER's, unlocked. */
int cp_entries_read (const struct cp_hostconfig *hc, const struct cp_owner *owner, struct cp_entries *out,
                     cp_error_t *err);
/* ID's entry in ES, or NULL. */
const struct cp_entry_view *cp_entries_find (const struct cp_entries *es, const char *id);
void cp_entries_clear (struct cp_entries *es);

/* ID's entry alone, copied into *OUT (with whether it is OWNER's): 1; 0 when the
   ledger has none of that id; < 0 when the ledger cannot be read (*ERR).  Clear
   *OUT with cp_entry_view_clear() after 1. */
int cp_entries_read_one (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                         struct cp_entry_view *out, cp_error_t *err);
void cp_entry_view_clear (struct cp_entry_view *v);

#endif
