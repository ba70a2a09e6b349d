/* Fuzz cp_oci_config_parse() (the bundle's config.json, written by whoever
 * creates the container) and cp_annotations_to_request() on what it yields.
 *
 * Invariants on success (oci/config.h): linux.resources.cpu.cpus is NULL or a
 * non-empty finite set within 0..CP_CPULIST_MAX; cgroupsPath NULL or non-empty
 * and bounded; period fits in int64; annotations as fuzz_check_annotations()
 * says.  The request from the annotations and this config, with the default
 * defaults and with shared-mode defaults, is what fuzz_check_request() says.
 * On failure: an input error starting "config.json: ", *out left zeroed. */
#include <hwloc.h>

#include "common.h"
#include "config.h"
#include "oci_checks.h"
#include "cpulist.h"

static void
check_config (const struct cp_oci_config *cfg)
{
  if (cfg->cpus)
    {
      FUZZ_CHECK (!hwloc_bitmap_iszero (cfg->cpus));
      FUZZ_CHECK (hwloc_bitmap_weight (cfg->cpus) > 0);
      FUZZ_CHECK (hwloc_bitmap_last (cfg->cpus) <= CP_CPULIST_MAX);
    }
  if (cfg->cgroups_path)
    FUZZ_CHECK (cfg->cgroups_path[0] != '\0' && strlen (cfg->cgroups_path) <= CP_OCI_PATH_MAX);
  FUZZ_CHECK (cfg->period <= (uint64_t) INT64_MAX);
  fuzz_check_annotations (&cfg->annotations);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct cp_oci_config cfg;
  memset (&cfg, 0xa5, sizeof cfg); /* parse must not rely on a zeroed *out */
  cp_error_t err = NULL;
  int r = cp_oci_config_parse ((const char *) data, size, &cfg, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, "config.json: ");
      FUZZ_CHECK (fuzz_all_zero (&cfg, sizeof cfg));
      cp_error_free (&err);
      cp_oci_config_free (&cfg);
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  check_config (&cfg);

  fuzz_check_request (&cfg.annotations, NULL, &cfg);
  struct cp_request shared;
  cp_request_init (&shared);
  shared.mode = CP_MODE_SHARED;
  shared.align = CP_LEVEL_NUMA;
  fuzz_check_request (&cfg.annotations, &shared, &cfg);

  cp_oci_config_free (&cfg);
  FUZZ_CHECK (fuzz_all_zero (&cfg, sizeof cfg));
  return 0;
}
