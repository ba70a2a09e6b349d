/* Fuzz the Kubernetes API server's answers as the client reads them
 * (hook/kube/kube_json.h) and the publish round's plan from a listed set
 * (hook/engine/dra_publish.h).
 *
 * Input: one byte choosing the reader (low two bits: a list, a watch event, a Status
 * message, a plan from the answer's items), then the answer.
 * Invariants:
 *   - a failure is an error with a one-line printable message, nothing returned;
 *   - a list's items are an array of at most CP_KUBE_MAX_ITEMS, each with a name;
 *   - an event's type is one of the five, its object returned;
 *   - a Status message is NULL or at most 200 printable bytes;
 *   - a plan touches only the listed slices of driver cachepin.io on node w, each
 *     at most once, and writes the wanted slice at a generation past every listed
 *     one of the pool, or nothing. */
#include "common.h"
#include "dra_publish.h"
#include "kube.h"
#include "kube_json.h"

static void
check_error (cp_error_t err)
{
  FUZZ_CHECK (err != NULL && err->msg != NULL && err->msg[0] != '\0');
  for (const char *p = err->msg; *p; p++)
    FUZZ_CHECK_MSG ((unsigned char) *p >= 0x20 && *p != 0x7f, "control character in \"%s\"", err->msg);
}

static const char want_text[]
  = "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"w-cachepin.io-0\"},"
    "\"spec\":{\"driver\":\"cachepin.io\",\"nodeName\":\"w\",\"pool\":{\"name\":\"w\",\"generation\":1,"
    "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"l3-0\",\"capacity\":{\"cpus\":{\"value\":\"8\"}}}]}}]";

static void
plan (json_object *items)
{
  json_object *want = json_tokener_parse (want_text);
  FUZZ_CHECK (want != NULL);
  struct cp_dra_publish_plan p;
  cp_error_t err = NULL;
  if (cp_dra_publish_plan (want, items, "w", 0, &p, &err) < 0)
    check_error (err);
  else
    {
      FUZZ_CHECK (p.unchanged == (p.n_actions == 0));
      for (size_t i = 0; i < p.n_actions; i++)
        {
          for (size_t j = 0; j < i; j++)
            FUZZ_CHECK (strcmp (p.actions[i].name, p.actions[j].name) != 0);
          if (p.actions[i].op != CP_DRA_CREATE)
            {
              bool found = false;
              for (size_t k = 0; k < json_object_array_length (items) && !found; k++)
                {
                  json_object *s = json_object_array_get_idx (items, k), *spec, *v;
                  const char *name, *rv;
                  cp_error_t e2 = NULL;
                  if (cp_kube_json_meta (s, &name, &rv, &e2) < 0)
                    {
                      cp_error_free (&e2);
                      continue;
                    }
                  found = strcmp (name, p.actions[i].name) == 0 && json_object_object_get_ex (s, "spec", &spec)
                          && json_object_object_get_ex (spec, "driver", &v)
                          && strcmp (json_object_get_string (v), "cachepin.io") == 0
                          && json_object_object_get_ex (spec, "nodeName", &v)
                          && strcmp (json_object_get_string (v), "w") == 0;
                }
              FUZZ_CHECK_MSG (found, "%s is not a listed slice of ours", p.actions[i].name);
            }
          else
            FUZZ_CHECK (strcmp (p.actions[i].name, "w-cachepin.io-0") == 0);
          if (p.actions[i].op != CP_DRA_DELETE)
            FUZZ_CHECK (p.generation > p.server_generation);
        }
      cp_dra_publish_plan_clear (&p);
    }
  cp_error_free (&err);
  json_object_put (want);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  unsigned mode = data[0] & 3;
  const char *body = (const char *) data + 1;
  size_t len = size - 1;
  cp_error_t err = NULL;
  if (mode == 2)
    {
      char *m = cp_kube_json_status_message (body, len);
      if (m)
        {
          FUZZ_CHECK (strlen (m) <= 200);
          for (const char *p = m; *p; p++)
            FUZZ_CHECK ((unsigned char) *p >= 0x20 && *p != 0x7f);
          free (m);
        }
      return 0;
    }
  if (mode == 1)
    {
      enum cp_kube_event type;
      json_object *obj = NULL;
      int code = -1;
      if (cp_kube_json_event (body, len, &type, &obj, &code, &err) < 0)
        {
          check_error (err);
          FUZZ_CHECK (obj == NULL);
        }
      else
        {
          FUZZ_CHECK (type <= CP_KUBE_ERROR && obj != NULL);
          FUZZ_CHECK (type == CP_KUBE_ERROR || code == 0);
          json_object_put (obj);
        }
      cp_error_free (&err);
      return 0;
    }
  json_object *list = NULL, *items = NULL;
  const char *rv = NULL;
  if (cp_kube_json_parse ("list", body, len, &list, &err) < 0)
    {
      check_error (err);
      FUZZ_CHECK (list == NULL);
    }
  else if (cp_kube_json_list (list, "ResourceSliceList", &items, &rv, &err) < 0)
    check_error (err);
  else
    {
      FUZZ_CHECK (json_object_is_type (items, json_type_array));
      FUZZ_CHECK (json_object_array_length (items) <= CP_KUBE_MAX_ITEMS);
      FUZZ_CHECK (rv != NULL);
      if (mode == 3)
        plan (items);
    }
  json_object_put (list);
  cp_error_free (&err);
  return 0;
}
