/* cachepin: the NRI agent's state and its handlers of the runtime's calls
 * (nri_events.c, nri_resync.c, nri_start.c, ...), for the loop that reads them
 * (nri_agent.c). */
#ifndef CP_NRI_PLUGIN_H
#define CP_NRI_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "api.pb-c.h"
#include "annotations.h"
#include "config.h"
#include "daemon.h"
#include "dra_prepare.h"
#include "locate.h"
#include "placer.h"
#include "nri_stub.h"
#include "nri_kubelet.h"
#include "nri_watch.h"
#include "nri_wire.h"
#include "owner.h"

/* A synchronization being collected (`more`): the parts so far, as the runtime
   sent them (packed), and their bytes. */
struct cp_nri_sync
{
  struct cp_buf *parts;
  size_t n, bytes;
};
void cp_nri_sync_clear (struct cp_nri_sync *s);

/* The plugin's state, one object for its whole run: what every handler reads. */
struct cp_nri_plugin
{
  const struct cp_hostconfig *hc;
  struct cp_owner owner;   /* CP_ORIGIN_NRI, and the runtime it serves: its entries (owner.h) */
  long request_timeout_ms; /* the runtime's, from Configure (2000 until it says) */
  struct cp_nri_sync sync; /* the connection's split Synchronize, until its last part */
  struct cp_daemon_state state; /* the state directory it started with (its sandbox's) */
  struct cp_nri_watch watch;    /* its metrics, listener, probes and watchdog (nri_watch.h) */
  struct cp_nri_kubelet kubelet; /* the kubelet plugin's sockets (nri_kubelet.h; server NULL: none) */
};

/* Each answers CALL (a reply, or an error status whose message containerd shows)
   and returns 0; < 0 only when the answer itself could not be made (*ERR). */
int cp_nri_create_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__CreateContainerRequest *req,
                             struct cp_nri_call *call, cp_error_t *err);
int cp_nri_update_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__UpdateContainerRequest *req,
                             struct cp_nri_call *call, cp_error_t *err);
int cp_nri_stop_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__StopContainerRequest *req,
                           struct cp_nri_call *call, cp_error_t *err);
/* The container events with no answer but "done": RemoveContainer (its entry
   released), StartContainer and PostCreateContainer (the first with the
   container's pid and cgroup: its entry settled, its cookie and partition made),
   however the runtime delivers them (v0.12's methods of their own, v0.8's
   StateChange).  EVENT is NRI's Event; -1 for one not served. */
int cp_nri_container_event (struct cp_nri_plugin *p, int event, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                            const Nri__Pkg__Api__V1alpha1__Container *c);
int cp_nri_state_change (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__StateChangeEvent *ev,
                         struct cp_nri_call *call, cp_error_t *err);

/* Shared by the events and the resync (nri_resync.c). */

/* The pod's annotations, then the container's: one value per key, the container's
   where both have it (POD may be NULL). */
int cp_nri_annotations_of (const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                           const Nri__Pkg__Api__V1alpha1__Container *c, struct cp_annotations *out, cp_error_t *err);

/* C's linux.cgroupsPath and linux.resources.cpu as config.json would carry them,
   read by cp_oci_config_parse(): the hook's bounds and cgroup path. */
int cp_nri_config_of (const Nri__Pkg__Api__V1alpha1__Container *c, struct cp_oci_config *cfg, cp_error_t *err);

/* The placement of ID for CREQ through the engine's steps, recorded under the cgroup
   CFG names and P's runtime, and not written (the runtime applies the answer); in
   BATCH when not NULL (front.h: committed by its owner, who answers only after), else
   on its own; 0 placed (*PLAN), 1 unplaced (logged), -1 failed (*WHY). */
struct cp_front_batch;
int cp_nri_place (const struct cp_nri_plugin *p, struct cp_front_batch *batch, const char *id,
                  const struct cp_oci_config *cfg, struct cp_container_request *creq, struct cp_plan **plan,
                  cp_error_t *why);

/* ID's entry released, if it is P's (owner.h) and the one of the container in
   CGROUP (NULL: any of P's entries of that id), with the kernel switch's reference
   count; WHY says what proves it gone, for the log.  Logged, never a failure (the
   next reconcile frees what is left). */
void cp_nri_release (const struct cp_nri_plugin *p, const char *id, const char *cgroup, const char *why);

/* C's cgroup as its linux.cgroupsPath names it, opened (it exists once the
   container has started). */
int cp_nri_cgroup_open (const Nri__Pkg__Api__V1alpha1__Container *c, struct cp_cgroup **cg, cp_error_t *err);

/* What the runtime says of C (owner.h), and the CPUs its spec has: true with CPUS
   set (empty: the spec has no cpuset) when C carries its linux part, false when the
   runtime did not say. */
enum cp_seen cp_nri_seen (const Nri__Pkg__Api__V1alpha1__Container *c);
bool cp_nri_spec_cpus (const Nri__Pkg__Api__V1alpha1__Container *c, hwloc_bitmap_t cpus);

/* ---- a container given a prepared DRA claim (nri_claim.c) ---- */

#define CP_NRI_MAX_CLAIM_TAGS 64 /* a container's claim results, at most (more are not read) */

/* C's claim tags (the mounts of its claims' CDI devices: cdi.h), each once, at most
   MAX into TAGS: how many.  A mount below CP_CDI_MOUNT_DIR that is not a spec's, and
   the environment's tag without a mount, are logged and count for nothing. */
size_t cp_nri_claim_tags (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c,
                          struct cp_dra_tag *tags, size_t max);

/* Whether C is given a claim (a tag, above). */
bool cp_nri_claim_of (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c);

/* The CPUs and NUMA nodes (cpulists; *MEMS NULL: none known) of the claims' results
   C is tagged with: 1, logged; 0 when C carries no tag; -1 when one of them is not
   prepared here or the ledger cannot be read (*WHY: the caller's on_error policy). */
int cp_nri_claim_cpus (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c, char **cpus,
                       char **mems, cp_error_t *why);

/* C's id as cachepin takes ids (cp_oci_id_check()), its error naming the field. */
int cp_nri_id_check (const Nri__Pkg__Api__V1alpha1__Container *c, cp_error_t *err);

/* The one cpuset an answer carries (CreateContainer's adjustment, UpdateContainer's
   and Synchronize's updates): linux.resources.cpu.cpus and .mems (MEMS NULL or
   empty: not set, the runtime's stay).  The result points into S and at the strings. */
struct cp_nri_cpuset
{
  Nri__Pkg__Api__V1alpha1__LinuxCPU cpu;
  Nri__Pkg__Api__V1alpha1__LinuxResources res;
};
Nri__Pkg__Api__V1alpha1__LinuxResources *cp_nri_cpuset (struct cp_nri_cpuset *s, char *cpus, char *mems);

/* An update of container ID to that cpuset, nothing else named. */
struct cp_nri_update
{
  struct cp_nri_cpuset set;
  Nri__Pkg__Api__V1alpha1__LinuxContainerUpdate linux_;
  Nri__Pkg__Api__V1alpha1__ContainerUpdate upd;
};
Nri__Pkg__Api__V1alpha1__ContainerUpdate *cp_nri_update_of (struct cp_nri_update *u, char *id, char *cpus,
                                                            char *mems);

/* An UpdateContainer of C (of POD, may be NULL) carrying RES, for the container P
   placed on PLACED (a cpulist): when its CPU count is its limit's and the new limit
   asks another count, placed again (nri_resize.c): 1 with *CPUS and *MEMS the new
   cpulists (the caller frees), 0 when its placement stands (not such a container,
   the same count, or no room: said), -1 when a strict one cannot be met (*WHY, the
   update refused with it). */
int cp_nri_resize (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                   const Nri__Pkg__Api__V1alpha1__Container *c, const Nri__Pkg__Api__V1alpha1__LinuxResources *res,
                   const char *placed, char **cpus, char **mems, cp_error_t *why);

/* ---- what is made once a container runs (nri_start.c, nri_isolate.c; started.h) ---- */

/* C (of POD, may be NULL) has a process (C->pid): the cookie made for it when it
   asks, core scheduling is there and the plugin's entry of it has none yet, then
   recorded (core_sched: true).  Logged, never a failure. */
void cp_nri_core_sched_start (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                              const Nri__Pkg__Api__V1alpha1__Container *c);

/* What C (of POD, may be NULL) asks for of what is made once it has a process, its
   annotations read as CreateContainer reads them (nothing, when they do not read). */
struct cp_nri_asks
{
  bool core_sched; /* cachepin.io/core-sched */
  bool isolate;    /* cachepin.io/isolate */
};
struct cp_nri_asks cp_nri_asks_of (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                                   const Nri__Pkg__Api__V1alpha1__Container *c);

/* C (of POD, may be NULL) has a process (C->pid): when it asks cachepin.io/isolate,
   its partition made on its entry's CPUs (cp_placer_isolate_started()), the helper
   shown the process first.  Logged, never a failure: the container runs. */
void cp_nri_isolate_start (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                           const Nri__Pkg__Api__V1alpha1__Container *c);

/* ---- Synchronize (nri_resync.c) ---------------------------------------------------- */

/* How long a resync may take: half the runtime's 2 s request timeout, the rest is
   the answer's and the lock wait's (CP_NRI_LOCK_TIMEOUT_MS). */
#define CP_NRI_RESYNC_BUDGET_MS 1000

/* The most one Synchronize may send before its last part: past either, the
   plugin says so in one line and closes the connection (a runtime lists a
   thousand containers in a few MB). */
#define CP_NRI_SYNC_MAX_PARTS 64
#define CP_NRI_SYNC_MAX_BYTES (64u << 20)
#define CP_NRI_SYNC_TOO_LONG CP_NRI_CLOSE_AFTER /* cp_nri_synchronize()'s: answered, then close */

/* Synchronize: a part with `more` is kept (P->sync) and answered with no updates,
   `more` echoed; the last part runs cp_nri_resync() on every part's pods and
   containers, answered with its updates.  A chain past CP_NRI_SYNC_MAX_PARTS or
   CP_NRI_SYNC_MAX_BYTES is refused (an error status) and CP_NRI_SYNC_TOO_LONG
   returned: the caller closes the connection. */
int cp_nri_synchronize (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__SynchronizeRequest *req,
                        struct cp_nri_call *call, cp_error_t *err);

/* What is placed rebuilt from the runtime's containers (CTRS, their PODS) and the
   ledger, within BUDGET_MS: P's entries settled by the engine's rule
   (cp_owner_settle(): released when the runtime says stopped or, pending, no longer
   has them; the cgroup and its inode recorded for those running on their
   placement; an update of the entry's CPUs for those running without it); running
   containers that ask and have no entry placed, strict ones first; every update in
   *OUT (the caller frees with cp_nri_updates_free()).  A container listed twice
   counts once.  Never fails: what it cannot do is logged. */
struct cp_nri_updates
{
  struct cp_nri_update *u;
  Nri__Pkg__Api__V1alpha1__ContainerUpdate **p;
  char **strings; /* the ids, cpus and mems the updates point at */
  size_t n, n_strings;
};
void cp_nri_resync (const struct cp_nri_plugin *p, Nri__Pkg__Api__V1alpha1__PodSandbox **pods, size_t n_pods,
                    Nri__Pkg__Api__V1alpha1__Container **ctrs, size_t n_ctrs, long budget_ms,
                    struct cp_nri_updates *out);
void cp_nri_updates_free (struct cp_nri_updates *u);

#endif
