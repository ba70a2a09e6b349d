#define _GNU_SOURCE
#include "state.h"

#include <string.h>

#include "../policy/util.h"
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

/* The id names files and log lines: no path separator, no dot entries, one line. */
static int
check_id (const char *id, cp_error_t *err)
{
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

static int
parse_fields (json_object *root, struct cp_oci_state *out, cp_error_t *err)
{
  const char *s;
  json_object *v;
  if (required_string (root, "ociVersion", CP_OCI_VERSION_MAX, &s, err) < 0)
    return -1;
  out->oci_version = cp_xstrdup (s);
  if (required_string (root, "id", CP_OCI_ID_MAX, &s, err) < 0 || check_id (s, err) < 0)
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
  if (required_string (root, "bundle", CP_OCI_BUNDLE_MAX, &s, err) < 0)
    return -1;
  if (*s != '/')
    return cp_fail_input (err, "bundle: expected an absolute path, got \"%.128s\"", s);
  out->bundle = cp_xstrdup (s);
  if (cp_json_member (root, "annotations", true, &v)
      && cp_annotations_from_json (v, "annotations", &out->annotations, err) < 0)
    return -1;
  return 0;
}

int
cp_oci_state_parse (const char *buf, size_t len, struct cp_oci_state *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  cleanup_json json_object *root = NULL;
  if (cp_json_parse_object (buf, len, &root, err) < 0)
    return cp_error_wrap (err, "state");
  if (parse_fields (root, out, err) < 0)
    {
      cp_oci_state_free (out);
      return cp_error_wrap (err, "state");
    }
  return 0;
}

int
cp_oci_state_read (int fd, struct cp_oci_state *out, cp_error_t *err)
{
  memset (out, 0, sizeof *out);
  cleanup_free char *buf = NULL;
  size_t len;
  if (cp_json_read_fd (fd, CP_OCI_STATE_MAX_SIZE, &buf, &len, err) < 0)
    return cp_error_wrap (err, "state");
  return cp_oci_state_parse (buf, len, out, err);
}

void
cp_oci_state_free (struct cp_oci_state *st)
{
  free (st->oci_version);
  free (st->id);
  free (st->bundle);
  cp_annotations_free (&st->annotations);
  memset (st, 0, sizeof *st);
}
