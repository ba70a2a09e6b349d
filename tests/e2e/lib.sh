# Shared helpers for end-to-end tests: real runtimes (runc, crun) running busybox
# containers with cachepin configured as their hook, as a user would.
#
# Needs: CACHEPIN (path to the binary), RUNTIME (runc|crun), jq, a static busybox.
# Sets up a scratch directory with a host config and a state dir of its own, so the
# tests never touch /etc/cachepin or /run/cachepin.

set -u

: "${RUNTIME:=runc}"
: "${BUSYBOX:=$(command -v busybox || echo /bin/busybox)}"
E2E_PASS=0
E2E_FAIL=0
E2E_CONTAINERS=()

e2e_setup () {
  E2E_DIR=$(mktemp -d /tmp/cachepin-e2e.XXXXXX)
  E2E_STATE="$E2E_DIR/state"
  E2E_CONFIG="$E2E_DIR/cachepin.json"
  E2E_ROOTFS="$E2E_DIR/rootfs"
  mkdir -p "$E2E_ROOTFS/bin" "$E2E_ROOTFS/proc" "$E2E_ROOTFS/sys" "$E2E_ROOTFS/dev" "$E2E_ROOTFS/tmp" "$E2E_DIR/spec"
  cp "$BUSYBOX" "$E2E_ROOTFS/bin/busybox"
  for c in sh cat grep sleep echo true awk; do ln -sf busybox "$E2E_ROOTFS/bin/$c"; done
  printf '{"state_dir": "%s", "log_level": "debug"}\n' "$E2E_STATE" > "$E2E_CONFIG"
  if command -v runc >/dev/null; then (cd "$E2E_DIR/spec" && runc spec); else (cd "$E2E_DIR/spec" && crun spec); fi
  mv "$E2E_DIR/spec/config.json" "$E2E_DIR/spec-template.json"
  trap e2e_cleanup EXIT
}

e2e_cleanup () {
  for id in "${E2E_CONTAINERS[@]}"; do
    "$RUNTIME" kill "$id" KILL >/dev/null 2>&1
    "$RUNTIME" delete -f "$id" >/dev/null 2>&1
  done
  [ -n "${E2E_KEEP:-}" ] || rm -rf "$E2E_DIR"
}

# e2e_bundle ID ANNOTATIONS_JSON CMD [EXTRA_JQ]: write a bundle for container ID whose
# process runs CMD (sh -c), with the hook configured for createRuntime and poststop.
e2e_bundle () {
  local id=$1 annotations=$2 cmd=$3 extra=${4:-.}
  local b="$E2E_DIR/bundles/$id" hookerr=""
  mkdir -p "$b"
  # crun does not pass a hook's stderr on (runc puts it in its error message);
  # its run.oci.hooks.stderr annotation keeps it in a file, which e2e_run and
  # e2e_start add to $E2E_OUT.
  if [ "$(basename "$RUNTIME")" = crun ] && [ "$annotations" != '{}' ]; then hookerr="$b/hooks.stderr"; fi
  jq --arg cmd "$cmd" --argjson ann "$annotations" --arg bin "$CACHEPIN" --arg cfg "$E2E_CONFIG" \
     --arg rootfs "$E2E_ROOTFS" --arg hookerr "$hookerr" '
      .process.terminal = false
    | .root.path = $rootfs
    | .process.args = ["sh", "-c", $cmd]
    | .root.readonly = true
    | .annotations = $ann + (if $hookerr != "" then {"run.oci.hooks.stderr": $hookerr} else {} end)
    | .hooks = {
        "createRuntime": [{"path": $bin, "args": ["cachepin", "hook", "--config", $cfg, "createRuntime"], "timeout": 30}],
        "poststop":      [{"path": $bin, "args": ["cachepin", "hook", "--config", $cfg, "poststop"], "timeout": 30}]
      }' "$E2E_DIR/spec-template.json" | jq "$extra" > "$b/config.json"
  echo "$b"
}

# e2e_run ID ANNOTATIONS_JSON CMD: run to completion; stdout+stderr in $E2E_OUT, status in $E2E_RC.
e2e_run () {
  local b
  b=$(e2e_bundle "$1" "$2" "$3" "${4:-.}")
  E2E_OUT=$(timeout 60 "$RUNTIME" run --bundle "$b" "$1" 2>&1 </dev/null)
  E2E_RC=$?
  [ ! -s "$b/hooks.stderr" ] || E2E_OUT+=$'\n'$(cat "$b/hooks.stderr")
  "$RUNTIME" delete -f "$1" >/dev/null 2>&1
  return 0
}

# e2e_start ID ANNOTATIONS_JSON [EXTRA_JQ]: start a detached container that sleeps;
# $E2E_RC, $E2E_OUT.  Its stdio goes to a file: a pipe would stay open as long as
# the container runs.
e2e_start () {
  local b log="$E2E_DIR/$1.log"
  b=$(e2e_bundle "$1" "$2" "sleep 600" "${3:-.}")
  timeout 60 "$RUNTIME" run -d --bundle "$b" "$1" >"$log" 2>&1 </dev/null
  E2E_RC=$?
  E2E_OUT=$(cat "$log" "$b/hooks.stderr" 2>/dev/null || true)
  E2E_CONTAINERS+=("$1")
  return 0
}

# e2e_allowed ID FIELD: Cpus_allowed_list or Mems_allowed_list of a running container.
e2e_allowed () {
  "$RUNTIME" exec "$1" sh -c "grep '^$2:' /proc/self/status" 2>/dev/null | awk '{print $2}'
}

# Ledger views.
e2e_ledger () { cat "$E2E_STATE/ledger.json" 2>/dev/null || echo '{"entries":[]}'; }
e2e_held_except () { e2e_ledger | jq -r --arg id "$1" '[.entries[] | select(.id != $id and .mode == "exclusive") | .held] | join(",")'; }
e2e_entry () { e2e_ledger | jq -c --arg id "$1" '.entries[] | select(.id == $id)'; }

pass () { echo "PASS: $*"; E2E_PASS=$((E2E_PASS + 1)); }
fail () { echo "FAIL: $*"; E2E_FAIL=$((E2E_FAIL + 1)); }
check () { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# same A B: equal and not empty (an empty read must not pass as a match).
same () { [ -n "$1" ] && [ "$1" = "$2" ]; }

e2e_summary () {
  echo "$E2E_PASS passed, $E2E_FAIL failed"
  [ "$E2E_FAIL" = 0 ]
}
