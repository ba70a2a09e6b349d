#define _GNU_SOURCE
#include "state.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "io.h"
#include "json.h"

static const char *const status_names[] = {
  [CP_OCI_CREATING] = "creating", [CP_OCI_CREATED] = "created",
  [CP_OCI_RUNNING] = "running", [CP_OCI_STOPPED] = "stopped",
};

const char *
cp_oci_status_name (enum cp_oci_status status)
{
  return (unsigned) status < CP_ARRAY_SIZE (status_names) ? status_names[status] : "?";
}

static int
required_string (json_object *root, const char *key, size_t max, const char **out, cp_error_t *err)
{
  json_object *v;
  if (!cp_json_member (root, key, false, &v))
    return cp_fail_input (err, "%s: missing", key);
  return cp_json_string (v, key, max, false, out, err);
}

int
cp_oci_id_check (const char *id, cp_error_t *err)
{
  if (id[0] == '\0')
    return cp_fail_input (err, "id: empty");
  if (strlen (id) > CP_OCI_ID_MAX)
    return cp_fail_input (err, "id: longer than %d bytes", CP_OCI_ID_MAX);
  if (strncmp (id, "apply:", 6) == 0)
    return cp_fail_input (err, "id: starts with `apply:`, which names the ledger's entries of `cachepin apply`");
  if (strncmp (id, "dra:", 4) == 0)
    return cp_fail_input (err, "id: starts with `dra:`, which names the ledger's entries of DRA claims");
  for (const char *p = id; *p; p++)
    {
      if ((unsigned char) *p < 0x20 || *p == 0x7f)
        return cp_fail_input (err, "id: contains a control character");
      if (*p == '/')
        return cp_fail_input (err, "id: contains a '/'");
    }
  if (strcmp (id, ".") == 0 || strcmp (id, "..") == 0)
    return cp_fail_input (err, "id: `%s` is not a container id", id);
  return 0;
}

static int
parse_status (json_object *root, enum cp_oci_status *out, cp_error_t *err)
{
  const char *s;
  if (required_string (root, "status", 64, &s, err) < 0)
    return -1;
  for (size_t i = 0; i < CP_ARRAY_SIZE (status_names); i++)
    if (strcmp (s, status_names[i]) == 0)
      {
        *out = (enum cp_oci_status) i;
        return 0;
      }
  return cp_fail_input (err, "status: expected creating|created|running|stopped, got \"%s\"", s);
}

/* The bundle alone: where config.json is. */
int
cp_oci_state_parse_bundle (struct cp_oci_state *st, cp_error_t *err)
{
  const char *s;
  if (st->bundle)
    return 0;
  if (required_string (st->doc, "bundle", CP_OCI_BUNDLE_MAX, &s, err) < 0)
    return cp_error_wrap (err, "state");
  if (*s != '/')
    return cp_fail_input (err, "state: bundle: expected an absolute path, got \"%.128s\"", s);
  st->bundle = cp_xstrdup (s);
  return 0;
}

static int
parse_fields (json_object *root, struct cp_oci_state *out, cp_error_t *err)
{
  const char *s;
  json_object *v;
  if (required_string (root, "ociVersion", CP_OCI_VERSION_MAX, &s, err) < 0)
    return -1;
  out->oci_version = cp_xstrdup (s);
  if (required_string (root, "id", CP_OCI_ID_MAX, &s, err) < 0 || cp_oci_id_check (s, err) < 0)
    return -1;
  out->id = cp_xstrdup (s);
  if (parse_status (root, &out->status, err) < 0)
    return -1;
  /* Go runtimes omit a zero pid ("omitempty"): only a stopped container has none. */
  bool stopped = out->status == CP_OCI_STOPPED;
  if (cp_json_member (root, "pid", false, &v))
    {
      int64_t pid;
      if (cp_json_int (v, "pid", stopped ? 0 : 1, CP_OCI_PID_MAX, &pid, err) < 0)
        return -1;
      out->pid = (pid_t) pid;
    }
  else if (!stopped)
    return cp_fail_input (err, "pid: missing");
  return 0;
}

int
cp_oci_state_parse_fields (struct cp_oci_state *st, cp_error_t *err)
{
  free (st->oci_version);
  free (st->id);
  st->oci_version = st->id = NULL;
  if (parse_fields (st->doc, st, err) < 0)
    return cp_error_wrap (err, "state");
  return cp_oci_state_parse_bundle (st, err);
}

int
cp_oci_state_parse_annotations (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err)
{
  json_object *v;
  memset (out, 0, sizeof *out);
  /* A foreign annotation given twice is not ours to refuse; one of ours is
     refused where it applies (oci/annotations.h). */
  cleanup_json json_object *twice = NULL;
  if (cp_json_parse_object_twice (buf, len, "annotations", &twice, &out->doc, err) < 0)
    return cp_error_wrap (err, "state");
  /* Absent, null and {} all say "no annotations" (Go's omitempty drops an empty
     map; a runtime that writes {} may not copy them either): config.json decides. */
  out->has_annotations = cp_json_member (out->doc, "annotations", true, &v)
                         && !(json_object_is_type (v, json_type_object) && json_object_object_length (v) == 0);
  if (out->has_annotations && cp_annotations_from_json (v, twice, "annotations", &out->annotations, err) < 0)
    return cp_error_wrap (err, "state");
  return 0;
}

int
cp_oci_state_parse (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err)
{
  if (cp_oci_state_parse_annotations (buf, len, out, err) < 0 || cp_oci_state_parse_fields (out, err) < 0)
    {
      cp_oci_state_free (out);
      return -1;
    }
  return 0;
}

/* One window of at most CP_OCI_STATE_IDLE_MS: what came in it is appended to
 * *BUF.  1 the writer closed the pipe, 0 the window ended first. */
static int
read_window (int fd, char **buf, size_t *n, size_t *got, cp_error_t *err)
{
  cleanup_free char *chunk = NULL;
  cleanup_error cp_error_t read_err = NULL;
  int r = cp_io_read_fd (fd, "state", CP_OCI_STATE_MAX_SIZE - *n, CP_IO_INPUT, CP_OCI_STATE_IDLE_MS, &chunk, got,
                         &read_err);
  bool timed_out = r < 0 && cp_error_errno (read_err) == ETIMEDOUT;
  if (r < 0 && !timed_out)
    {
      /* The bound is on the whole state, not on this window's share of it. */
      if (cp_error_kind (read_err) == CP_ERR_INPUT)
        return cp_fail_input (err, "state: larger than %d bytes", CP_OCI_STATE_MAX_SIZE);
      cp_error_free (err);
      *err = cp_steal_pointer (&read_err);
      return -1;
    }
  *buf = cp_xrealloc (*buf, *n + *got + 1);
  memcpy (*buf + *n, chunk, *got + 1);
  *n += *got;
  return timed_out ? 0 : 1;
}

int
cp_oci_state_read_text (int fd, char **out, size_t *len, cp_error_t *err)
{
  long long deadline = cp_monotonic_ms () + CP_OCI_STATE_TIMEOUT_MS;
  cleanup_free char *buf = cp_xstrdup ("");
  size_t n = 0;
  for (;;)
    {
      size_t got = 0;
      int r = read_window (fd, &buf, &n, &got, err);
      if (r < 0)
        return -1;
      if (r > 0)
        break; /* closed: the usual case */
      bool late = cp_monotonic_ms () >= deadline;
      /* A window without data after a whole object: the writer is done with it. */
      if ((got == 0 || late) && n > 0 && cp_json_complete (buf, n))
        break;
      if (late)
        return cp_fail_input (err, "state: no complete JSON object after %d s on stdin (the runtime did not close it)",
                              CP_OCI_STATE_TIMEOUT_MS / 1000);
    }
  *len = n;
  *out = cp_steal_pointer (&buf);
  return 0;
}

int
cp_oci_state_read (int fd, struct cp_oci_state *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  cleanup_free char *buf = NULL;
  size_t len;
  if (cp_oci_state_read_text (fd, &buf, &len, err) < 0)
    return -1;
  return cp_oci_state_parse (buf, len, out, err);
}

void
cp_oci_state_free (struct cp_oci_state *st)
{
  free (st->oci_version);
  free (st->id);
  free (st->bundle);
  cp_annotations_free (&st->annotations);
  json_object_put (st->doc);
  memset (st, 0, sizeof *st);
}
