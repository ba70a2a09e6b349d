/* cachepin: the topology model's codec (see topo_codec.h). */
#include "topo_codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "text.h"
#include "util.h"

static const char magic[8] = { 'c', 'p', 'T', 'O', 'P', 'O', 'c', '\n' };

/* The smallest encoding of one item, to bound a count by the bytes left before
   anything is allocated for it. */
#define MIN_SET 4u
#define MIN_CORE (MIN_SET + 4u + 4u * CP_LEVEL_COUNT)
#define MIN_DOMAIN (MIN_SET + 1u + 4u + 4u)
#define MIN_NODE (4u + MIN_SET + 1u)
#define CHECKSUM_SIZE 8u

static uint64_t
fnv1a (const unsigned char *p, size_t n)
{
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* ---- encoding ------------------------------------------------------------------ */

struct writer
{
  char *buf;
  size_t len, cap;
};

static void
put (struct writer *w, const void *p, size_t n)
{
  if (w->cap - w->len < n)
    {
      while (w->cap - w->len < n)
        w->cap = w->cap ? w->cap * 2 : 4096;
      w->buf = cp_xrealloc (w->buf, w->cap);
    }
  memcpy (w->buf + w->len, p, n);
  w->len += n;
}

static void
put_u32 (struct writer *w, uint32_t v)
{
  unsigned char b[4] = { (unsigned char) v, (unsigned char) (v >> 8), (unsigned char) (v >> 16),
                         (unsigned char) (v >> 24) };
  put (w, b, sizeof b);
}

static void
put_u8 (struct writer *w, bool v)
{
  unsigned char b = v ? 1 : 0;
  put (w, &b, 1);
}

/* The tag is opaque (compared, never shown); the source is shown (status), so it
   must be clean text (policy/base/text.h). */
static int
put_str (struct writer *w, const char *s, const char *what, bool clean, cp_error_t *err)
{
  size_t n = strlen (s);
  if (n > CP_TOPO_CODEC_MAX_TEXT || (clean && !cp_text_valid (s, n)))
    return cp_fail_runtime (err, "topology cache: the %s is too long or not clean text", what);
  put_u32 (w, (uint32_t) n);
  put (w, s, n);
  return 0;
}

/* The ranges of SET; its count is written first, patched in once known. */
static int
put_set (struct writer *w, hwloc_const_bitmap_t set, const char *what, cp_error_t *err)
{
  if (hwloc_bitmap_weight (set) < 0 || hwloc_bitmap_last (set) > (int) CP_TOPO_CODEC_MAX_INDEX)
    return cp_fail_runtime (err, "topology cache: %s is infinite or past %u", what, CP_TOPO_CODEC_MAX_INDEX);
  size_t at = w->len;
  put_u32 (w, 0);
  uint32_t ranges = 0;
  for (int first = hwloc_bitmap_first (set); first >= 0;)
    {
      int last = hwloc_bitmap_next_unset (set, first) - 1;
      put_u32 (w, (uint32_t) first);
      put_u32 (w, (uint32_t) last);
      ranges++;
      first = hwloc_bitmap_next (set, last);
    }
  for (int i = 0; i < 4; i++)
    w->buf[at + (size_t) i] = (char) (ranges >> (8 * i));
  return 0;
}

static int
put_cores (struct writer *w, const struct cp_topo *topo, cp_error_t *err)
{
  put_u32 (w, topo->n_cores);
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      const struct cp_core *core = &topo->cores[c];
      if (put_set (w, core->pus, "a core's PUs", err) < 0)
        return -1;
      put_u32 (w, (uint32_t) core->kind);
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        put_u32 (w, core->domain[l]);
    }
  return 0;
}

static int
put_domains (struct writer *w, const struct cp_topo *topo, cp_error_t *err)
{
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      put_u32 (w, topo->n_domains[l]);
      for (unsigned d = 0; d < topo->n_domains[l]; d++)
        {
          const struct cp_domain *dom = &topo->domains[l][d];
          if (put_set (w, dom->cpus, "a domain's CPUs", err) < 0)
            return -1;
          put_u8 (w, dom->fallback);
          put_u32 (w, dom->n_cores);
          for (unsigned i = 0; i < dom->n_cores; i++)
            put_u32 (w, dom->cores[i]);
        }
    }
  return 0;
}

static int
put_nodes (struct writer *w, const struct cp_topo *topo, cp_error_t *err)
{
  put_u32 (w, topo->n_nodes);
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      put_u32 (w, topo->nodes_info[i].os_index);
      if (put_set (w, topo->nodes_info[i].cpus, "a node's CPUs", err) < 0)
        return -1;
      put_u8 (w, topo->nodes_info[i].cpu_memory);
    }
  return 0;
}

static int
put_model (struct writer *w, const struct cp_topo *topo, const char *tag, cp_error_t *err)
{
  if (put_str (w, tag, "tag", false, err) < 0 || put_str (w, topo->source, "source", true, err) < 0
      || put_set (w, topo->online, "online", err) < 0 || put_set (w, topo->allowed, "allowed", err) < 0
      || put_set (w, topo->nodes, "nodes", err) < 0 || put_set (w, topo->allowed_nodes, "allowed_nodes", err) < 0)
    return -1;
  put_u32 (w, topo->llc_depth);
  put_u32 (w, topo->l2_depth);
  if (put_cores (w, topo, err) < 0 || put_domains (w, topo, err) < 0 || put_nodes (w, topo, err) < 0)
    return -1;
  return 0;
}

int
cp_topo_encode (const struct cp_topo *topo, const char *tag, char **out, size_t *len, cp_error_t *err)
{
  struct writer w = { 0 };
  put (&w, magic, sizeof magic);
  put_u32 (&w, CP_TOPO_CODEC_VERSION);
  if (put_model (&w, topo, tag, err) < 0)
    {
      free (w.buf);
      return -1;
    }
  uint64_t sum = fnv1a ((const unsigned char *) w.buf, w.len);
  put_u32 (&w, (uint32_t) sum);
  put_u32 (&w, (uint32_t) (sum >> 32));
  *out = w.buf;
  *len = w.len;
  return 0;
}

/* ---- decoding ------------------------------------------------------------------ */

struct reader
{
  const unsigned char *p;
  size_t pos, len; /* len: where the checksum starts */
};

static int
truncated (const struct reader *r, const char *what, cp_error_t *err)
{
  return cp_fail_input (err, "topology cache: truncated at byte %zu (%s)", r->pos, what);
}

static int
get_u32 (struct reader *r, const char *what, uint32_t *out, cp_error_t *err)
{
  *out = 0; /* defined on failure too: GCC -O3 cannot tell that no caller reads it then */
  if (r->len - r->pos < 4)
    return truncated (r, what, err);
  const unsigned char *b = r->p + r->pos;
  *out = (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
  r->pos += 4;
  return 0;
}

static int
get_bool (struct reader *r, const char *what, bool *out, cp_error_t *err)
{
  if (r->len - r->pos < 1)
    return truncated (r, what, err);
  unsigned char b = r->p[r->pos];
  if (b > 1)
    return cp_fail_input (err, "topology cache: byte %zu (%s) is %u, not 0 or 1", r->pos, what, b);
  r->pos++;
  *out = b == 1;
  return 0;
}

/* A count of items of at least UNIT bytes each, at most MAX. */
static int
get_count (struct reader *r, const char *what, size_t unit, uint32_t max, uint32_t *out, cp_error_t *err)
{
  size_t at = r->pos;
  if (get_u32 (r, what, out, err) < 0)
    return -1;
  if (*out > max || *out > (r->len - r->pos) / unit)
    return cp_fail_input (err, "topology cache: byte %zu: %u %s, more than %s", at, *out, what,
                          *out > max ? "the model can have" : "the bytes left can hold");
  return 0;
}

/* A text of at most CP_TOPO_CODEC_MAX_TEXT bytes without NUL, and when CLEAN,
   clean (policy/base/text.h). */
static int
get_str (struct reader *r, const char *what, bool clean, char **out, cp_error_t *err)
{
  uint32_t n;
  if (get_count (r, what, 1, CP_TOPO_CODEC_MAX_TEXT, &n, err) < 0)
    return -1;
  const char *s = (const char *) r->p + r->pos;
  if ((clean && !cp_text_valid (s, n)) || memchr (s, '\0', n))
    return cp_fail_input (err, "topology cache: byte %zu: the %s is not clean text", r->pos, what);
  /* Exactly N bytes: they are not NUL-terminated, and strndup() may look for
     the NUL past them (ASan's strict_string_checks reports that read). */
  char *copy = cp_xmalloc0 ((size_t) n + 1);
  memcpy (copy, s, n);
  *out = copy;
  r->pos += n;
  return 0;
}

/* A set: ascending ranges within 0..CP_TOPO_CODEC_MAX_INDEX that neither overlap
   nor touch (so that its encoding is unique). */
static int
get_set (struct reader *r, const char *what, hwloc_bitmap_t *out, cp_error_t *err)
{
  uint32_t n;
  if (get_count (r, what, 8, CP_TOPO_CODEC_MAX_INDEX + 1, &n, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  long long prev = -2;
  for (uint32_t i = 0; i < n; i++)
    {
      size_t at = r->pos;
      uint32_t first, last;
      if (get_u32 (r, what, &first, err) < 0 || get_u32 (r, what, &last, err) < 0)
        return -1;
      if (first > last || last > CP_TOPO_CODEC_MAX_INDEX || (long long) first <= prev + 1)
        return cp_fail_input (err, "topology cache: byte %zu: %s: range %u-%u is out of order or past %u", at, what,
                              first, last, CP_TOPO_CODEC_MAX_INDEX);
      hwloc_bitmap_set_range (*out, first, (int) last);
      prev = last;
    }
  return 0;
}

static int
bad (const struct reader *r, cp_error_t *err, const char *what)
{
  return cp_fail_input (err, "topology cache: before byte %zu: %s", r->pos, what);
}

static int
get_header (struct reader *r, const char *tag, struct cp_topo *topo, cp_error_t *err)
{
  size_t total = r->len;
  if (total < sizeof magic + 4 + CHECKSUM_SIZE || memcmp (r->p, magic, sizeof magic) != 0)
    return cp_fail_input (err, "topology cache: not a cachepin topology cache (%zu bytes, no magic)", total);
  r->pos = sizeof magic;
  r->len = total - CHECKSUM_SIZE;
  uint32_t version;
  if (get_u32 (r, "format version", &version, err) < 0)
    return -1;
  if (version != CP_TOPO_CODEC_VERSION)
    return cp_fail_input (err, "topology cache: format version %u, this cachepin reads %u", version,
                          CP_TOPO_CODEC_VERSION);
  const unsigned char *c = r->p + r->len;
  uint64_t stored = (uint64_t) c[0] | (uint64_t) c[1] << 8 | (uint64_t) c[2] << 16 | (uint64_t) c[3] << 24
                    | (uint64_t) c[4] << 32 | (uint64_t) c[5] << 40 | (uint64_t) c[6] << 48 | (uint64_t) c[7] << 56;
  if (stored != fnv1a (r->p, r->len))
    return cp_fail_input (err, "topology cache: checksum mismatch (torn or changed)");
  cleanup_free char *stored_tag = NULL;
  if (get_str (r, "tag", false, &stored_tag, err) < 0)
    return -1;
  if (tag && strcmp (tag, stored_tag) != 0)
    return cp_fail_input (err, "topology cache: made for another key");
  if (get_str (r, "source", true, &topo->source, err) < 0)
    return -1;
  return 0;
}

static int
get_sets (struct reader *r, struct cp_topo *topo, cp_error_t *err)
{
  if (get_set (r, "online", &topo->online, err) < 0 || get_set (r, "allowed", &topo->allowed, err) < 0
      || get_set (r, "nodes", &topo->nodes, err) < 0 || get_set (r, "allowed_nodes", &topo->allowed_nodes, err) < 0)
    return -1;
  if (hwloc_bitmap_iszero (topo->online))
    return bad (r, err, "no online CPU");
  if (!hwloc_bitmap_isincluded (topo->allowed, topo->online))
    return bad (r, err, "allowed CPUs that are not online");
  if (!hwloc_bitmap_isincluded (topo->allowed_nodes, topo->nodes))
    return bad (r, err, "allowed nodes that do not exist");
  uint32_t llc, l2;
  if (get_u32 (r, "llc_depth", &llc, err) < 0 || get_u32 (r, "l2_depth", &l2, err) < 0)
    return -1;
  if ((llc != 0 && llc != 2 && llc != 3) || (l2 != 0 && l2 != 2))
    return bad (r, err, "a cache depth other than 0, 2 or 3");
  topo->llc_depth = llc;
  topo->l2_depth = l2;
  return 0;
}

/* Cores: non-empty, disjoint, covering the online CPUs; core_of_pu built here. */
static int
get_cores (struct reader *r, struct cp_topo *topo, cp_error_t *err)
{
  topo->pu_limit = (unsigned) hwloc_bitmap_last (topo->online) + 1;
  topo->core_of_pu = cp_xcalloc (topo->pu_limit, sizeof *topo->core_of_pu);
  for (unsigned i = 0; i < topo->pu_limit; i++)
    topo->core_of_pu[i] = -1;
  uint32_t n;
  if (get_count (r, "cores", MIN_CORE, topo->pu_limit, &n, err) < 0)
    return -1;
  topo->cores = cp_xcalloc (n ? n : 1, sizeof *topo->cores);
  topo->n_cores = n;
  unsigned covered = 0;
  for (unsigned c = 0; c < n; c++)
    {
      struct cp_core *core = &topo->cores[c];
      uint32_t kind;
      if (get_set (r, "a core's PUs", &core->pus, err) < 0 || get_u32 (r, "a core's kind", &kind, err) < 0)
        return -1;
      if (hwloc_bitmap_iszero (core->pus) || !hwloc_bitmap_isincluded (core->pus, topo->online))
        return bad (r, err, "a core with no PUs, or PUs that are not online");
      if ((int32_t) kind < -1)
        return bad (r, err, "a core kind below -1");
      core->kind = (int32_t) kind;
      core->first_pu = (unsigned) hwloc_bitmap_first (core->pus);
      int pu;
      hwloc_bitmap_foreach_begin (pu, core->pus)
        {
          if (topo->core_of_pu[pu] >= 0)
            return bad (r, err, "a PU in two cores");
          topo->core_of_pu[pu] = (int) c;
          covered++;
        }
      hwloc_bitmap_foreach_end ();
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        if (get_u32 (r, "a core's domain", &core->domain[l], err) < 0)
          return -1;
    }
  if (covered != (unsigned) hwloc_bitmap_weight (topo->online))
    return bad (r, err, "online CPUs that no core has");
  return 0;
}

/* One domain D of LEVEL: disjoint from the earlier ones (COVERED), listing cores in
   increasing order that each point back at it and whose first PU it holds. */
static int
get_domain (struct reader *r, struct cp_topo *topo, enum cp_level level, unsigned d, hwloc_bitmap_t covered,
            unsigned *listed, cp_error_t *err)
{
  struct cp_domain *dom = &topo->domains[level][d];
  dom->level = level;
  dom->index = d;
  uint32_t n;
  if (get_set (r, "a domain's CPUs", &dom->cpus, err) < 0 || get_bool (r, "a domain's fallback", &dom->fallback, err) < 0
      || get_count (r, "a domain's cores", 4, topo->n_cores, &n, err) < 0)
    return -1;
  if (hwloc_bitmap_iszero (dom->cpus) || !hwloc_bitmap_isincluded (dom->cpus, topo->online)
      || hwloc_bitmap_intersects (dom->cpus, covered))
    return bad (r, err, "a domain that is empty, not online, or overlaps another of its level");
  hwloc_bitmap_or (covered, covered, dom->cpus);
  if (n == 0)
    return bad (r, err, "a domain without cores");
  dom->cores = cp_xcalloc (n, sizeof *dom->cores);
  dom->n_cores = n;
  for (unsigned i = 0; i < n; i++)
    {
      uint32_t c;
      if (get_u32 (r, "a domain's core", &c, err) < 0)
        return -1;
      if (c >= topo->n_cores || (i > 0 && c <= dom->cores[i - 1]))
        return bad (r, err, "a domain's core out of range or out of order");
      if (topo->cores[c].domain[level] != d || !hwloc_bitmap_isset (dom->cpus, topo->cores[c].first_pu))
        return bad (r, err, "a domain and a core that disagree");
      dom->cores[i] = c;
    }
  /* numbered in core order: each domain's first core comes after the previous one's */
  if (d > 0 && dom->cores[0] <= topo->domains[level][d - 1].cores[0])
    return bad (r, err, "domains out of core order");
  *listed += n;
  return 0;
}

static int
get_domains (struct reader *r, struct cp_topo *topo, cp_error_t *err)
{
  cleanup_bitmap hwloc_bitmap_t covered = cp_bitmap_new ();
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      uint32_t n;
      if (get_count (r, "domains", MIN_DOMAIN, topo->n_cores, &n, err) < 0)
        return -1;
      topo->domains[l] = cp_xcalloc (n ? n : 1, sizeof *topo->domains[l]);
      topo->n_domains[l] = n;
      hwloc_bitmap_zero (covered);
      unsigned listed = 0;
      for (unsigned d = 0; d < n; d++)
        if (get_domain (r, topo, (enum cp_level) l, d, covered, &listed, err) < 0)
          return -1;
      /* each core in exactly one domain: listed once, and only where it points */
      if (listed != topo->n_cores)
        return bad (r, err, "cores that no domain of a level lists");
    }
  return 0;
}

static int
get_nodes (struct reader *r, struct cp_topo *topo, cp_error_t *err)
{
  uint32_t n;
  if (get_count (r, "nodes", MIN_NODE, CP_TOPO_CODEC_MAX_INDEX + 1, &n, err) < 0)
    return -1;
  topo->nodes_info = cp_xcalloc (n ? n : 1, sizeof *topo->nodes_info);
  topo->n_nodes = n;
  cleanup_bitmap hwloc_bitmap_t seen = cp_bitmap_new ();
  for (unsigned i = 0; i < n; i++)
    {
      struct cp_node *node = &topo->nodes_info[i];
      if (get_u32 (r, "a node's number", &node->os_index, err) < 0 || get_set (r, "a node's CPUs", &node->cpus, err) < 0
          || get_bool (r, "a node's cpu_memory", &node->cpu_memory, err) < 0)
        return -1;
      if (node->os_index > CP_TOPO_CODEC_MAX_INDEX || !hwloc_bitmap_isset (topo->nodes, node->os_index)
          || hwloc_bitmap_isset (seen, node->os_index))
        return bad (r, err, "a node that is not in the node set, or twice");
      hwloc_bitmap_set (seen, node->os_index);
      if (!hwloc_bitmap_isincluded (node->cpus, topo->online))
        return bad (r, err, "a node with CPUs that are not online");
    }
  return 0;
}

int
cp_topo_decode (const char *buf, size_t len, const char *tag, struct cp_topo **out, cp_error_t *err)
{
  cleanup_topo struct cp_topo *topo = cp_xmalloc0 (sizeof *topo);
  struct reader r = { .p = (const unsigned char *) buf, .pos = 0, .len = len };
  if (get_header (&r, tag, topo, err) < 0 || get_sets (&r, topo, err) < 0 || get_cores (&r, topo, err) < 0
      || get_domains (&r, topo, err) < 0 || get_nodes (&r, topo, err) < 0)
    return -1;
  if (r.pos != r.len)
    return cp_fail_input (err, "topology cache: %zu bytes after the model", r.len - r.pos);
  *out = cp_steal_pointer (&topo);
  return 0;
}
