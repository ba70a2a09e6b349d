/* cachepin: the NRI agent, `cachepin nri`'s long-running process (nri_agent.c). */
#ifndef CP_NRI_AGENT_H
#define CP_NRI_AGENT_H

#include <stddef.h>

#include "error.h"
#include "nri_conn.h"
#include "nri_kubelet.h"
#include "nri_dra.h"
#include "nri_watch.h"
#include "placer.h"

/* What the command line says (the front end checked the name and index). */
struct cp_nri_agent_options
{
  const char *socket;   /* the runtime's NRI socket; NULL: the default (or the
                           pre-launched descriptor's runtime) */
  const char *name;     /* what it registers as */
  const char *idx;      /* its two-digit index */
  /* Other endpoints of the same process, served by the same loop between the
     runtime's calls (nri_conn.h), besides the agent's own (its tick and its
     metrics listener: nri_watch.h); tests add theirs. */
  const struct cp_nri_side *side;
  size_t n_side;
  struct cp_nri_watch_options watch; /* --metrics-listen, --metrics-path */
  struct cp_nri_kubelet_options kubelet; /* --kubelet-plugin, --kubelet-root */
  struct cp_nri_dra_options dra;     /* --dra-node and the kube options */
};

/* Serve the runtime until SIGTERM or SIGINT (0), or a failure that ends the run
   (< 0, *ERR: another agent serves that runtime and state directory, the sandbox
   cannot be entered, the state directory cannot be repaired inside it, the
   metrics listener or the kubelet plugin's sockets cannot listen).  HC is
   the host config, its lock wait cut to fit the runtime's request timeout. */
int cp_nri_agent_run (const struct cp_nri_agent_options *o, struct cp_hostconfig *hc, cp_error_t *err);

#endif
