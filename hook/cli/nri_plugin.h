/* cachepin: `cachepin nri`'s handlers of the runtime's calls (nri_events.c), for
 * the loop that reads them (cmd_nri.c). */
#ifndef CP_NRI_PLUGIN_H
#define CP_NRI_PLUGIN_H

#include <stdint.h>

#include "api.pb-c.h"
#include "hostconfig.h"
#include "nri_wire.h"

/* The events the plugin subscribes to (ConfigureResponse.events: bit 1 << (event - 1),
   nri pkg/api/event.go): CreateContainer, UpdateContainer, StopContainer,
   RemoveContainer, all known to a v0.8.0 runtime (it refuses bits past LAST - 1). */
#define CP_NRI_EVENTS                                                                                   \
  ((1 << (NRI__PKG__API__V1ALPHA1__EVENT__CREATE_CONTAINER - 1))                                        \
   | (1 << (NRI__PKG__API__V1ALPHA1__EVENT__UPDATE_CONTAINER - 1))                                      \
   | (1 << (NRI__PKG__API__V1ALPHA1__EVENT__STOP_CONTAINER - 1))                                        \
   | (1 << (NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER - 1)))

/* A call of the runtime being answered: its stream, and where the answer's frames go. */
struct cp_nri_call
{
  uint32_t stream;
  struct cp_buf *out;
};

/* Each answers CALL (a reply, or an error status whose message containerd shows)
   and returns 0; < 0 only when the answer itself could not be made (*ERR). */
int cp_nri_create_container (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__CreateContainerRequest *req,
                             struct cp_nri_call *call, cp_error_t *err);
int cp_nri_update_container (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__UpdateContainerRequest *req,
                             struct cp_nri_call *call, cp_error_t *err);
int cp_nri_stop_container (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__StopContainerRequest *req,
                           struct cp_nri_call *call, cp_error_t *err);
int cp_nri_state_change (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__StateChangeEvent *ev,
                         struct cp_nri_call *call, cp_error_t *err);

#endif
