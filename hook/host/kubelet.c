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
