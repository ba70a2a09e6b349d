# The NRI tests' shared steps (tests/cri/nri.sh, routes.sh, nri-promises.sh), sourced after
# lib.sh; they use D, CTRD, NRISOCK, BIN, PODS and PLUGIN_PID when called: containerd with
# NRI on its private socket, the plugin on it and stopped, the plugin's ledger read, the
# cleanup at exit.

start_containerd () {
  (PATH=$CTRD/usr/bin:$PATH exec "$CTRD/usr/bin/containerd" --config "$D/config.toml") >>"$D/containerd.log" 2>&1 &
  CTRD_PID=$!
  start_client
  for _ in $(seq 100); do
    cri version >/dev/null 2>&1 && [ -S "$NRISOCK" ] && return 0
    kill -0 "$CTRD_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$D/containerd.log"
  return 1
}

# nri_cdi_config: the DRA tests' files in D: cachepin.json (state D/cpstate, cdi_dir D/cdi,
# debug) and config.toml, containerd with NRI on NRISOCK and CDI on, its one spec directory
# (cdi_spec_dirs) the agent's cdi_dir. Status 1 (said why) when CDI could not be enabled.
nri_cdi_config () {
  mkdir -p -m 0700 "$D/cpstate"
  mkdir -p "$D/cdi" "$D/nri-plugins" "$D/nri-conf"
  jq -n --arg s "$D/cpstate" --arg c "$D/cdi" '{"state_dir": $s, "cdi_dir": $c, "log_level": "debug"}' \
    >"$D/cachepin.json"
  config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
  # containerd 2.x: enable_cdi and cdi_spec_dirs belong to the CRI runtime plugin's table.
  sed -i "s|^\[plugins.'io.containerd.cri.v1.runtime'\]\$|&\n  enable_cdi = true\n  cdi_spec_dirs = ['$D/cdi']|" \
    "$D/config.toml"
  grep -q "cdi_spec_dirs = \['$D/cdi'\]" "$D/config.toml" && return 0
  echo "FAIL: CDI not enabled in $D/config.toml"
  return 1
}

# logged FILE PATTERN N: FILE has N lines matching PATTERN, waited for 10 s at most
# (the events the plugin logs come with containerd's calls, in well under a second).
logged () {
  for _ in $(seq 100); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

# start_plugin: `cachepin nri` on the private socket (and NRI_PLUGIN_ARGS, an array, when
# set), registered and synchronized (one more "synchronized" line in its log than before).
start_plugin () {
  local before
  before=$(grep -c 'nri: synchronized' "$D/nri.log" 2>/dev/null)
  # Without the CRI client's pipes (7, 8): a plugin holding them keeps the client from
  # seeing its end when containerd is stopped under it.
  "$BIN" nri --socket "$NRISOCK" --config "$D/cachepin.json" ${NRI_PLUGIN_ARGS[@]+"${NRI_PLUGIN_ARGS[@]}"} \
    >>"$D/nri.log" 2>&1 7>&- 8<&- &
  PLUGIN_PID=$!
  logged "$D/nri.log" 'nri: synchronized' $((${before:-0} + 1)) && return 0
  cat "$D/nri.log"
  return 1
}

# run_pod NAME [KEY=VALUE...]: a pod on runc under PARENT (POD, kept in PODS for the cleanup).
# create_start POD NAME PODNAME [ARGS...]: its container made (cri_client.py's create
# arguments) and started (C), checked running.
run_pod () {
  local name=$1
  shift
  POD=$(cri run-pod "$name" "$PARENT" runc "$@") || { bad "$name: RunPodSandbox"; POD=""; return 1; }
  PODS+=("$POD")
}
create_start () {
  local pod=$1 name=$2 podname=$3
  shift 3
  C=$(cri create "$pod" "$name" "$IMAGE" "$PARENT" "$podname" "$@") || { bad "$name: CreateContainer"; C=""; return 1; }
  cri start "$C" || { bad "$name: StartContainer"; return 1; }
  check "$name: running" [ "$(cri state "$C")" = CONTAINER_RUNNING ]
}

ledger () { cat "$D/cpstate/ledger.json" 2>/dev/null || echo '{"entries":[]}'; }
held () { ledger | jq -r --arg id "$1" '[.entries[] | select(.id == $id) | .cpus] | join(",")'; }

# stop_plugin: the dialled plugin ended (continued first, if a test stopped it).
stop_plugin () {
  [ -n "$PLUGIN_PID" ] || return 0
  kill -CONT "$PLUGIN_PID" 2>/dev/null
  kill "$PLUGIN_PID" 2>/dev/null
  wait "$PLUGIN_PID" 2>/dev/null
  PLUGIN_PID=""
}

# nri_cleanup: at exit, the pods in PODS and their containers removed, the plugin and
# containerd stopped, a pre-launched plugin (its command line names our config, it
# outlives containerd only briefly) killed, what containerd leaves removed, and D unless
# CACHEPIN_CRI_KEEP is set.
nri_cleanup () {
  local p c pid
  for p in "${PODS[@]}"; do
    for c in $(cri pod-containers "$p" 2>/dev/null); do cri stop "$c" >/dev/null 2>&1; cri rm "$c" >/dev/null 2>&1; done
    cri stop-pod "$p" >/dev/null 2>&1
    cri rm-pod "$p" >/dev/null 2>&1
  done
  stop_plugin
  stop_containerd
  for pid in $(grep -l -s -F -- "$D/cachepin.json" /proc/[0-9]*/cmdline | cut -d/ -f3); do kill "$pid" 2>/dev/null; done
  cri_leftovers
  if [ -n "${CACHEPIN_CRI_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}

