/* Fuzz cp_dra_claim_parse() (policy/dra_claim.h): a ResourceClaim from the API server.
 *
 * Invariants on success: the uid is a uid (cp_dra_claim_check_uid()); at most
 * CP_DRA_CLAIM_MAX_RESULTS results, each of them with a request, a device, a
 * position among the claim's results that grows, and a CPU count within
 * 0..CP_DRA_CLAIM_MAX_CPUS; at most CP_DRA_CLAIM_MAX_RESERVED reservedFor uids, each
 * a uid.  On failure: an input error of one line; the claim cleared to zero. */
#include "common.h"
#include "dra_claim.h"

#define NODE "worker-1"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct cp_dra_claim c;
  memset (&c, 0xa5, sizeof c); /* parse must not rely on a zeroed *out */
  cp_error_t err = NULL;
  int r = cp_dra_claim_parse ((const char *) data, size, NODE, &c, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NULL);
      cp_error_free (&err);
      cp_dra_claim_clear (&c);
      FUZZ_CHECK (fuzz_all_zero (&c, sizeof c));
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  FUZZ_CHECK (cp_dra_claim_check_uid ("uid", c.uid, &err) == 0);
  FUZZ_CHECK (c.name[0] && c.namespace_[0]);
  FUZZ_CHECK (c.n_results + c.skipped_admin + c.skipped_other <= CP_DRA_CLAIM_MAX_RESULTS);
  for (size_t i = 0; i < c.n_results; i++)
    {
      FUZZ_CHECK (c.results[i].request[0] && c.results[i].device[0]);
      FUZZ_CHECK (c.results[i].cpus <= CP_DRA_CLAIM_MAX_CPUS);
      FUZZ_CHECK (i == 0 || c.results[i].index > c.results[i - 1].index);
    }
  FUZZ_CHECK (c.n_reserved <= CP_DRA_CLAIM_MAX_RESERVED);
  for (size_t i = 0; i < c.n_reserved; i++)
    FUZZ_CHECK (cp_dra_claim_check_uid ("uid", c.reserved_for[i], &err) == 0);
  cp_dra_claim_clear (&c);
  return 0;
}
