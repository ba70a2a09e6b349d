/* `cachepin dra slice`: the ResourceSlices this node publishes for Kubernetes'
 * Dynamic Resource Allocation (docs/dra.md): its cache domains as devices, their
 * usable CPUs less those held outside DRA as capacity.  Writes nothing: the
 * model is the engine's (hook/engine/dra.h), the JSON policy/dra_model.h's.
 * `cachepin dra prepare` and `unprepare`: a claim allocated on this node prepared
 * into the ledger and a CDI spec, and back (hook/engine/dra_prepare.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpulist.h"
#include "dra.h"
#include "dra_claim.h"
#include "dra_prepare.h"
#include "io.h"
#include "dra_publish.h"
#include "kube.h"
#include "topo.h"
#include "util.h"

static const char dra_usage[] =
  "Usage: cachepin dra slice --node NAME [OPTIONS]\n"
  "       cachepin dra prepare --node NAME --claim FILE|- [--json] [--config PATH]\n"
  "       cachepin dra unprepare --claim-uid UID [--json] [--config PATH]\n"
  "       cachepin dra publish --node NAME [KUBE OPTIONS] [OPTIONS]\n"
  "       cachepin dra unpublish --node NAME [KUBE OPTIONS]\n"
  "Print the resource.k8s.io/v1 ResourceSlices of driver " CP_DRA_DRIVER " for this node:\n"
  "one device per L3 (or the domain the host config's align names), its capacity\n"
  "`" CP_DRA_CAPACITY "` the usable CPUs (online, allowed, within `cpus`, not `reserved`)\n"
  "less those the ledger holds outside DRA; writes nothing (docs/dra.md).\n\n"
  "  --node NAME         the Kubernetes node name: the pool's name (required)\n"
  "  --topology SRC      host (default), an hwloc XML file, or an hwloc synthetic\n"
  "                      description (not this host: no ledger, no host config\n"
  "                      unless --config names one)\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --empty             no ledger: every usable CPU counted as free\n"
  "  --generation N      the pool's generation (default 1)\n"
  "  --json              the slices, one JSON object a line (one line below 129 devices);\n"
  "                      publish, unpublish: what the round did, one JSON object;\n"
  "                      prepare, unprepare: what was prepared or released\n"
  "  -h, --help          this text\n\n"
  "prepare: the ResourceClaim (resource.k8s.io/v1, v1beta2 or v1beta1 JSON, as the API\n"
  "server gives it) allocated devices of this node's pool: their CPUs chosen, recorded\n"
  "in the ledger and a CDI spec written in the host config's cdi_dir; prints the CDI\n"
  "device and the CPUs (again for a claim prepared already; exit 3 when a device\n"
  "lacks the CPUs now).  unprepare: the claim's CPUs released and its spec removed.\n"
  "  --claim FILE|-      the claim's JSON (-: standard input; at most 1 MiB)\n"
  "  --claim-uid UID     the claim's metadata.uid\n"
  "\n"
  "publish makes the node's slices on the API server equal those slice prints (one\n"
  "round: created, updated, deleted; the pool's generation raised when they differ);\n"
  "unpublish deletes them.  Kube options (default: in-cluster, the pod's service account):\n"
  "  --kube-api URL      the API server, https://HOST[:PORT]\n"
  "  --kube-ca FILE      the CA of its certificate (default " CP_KUBE_SA_DIR "/ca.crt)\n"
  "  --kube-token-file FILE  the bearer token, read again when it changes\n"
  "                      (default " CP_KUBE_SA_DIR "/token)\n";

enum
{
  OPT_NODE = 0x200,
  OPT_TOPOLOGY,
  OPT_EMPTY,
  OPT_GENERATION,
  OPT_CLAIM,
  OPT_CLAIM_UID,
};

struct dra_args
{
  struct cp_cli_common c;
  const char *verb;
  const char *node;
  const char *topology;
  bool empty;
  int64_t generation;
  const char *claim;
  const char *claim_uid;
  bool generation_set;
  struct cp_kube_options kube;
};

static int
parse_generation (const char *arg, int64_t *out, cp_error_t *err)
{
  unsigned n;
  if (cp_parse_count (arg, 1000000000u, &n, err) < 0)
    return cp_error_wrap (err, "--generation");
  *out = n;
  return 1;
}

static int
dra_option (int opt, const char *arg, void *args, cp_error_t *err)
{
  struct dra_args *a = args;
  switch (opt)
    {
    case 1:
      if (a->verb != NULL)
        return 0; /* a second operand: the frame's "unexpected argument" */
      a->verb = arg;
      return 1;
    case OPT_NODE:
      a->node = arg;
      return 1;
    case OPT_TOPOLOGY:
      a->topology = arg;
      return 1;
    case OPT_EMPTY:
      a->empty = true;
      return 1;
    case OPT_GENERATION:
      a->generation_set = true;
      return parse_generation (arg, &a->generation, err);
    case OPT_CLAIM:
      a->claim = arg;
      return 1;
    case OPT_CLAIM_UID:
      a->claim_uid = arg;
      return 1;
    default:
      return cp_cli_kube_option (opt, arg, &a->kube);
    }
}

static const struct option dra_options[] = {
  { "node", required_argument, NULL, OPT_NODE },
  { "topology", required_argument, NULL, OPT_TOPOLOGY },
  { "empty", no_argument, NULL, OPT_EMPTY },
  { "generation", required_argument, NULL, OPT_GENERATION },
  { "claim", required_argument, NULL, OPT_CLAIM },
  { "claim-uid", required_argument, NULL, OPT_CLAIM_UID },
  CP_KUBE_LONG_OPTIONS,
  CP_CONFIG_LONG_OPTION,
  CP_JSON_LONG_OPTION,
  CP_HELP_LONG_OPTION,
  { NULL, 0, NULL, 0 },
};

static const struct cp_cli_spec dra_spec = {
  .name = "dra",
  .usage = dra_usage,
  .shortopts = "-:h",
  .options = dra_options,
  .option = dra_option,
};

/* The devices for people: one line each. */
static void
print_text (const struct cp_dra_model *m, const char *node, const char *source, unsigned held_entries)
{
  printf ("pool %s, driver %s: %zu device%s (%s)", node, CP_DRA_DRIVER, m->n_devices, m->n_devices == 1 ? "" : "s",
          source);
  if (m->hidden)
    printf (", %u left out (every CPU held outside DRA)", m->hidden);
  printf ("\n");
  printf ("%-12s %-5s %-5s %-9s %-5s %-4s %-5s %-7s %-11s %-4s %s\n", "DEVICE", "CPUS", "HELD", "CAPACITY", "NUMA",
          "PKG", "CORES", "THREADS", "KIND", "ISOL", "CPULIST");
  for (size_t i = 0; i < m->n_devices; i++)
    {
      const struct cp_dra_device *d = &m->devices[i];
      cleanup_free char *list = cp_cpulist_format (d->cpus);
      printf ("%-12s %-5u %-5u %-9u %-5d %-4u %-5u %-7u %-11s %-4s %s\n", d->name, d->usable, d->usable - d->capacity,
              d->capacity, d->numa_nodes ? (int) d->numa_node : -1, d->package, d->cores, d->threads_per_core,
              d->cpu_kind, d->isolatable ? "yes" : "no", list);
    }
  if (held_entries)
    printf ("held outside DRA: %u ledger entr%s\n", held_entries, held_entries == 1 ? "y" : "ies");
}

static int
check_node (const struct dra_args *a, cp_error_t *err)
{
  if (a->claim || a->claim_uid)
    return cp_fail_input (err, "%s: not an option of `dra slice`", a->claim ? "--claim" : "--claim-uid");
  if (a->node == NULL)
    return cp_fail_input (err, "--node: required (the Kubernetes node name, the pool's name)");
  return cp_dra_check_node_name ("--node", a->node, err);
}

/* What the devices are read from: the host config (--config, or the host's when the
   ledger is read), *TOPO (--topology; NULL: the host's), *WITH_LEDGER (this host, not
   --empty). */
static int
node_source (struct dra_args *a, struct cp_hostconfig *hc, struct cp_topo **topo, bool *with_ledger,
             cp_error_t *err)
{
  bool host = a->topology == NULL || strcmp (a->topology, "host") == 0;
  *with_ledger = host && !a->empty;
  *topo = NULL;
  if ((*with_ledger || a->c.config != NULL) && cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  if (!*with_ledger && a->c.config == NULL)
    cp_hostconfig_init (hc);
  if (!host && cp_topo_load (a->topology, topo, err) < 0)
    return cp_error_wrap (err, "--topology");
  return 0;
}

static int
run_slice (struct dra_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  struct cp_topo *topo;
  bool with_ledger;
  if (check_node (a, err) < 0 || node_source (a, hc, &topo, &with_ledger, err) < 0)
    return -1;
  bool host = a->topology == NULL || strcmp (a->topology, "host") == 0;
  cleanup_dra_model struct cp_dra_model *m = NULL;
  unsigned held_entries = 0;
  if (cp_dra_gather (hc, topo, with_ledger, &m, &held_entries, err) < 0)
    return -1;
  json_object *slices = NULL;
  if (cp_dra_slices_json (m, a->node, a->generation, &slices, err) < 0)
    return cp_error_wrap (err, "--node"); /* a name the API takes, too long for the slices' names */
  if (a->c.json)
    for (size_t i = 0; i < json_object_array_length (slices); i++)
      puts (json_object_to_json_string_ext (json_object_array_get_idx (slices, i),
                                            JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  else
    print_text (m, a->node, with_ledger ? "this host, its ledger" : host ? "this host, no ledger" : a->topology,
                held_entries);
  json_object_put (slices);
  return 0;
}

/* Options VERB does not take: one line naming the first. */
static int
refuse_options (const struct dra_args *a, const char *verb, bool node, bool claim, bool uid, cp_error_t *err)
{
  const char *bad = a->topology ? "--topology"
                    : a->empty ? "--empty"
                    : a->generation != 1 ? "--generation"
                    : !node && a->node ? "--node"
                    : !claim && a->claim ? "--claim"
                    : !uid && a->claim_uid ? "--claim-uid"
                    : NULL;
  if (bad)
    return cp_fail_input (err, "%s: not an option of `dra %s`", bad, verb);
  return 0;
}

static int
read_claim (const char *path, char **text, size_t *len, cp_error_t *err)
{
  if (strcmp (path, "-") == 0)
    return cp_io_read_fd (0, "standard input", CP_DRA_CLAIM_MAX_BYTES, CP_IO_INPUT, -1, text, len, err) < 0
               ? cp_error_wrap (err, "--claim")
               : 0;
  if (cp_io_read_at (AT_FDCWD, path, 0, path, CP_DRA_CLAIM_MAX_BYTES, CP_IO_INPUT, text, len, err) < 0)
    return cp_error_wrap (err, "--claim");
  return 0;
}

static void
print_prepared (const struct dra_args *a, const struct cp_dra_claim *claim, const struct cp_dra_prepared *p)
{
  cleanup_free char *cpus = cp_cpulist_format (p->cpus);
  cleanup_free char *mems = cp_cpulist_format (p->mems);
  if (!a->c.json)
    {
      printf ("claim %s (%s/%s) %s: CDI device %s, CPUs %s (NUMA %s)\n", claim->uid, claim->namespace_, claim->name,
              p->already ? "prepared already" : "prepared", p->cdi_device, cpus, mems);
      for (size_t i = 0; i < p->n_results; i++)
        {
          cleanup_free char *list = cp_cpulist_format (p->results[i].cpus);
          printf ("  result %u: device %s, CPUs %s, CDI device %s\n", p->results[i].index, p->results[i].device, list,
                  p->results[i].cdi_device);
        }
      return;
    }
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "claim", json_object_new_string (claim->uid));
  json_object_object_add (o, "cdi_device", json_object_new_string (p->cdi_device));
  json_object_object_add (o, "cpus", json_object_new_string (cpus));
  json_object_object_add (o, "mems", json_object_new_string (mems));
  json_object_object_add (o, "already", json_object_new_boolean (p->already));
  json_object *rs = json_object_new_array ();
  for (size_t i = 0; i < p->n_results; i++)
    {
      json_object *r = json_object_new_object ();
      cleanup_free char *list = cp_cpulist_format (p->results[i].cpus);
      json_object_object_add (r, "index", json_object_new_int ((int) p->results[i].index));
      json_object_object_add (r, "device", json_object_new_string (p->results[i].device));
      json_object_object_add (r, "cpus", json_object_new_string (list));
      json_object_object_add (r, "cdi_device", json_object_new_string (p->results[i].cdi_device));
      json_object_array_add (rs, r);
    }
  json_object_object_add (o, "results", rs);
  puts (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (o);
}

static int
run_prepare (struct dra_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (refuse_options (a, "prepare", true, true, false, err) < 0)
    return -1;
  if (a->node == NULL)
    return cp_fail_input (err, "--node: required (the Kubernetes node name, the pool's name)");
  if (a->claim == NULL)
    return cp_fail_input (err, "--claim: required (the ResourceClaim's JSON, a file or -)");
  if (cp_dra_check_node_name ("--node", a->node, err) < 0)
    return -1;
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (read_claim (a->claim, &text, &len, err) < 0)
    return -1;
  cleanup_dra_claim struct cp_dra_claim claim = { 0 };
  if (cp_dra_claim_parse (text, len, a->node, &claim, err) < 0)
    return cp_error_wrap (err, "--claim");
  if (cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  cleanup_dra_prepared struct cp_dra_prepared p = { 0 };
  if (cp_dra_claim_prepare (hc, &claim, &p, err) < 0)
    return -1;
  print_prepared (a, &claim, &p);
  return 0;
}

static int
run_unprepare (struct dra_args *a, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (refuse_options (a, "unprepare", false, false, true, err) < 0)
    return -1;
  if (a->claim_uid == NULL)
    return cp_fail_input (err, "--claim-uid: required (the claim's metadata.uid)");
  if (cp_dra_claim_check_uid ("--claim-uid", a->claim_uid, err) < 0)
    return -1;
  if (cp_cli_load_config (&a->c, hc, err) < 0)
    return -1;
  unsigned n = 0;
  if (cp_dra_claim_unprepare (hc, a->claim_uid, &n, err) < 0)
    return -1;
  if (a->c.json)
    printf ("{\"claim\":\"%s\",\"released\":%u}\n", a->claim_uid, n);
  else if (n)
    printf ("claim %s unprepared: %u %s released\n", a->claim_uid, n, n == 1 ? "entry" : "entries");
  else
    printf ("claim %s: not prepared on this node (nothing to release)\n", a->claim_uid);
  return 0;
}

/* publish and unpublish: one round against the API server. */
static int
run_publish (struct dra_args *a, bool publish, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (check_node (a, err) < 0)
    return -1;
  if (a->generation_set)
    return cp_fail_input (err, "--generation: slice only (publish raises the pool's generation itself)");
  if (!publish && (a->topology || a->empty || a->c.config))
    return cp_fail_input (err, "unpublish takes --node and the kube options only");
  cleanup_kube struct cp_kube_client *kc = NULL;
  if (cp_kube_open_options (&a->kube, &kc, err) < 0)
    return -1;
  struct cp_dra_publish_result res = { 0 };
  int r;
  if (publish)
    {
      struct cp_topo *topo;
      bool with_ledger;
      if (node_source (a, hc, &topo, &with_ledger, err) < 0)
        return -1;
      r = cp_dra_publish (kc, hc, topo, with_ledger, a->node, 0, &res, err);
    }
  else
    {
      json_object *none = json_object_new_array ();
      r = cp_dra_publish_round (kc, none, a->node, 0, &res, err);
      json_object_put (none);
    }
  if (r < 0)
    return cp_error_wrap (err, "%s node %s", publish ? "publish" : "unpublish", a->node);
  if (a->c.json)
    printf ("{\"node\":\"%s\",\"generation\":%" PRId64 ",\"unchanged\":%s,\"created\":%u,\"updated\":%u,"
            "\"deleted\":%u,\"tries\":%u}\n",
            a->node, res.generation, res.unchanged ? "true" : "false", res.created, res.updated, res.deleted,
            res.tries);
  else if (res.unchanged)
    printf ("%s %s: unchanged (generation %" PRId64 ")\n", publish ? "published" : "unpublished", a->node,
            res.generation);
  else
    printf ("%s %s: generation %" PRId64 ", %u created, %u updated, %u deleted\n",
            publish ? "published" : "unpublished", a->node, res.generation, res.created, res.updated, res.deleted);
  return 0;
}

int
cp_cmd_dra (int argc, char **argv, cp_error_t *err)
{
  struct dra_args a = { .generation = 1 };
  int r = cp_cli_begin (&dra_spec, argc, argv, &a.c, &a, err);
  if (r <= 0)
    return r;
  if (a.verb == NULL)
    return cp_fail_input (err, "a command is required: slice, prepare, unprepare, publish or unpublish "
                               "(cachepin dra --help)");
  bool publish = strcmp (a.verb, "publish") == 0, unpublish = strcmp (a.verb, "unpublish") == 0;
  if (!publish && !unpublish && (a.kube.api || a.kube.ca || a.kube.token_file))
    return cp_fail_input (err, "--kube-api, --kube-ca, --kube-token-file: publish and unpublish only");
  if ((publish || unpublish) && (a.claim || a.claim_uid))
    return cp_fail_input (err, "%s: not an option of `dra %s`", a.claim ? "--claim" : "--claim-uid", a.verb);
  int (*run) (struct dra_args *, struct cp_hostconfig *, cp_error_t *)
      = strcmp (a.verb, "slice") == 0       ? run_slice
        : strcmp (a.verb, "prepare") == 0   ? run_prepare
        : strcmp (a.verb, "unprepare") == 0 ? run_unprepare
                                            : NULL;
  if (run == NULL && !publish && !unpublish)
    return cp_fail_input (err, "unknown command `%s` (expected slice, prepare, unprepare, publish or unpublish)",
                          a.verb);
  struct cp_hostconfig hc = { 0 };
  int ret = run ? run (&a, &hc, err) : run_publish (&a, publish, &hc, err);
  cp_hostconfig_free (&hc);
  return ret;
}
