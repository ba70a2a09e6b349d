/* Fuzz cp_topo_decode(): the topology cache's bytes are someone's input.
 *
 * Input: the bytes of a cache file, decoded without a tag (any key) as they are,
 * then again with their last 8 bytes replaced by the right checksum, so that
 * mutations reach the parser behind the checksum instead of stopping at it.
 * Invariants:
 *   - on failure: an input error with a one-line printable message, *out untouched;
 *   - on success: the model is what placement may rely on: every core's PUs
 *     online and its first_pu their first, core_of_pu pointing back at each
 *     core, every domain index in range and pointing back; and encoding it
 *     again then decoding gives the same bytes (the encoding is unique);
 *   - cp_place() on it (one CPU, then all allowed in shared mode) never crashes. */
#include <hwloc.h>

#include "common.h"
#include "placement.h"
#include "topo_codec.h"

static void
check_model (const struct cp_topo *t)
{
  FUZZ_CHECK (t->pu_limit == (unsigned) hwloc_bitmap_last (t->online) + 1);
  for (unsigned c = 0; c < t->n_cores; c++)
    {
      const struct cp_core *core = &t->cores[c];
      FUZZ_CHECK (hwloc_bitmap_isincluded (core->pus, t->online));
      FUZZ_CHECK (core->first_pu == (unsigned) hwloc_bitmap_first (core->pus));
      FUZZ_CHECK (t->core_of_pu[core->first_pu] == (int) c);
      for (int l = 0; l < CP_LEVEL_COUNT; l++)
        FUZZ_CHECK (core->domain[l] < t->n_domains[l]);
    }
  for (unsigned pu = 0; pu < t->pu_limit; pu++)
    FUZZ_CHECK ((t->core_of_pu[pu] >= 0) == (hwloc_bitmap_isset (t->online, pu) != 0));
  for (int l = 0; l < CP_LEVEL_COUNT; l++)
    for (unsigned d = 0; d < t->n_domains[l]; d++)
      for (unsigned i = 0; i < t->domains[l][d].n_cores; i++)
        FUZZ_CHECK (t->cores[t->domains[l][d].cores[i]].domain[l] == d);
}

static void
place_on (const struct cp_topo *t, enum cp_mode mode, unsigned cpus)
{
  struct cp_request req;
  cp_request_init (&req);
  req.cpus = cpus;
  req.mode = mode;
  struct cp_usage usage = { 0 };
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  if (cp_place (t, t->allowed, NULL, &usage, &req, &plan, &err) == 0)
    cp_plan_free (plan);
  cp_error_free (&err);
}

static void
decode_one (const char *data, size_t size)
{
  struct cp_topo *t = NULL;
  cp_error_t err = NULL;
  int r = cp_topo_decode (data, size, NULL, &t, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, "topology cache: ");
      FUZZ_CHECK (t == NULL);
      cp_error_free (&err);
      return;
    }
  check_model (t);
  char *buf = NULL, *again = NULL;
  size_t len = 0, len2 = 0;
  FUZZ_CHECK (cp_topo_encode (t, "fuzz", &buf, &len, &err) == 0);
  struct cp_topo *back = NULL;
  FUZZ_CHECK_MSG (cp_topo_decode (buf, len, "fuzz", &back, &err) == 0, "%s", cp_error_message (err));
  FUZZ_CHECK (cp_topo_encode (back, "fuzz", &again, &len2, &err) == 0);
  FUZZ_CHECK (len == len2 && memcmp (buf, again, len) == 0);
  if (!hwloc_bitmap_iszero (t->allowed))
    {
      place_on (t, CP_MODE_EXCLUSIVE, 1);
      place_on (t, CP_MODE_SHARED, 0);
    }
  free (again);
  free (buf);
  cp_topo_free (back);
  cp_topo_free (t);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  decode_one ((const char *) data, size);
  if (size < 8)
    return 0;
  char *copy = malloc (size);
  if (copy == NULL)
    abort ();
  memcpy (copy, data, size);
  uint64_t h = 14695981039346656037ull; /* the codec's FNV-1a */
  for (size_t i = 0; i < size - 8; i++)
    h = (h ^ (unsigned char) copy[i]) * 1099511628211ull;
  for (int i = 0; i < 8; i++)
    copy[size - 8 + (size_t) i] = (char) (h >> (8 * i));
  decode_one (copy, size);
  free (copy);
  return 0;
}
