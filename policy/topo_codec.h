/* cachepin: the topology model (policy/topo.h) as bytes, and back.
 *
 * For the topology cache (hook/state/topocache.h): a model is saved after a discovery
 * and read back instead of the next one.  The file is someone's input like every
 * other (a disk can tear it, anyone with root can write it), so the decoder trusts
 * nothing: every count is checked against the bytes left before anything is
 * allocated, every index is in range, the bitmaps are consistent (cores disjoint
 * and inside the online CPUs, each level's domains disjoint and listing exactly
 * the cores that point at them), and what the model derives (first_pu, the
 * domains' level and index, pu_limit, core_of_pu) is rebuilt, never read.  A
 * checksum over everything refuses a flipped bit that would still parse.
 *
 * Layout (all integers little-endian):
 *   "cpTOPOc\n"  8 bytes of magic
 *   u32 format version (CP_TOPO_CODEC_VERSION)
 *   str tag      opaque to the codec: the cache's key, compared by the decoder
 *   str source
 *   set online, allowed, nodes, allowed_nodes
 *   u32 llc_depth (0, 2, 3), u32 l2_depth (0, 2)
 *   u32 n_cores, then per core: set pus, i32 kind (>= -1), u32 domain[CP_LEVEL_COUNT]
 *   per level: u32 n_domains, then per domain: set cpus, u8 fallback, u32 n_cores,
 *              u32 core positions (strictly increasing)
 *   u32 n_nodes, then per node: u32 os_index, set cpus, u8 cpu_memory
 *   u64 FNV-1a of every byte before it
 * where str = u32 length + bytes (no NUL), set = u32 ranges + (u32 first, u32 last)
 * per range, ascending, neither overlapping nor touching.  The encoding of a model
 * is unique: decode then encode gives the same bytes. */
#ifndef CP_TOPO_CODEC_H
#define CP_TOPO_CODEC_H

#include <stddef.h>

#include "error.h"
#include "topo.h"

/* Change it whenever the layout or the meaning of a field changes: a cache
   written by another version is then refused (and rebuilt), never misread. */
#define CP_TOPO_CODEC_VERSION 1u

/* Bounds the decoder enforces (and the encoder, so that it never writes what the
   decoder refuses).  CPU and node numbers: cp_topo_from_hwloc() refuses CPUs above
   65535; the tag and the source: a path or a description, and the cache key with
   two cpulists (8192 CPUs every other one: about 40 KiB). */
#define CP_TOPO_CODEC_MAX_INDEX 65535u
#define CP_TOPO_CODEC_MAX_TEXT 65536u

/* TOPO with TAG (a NUL-terminated text, at most CP_TOPO_CODEC_MAX_TEXT bytes) into
 * *OUT (caller frees), *LEN bytes.  Fails (CP_ERR_RUNTIME) only on a model the
 * decoder would refuse (an infinite set, numbers past the bounds). */
int cp_topo_encode (const struct cp_topo *topo, const char *tag, char **out, size_t *len, cp_error_t *err);

/* Decode BUF (LEN bytes).  When TAG is not NULL, the tag stored must be exactly it.
 * Every way the bytes can be wrong is CP_ERR_INPUT with one line saying where
 * ("topology cache: truncated at byte 812 (a core's PUs)", "... checksum ...",
 * "... made for another key"). */
int cp_topo_decode (const char *buf, size_t len, const char *tag, struct cp_topo **out, cp_error_t *err);

#endif
