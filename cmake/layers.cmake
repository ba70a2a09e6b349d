# cachepin's layers (docs/architecture.md): one static library per folder, and the
# layers each may use.  This table is the rule: the link lists below are built from
# it, and the include-rule test (cmake/check-includes.cmake, CTest unit.layers) checks
# every #include of every file against it.  A layer may include its own headers and
# those of the layers it names here, nothing else; tests/, bench/ and fuzz/ are not
# layers and may include anything.
#
#   base    generic helpers: errors, strings, bitmaps, cpulists, files, JSON
#   policy  the topology model and the placement engine (pure: no host writes)
#   oci     OCI input (state, config.json, annotations) turned into a policy request
#   host    the host's files and buses: cgroups, /proc, debugfs, systemd, the kubelet, logs
#   state   what persists between runs: the host config, the ledger, the topology cache
#   engine  the steps a front end calls: admit, decide, apply, release, status
#   kube    the Kubernetes API client: its config, libcurl (dlopen'ed), JSON answers, list + watch
#   nri     the NRI transport: the multiplexer's frames, ttrpc, the protobuf messages
#   grpc    the kubelet plugin's transport: gRPC over HTTP/2 (libnghttp2) on unix sockets,
#           the registration and DRA services' messages
#   agent   the long-running NRI agent: its state in one object, its handlers, its loop
#   cli     the command line (argument parsing and printing), main() aside
#   support test support (tests/support): the reference ledger codec
set(CACHEPIN_LAYERS base policy oci host state kube engine nri grpc agent cli support)

set(CACHEPIN_LAYER_DIR_base    policy/base)
set(CACHEPIN_LAYER_DIR_policy  policy)
set(CACHEPIN_LAYER_DIR_oci     oci)
set(CACHEPIN_LAYER_DIR_host    hook/host)
set(CACHEPIN_LAYER_DIR_state   hook/state)
set(CACHEPIN_LAYER_DIR_kube    hook/kube)
set(CACHEPIN_LAYER_DIR_engine  hook/engine)
set(CACHEPIN_LAYER_DIR_nri     hook/nri)
set(CACHEPIN_LAYER_DIR_grpc    hook/grpc)
set(CACHEPIN_LAYER_DIR_agent   hook/agent)
set(CACHEPIN_LAYER_DIR_cli     hook/cli)
set(CACHEPIN_LAYER_DIR_support tests/support)

set(CACHEPIN_LAYER_USES_base)
set(CACHEPIN_LAYER_USES_policy  base)
set(CACHEPIN_LAYER_USES_oci     policy base)
set(CACHEPIN_LAYER_USES_host    base)
set(CACHEPIN_LAYER_USES_state   host policy base)
set(CACHEPIN_LAYER_USES_kube    base)
set(CACHEPIN_LAYER_USES_engine  state host kube oci policy base)
set(CACHEPIN_LAYER_USES_nri     base)
set(CACHEPIN_LAYER_USES_grpc    base)
set(CACHEPIN_LAYER_USES_agent   engine kube oci nri grpc policy base)
set(CACHEPIN_LAYER_USES_cli     agent engine state host kube oci nri grpc policy base)
set(CACHEPIN_LAYER_USES_support state base)

# Headers a layer owns that the build generates (not in its folder): protoc-c's, from
# hook/nri/proto (cmake/nri_proto.cmake).
set(CACHEPIN_LAYER_GENERATED_nri api.pb-c.h request.pb-c.h status.pb-c.h)
# protoc-c's from hook/grpc/proto (cmake/kubelet_proto.cmake).
set(CACHEPIN_LAYER_GENERATED_grpc pluginregistration_v1.pb-c.h dra_v1.pb-c.h dra_v1beta1.pb-c.h)

# No .c or .h under hook/ longer than this (issue 20): a file that long holds two
# modules; split it along a seam, each piece one module with its prefix, sharing
# what it must through an _internal.h.  Checked with the includes (unit.layers).
set(CACHEPIN_HOOK_MAX_LINES 600)
