/* cachepin: the ledger as text: ledger.json, version 3.
 *
 *   {"version": 3,
 *    "sched_cache_restore": "off",  (optional: present while cachepin holds the
 *                                    kernel's cache-aware scheduling switch, the
 *                                    value to give back; hook/engine/schedctl.h)
 *    "entries": [{"id": "<container id>" or "apply:<cgroup>",
 *                 "name": "ns/pod/web",     (optional: the container's name as its engine
 *                                            gave it, 1..253 bytes of safe text (text.h);
 *                                            absent: none known; written only when known)
 *                 "cgroup_mount": "/sys/fs/cgroup/cpuset",
 *                 "cgroup": "/path/in/hierarchy",
 *                 "cgroup_ino": 4242,       (optional: the cgroup directory's inode when
 *                                            placed, cgroup v2's cgroup id; absent: not
 *                                            recorded (older ledgers), written only when known)
 *                 "pid": 1234,              (0: no process, liveness by cgroup only)
 *                 "start_time": 987654,     (field 22 of /proc/<pid>/stat; 0 when pid is 0)
 *                 "mode": "exclusive" | "shared",
 *                 "cpus": "0-3",            (the container's cpuset, never empty)
 *                 "held": "0-3,64-67",      (exclusive: cpus and the siblings it keeps idle;
 *                                            shared: "")
 *                 "mems": "0",              (may be empty: a cgroup v2 cpuset.mems that
 *                                            was left to inherit; the ledger only records it)
 *                 "placed_at": 1700000000,  (unix seconds)
 *                 "sched_cache": "none" | "on" | "off",  (cachepin.io/sched-cache)
 *                 "core_sched": false,      (true: asked, and the cookie was made)
 *                 "isolated": true,         (optional: its cgroup is a partition root)
 *                 "runtime": "/var/run/nri/nri.sock",  (optional: the NRI plugin's entries,
 *                                            the runtime whose plugin made it; absent:
 *                                            another front end's, or an older cachepin's)
 *                 "drift": ""}              (the CPUs the cgroup was last found on when
 *                                            another manager had changed its cpuset;
 *                                            "": none; never equal to cpus)
 *               ...]}
 * Version 1 (no sched_cache_restore, sched_cache nor core_sched) is read as
 * asking nothing, version 2 (no drift) as no drift seen; both are written back
 * as version 3.
 * Strict JSON (policy/base/json.h: no duplicate keys, no NaN, no escaped NUL, ...).  Every
 * key but cgroup_ino, name, isolated and runtime (version 3 only) and sched_cache_restore is required and no
 * other key is allowed; integers are JSON integers in
 * 0..2^53; the entries follow the rules in ledger.h (cp_ledger_entry_check()),
 * ids are unique and no CPU is held by two exclusive entries.  Members may come
 * in any order and with any JSON white space; the writer puts the top-level
 * members first and then one entry per line:
 *   {"version":3,"sched_cache_restore":"off","entries":[
 *    {"id":"...","cgroup_mount":"...",...,"drift":""},
 *    ...
 *   ]}
 * The reader is our own (ledger_codec.c), not json-c's DOM: the ledger is read
 * and written by every hook run (issue 12). */
#ifndef CP_LEDGER_CODEC_H
#define CP_LEDGER_CODEC_H

#include <stddef.h>

#include "error.h"
#include "ledger.h"

#define CP_LEDGER_VERSION 3
/* The largest ledger.json read (and therefore written). */
#define CP_LEDGER_MAX_SIZE (4 * 1024 * 1024)

/* Parse and validate a ledger from BUF (LEN bytes, NUL bytes refused) into a
 * detached ledger: find/at/usage/put/remove work, commit fails.  Errors are
 * CP_ERR_INPUT. */
int cp_ledger_parse (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err);

/* The ledger as ledger.json text (NUL-terminated, ends with a newline).  Caller frees. */
char *cp_ledger_serialize (const struct cp_ledger *l);

#endif
