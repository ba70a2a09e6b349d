/* cachepin: the process that keeps a node's ResourceSlices true for a long-running
 * front end (`cachepin nri --dra-node NAME`, docs/dra.md "Publishing").
 *
 * Forked before the front end's sandbox (helper.h), it gives up every capability
 * and runs on its own, so that no request to the API server ever waits in the
 * front end's loop: every CP_DRA_PUBLISHER_CHECK_MS it reads the node's devices
 * (dra.h: the host config, the topology, the ledger as `plan` reads it, unlocked)
 * and publishes a round (dra_publish.h) when they changed (a placement or release
 * outside DRA, by any front end: the hook, `apply`, the NRI plugin), when the watch
 * of the node's slices (from the last list's resourceVersion) sees one added,
 * changed or deleted (someone else's edit is put back), and every
 * CP_DRA_PUBLISHER_PERIOD_MS whatever it saw.  A failed round is tried again after a backoff of 1 s
 * doubling to 60 s, with jitter.  Each round's outcome comes back to the front end
 * as one message on the helper's socket, for its metrics.  It dies with the front
 * end; its slices stay published (a restart of the agent publishes the same). */
#ifndef CP_DRA_PUBLISHER_H
#define CP_DRA_PUBLISHER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "hostconfig.h"
#include "kube.h"

#define CP_DRA_PUBLISHER_CHECK_MS 2000
#define CP_DRA_PUBLISHER_PERIOD_MS 30000
#define CP_DRA_PUBLISHER_BACKOFF_MIN_MS 1000
#define CP_DRA_PUBLISHER_BACKOFF_MAX_MS 60000
#define CP_DRA_PUBLISHER_MAX_CLAIM (1024u * 1024u) /* bytes of a claim's JSON (dra_claim.h's cap) */
#define CP_DRA_PUBLISHER_PART (32u * 1024u)        /* bytes of one message of a claim's answer */
#define CP_DRA_PUBLISHER_MAX_REQUEST 1024u         /* bytes of one request */

/* The messages on the publisher's socket (SOCK_SEQPACKET: one message a read),
   each beginning with its type: a round's outcome (child to front end, a struct of
   its own), a fetch (front end to child: its header, then "NS/NAME"), a part of a
   claim's answer (child to front end: struct cp_dra_claim_part, then its bytes:
   the JSON when OK, else the error's line; TOTAL bytes in all, this part's from
   OFF). */
enum
{
  CP_DRA_MSG_REPORT = 1,
  CP_DRA_MSG_FETCH = 2,
  CP_DRA_MSG_CLAIM = 3,
};
struct cp_dra_claim_part
{
  int32_t type;
  uint32_t id;
  int32_t ok;
  uint32_t total, off;
};

/* A claim fetched for the front end (cp_dra_publisher_fetch()): JSON (LEN bytes,
   NUL-terminated) or ERROR (one line), both the publisher's (valid during the
   call).  ID 0 with an ERROR: the publisher exited, every fetch still waiting
   will get no answer. */
typedef void (*cp_dra_claim_fn) (void *ctx, uint32_t id, const char *json, size_t len, const char *error);

struct cp_dra_publisher
{
  pid_t pid;
  int fd; /* the front end's end of the socket: readable when a round's outcome came */
  const char *node;
  bool gone; /* the process exited: nothing is kept true any more */
  uint64_t rounds, failures, writes;
  int64_t generation;     /* the pool's, after the last round that succeeded */
  double last_success_s;  /* its wall-clock time (0: none yet) */
  /* The front end's: where a fetched claim goes. */
  cp_dra_claim_fn claim;
  void *claim_ctx;
  char *part; /* a claim's answer coming in parts */
  size_t part_len;
  uint32_t part_id, part_total;
  bool part_ok;
};

/* Checked in the front end (an input error names the option: --dra-node, --kube-*),
   the API client opened (libcurl loaded, the token read), then forked.  NODE is
   kept (it must outlive the publisher). */
int cp_dra_publisher_start (struct cp_dra_publisher *p, const struct cp_hostconfig *hc, const char *node,
                            const struct cp_kube_options *kube, cp_error_t *err);

/* The outcomes that came, read (never blocks); the process's exit seen (logged once,
   P->gone: its socket stays readable, the caller stops polling it). */
void cp_dra_publisher_read (struct cp_dra_publisher *p);

/* One message of the publisher's (MSG, N bytes: whatever it sent), taken: a
   round's outcome counted, a part of a claim's answer kept and the whole given to
   P->claim once its last part came.  What a genuine publisher never sends is
   refused with one line logged, never crashes, never half-applied: a message of
   no known type or size; an answer to fetch 0; a claim's JSON over
   CP_DRA_PUBLISHER_MAX_CLAIM bytes, or its error over CP_DRA_PUBLISHER_PART; a
   part past its total, out of order, or unlike the first of its answer (another
   total, another outcome).  A claim refused, or cut short by the first part of
   another, is given to P->claim as an error of one line (so is any error the
   publisher sends: a control character in it, NUL too, becomes a space). */
void cp_dra_publisher_take (struct cp_dra_publisher *p, const char *msg, size_t n);

/* Ask the publisher for the ResourceClaim NS/NAME (GET
   /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME, at most
   CP_DRA_PUBLISHER_MAX_CLAIM bytes): the answer comes to P->claim with ID, from
   cp_dra_publisher_read(), after the publisher's round in progress if any (a
   request of the API client's, CP_KUBE_TIMEOUT_MS at most).  Never blocks. */
int cp_dra_publisher_fetch (struct cp_dra_publisher *p, uint32_t id, const char *ns, const char *name,
                            cp_error_t *err);

/* Its metrics, Prometheus' text (docs/metrics.md); the caller frees. */
char *cp_dra_publisher_metrics (const struct cp_dra_publisher *p);

void cp_dra_publisher_stop (struct cp_dra_publisher *p);

#endif
