/* Fuzz cp_oci_state_parse(): the state a runtime writes on the hook's stdin.
 *
 * Invariants on success (oci/state.h): ociVersion non-empty and bounded; id of
 * 1..CP_OCI_ID_MAX bytes without control characters or '/', not "." or "..";
 * a known status; pid in 1..CP_OCI_PID_MAX, 0 only when stopped; bundle absolute
 * and bounded; annotations as fuzz_check_annotations() says, and the request
 * built from them (as cmd_hook does, without a config.json) as
 * fuzz_check_request() says.  What the first step alone refuses
 * (cp_oci_state_parse_annotations: the JSON and the cachepin.io/ keys), the
 * whole parse refuses with the same message.  Parsing is deterministic: twice gives the same.
 * On failure: an input error starting "state: ", and *out left zeroed. */
#include "common.h"
#include "state.h"
#include "oci_checks.h"

static void
check_state (const struct cp_oci_state *st)
{
  FUZZ_CHECK (st->oci_version && st->oci_version[0] && strlen (st->oci_version) <= CP_OCI_VERSION_MAX);

  size_t id_len = st->id ? strlen (st->id) : 0;
  FUZZ_CHECK (id_len >= 1 && id_len <= CP_OCI_ID_MAX);
  for (const char *p = st->id; *p; p++)
    FUZZ_CHECK ((unsigned char) *p >= 0x20 && *p != 0x7f && *p != '/');
  FUZZ_CHECK (strcmp (st->id, ".") != 0 && strcmp (st->id, "..") != 0);

  FUZZ_CHECK ((unsigned) st->status <= CP_OCI_STOPPED);
  FUZZ_CHECK (strcmp (cp_oci_status_name (st->status), "?") != 0);
  FUZZ_CHECK (st->pid >= 0 && st->pid <= CP_OCI_PID_MAX);
  FUZZ_CHECK (st->pid > 0 || st->status == CP_OCI_STOPPED);

  FUZZ_CHECK (st->bundle && st->bundle[0] == '/' && strlen (st->bundle) <= CP_OCI_BUNDLE_MAX);
  fuzz_check_annotations (&st->annotations);
}

static bool
state_equal (const struct cp_oci_state *a, const struct cp_oci_state *b)
{
  if (strcmp (a->oci_version, b->oci_version) != 0 || strcmp (a->id, b->id) != 0 || a->status != b->status
      || a->pid != b->pid || strcmp (a->bundle, b->bundle) != 0 || a->annotations.n != b->annotations.n)
    return false;
  for (size_t i = 0; i < a->annotations.n; i++)
    if (strcmp (a->annotations.items[i].key, b->annotations.items[i].key) != 0
        || strcmp (a->annotations.items[i].value, b->annotations.items[i].value) != 0)
      return false;
  return true;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct cp_oci_state st;
  memset (&st, 0xa5, sizeof st); /* parse must not rely on a zeroed *out */
  cp_error_t err = NULL;
  /* The hook's first step judges only the JSON and the cachepin.io/ keys: whatever
     it refuses, the whole parse refuses with the same message. */
  struct cp_oci_state first;
  cp_error_t first_err = NULL;
  int r1 = cp_oci_state_parse_annotations ((const char *) data, size, &first, &first_err);
  FUZZ_CHECK (r1 == 0 || first_err != NULL);
  if (r1 == 0 && !first.has_annotations)
    FUZZ_CHECK (first.annotations.n == 0);
  int r = cp_oci_state_parse ((const char *) data, size, &st, &err);
  if (r1 < 0)
    FUZZ_CHECK (r < 0 && strcmp (cp_error_message (first_err), cp_error_message (err)) == 0);
  cp_error_free (&first_err);
  cp_oci_state_free (&first);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, "state: ");
      FUZZ_CHECK (fuzz_all_zero (&st, sizeof st));
      cp_error_free (&err);
      cp_oci_state_free (&st);
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  check_state (&st);

  struct cp_oci_state again;
  FUZZ_CHECK (cp_oci_state_parse ((const char *) data, size, &again, &err) == 0);
  FUZZ_CHECK (state_equal (&st, &again));
  cp_oci_state_free (&again);

  /* The hook without a config.json: host defaults, then shared-mode defaults. */
  fuzz_check_request (&st.annotations, NULL, NULL);
  struct cp_request shared;
  cp_request_init (&shared);
  shared.mode = CP_MODE_SHARED;
  shared.strict = true;
  fuzz_check_request (&st.annotations, &shared, NULL);

  cp_oci_state_free (&st);
  FUZZ_CHECK (fuzz_all_zero (&st, sizeof st));
  return 0;
}
