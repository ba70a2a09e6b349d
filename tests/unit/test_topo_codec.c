/* The topology model's codec (policy/topo_codec.h): a decoded model equals the
 * discovered one field by field (synthetic topologies, and every captured XML when
 * $CACHEPIN_TOPOLOGIES is set), its encoding is unique, and every hostile input
 * (truncated, a flipped bit, a huge count, an index out of range, inconsistent
 * bitmaps) is refused with an input error, never a crash. */
#define _GNU_SOURCE
#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "topo_codec.h"
#include "util.h"

#define TAG "boot=x\nsource=test"

/* ---- field-by-field equality ----------------------------------------------------- */

static void
assert_same_set (hwloc_const_bitmap_t a, hwloc_const_bitmap_t b, const char *src, const char *what)
{
  if (!hwloc_bitmap_isequal (a, b))
    fail_msg ("%s: %s differs", src, what);
}

static void
assert_same_topo (const struct cp_topo *a, const struct cp_topo *b)
{
  const char *src = a->source;
  assert_string_equal (a->source, b->source);
  assert_same_set (a->online, b->online, src, "online");
  assert_same_set (a->allowed, b->allowed, src, "allowed");
  assert_same_set (a->nodes, b->nodes, src, "nodes");
  assert_same_set (a->allowed_nodes, b->allowed_nodes, src, "allowed_nodes");
  assert_int_equal (a->llc_depth, b->llc_depth);
  assert_int_equal (a->l2_depth, b->l2_depth);
  assert_int_equal (a->n_cores, b->n_cores);
  for (unsigned c = 0; c < a->n_cores; c++)
    {
      assert_same_set (a->cores[c].pus, b->cores[c].pus, src, "a core's PUs");
      assert_int_equal (a->cores[c].first_pu, b->cores[c].first_pu);
      assert_int_equal (a->cores[c].kind, b->cores[c].kind);
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        assert_int_equal (a->cores[c].domain[l], b->cores[c].domain[l]);
    }
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    {
      assert_int_equal (a->n_domains[l], b->n_domains[l]);
      for (unsigned d = 0; d < a->n_domains[l]; d++)
        {
          const struct cp_domain *x = &a->domains[l][d], *y = &b->domains[l][d];
          assert_int_equal (x->level, y->level);
          assert_int_equal (x->index, y->index);
          assert_same_set (x->cpus, y->cpus, src, "a domain's CPUs");
          assert_int_equal (x->fallback, y->fallback);
          assert_int_equal (x->n_cores, y->n_cores);
          assert_memory_equal (x->cores, y->cores, x->n_cores * sizeof *x->cores);
        }
    }
  assert_int_equal (a->n_nodes, b->n_nodes);
  for (unsigned i = 0; i < a->n_nodes; i++)
    {
      assert_int_equal (a->nodes_info[i].os_index, b->nodes_info[i].os_index);
      assert_same_set (a->nodes_info[i].cpus, b->nodes_info[i].cpus, src, "a node's CPUs");
      assert_int_equal (a->nodes_info[i].cpu_memory, b->nodes_info[i].cpu_memory);
    }
  assert_int_equal (a->pu_limit, b->pu_limit);
  assert_memory_equal (a->core_of_pu, b->core_of_pu, a->pu_limit * sizeof *a->core_of_pu);
}

static char *
encode (const struct cp_topo *t, size_t *len)
{
  char *buf = NULL;
  cp_error_t err = NULL;
  if (cp_topo_encode (t, TAG, &buf, len, &err) < 0)
    fail_msg ("encode %s: %s", t->source, cp_error_message (err));
  return buf;
}

/* Encode, decode, compare; and the encoding of the decoded model is the same bytes. */
static void
round_trip (const struct cp_topo *t)
{
  size_t len = 0, len2 = 0;
  cleanup_free char *buf = encode (t, &len);
  struct cp_topo *back = NULL;
  cp_error_t err = NULL;
  if (cp_topo_decode (buf, len, TAG, &back, &err) < 0)
    fail_msg ("decode %s: %s", t->source, cp_error_message (err));
  assert_same_topo (t, back);
  cleanup_free char *again = encode (back, &len2);
  assert_int_equal (len, len2);
  assert_memory_equal (buf, again, len);
  cp_topo_free (back);
}

static void
test_round_trip_synthetic (void **state)
{
  (void) state;
  static const char *const sources[] = {
    "package:2 l3cache:4 core:4 pu:2(indexes=core)",
    "pack:2 core:2 pu:2(indexes=0,4,1,5,2,6,3,7)",
    "core:1 pu:1",
    "pack:2 numa:2 l3cache:2 l2cache:2 core:2 pu:2",
    "pack:1 l2cache:4 core:2 pu:4",
    "pack:16 l3cache:8 core:32 pu:2",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (sources); i++)
    {
      cleanup_topo struct cp_topo *t = tu_topo (sources[i]);
      round_trip (t);
    }
}

static unsigned xml_count;

static int
round_trip_file (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  size_t n = strlen (path);
  if (type != FTW_F || n < 4 || strcmp (path + n - 4, ".xml") != 0)
    return 0;
  cleanup_topo struct cp_topo *t = tu_topo (path);
  round_trip (t);
  xml_count++;
  return 0;
}

static void
test_captured_round_trip (void **state)
{
  (void) state;
  const char *dir = tu_topologies_dir ();
  if (dir == NULL)
    tu_skip ();
  nftw (dir, round_trip_file, 16, FTW_PHYS);
  print_message ("round trip of %u captured topologies\n", xml_count);
  assert_true (xml_count > 0);
}

/* ---- refusals ------------------------------------------------------------------------ */

/* The decoder's checksum, recomputed after a test changed BUF on purpose, so that
   what is tested is the check behind it. */
static void
reseal (char *buf, size_t len)
{
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < len - 8; i++)
    h = (h ^ (unsigned char) buf[i]) * 1099511628211ull;
  for (int i = 0; i < 8; i++)
    buf[len - 8 + (size_t) i] = (char) (h >> (8 * i));
}

/* Decoding BUF must fail with an input error whose message contains NEEDLE. */
static void
refused (const char *buf, size_t len, const char *tag, const char *needle)
{
  struct cp_topo *t = NULL;
  cp_error_t err = NULL;
  int r = cp_topo_decode (buf, len, tag, &t, &err);
  if (r == 0)
    fail_msg ("decoded what should be refused (%s)", needle);
  assert_null (t);
  assert_int_equal (cp_error_kind (err), CP_ERR_INPUT);
  tu_assert_contains (cp_error_message (err), "topology cache: ");
  tu_assert_contains (cp_error_message (err), needle);
  cp_error_free (&err);
}

static void
test_truncated (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("package:2 l3cache:4 core:4 pu:2(indexes=core)");
  size_t len;
  cleanup_free char *buf = encode (t, &len);
  for (size_t n = 0; n < len; n++)
    refused (buf, n, TAG, "");
  /* truncated yet resealed: the parse itself must notice */
  for (size_t n = 24; n < len - 8; n++)
    {
      cleanup_free char *cut = cp_xmalloc0 (n + 8);
      memcpy (cut, buf, n);
      reseal (cut, n + 8);
      refused (cut, n + 8, TAG, "");
    }
}

static void
test_bit_flips (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("pack:2 numa:2 l3cache:2 core:2 pu:2");
  size_t len;
  cleanup_free char *buf = encode (t, &len);
  for (size_t i = 0; i < len * 8; i++)
    {
      buf[i / 8] ^= (char) (1 << (i % 8));
      refused (buf, len, TAG, "");
      buf[i / 8] ^= (char) (1 << (i % 8));
    }
}

static void
test_foreign (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *t = tu_topo ("core:2 pu:2");
  size_t len;
  cleanup_free char *buf = encode (t, &len);
  refused (buf, len, "boot=y\nsource=test", "made for another key");
  refused ("{\"version\": 1, \"entries\": []}\n", 31, TAG, "not a cachepin topology cache");
  buf[8] = 2; /* format version 2 */
  reseal (buf, len);
  refused (buf, len, TAG, "format version 2, this cachepin reads 1");
  buf[8] = 1;
  reseal (buf, len);
  struct cp_topo *back = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_topo_decode (buf, len, NULL, &back, &err), 0); /* no tag asked: any */
  cp_topo_free (back);
}

/* Magic, version, tag, source, then WORDS (u32 each), resealed. */
static char *
craft (const uint32_t *words, size_t n, size_t *len)
{
  const char *head = "cpTOPOc\n";
  size_t tag = strlen (TAG), src = 4;
  *len = 8 + 4 + 4 + tag + 4 + src + 4 * n + 8;
  char *buf = cp_xmalloc0 (*len);
  size_t pos = 0;
#define U32(v)                                    \
  do                                              \
    {                                             \
      uint32_t v_ = (v);                          \
      for (int i_ = 0; i_ < 4; i_++)              \
        buf[pos++] = (char) (v_ >> (8 * i_));     \
    }                                             \
  while (0)
  memcpy (buf, head, 8);
  pos = 8;
  U32 (CP_TOPO_CODEC_VERSION);
  U32 ((uint32_t) tag);
  memcpy (buf + pos, TAG, tag);
  pos += tag;
  U32 ((uint32_t) src);
  memcpy (buf + pos, "host", src);
  pos += src;
  for (size_t i = 0; i < n; i++)
    U32 (words[i]);
#undef U32
  reseal (buf, *len);
  return buf;
}

static void
test_huge_counts (void **state)
{
  (void) state;
  size_t len;
  /* online: 2^32-1 ranges */
  static const uint32_t huge_set[] = { 0xffffffffu, 0, 0 };
  cleanup_free char *a = craft (huge_set, CP_ARRAY_SIZE (huge_set), &len);
  refused (a, len, TAG, "more than the model can have");
  /* online 0-3, the other sets empty, depths, then 100000 cores */
  static const uint32_t many_cores[] = { 1, 0, 3, 0, 0, 0, 3, 2, 100000 };
  cleanup_free char *b = craft (many_cores, CP_ARRAY_SIZE (many_cores), &len);
  refused (b, len, TAG, "100000 cores");
  /* a range past CPU 65535, ranges out of order, touching */
  static const uint32_t far[] = { 1, 0, 70000 };
  cleanup_free char *c = craft (far, CP_ARRAY_SIZE (far), &len);
  refused (c, len, TAG, "out of order or past 65535");
  static const uint32_t backwards[] = { 2, 4, 5, 0, 1 };
  cleanup_free char *d = craft (backwards, CP_ARRAY_SIZE (backwards), &len);
  refused (d, len, TAG, "range 0-1 is out of order");
  static const uint32_t touching[] = { 2, 0, 1, 2, 3 };
  cleanup_free char *e = craft (touching, CP_ARRAY_SIZE (touching), &len);
  refused (e, len, TAG, "range 2-3 is out of order");
  /* a text length past the bound */
  static const uint32_t none[] = { 0 };
  cleanup_free char *f = craft (none, 1, &len);
  f[12] = (char) 0xff, f[13] = (char) 0xff, f[14] = (char) 0xff, f[15] = 0x7f;
  reseal (f, len);
  refused (f, len, TAG, "more than the model can have");
}

/* Change a good model with MUTATE, encode it (the encoder checks only what it must
   to write), and the decoder must refuse it with NEEDLE. */
static void
refuse_mutated (void (*mutate) (struct cp_topo *), const char *needle)
{
  cleanup_topo struct cp_topo *t = tu_topo ("pack:2 numa:2 l3cache:2 core:2 pu:2(indexes=core)");
  mutate (t);
  size_t len;
  cleanup_free char *buf = encode (t, &len);
  refused (buf, len, TAG, needle);
}

static void m_core_domain (struct cp_topo *t) { t->cores[0].domain[CP_LEVEL_LLC] = t->n_domains[CP_LEVEL_LLC]; }
static void m_domain_core (struct cp_topo *t) { t->domains[CP_LEVEL_LLC][1].cores[1] = t->n_cores; }
static void m_core_order (struct cp_topo *t)
{
  unsigned *c = t->domains[CP_LEVEL_LLC][0].cores;
  unsigned x = c[0];
  c[0] = c[1];
  c[1] = x;
}
static void m_overlap_cores (struct cp_topo *t) { hwloc_bitmap_or (t->cores[1].pus, t->cores[1].pus, t->cores[0].pus); }
static void m_offline_pu (struct cp_topo *t) { hwloc_bitmap_set (t->cores[0].pus, 9000); }
static void m_uncovered (struct cp_topo *t) { hwloc_bitmap_set (t->online, 9000); }
static void m_allowed (struct cp_topo *t) { hwloc_bitmap_set (t->allowed, 9000); }
static void m_node (struct cp_topo *t) { t->nodes_info[0].os_index = 77; }
static void m_node_twice (struct cp_topo *t) { t->nodes_info[1].os_index = t->nodes_info[0].os_index; }
static void m_kind (struct cp_topo *t) { t->cores[0].kind = -5; }
static void m_depth (struct cp_topo *t) { t->llc_depth = 7; }
static void m_domain_overlap (struct cp_topo *t)
{
  hwloc_bitmap_t *cpus = &t->domains[CP_LEVEL_NUMA][1].cpus;
  hwloc_bitmap_or (*cpus, *cpus, t->domains[CP_LEVEL_NUMA][0].cpus);
}
static void m_lost_core (struct cp_topo *t) { t->domains[CP_LEVEL_L2][0].n_cores = 0; }
static void m_source (struct cp_topo *t) { t->source[0] = '\x1b'; }

static void
test_inconsistent (void **state)
{
  (void) state;
  refuse_mutated (m_core_domain, "a domain and a core that disagree");
  refuse_mutated (m_domain_core, "a domain's core out of range or out of order");
  refuse_mutated (m_core_order, "out of range or out of order");
  refuse_mutated (m_overlap_cores, "a PU in two cores");
  refuse_mutated (m_offline_pu, "PUs that are not online");
  refuse_mutated (m_uncovered, "online CPUs that no core has");
  refuse_mutated (m_allowed, "allowed CPUs that are not online");
  refuse_mutated (m_node, "a node that is not in the node set");
  refuse_mutated (m_node_twice, "or twice");
  refuse_mutated (m_kind, "a core kind below -1");
  refuse_mutated (m_depth, "a cache depth");
  refuse_mutated (m_domain_overlap, "overlaps another of its level");
  refuse_mutated (m_lost_core, "a domain without cores");

  cleanup_topo struct cp_topo *t = tu_topo ("core:2 pu:1");
  m_source (t);
  char *buf = NULL;
  size_t len;
  cp_error_t err = NULL;
  assert_int_equal (cp_topo_encode (t, TAG, &buf, &len, &err), -1); /* never written */
  tu_assert_contains (cp_error_message (err), "source");
  cp_error_free (&err);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_round_trip_synthetic),
    cmocka_unit_test (test_captured_round_trip),
    cmocka_unit_test (test_truncated),
    cmocka_unit_test (test_bit_flips),
    cmocka_unit_test (test_foreign),
    cmocka_unit_test (test_huge_counts),
    cmocka_unit_test (test_inconsistent),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
