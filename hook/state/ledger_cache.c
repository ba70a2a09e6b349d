/* cachepin: the parsed ledger a long-running process keeps between calls
 * (ledger_store.h: cp_ledger_cache_keep()).  The entries move, never copied: a
 * closed ledger hands them over, the next open of the same directory takes them
 * back when ledger.json is still the very file they are, and reads the file
 * otherwise. */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util.h"

static struct
{
  bool on;
  bool valid; /* entries below are ledger.json's of ident */
  struct cp_file_ident ident;
  struct cp_ledger_entry *entries;
  size_t n, cap;
  int cas_restore;
  unsigned long hits, misses;
} cache;

static void
cache_clear (void)
{
  for (size_t i = 0; i < cache.n; i++)
    cp_ledger_entry_clear (&cache.entries[i]);
  free (cache.entries);
  cache.entries = NULL;
  cache.n = cache.cap = 0;
  cache.valid = false;
}

void
cp_ledger_cache_keep (bool on)
{
  cache.on = on;
  cache_clear ();
  cache.hits = cache.misses = 0;
}

void
cp_ledger_cache_stats (unsigned long *hits, unsigned long *misses)
{
  *hits = cache.hits;
  *misses = cache.misses;
}

bool
cp_ledger_cache_on (void)
{
  return cache.on;
}

bool
cp_ledger_ident_now (const struct cp_ledger *l, struct cp_file_ident *out)
{
  return cp_io_file_ident (l->dirfd, CP_LEDGER_FILE, out);
}

bool
cp_ledger_cache_take (struct cp_ledger *l, const struct cp_file_ident *ident)
{
  if (!cache.valid || !cp_io_same_file_ident (&cache.ident, ident))
    {
      cache_clear (); /* another writer's file: read it, and forget ours */
      cache.misses++;
      return false;
    }
  l->entries = cp_steal_pointer (&cache.entries);
  l->n = cache.n;
  l->cap = cache.cap;
  l->cas_restore = cache.cas_restore;
  l->ident = *ident;
  l->ident_known = true;
  cache.n = cache.cap = 0;
  cache.valid = false;
  cache.hits++;
  return true;
}

void
cp_ledger_cache_give (struct cp_ledger *l)
{
  /* Only a ledger whose entries are exactly the file's: read or committed, and
     not changed since (reconcile's drops and drifts, a put or remove, a restore
     value brought in line, a recovery all mark it dirty). */
  if (!cache.on || !l->ident_known || l->dirty || l->recovered || l->dirfd < 0 || l->lockfd < 0)
    return;
  if (l->n_parts) /* partition records (rare) are not cached: the file is read */
    return;
  cache_clear ();
  cache.entries = cp_steal_pointer (&l->entries);
  cache.n = l->n;
  cache.cap = l->cap;
  cache.cas_restore = l->cas_restore;
  cache.ident = l->ident;
  cache.valid = true;
  l->n = l->cap = 0;
}
