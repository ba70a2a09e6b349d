# The NRI tests' shared steps (tests/cri/nri.sh and routes.sh), sourced after lib.sh and
# after D, CTRD, NRISOCK and BIN are set: containerd with NRI on its private socket, the
# plugin on it, and the plugin's ledger read.

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

# logged FILE PATTERN N: FILE has N lines matching PATTERN, waited for 10 s at most
# (the events the plugin logs come with containerd's calls, in well under a second).
logged () {
  for _ in $(seq 100); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

# start_plugin: `cachepin nri` on the private socket, registered and synchronized (one
# more "synchronized" line in its log than before).
start_plugin () {
  local before
  before=$(grep -c 'nri: synchronized' "$D/nri.log" 2>/dev/null)
  # Without the CRI client's pipes (7, 8): a plugin holding them keeps the client from
  # seeing its end when containerd is stopped under it.
  "$BIN" nri --socket "$NRISOCK" --config "$D/cachepin.json" >>"$D/nri.log" 2>&1 7>&- 8<&- &
  PLUGIN_PID=$!
  logged "$D/nri.log" 'nri: synchronized' $((${before:-0} + 1)) && return 0
  cat "$D/nri.log"
  return 1
}

ledger () { cat "$D/cpstate/ledger.json" 2>/dev/null || echo '{"entries":[]}'; }
held () { ledger | jq -r --arg id "$1" '[.entries[] | select(.id == $id) | .cpus] | join(",")'; }
