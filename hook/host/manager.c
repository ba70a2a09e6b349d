/* cachepin: the managers of a container's cpuset as one table (see manager.h),
 * and the default entry: the direct cgroupfs write. */
#define _GNU_SOURCE
#include "manager.h"

#include "bitmap.h"
#include "util.h"
#include "log.h"

/* ---- cgroupfs: the direct write, which is the placement ------------------------ */

static int
cgroupfs_detect (const struct cp_manager_ctx *ctx, void **handle, const char **why, cp_error_t *err)
{
  (void) err;
  *handle = NULL;
  if (ctx->cgroup == NULL)
    {
      *why = "no cgroup";
      return 0;
    }
  return 1;
}

static int
cgroupfs_apply (void *handle, const struct cp_manager_ctx *ctx, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
                cp_error_t *err)
{
  (void) handle;
  if (cp_cgroup_enable_cpuset (ctx->cgroup, err) < 0 || cp_cgroup_write_cpuset (ctx->cgroup, cpus, mems, err) < 0)
    return -1;
  return 0;
}

/* Widen the cgroup back to what its parent allows: it is no longer placed. */
static int
cgroupfs_clear (void *handle, const struct cp_manager_ctx *ctx, cp_error_t *err)
{
  (void) handle;
  const struct cp_cgroup *cg = ctx->cgroup;
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t mems = cp_bitmap_new ();
  if (cp_cgroup_parent_limits (cg, cpus, mems, err) < 0 || cp_cgroup_write_cpuset (cg, cpus, mems, err) < 0)
    return cp_error_wrap (err, "widen cgroup %s%s", cg->mount, cg->path);
  return 0;
}

const struct cp_manager cp_manager_cgroupfs = {
  .name = "cgroupfs",
  .required = true,
  .detect = cgroupfs_detect,
  .apply = cgroupfs_apply,
  .clear = cgroupfs_clear,
};

/* ---- the table ------------------------------------------------------------------ */

const struct cp_manager *const cp_manager_table[] = {
  &cp_manager_cgroupfs, /* first: the others are told after the direct write */
  &cp_manager_kubelet,  /* before systemd: its warning stays a placement's first line */
  &cp_manager_systemd,
  NULL,
};

void
cp_managers_attach (const struct cp_manager *const *table, const struct cp_manager_ctx *ctx, struct cp_managers *out)
{
  *out = (struct cp_managers){ .ctx = *ctx };
  for (const struct cp_manager *const *m = table ? table : cp_manager_table; *m; m++)
    {
      cleanup_error cp_error_t err = NULL;
      void *handle = NULL;
      const char *why = NULL;
      int r = (*m)->detect (ctx, &handle, &why, &err);
      if ((*m)->report)
        (*m)->report (ctx, r, handle, why, err);
      if (r <= 0)
        continue;
      if (out->n == CP_MANAGERS_MAX)
        {
          /* A table longer than the set is a build's mistake, not the host's. */
          cp_log (CP_LOG_WARNING, "manager %s: left out (more than %d managers)", (*m)->name, CP_MANAGERS_MAX);
          if (handle && (*m)->close)
            (*m)->close (handle);
          continue;
        }
      out->on[out->n].m = *m;
      out->on[out->n].handle = handle;
      out->n++;
    }
}

int
cp_managers_fd (const struct cp_managers *set, int *fd, cp_error_t *err)
{
  *fd = -1;
  const char *owner = NULL;
  for (size_t i = 0; i < set->n; i++)
    {
      const struct cp_manager *m = set->on[i].m;
      int f = m->fd ? m->fd (set->on[i].handle) : -1;
      if (f < 0)
        continue;
      if (owner)
        return cp_fail_runtime (err, "managers %s and %s each need an fd in the sandbox, which keeps one", owner,
                                m->name);
      owner = m->name;
      *fd = f;
    }
  return 0;
}

/* apply() (CLEAR false) or clear() of each attached manager: see manager.h. */
static int
tell_each (struct cp_managers *set, bool clear, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
           cp_error_t *err)
{
  for (size_t i = 0; i < set->n; i++)
    {
      const struct cp_manager *m = set->on[i].m;
      if (clear ? m->clear == NULL : m->apply == NULL)
        continue;
      cleanup_error cp_error_t e = NULL;
      int r = clear ? m->clear (set->on[i].handle, &set->ctx, &e)
                    : m->apply (set->on[i].handle, &set->ctx, cpus, mems, &e);
      if (r >= 0)
        continue;
      if (m->required)
        {
          *err = cp_steal_pointer (&e);
          return -1;
        }
      cp_log (CP_LOG_WARNING, "%s: %s", m->on_failure ? m->on_failure : m->name, cp_error_message (e));
    }
  return 0;
}

int
cp_managers_apply (struct cp_managers *set, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems, cp_error_t *err)
{
  return tell_each (set, false, cpus, mems, err);
}

int
cp_managers_clear (struct cp_managers *set, cp_error_t *err)
{
  return tell_each (set, true, NULL, NULL, err);
}

void
cp_managers_status (const struct cp_manager *const *table, const struct cp_manager_ctx *ctx, json_object *obj)
{
  for (const struct cp_manager *const *m = table ? table : cp_manager_table; *m; m++)
    {
      json_object *part = (*m)->status ? (*m)->status (ctx) : NULL;
      if (part)
        json_object_object_add (obj, (*m)->name, part);
    }
}

void
cp_managers_close (struct cp_managers *set)
{
  for (size_t i = set->n; i > 0; i--)
    {
      const struct cp_manager *m = set->on[i - 1].m;
      if (set->on[i - 1].handle && m->close)
        m->close (set->on[i - 1].handle);
    }
  set->n = 0;
}
