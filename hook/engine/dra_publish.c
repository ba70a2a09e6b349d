/* cachepin: this node's ResourceSlices published (dra_publish.h). */
#define _GNU_SOURCE
#include "dra_publish.h"

#include <inttypes.h>
#include <string.h>

#include "dra.h"
#include "json.h"
#include "kube_json.h"
#include "log.h"
#include "util.h"

void
cp_dra_publish_plan_clear (struct cp_dra_publish_plan *plan)
{
  for (size_t i = 0; i < plan->n_actions; i++)
    {
      free (plan->actions[i].name);
      free (plan->actions[i].resource_version);
      json_object_put (plan->actions[i].body);
    }
  free (plan->actions);
  *plan = (struct cp_dra_publish_plan){ 0 };
}

/* spec.pool of a slice (NULL: none). */
static json_object *
slice_pool (json_object *slice)
{
  json_object *spec = NULL, *pool = NULL;
  if (!cp_json_member (slice, "spec", true, &spec) || !json_object_is_type (spec, json_type_object)
      || !cp_json_member (spec, "pool", true, &pool) || !json_object_is_type (pool, json_type_object))
    return NULL;
  return pool;
}

static const char *
spec_string (json_object *slice, const char *key)
{
  json_object *spec = NULL, *v = NULL;
  if (!cp_json_member (slice, "spec", true, &spec) || !json_object_is_type (spec, json_type_object)
      || !cp_json_member (spec, key, true, &v) || !json_object_is_type (v, json_type_string))
    return NULL;
  return json_object_get_string (v);
}

/* Whether every member WANT has is in HAVE with the same value: what the server
   adds (a field's default) is not a difference. */
static bool
subset (json_object *want, json_object *have)
{
  if (want == NULL || have == NULL)
    return want == have;
  json_type t = json_object_get_type (want);
  if (t != json_object_get_type (have))
    return false;
  if (t == json_type_object)
    {
      json_object_object_foreach (want, key, wv)
      {
        json_object *hv = NULL;
        if (!json_object_object_get_ex (have, key, &hv) || !subset (wv, hv))
          return false;
      }
      return true;
    }
  if (t == json_type_array)
    {
      size_t n = json_object_array_length (want);
      if (n != json_object_array_length (have))
        return false;
      for (size_t i = 0; i < n; i++)
        if (!subset (json_object_array_get_idx (want, i), json_object_array_get_idx (have, i)))
          return false;
      return true;
    }
  return json_object_equal (want, have);
}

static void
set_generation (json_object *slice, int64_t generation)
{
  json_object_object_add (slice_pool (slice), "generation", json_object_new_int64 (generation));
}

static void
add_action (struct cp_dra_publish_plan *plan, enum cp_dra_publish_op op, const char *name, const char *rv,
            json_object *body)
{
  plan->actions = cp_xrealloc (plan->actions, (plan->n_actions + 1) * sizeof *plan->actions);
  plan->actions[plan->n_actions++] = (struct cp_dra_publish_action){
    .op = op, .name = cp_xstrdup (name), .resource_version = rv ? cp_xstrdup (rv) : NULL, .body = body,
  };
}

struct listed
{
  json_object *obj;
  const char *name, *rv;
  int64_t generation;
  bool wanted;
};

/* The listed slices that are ours: driver cachepin.io, NODE's node and pool. */
static int
collect_listed (json_object *items, const char *node, struct listed **out, size_t *n_out, cp_error_t *err)
{
  size_t n = json_object_array_length (items), k = 0;
  struct listed *l = cp_xcalloc (n ? n : 1, sizeof *l);
  for (size_t i = 0; i < n; i++)
    {
      json_object *s = json_object_array_get_idx (items, i);
      const char *driver = spec_string (s, "driver"), *nn = spec_string (s, "nodeName");
      json_object *pool = slice_pool (s), *v = NULL;
      if (driver == NULL || strcmp (driver, CP_DRA_DRIVER) != 0 || nn == NULL || strcmp (nn, node) != 0)
        continue;
      if (cp_kube_json_meta (s, &l[k].name, &l[k].rv, err) < 0)
        {
          free (l);
          return cp_error_wrap (err, "listed slice %zu", i);
        }
      if (pool == NULL || !cp_json_member (pool, "generation", true, &v)
          || cp_json_int (v, "spec.pool.generation", 0, INT64_MAX / 2, &l[k].generation, err) < 0)
        {
          if (pool == NULL || v == NULL)
            cp_fail_runtime (err, "listed slice %s: no spec.pool.generation", l[k].name);
          else
            cp_error_wrap (err, "listed slice %s", l[k].name);
          free (l);
          return -1;
        }
      for (size_t j = 0; j < k; j++)
        if (strcmp (l[j].name, l[k].name) == 0)
          {
            cp_fail_runtime (err, "listed slice %s: listed twice", l[k].name);
            free (l);
            return -1;
          }
      l[k++].obj = s;
    }
  *out = l;
  *n_out = k;
  return 0;
}

int
cp_dra_publish_plan (json_object *desired, json_object *listed, const char *node, int64_t own,
                     struct cp_dra_publish_plan *plan, cp_error_t *err)
{
  *plan = (struct cp_dra_publish_plan){ 0 };
  size_t nd = json_object_array_length (desired);
  for (size_t i = 0; i < nd; i++)
    {
      json_object *d = json_object_array_get_idx (desired, i);
      const char *nn = spec_string (d, "nodeName"), *name, *rv;
      json_object *pool = slice_pool (d), *pn = NULL;
      if (cp_kube_json_meta (d, &name, &rv, err) < 0)
        return cp_error_wrap (err, "slice %zu", i);
      if (nn == NULL || strcmp (nn, node) != 0 || pool == NULL || !cp_json_member (pool, "name", true, &pn)
          || strcmp (json_object_get_string (pn), node) != 0)
        return cp_fail_input (err, "slice %s: not of node %s's pool", name, node);
    }
  cleanup_free struct listed *l = NULL;
  size_t nl = 0;
  if (collect_listed (listed, node, &l, &nl, err) < 0)
    return -1;
  int64_t server = 0;
  bool one_generation = true;
  for (size_t i = 0; i < nl; i++)
    {
      one_generation = one_generation && l[i].generation == l[0].generation;
      if (l[i].generation > server)
        server = l[i].generation;
    }
  plan->server_generation = server;
  /* Unchanged: the same names, the same specs at the listed generation. */
  bool same = nl == nd && one_generation;
  for (size_t i = 0; i < nd && same; i++)
    {
      json_object *d = json_object_array_get_idx (desired, i), *ds = NULL, *ls = NULL;
      const char *name, *rv;
      cp_kube_json_meta (d, &name, &rv, err);
      size_t j = 0;
      while (j < nl && strcmp (l[j].name, name) != 0)
        j++;
      if (j == nl)
        {
          same = false;
          break;
        }
      json_object *copy = NULL;
      if (json_object_deep_copy (d, &copy, NULL) < 0)
        cp_oom ();
      set_generation (copy, l[j].generation);
      cp_json_member (copy, "spec", false, &ds);
      cp_json_member (l[j].obj, "spec", false, &ls);
      same = subset (ds, ls);
      json_object_put (copy);
    }
  if (same && nd > 0)
    {
      plan->unchanged = true;
      plan->generation = server;
      return 0;
    }
  if (nd == 0 && nl == 0)
    {
      plan->unchanged = true;
      return 0;
    }
  int64_t gen = (server > own ? server : own) + 1;
  plan->generation = nd ? gen : 0;
  for (size_t i = 0; i < nd; i++)
    {
      json_object *d = json_object_array_get_idx (desired, i), *copy = NULL, *meta = NULL;
      const char *name, *rv;
      cp_kube_json_meta (d, &name, &rv, err);
      if (json_object_deep_copy (d, &copy, NULL) < 0)
        cp_oom ();
      set_generation (copy, gen);
      size_t j = 0;
      while (j < nl && strcmp (l[j].name, name) != 0)
        j++;
      if (j < nl)
        {
          l[j].wanted = true;
          cp_json_member (copy, "metadata", false, &meta);
          if (l[j].rv)
            json_object_object_add (meta, "resourceVersion", json_object_new_string (l[j].rv));
          add_action (plan, CP_DRA_UPDATE, name, l[j].rv, copy);
        }
      else
        add_action (plan, CP_DRA_CREATE, name, NULL, copy);
    }
  for (size_t j = 0; j < nl; j++)
    if (!l[j].wanted)
      add_action (plan, CP_DRA_DELETE, l[j].name, l[j].rv, NULL);
  return 0;
}

static const char *const op_method[] = { [CP_DRA_CREATE] = "POST", [CP_DRA_UPDATE] = "PUT", [CP_DRA_DELETE] = "DELETE" };

/* One action: 1 done, 0 a conflict (409, or 404 where the slice must exist: list
   again), -1 an error. */
static int
run_action (struct cp_kube_client *kc, const struct cp_dra_publish_action *a, cp_error_t *err)
{
  cleanup_free char *esc = cp_kube_escape (a->name);
  cleanup_free char *path = a->op == CP_DRA_CREATE ? cp_xstrdup (CP_DRA_SLICES_PATH)
                                                   : cp_xasprintf ("%s/%s", CP_DRA_SLICES_PATH, esc);
  cleanup_free char *body = NULL;
  if (a->body)
    body = cp_xstrdup (json_object_to_json_string_ext (a->body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  else if (a->resource_version)
    {
      cleanup_free char *rv = cp_xstrdup (a->resource_version);
      json_object *o = json_object_new_object (), *pre = json_object_new_object ();
      json_object_object_add (o, "apiVersion", json_object_new_string ("v1"));
      json_object_object_add (o, "kind", json_object_new_string ("DeleteOptions"));
      json_object_object_add (pre, "resourceVersion", json_object_new_string (rv));
      json_object_object_add (o, "preconditions", pre);
      body = cp_xstrdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN));
      json_object_put (o);
    }
  struct cp_kube_answer ans = { 0 };
  if (cp_kube_request (kc, op_method[a->op], path, body, &ans, err) < 0)
    return -1;
  int r = 1;
  if (ans.status == 409 || (ans.status == 404 && a->op == CP_DRA_UPDATE))
    r = 0;
  else if (ans.status == 404 && a->op == CP_DRA_DELETE)
    r = 1; /* gone already */
  else if (ans.status < 200 || ans.status > 299)
    {
      cleanup_free char *what = cp_xasprintf ("%s slice %s", op_method[a->op], a->name);
      r = cp_kube_fail_answer (what, &ans, err);
    }
  cp_kube_answer_clear (&ans);
  return r;
}

/* The node's slices as listed now: *LIST the answer (caller's), *ITEMS in it. */
static int
list_node (struct cp_kube_client *kc, const char *node, json_object **list, json_object **items, cp_error_t *err)
{
  cleanup_free char *sel = cp_xasprintf ("spec.nodeName=%s", node);
  cleanup_free char *esc = cp_kube_escape (sel);
  cleanup_free char *path = cp_xasprintf ("%s?fieldSelector=%s", CP_DRA_SLICES_PATH, esc);
  struct cp_kube_answer ans = { 0 };
  if (cp_kube_request (kc, "GET", path, NULL, &ans, err) < 0)
    return -1;
  int r;
  const char *rv;
  if (ans.status != 200)
    r = cp_kube_fail_answer ("list the node's ResourceSlices", &ans, err);
  else if ((r = cp_kube_json_parse ("list the node's ResourceSlices", ans.body, ans.len, list, err)) == 0
           && (r = cp_kube_json_list (*list, "ResourceSliceList", items, &rv, err)) < 0)
    cp_error_wrap (err, "list the node's ResourceSlices");
  cp_kube_answer_clear (&ans);
  return r;
}

int
cp_dra_publish_round (struct cp_kube_client *kc, json_object *desired, const char *node, int64_t own,
                      struct cp_dra_publish_result *res, cp_error_t *err)
{
  *res = (struct cp_dra_publish_result){ 0 };
  for (unsigned t = 1; t <= CP_DRA_PUBLISH_TRIES; t++)
    {
      res->tries = t;
      cleanup_json json_object *list = NULL;
      json_object *items = NULL;
      if (list_node (kc, node, &list, &items, err) < 0)
        return -1;
      struct cp_dra_publish_plan plan = { 0 };
      if (cp_dra_publish_plan (desired, items, node, own, &plan, err) < 0)
        return -1;
      int r = 1;
      res->created = res->updated = res->deleted = 0;
      for (size_t i = 0; i < plan.n_actions && r == 1; i++)
        if ((r = run_action (kc, &plan.actions[i], err)) == 1)
          {
            unsigned *count[] = { &res->created, &res->updated, &res->deleted };
            (*count[plan.actions[i].op])++;
          }
      res->generation = plan.generation;
      res->unchanged = plan.unchanged;
      if (plan.generation > own)
        own = plan.generation; /* a retry goes past what this try wrote */
      cp_dra_publish_plan_clear (&plan);
      if (r < 0)
        return -1;
      if (r == 1)
        return 0;
      cp_log (CP_LOG_INFO, "dra: node %s's slices changed on the server during the round (try %u): listed again",
              node, t);
    }
  return cp_fail_runtime (err, "publish node %s's slices: still conflicting after %d tries", node,
                          CP_DRA_PUBLISH_TRIES);
}

int
cp_dra_publish (struct cp_kube_client *kc, const struct cp_hostconfig *hc, struct cp_topo *topo, bool read_ledger,
                const char *node, int64_t own, struct cp_dra_publish_result *res, cp_error_t *err)
{
  cleanup_dra_model struct cp_dra_model *m = NULL;
  if (cp_dra_gather (hc, topo, read_ledger, &m, NULL, err) < 0)
    return -1;
  cleanup_json json_object *slices = NULL;
  if (cp_dra_slices_json (m, node, 1, &slices, err) < 0)
    return -1;
  return cp_dra_publish_round (kc, slices, node, own, res, err);
}
