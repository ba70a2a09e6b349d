/* cachepin: the topology cache.
 *
 * Discovering the host's topology is most of what a hook with a small ledger does
 * (hwloc reads hundreds of sysfs files); the result changes only when the machine
 * does.  So the reduced model (policy/topo.h) is saved after a discovery, in the
 * state directory next to the ledger, as CP_TOPOCACHE_FILE (policy/topo_codec.h:
 * the bytes), and used instead of the next discovery while its key holds.
 *
 * The key is everything that makes the model stale, as one text stored in the file
 * and compared byte for byte:
 *   format=  the codec's format version (CP_TOPO_CODEC_VERSION)
 *   hwloc=   hwloc's runtime API version (hwloc_get_api_version())
 *   boot=    /proc/sys/kernel/random/boot_id: a reboot may bring other CPUs
 *   online=  /sys/devices/system/cpu/online, as the kernel writes it (hotplug)
 *   allowed= the hook's own CPU affinity (a cpuset change of the runtime's cgroup
 *            that hwloc would report as the allowed CPUs; a narrower affinity
 *            only costs a rediscovery.  The hook's placements do not use the
 *            model's allowed sets anyway: a container's CPUs and nodes come from
 *            its parent cgroup; `status` shows them)
 *   source=  the host config's `topology`
 *   file=    for an XML file or a sysfs directory, its identity: st_dev, st_ino,
 *            size, mtime and ctime (ns), taken before the discovery, so a file
 *            replaced or changed in place is discovered again.  A sysfs dump
 *            changed deep inside without touching its top directory is not seen:
 *            give the dump a new directory, or remove the cache.
 * When the key cannot be computed (boot_id or the online file unreadable) the
 * cache is neither read nor written.
 *
 * Trust.  The file is read like the ledger (hook/state/ledger_store.h): in the state
 * directory, created and checked by cp_ledger_open_dir() (not a symlink, owned by
 * us, not writable by group or others); the file opened without following a
 * symlink and accepted only if fstat() on the opened fd says it is a regular file
 * owned by the effective uid, with one link, not writable by group or others, of
 * at most CP_TOPOCACHE_MAX bytes.  Anything that fails that, fails to decode
 * (torn, changed, foreign) or was made for another key is ignored (one debug log
 * line saying why), rediscovered and replaced: a cache is never trusted over a
 * discovery, and a corrupt one never changes a placement.
 *
 * Writing.  CP_TOPOCACHE_FILE ".tmp.<pid>" created 0600 with O_EXCL, written and
 * renamed over the cache: readers see the old file or the new one, never part of
 * one.  Two hooks that discover at once both write and the last rename wins; both
 * wrote a model of the same machine under the same key, so either is right.  No
 * fsync: a cache lost or torn by a crash is refused by its checksum and rebuilt.
 * A failed write is logged (warning) and never fails the hook.  A hook killed
 * between the create and the rename leaves its .tmp.<pid> behind (a few KiB; the
 * next writer with the same pid replaces it). */
#ifndef CP_TOPOCACHE_H
#define CP_TOPOCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "topo.h"
#include "hostconfig.h"

#define CP_TOPOCACHE_FILE "topology.cache"
/* An 8192-PU model is about 200 KiB. */
#define CP_TOPOCACHE_MAX ((size_t) 16 << 20)

enum cp_topocache_flags
{
  /* Read the cache if it is valid, never write it nor create the state
     directory (`cachepin status`, which writes nothing). */
  CP_TOPOCACHE_READ_ONLY = 1 << 0,
};

/* The topology of HC->topology: from the cache when it is valid, else discovered
 * (cp_topocache_discover()) and, unless READ_ONLY, saved.  Fails only as the
 * discovery does. */
int cp_topocache_load (const struct cp_hostconfig *hc, unsigned flags, struct cp_topo **out, cp_error_t *err);

/* A long-running process (`cachepin nri`) keeps the model in memory across calls:
 * with ON, the model a load returns is kept as well, and the next load returns it
 * again (one more holder, cp_topo_ref(): the caller frees it as always) while the
 * key computed now is the key it was loaded under, so a hotplug, a reboot, a new
 * file or an affinity change is seen at the very next call, as with the file.
 * What is skipped is the cache file's read and decode (or the discovery).  OFF
 * (the default: the hook, apply, status) lets the kept model go. */
void cp_topocache_keep (bool on);

/* Where a model cp_topocache_load_from() returned came from (`cachepin status`). */
struct cp_topocache_origin
{
  char *file;    /* the cache's path */
  bool used;     /* the model is the cache's */
  char *why_not; /* when not used, why: no key, no state directory, or what the
                    read or the check said (missing, another key, corrupt, not ours) */
};
void cp_topocache_origin_clear (struct cp_topocache_origin *o);

/* cp_topocache_load(), and ORIGIN (may be NULL) filled in, even when it fails. */
int cp_topocache_load_from (const struct cp_hostconfig *hc, unsigned flags, struct cp_topo **out,
                            struct cp_topocache_origin *origin, cp_error_t *err);

/* Discovery without the cache: cp_topo_load() for "host" and XML files, and for
 * "sysfs:DIR" (an absolute directory holding a Linux sysfs/procfs dump, as hwloc's
 * tests and hwloc-gather-topology make them) hwloc's Linux backend on that root. */
int cp_topocache_discover (const char *source, struct cp_topo **out, cp_error_t *err);

/* The key of SOURCE on this host now, as described above (caller frees). */
int cp_topocache_key (const char *source, char **out, cp_error_t *err);

#endif
