/* cachepin: this node's ResourceSlices published to the API server (docs/dra.md
 * "Publishing"): a round lists the node's slices of driver cachepin.io, then
 * creates, updates (PUT, with the listed resourceVersion) and deletes so that they
 * equal `cachepin dra slice`'s; the pool's generation is one past the greater of
 * the server's and the publisher's own.  A 409 (someone wrote in between) or a 404
 * (someone deleted one) lists again and retries, at most CP_DRA_PUBLISH_TRIES
 * times. */
#ifndef CP_DRA_PUBLISH_H
#define CP_DRA_PUBLISH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "hostconfig.h"
#include "kube.h"
#include "topo.h"

#define CP_DRA_PUBLISH_TRIES 4
#define CP_DRA_SLICES_PATH "/apis/resource.k8s.io/v1/resourceslices"

enum cp_dra_publish_op
{
  CP_DRA_CREATE,
  CP_DRA_UPDATE,
  CP_DRA_DELETE,
};

struct cp_dra_publish_action
{
  enum cp_dra_publish_op op;
  char *name;
  char *resource_version; /* update, delete: the listed one (a precondition) */
  json_object *body;      /* create, update: the slice to send (the caller's) */
};

/* What a round does. */
struct cp_dra_publish_plan
{
  struct cp_dra_publish_action *actions;
  size_t n_actions;
  int64_t generation;      /* the pool's after the round */
  int64_t server_generation; /* the highest listed (0: none listed) */
  bool unchanged;          /* the listed slices equal the desired ones: nothing to write */
};

/* The plan from DESIRED (an array of slices, `dra slice --json`'s, any generation)
 * and LISTED (the items of the node's list answer; slices of another driver or
 * node, listed by a server that ignored the selector, are not touched) for NODE.
 * The listed slices equal the desired when each desired slice is listed under its
 * name with the same spec (what the server added to it, its defaults, aside; the
 * pool's generation aside, if it is the same in all) and nothing else is listed:
 * then nothing is written and the generation stays.  Otherwise every desired
 * slice is created or updated with generation max(server's, OWN) + 1 and every
 * other listed slice deleted.  Errors: a listed slice without a generation, or
 * a desired one not of NODE's pool. */
int cp_dra_publish_plan (json_object *desired, json_object *listed, const char *node, int64_t own,
                         struct cp_dra_publish_plan *plan, cp_error_t *err);
void cp_dra_publish_plan_clear (struct cp_dra_publish_plan *plan);

/* What a round did. */
struct cp_dra_publish_result
{
  int64_t generation;
  unsigned created, updated, deleted;
  unsigned tries;
  bool unchanged;
};

/* One round against KC: DESIRED made equal on the server (an empty array:
 * unpublish, every slice of NODE deleted).  OWN: the generation this publisher
 * last wrote (0: none). */
int cp_dra_publish_round (struct cp_kube_client *kc, json_object *desired, const char *node, int64_t own,
                          struct cp_dra_publish_result *res, cp_error_t *err);

/* The node's slices now (cp_dra_gather(): HC, TOPO taken over or NULL, the ledger
 * with READ_LEDGER), published in one round. */
int cp_dra_publish (struct cp_kube_client *kc, const struct cp_hostconfig *hc, struct cp_topo *topo,
                    bool read_ledger, const char *node, int64_t own, struct cp_dra_publish_result *res,
                    cp_error_t *err);

#endif
