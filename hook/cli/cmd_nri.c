/* `cachepin nri`: the NRI agent's command line (hook/agent/nri_agent.h runs it).
 *
 * The pre-launched form: a runtime that starts the plugin itself (containerd's
 * plugin_path, /opt/nri/plugins/NN-name, here a script that runs `cachepin nri`)
 * hands it a connected socket as fd NRI_PLUGIN_SOCKET, and its name and index as
 * NRI_PLUGIN_NAME and NRI_PLUGIN_IDX (nri pkg/adaptation/plugin.go); --name and
 * --idx still win over those, and --socket then names the runtime's socket (which
 * runtime this is: the plugin's entries and its instance lock record it) without
 * dialling it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>

#include "cli.h"
#include "dra_model.h"
#include "log.h"
#include "nri_agent.h"
#include "nri_http.h"
#include "nri_stub.h"
#include "util.h"

static const char nri_usage[] =
  "Usage: cachepin nri [--socket PATH] [--name NAME] [--idx NN] [--metrics-listen ADDR:PORT]\n"
  "                   [--metrics-path PATH] [--kubelet-plugin [--kubelet-root DIR]]\n"
  "                   [--dra-node NAME [--kube-api URL --kube-ca FILE --kube-token-file FILE]]\n"
  "                   [--config PATH]\n"
  "Run as an NRI plugin of containerd or CRI-O: place the containers that ask (their pod's\n"
  "or their own cachepin.io/ annotations) as they are created, keep their cpusets through\n"
  "updates, release them when they stop; at each connection's Synchronize, catch up\n"
  "with what changed while it was away.  When the runtime goes (a restart), dial it\n"
  "again (every 0.1 s to 5 s); started by the runtime, exit 0 instead.  Runs until\n"
  "SIGTERM.\n\n"
  "  --socket PATH    the runtime's NRI socket (default " CP_NRI_DEFAULT_SOCKET "); started\n"
  "                   by the runtime, the descriptor NRI_PLUGIN_SOCKET names is used and\n"
  "                   PATH only says which runtime that is (one plugin per runtime)\n"
  "  --name NAME      the plugin's name (default NRI_PLUGIN_NAME, or cachepin)\n"
  "  --idx NN         its index, two digits: the order among plugins (default\n"
  "                   NRI_PLUGIN_IDX, or 50)\n"
  "  --metrics-listen ADDR:PORT\n"
  "                   serve metrics and the probes over HTTP there (127.0.0.1:9464,\n"
  "                   [::1]:9464; off by default): Prometheus' text format at the\n"
  "                   metrics path, /readyz (registered with the runtime, the ledger\n"
  "                   readable) and /livez (the loop turns); docs/metrics.md\n"
  "  --metrics-path PATH\n"
  "                   where the metrics are served (default " CP_NRI_HTTP_DEFAULT_PATH ")\n"
  "  --kubelet-plugin serve the kubelet as its DRA plugin cachepin.io too: the plugin\n"
  "                   registration socket in DIR/plugins_registry, the DRA service (v1,\n"
  "                   v1beta1) in DIR/plugins/cachepin.io; a claim prepared is fetched\n"
  "                   from the API server, its CPUs chosen in its device and recorded,\n"
  "                   its CDI spec written; needs --dra-node (docs/kubernetes.md)\n"
  "  --kubelet-root DIR\n"
  "                   the kubelet's root directory (default " CP_NRI_KUBELET_DEFAULT_ROOT ")\n"
  "  --dra-node NAME  publish this node's ResourceSlices for Kubernetes DRA and keep\n"
  "                   them true (docs/dra.md: a round when the node's devices change or\n"
  "                   its watch sees a slice edited, every 30 s, after a failure 1 to\n"
  "                   60 s later), from a process of\n"
  "                   its own; the API server in-cluster (the pod's service account)\n"
  "                   unless --kube-api, --kube-ca, --kube-token-file say (as for\n"
  "                   `cachepin dra publish`)\n"
  "  --config PATH    host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  -h, --help       this text\n";

enum
{
  OPT_SOCKET = 0x200,
  OPT_NAME,
  OPT_IDX,
  OPT_METRICS_LISTEN,
  OPT_METRICS_PATH,
  OPT_KUBELET_PLUGIN,
  OPT_KUBELET_ROOT,
  OPT_DRA_NODE,
};

struct nri_args
{
  struct cp_cli_common c;
  const char *socket; /* NULL: the default, or NRI_PLUGIN_SOCKET's fd */
  const char *name;   /* NULL: NRI_PLUGIN_NAME or "cachepin" */
  const char *idx;    /* NULL: NRI_PLUGIN_IDX or "50" */
  struct cp_nri_watch_options watch; /* --metrics-listen, --metrics-path */
  struct cp_nri_kubelet_options kubelet; /* --kubelet-plugin, --kubelet-root */
  struct cp_nri_dra_options dra;         /* --dra-node, --kube-* */
};

static int
nri_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct nri_args *a = args;
  switch (opt)
    {
    case OPT_SOCKET:
      a->socket = arg;
      return 1;
    case OPT_NAME:
      if (cp_nri_check_name ("--name", arg, err) < 0)
        return -1;
      a->name = arg;
      return 1;
    case OPT_IDX:
      if (cp_nri_check_idx ("--idx", arg, err) < 0)
        return -1;
      a->idx = arg;
      return 1;
    case OPT_METRICS_LISTEN:
      a->watch.listen = arg;
      return 1;
    case OPT_METRICS_PATH:
      a->watch.path = arg;
      return 1;
    case OPT_KUBELET_PLUGIN:
      a->kubelet.enabled = true;
      return 1;
    case OPT_KUBELET_ROOT:
      if (arg[0] != '/')
        return cp_fail_input (err, "--kubelet-root `%.200s`: not an absolute path", arg);
      struct stat st;
      if (stat (arg, &st) < 0 || !S_ISDIR (st.st_mode))
        return cp_fail_input (err, "--kubelet-root %.200s: not a directory (the kubelet's root)", arg);
      a->kubelet.root = arg;
      return 1;
    case OPT_DRA_NODE:
      a->dra.node = arg;
      return 1;
    default:
      return cp_cli_kube_option (opt, arg, &a->dra.kube);
    }
}

/* The runtime's NRI_PLUGIN_NAME and NRI_PLUGIN_IDX where no option names them. */
static int
names_from_env (struct nri_args *a, cp_error_t *err)
{
  const char *name = getenv ("NRI_PLUGIN_NAME"), *idx = getenv ("NRI_PLUGIN_IDX");
  if (a->name == NULL && name && *name)
    {
      if (cp_nri_check_name ("NRI_PLUGIN_NAME", name, err) < 0)
        return -1;
      a->name = name;
    }
  if (a->idx == NULL && idx && *idx)
    {
      if (cp_nri_check_idx ("NRI_PLUGIN_IDX", idx, err) < 0)
        return -1;
      a->idx = idx;
    }
  if (a->name == NULL)
    a->name = "cachepin";
  if (a->idx == NULL)
    a->idx = "50";
  return 0;
}

static const struct option nri_options[] = {
  { "socket", required_argument, NULL, OPT_SOCKET },
  { "name", required_argument, NULL, OPT_NAME },
  { "idx", required_argument, NULL, OPT_IDX },
  { "metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN },
  { "metrics-path", required_argument, NULL, OPT_METRICS_PATH },
  { "kubelet-plugin", no_argument, NULL, OPT_KUBELET_PLUGIN },
  { "kubelet-root", required_argument, NULL, OPT_KUBELET_ROOT },
  { "dra-node", required_argument, NULL, OPT_DRA_NODE },
  CP_KUBE_LONG_OPTIONS,
  CP_CONFIG_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec nri_spec = {
  .name = "nri",
  .usage = nri_usage,
  .shortopts = "+:h",
  .options = nri_options,
  .option = nri_option,
};

int
cp_cmd_nri (int argc, char **argv, cp_error_t *err)
{
  struct nri_args a = { 0 };
  int r = cp_cli_begin (&nri_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  if (names_from_env (&a, err) < 0)
    return -1;
  /* The options first, then the host config: nothing to free on their refusal. */
  if (a.watch.path && a.watch.listen == NULL)
    return cp_fail_input (err, "--metrics-path: needs --metrics-listen");
  if (a.watch.listen && cp_nri_http_check (a.watch.listen, a.watch.path, err) < 0)
    return -1;
  if (a.kubelet.root && !a.kubelet.enabled)
    return cp_fail_input (err, "--kubelet-root: needs --kubelet-plugin");
  if (a.kubelet.enabled && a.dra.node == NULL)
    return cp_fail_input (err, "--kubelet-plugin: needs --dra-node (the node's pool, and the API client that "
                               "fetches the claims it prepares)");
  if (a.dra.node == NULL && (a.dra.kube.api || a.dra.kube.ca || a.dra.kube.token_file))
    return cp_fail_input (err, "--kube-api, --kube-ca, --kube-token-file: need --dra-node");
  if (a.dra.node && cp_dra_check_node_name ("--dra-node", a.dra.node, err) < 0)
    return -1;
  cp_log_init ("cachepin", true);
  struct cp_hostconfig hc = { 0 };
  if (cp_cli_load_config (&a.c, &hc, err) < 0)
    return -1;
  struct cp_nri_agent_options o = { .socket = a.socket, .name = a.name, .idx = a.idx, .watch = a.watch,
                                    .kubelet = a.kubelet, .dra = a.dra };
  r = cp_nri_agent_run (&o, &hc, err);
  cp_hostconfig_free (&hc);
  return r;
}
