/* cachepin: the kubelet CPU manager's policy (see kubelet.h). */
#define _GNU_SOURCE
#include "kubelet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "json.h"
#include "util.h"
#include "log.h"
#include "manager.h"

int
cp_kubelet_policy (const char *path, char **policy, cp_error_t *err)
{
  *policy = NULL;
  if (path == NULL || *path == '\0')
    return 0;
  cleanup_free char *buf = NULL;
  size_t len = 0;
  cleanup_error cp_error_t local = NULL;
  if (cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, CP_KUBELET_STATE_MAX, CP_IO_NO_NUL, &buf, &len, &local) < 0)
    {
      if (cp_error_errno (local) == ENOENT || cp_error_errno (local) == ENOTDIR)
        return 0;
      *err = cp_steal_pointer (&local);
      return -1;
    }
  cleanup_json json_object *root = NULL;
  json_object *v;
  const char *name;
  if (cp_json_parse_object (buf, len, &root, err) < 0)
    return cp_error_wrap (err, "%s", path);
  if (!cp_json_member (root, "policyName", false, &v))
    return cp_fail_input (err, "%s: `policyName` is missing", path);
  if (cp_json_string (v, "policyName", 64, false, &name, err) < 0)
    return cp_error_wrap (err, "%s", path);
  *policy = cp_xstrdup (name);
  return 1;
}

char *
cp_kubelet_warning (const char *path, const char *policy)
{
  if (policy == NULL || strcmp (policy, "none") == 0)
    return NULL;
  return cp_xasprintf ("the kubelet's CPU manager policy is `%.64s` (%s): its reconcile loop rewrites "
                       "containers' cpusets and undoes cachepin's placements; use the `none` policy with "
                       "cachepin (docs/managers.md)",
                       policy, path);
}

/* ---- its entry in the managers' table (manager.h) ---------------------------------- */

/* It cannot be told anything: it manages a host where its state file names a
   policy that rewrites cpusets, and the handle is that policy's name. */
static int
manager_detect (const struct cp_manager_ctx *ctx, void **handle, const char **why, cp_error_t *err)
{
  *handle = NULL;
  if (ctx->step == CP_MANAGER_RELEASE)
    {
      *why = "a release hands out nothing it could undo";
      return 0;
    }
  char *policy = NULL;
  int r = cp_kubelet_policy (ctx->kubelet_state, &policy, err);
  if (r <= 0)
    {
      *why = "no state file";
      return r;
    }
  if (strcmp (policy, "none") == 0)
    {
      free (policy);
      *why = "its policy is `none`";
      return 0;
    }
  *handle = policy;
  return 1;
}

/* Said at each placement, since nothing else would tell the user why the cpuset
   changed later.  A file that cannot be read never fails a hook: a debug line. */
static void
manager_report (const struct cp_manager_ctx *ctx, int r, const void *handle, const char *why, cp_error_t err)
{
  (void) why;
  if (r < 0)
    cp_log (CP_LOG_DEBUG, "kubelet CPU manager: %s", cp_error_message (err));
  else if (r > 0 && ctx->step == CP_MANAGER_PLACE)
    {
      cleanup_free char *warning = cp_kubelet_warning (ctx->kubelet_state, handle);
      cp_log (CP_LOG_WARNING, "%s", warning);
    }
}

/* Every key null when there is no state file (or the config says not to look). */
static json_object *
manager_status (const struct cp_manager_ctx *ctx)
{
  json_object *o = json_object_new_object ();
  cleanup_free char *policy = NULL;
  cleanup_error cp_error_t e = NULL;
  int r = cp_kubelet_policy (ctx->kubelet_state, &policy, &e);
  cleanup_free char *warning = r > 0 ? cp_kubelet_warning (ctx->kubelet_state, policy) : NULL;
  json_object_object_add (o, "state_file", r != 0 ? json_object_new_string (ctx->kubelet_state) : NULL);
  json_object_object_add (o, "policy", r > 0 ? json_object_new_string (policy) : NULL);
  json_object_object_add (o, "warning", warning ? json_object_new_string (warning) : NULL);
  const char *errname = r < 0 && cp_error_errno (e) ? strerrorname_np (cp_error_errno (e)) : NULL;
  json_object_object_add (o, "errno", errname ? json_object_new_string (errname) : NULL);
  json_object_object_add (o, "error", r < 0 ? json_object_new_string (cp_error_message (e)) : NULL);
  return o;
}

static void
manager_close (void *handle)
{
  free (handle);
}

const struct cp_manager cp_manager_kubelet = {
  .name = "kubelet",
  .detect = manager_detect,
  .report = manager_report,
  .status = manager_status,
  .close = manager_close,
};
