/* cachepin: the ledger's partition records (issue 23, hook/engine/isolate.h).
 *
 * Before cachepin writes anything for an isolated container, it records here,
 * under the ledger's lock, what it is about to add: one record per cgroup, the
 * container's own (`root`: it gets `root` in cpuset.cpus.partition and its
 * cpuset.cpus.exclusive) and each ancestor below the hierarchy's root whose
 * cpuset.cpus.exclusive lacked some of the CPUs (`added`: those, only those).
 * A record is undone (and dropped) when no entry backs it: an entry of the same
 * id, isolated, in the same cgroup.  So a kill between the writes, or a release
 * cut short, is finished by the next run; and a release removes from an ancestor
 * only what cachepin added, never what was there before or another isolated
 * container added (two under one parent: their records' union is the parent's).
 *
 * Rules (checked as the entries' are, on read and on set): id, paths and the
 * cpulist as for entries (ledger.h); each id has exactly one root record and the
 * others are its proper ancestors on the same mount, never "/"; (id, cgroup) is
 * unique; two records of one cgroup add no CPU twice.
 *
 * In ledger.json (version 3, ledger_codec.h) a top-level "partitions" array, and
 * the entry's "isolated": true, both written only while there is one: a ledger
 * without isolation is exactly what older cachepins write and read.  An older
 * cachepin (before issue 23) refuses a ledger that has them ("unknown key"): it
 * would set the ledger aside.  So do not downgrade while a container is isolated:
 * release it first (docs/isolation.md). */
#ifndef CP_LEDGER_PARTITION_H
#define CP_LEDGER_PARTITION_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct cp_ledger;

#define CP_LEDGER_MAX_PARTITIONS 4096

struct cp_ledger_partition
{
  char *id;
  char *cgroup_mount;
  char *cgroup;
  hwloc_bitmap_t added; /* root: the CPUs of the partition; else what cachepin added */
  bool root;
  bool invalid; /* root only: its partition was last seen `root invalid` (logged once) */
};

size_t cp_ledger_partition_count (const struct cp_ledger *l);
const struct cp_ledger_partition *cp_ledger_partition_at (const struct cp_ledger *l, size_t i);
/* ID's root record, or NULL. */
const struct cp_ledger_partition *cp_ledger_partition_root (const struct cp_ledger *l, const char *id);

/* Replace all of ID's records with RECS (N of them, each with id ID; N 0: drop
 * them), checked by the rules above; on a refusal nothing changes. */
int cp_ledger_partition_set (struct cp_ledger *l, const char *id, const struct cp_ledger_partition *recs, size_t n,
                             cp_error_t *err);

/* Mark ID's root record as last seen invalid (or valid again). */
void cp_ledger_partition_mark (struct cp_ledger *l, const char *id, bool invalid);

/* Add to INTO the CPUs of the root records of ids other than EXCLUDE_ID (NULL:
 * none): a partition not undone yet still holds them (cp_ledger_usage()). */
void cp_ledger_partitions_taken (const struct cp_ledger *l, const char *exclude_id, hwloc_bitmap_t into);

/* The codec's: the value of "partitions" (ARRAY) into L, checked (CP_ERR_INPUT);
 * both readers (ledger_codec.c and the reference) call it. */
int cp_ledger_partitions_from_json (json_object *array, struct cp_ledger *l, cp_error_t *err);
/* The same from the array's text (TEXT, LEN bytes). */
int cp_ledger_partitions_parse (const char *text, size_t len, struct cp_ledger *l, cp_error_t *err);
void cp_ledger_partitions_clear (struct cp_ledger *l);

#endif
