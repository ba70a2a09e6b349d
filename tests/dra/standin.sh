#!/usr/bin/env bash
# The kubelet stand-in (tests/dra/kubelet, standin-lib.sh) against the reference plugin
# (tests/dra/refplugin), which is independent of cachepin's: a plugin registers as with the
# kubelet (GetInfo, the service chosen, NotifyRegistrationStatus), prepare and unprepare are
# answered; the kubelet takes the first service in the plugin's list that it implements (v1
# preferred by a plugin listing it first, v1beta1 by one listing that first, and by a
# v1beta1-only kubelet) and refuses a plugin with none; a stalled plugin hits the call
# timeout and the retry succeeds, as does one that fails once; a plugin stopped is
# deregistered, restarted it registers again and a call waiting meanwhile succeeds; a
# kubelet restarted finds the plugins again; a plugin answering garbage (bytes that are not
# the message, a socket that is not gRPC) is an error, never a crash. Prints the cold
# build's and the warm fetch's seconds.
#
#   tests/dra/standin.sh
#
# Exit 77 (skipped): not root (it writes /var/cache/cachepin), or the Debian archive
# unreachable and nothing cached.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=standin-lib.sh
. "$HERE/standin-lib.sh"

dra_prereqs jq python3

t0=$(date +%s.%N)
standin_fetch
t1=$(date +%s.%N)
echo "cold build: $(cat "$STANDIN_DIR/build-seconds" 2>/dev/null || echo '?') s (once per version, $STANDIN_DIR)"
echo "this fetch: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"

ROOT=$(mktemp -d /tmp/cp-standin.XXXXXX)
declare -A REF_PID=()
JUNK_PID=""
cleanup () {
  set +e
  local n
  for n in "${!REF_PID[@]}"; do kill "${REF_PID[$n]}" 2>/dev/null; wait "${REF_PID[$n]}" 2>/dev/null; done
  [ -z "$JUNK_PID" ] || { kill "$JUNK_PID" 2>/dev/null; wait "$JUNK_PID" 2>/dev/null; }
  standin_down
  rm -rf "$ROOT"
}
trap cleanup EXIT
fail () {
  echo "FAIL: $*"
  echo "--- the stand-in's last lines:"
  tail -15 "$ROOT/k/standin.log" 2>/dev/null
  for f in "$ROOT"/ref-*.log; do [ -e "$f" ] && { echo "--- $f:"; tail -6 "$f"; }; done
  exit 1
}
ok () { echo "ok: $*"; }

# ref_up NAME ARGS...: the reference plugin NAME (driver name NAME.cachepin.test) started.
ref_up () {
  local n=$1
  shift
  "$STANDIN_DIR/bin/dra-refplugin" -root "$ROOT/k" -name "$n.cachepin.test" "$@" >>"$ROOT/ref-$n.log" 2>&1 &
  REF_PID[$n]=$!
}
ref_down () {
  kill "${REF_PID[$1]}"
  wait "${REF_PID[$1]}" 2>/dev/null || true
  unset "REF_PID[$1]"
}
# wait_log FILE ERE: FILE has a line matching ERE within 10 s.
wait_log () {
  for _ in $(seq 100); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  fail "no line /$2/ in $1 after 10 s"
}
# socket_state SOCKET STATE: the stand-in's state of that registration socket within 10 s.
socket_state () {
  local s
  for _ in $(seq 100); do
    s=$(standin plugins | jq -r --arg p "$ROOT/k/plugins_registry/$1" '.sockets[]? | select(.path == $p) | .state')
    [ "$s" = "$2" ] && return 0
    sleep 0.1
  done
  fail "socket $1: state '$s', not $2, after 10 s"
}
# expect JSON JQ WHAT: the jq expression is true of the answer.
expect () {
  jq -e "$2" >/dev/null <<<"$1" || fail "$3: $1"
  ok "$3"
}
call () { # call OP CLAIM DRIVER: the answer in $out, its exit status in $rc
  rc=0
  out=$(standin "$1" -claim "$2" -driver "$3.cachepin.test") || rc=$?
}
V1=/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin
V1BETA1=/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin
# registered NAME SERVICE WHAT: plugin NAME registered, with SERVICE.
registered () {
  out=$(standin wait -driver "$1.cachepin.test" -timeout 10s) || fail "plugin $1 not registered: $out"
  expect "$out" ".plugins[] | select(.name == \"$1.cachepin.test\") | .service == \"$2\" and .registered" "$3"
}
# reached OP NAME UID SERVICE_PATH: OP of claim UID on plugin NAME succeeds through that service.
reached () {
  local m=NodePrepareResources
  [ "$1" = prepare ] || m=NodeUnprepareResources
  call "$1" "$3/default/claim-$3" "$2"
  [ "$rc" = 0 ] || fail "$1 $3 on $2 (exit $rc): $out"
  grep -q "call $4/$m claims=$3" "$ROOT/ref-$2.log" || fail "$1 $3 did not reach $4/$m"
  ok "$1 $3 answered through $4/$m"
}
# refused NAME: plugin NAME not registered, and told why.
refused () {
  socket_state "$1.cachepin.test-reg.sock" failed
  wait_log "$ROOT/ref-$1.log" 'registered=false error=".*none of the supported services'
}

# Timeouts and waits short enough for a test; the defaults are the kubelet's.
help=$("$STANDIN_DIR/bin/kubelet-standin" serve -h 2>&1 | tr '\n\t' '  ' || true)
grep -Eq -- '-call-timeout duration +[^-]*\(default 45s\)' <<<"$help" || fail "serve's default call timeout is not the kubelet's 45 s: $help"
grep -Eq -- '-backoff duration +[^-]*\(default 10s\)' <<<"$help" || fail "serve's default backoff is not the kubelet's 10 s: $help"
ok "the defaults are the kubelet's (45 s a call, 10 s before a retry)"
STANDIN_ARGS=(-call-timeout 2s -backoff 1s -give-up 12s -dial-timeout 2s)
standin_up "$ROOT/k"
ta=$(date +%s.%N)

echo "== registration, prepare and unprepare; v1 preferred"
ref_up a
registered a v1.DRAPlugin "a plugin listing v1.DRAPlugin first is registered with v1"
wait_log "$ROOT/ref-a.log" 'registration status: registered=true error=""'
ok "the plugin was told it is registered"
reached prepare a uid-1 $V1
expect "$out" '.ok and .attempts == 1 and .devices[0].cdiDeviceIDs == ["a.cachepin.test/claim=uid-1"] and .devices[0].poolName == "ref"' \
  "prepare answered with the plugin's CDI device"
reached unprepare a uid-1 $V1

echo "== the plugin's order decides; none supported, refused"
ref_up b -services v1beta1.DRAPlugin,v1.DRAPlugin
registered b v1beta1.DRAPlugin "a plugin listing v1beta1.DRAPlugin first is registered with v1beta1"
reached prepare b uid-2 $V1BETA1
ref_up c -services v2.DRAPlugin
refused c
ok "a plugin listing only v2.DRAPlugin is refused and told why"
reached prepare b uid-3 $V1BETA1
ok "the other plugins go on"
ref_down c
ref_down b

echo "== a stalled plugin hits the call timeout, the retry succeeds; a failed call is retried"
ref_down a
out=$(standin wait -driver a.cachepin.test -gone -timeout 10s) || fail "plugin a still registered after its socket went: $out"
ok "a plugin whose socket is removed is deregistered"
ref_up a -stall 1 -fail 1
out=$(standin wait -driver a.cachepin.test -registrations 2 -timeout 10s) || fail "plugin a not registered again: $out"
ok "the restarted plugin is registered again"
call prepare uid-4/default/claim-4 a
[ "$rc" = 0 ] || fail "prepare after a stall and a failure (exit $rc): $out"
expect "$out" '.attempts == 3 and (.errors[0] | test("DeadlineExceeded")) and (.errors[1] | test("told to fail"))' \
  "the first call timed out, the second failed, the third succeeded"
expect "$out" '.seconds >= 4 and .seconds < 9' \
  "its time is the call timeout and two backoffs (2 s + 2 x 1 to 1.5 s: $(jq .seconds <<<"$out") s)"
wait_log "$ROOT/ref-a.log" 'stalled call given up by the caller'
ok "the plugin saw the stalled call cancelled"

echo "== a call while the plugin restarts"
ref_down a
standin wait -driver a.cachepin.test -gone -timeout 10s >/dev/null || fail "plugin a still registered"
standin prepare -claim uid-5/default/claim-5 -driver a.cachepin.test >"$ROOT/pending.out" &
pending=$!
sleep 2.5
ref_up a
wait "$pending" || fail "the call waiting for the restarted plugin failed: $(cat "$ROOT/pending.out")"
out=$(cat "$ROOT/pending.out")
expect "$out" '.ok and .attempts >= 2 and (.errors[0] | test("not registered"))' \
  "a call made while the plugin was gone succeeds once it is registered again"

echo "== the kubelet restarted"
standin_down
STANDIN_ARGS=(-call-timeout 2s -backoff 300ms -give-up 2s -dial-timeout 1s -services v1beta1.DRAPlugin)
standin_up "$ROOT/k"
registered a v1beta1.DRAPlugin \
  "the restarted kubelet registers the plugin already there; a v1beta1-only kubelet takes v1beta1 of a plugin that lists v1 first"
reached prepare a uid-6 $V1BETA1
ref_up d -services v1.DRAPlugin
refused d
ok "a v1-only plugin is refused by a v1beta1-only kubelet"
ref_down d

echo "== garbage"
ref_up g -garbage
standin wait -driver g.cachepin.test -timeout 10s >/dev/null || fail "plugin g not registered"
call prepare uid-7/default/claim-7 g
[ "$rc" = 1 ] || fail "prepare answered with garbage: exit $rc, not 1: $out"
expect "$out" '(.ok | not) and (.error | test("unmarshal"))' "a DRA answer that is not the message is an error (exit 1)"
python3 - "$ROOT/k/plugins_registry/junk.sock" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"HTTP/1.0 200 not gRPC\r\n\r\n" + bytes(range(256)) * 8)
    except OSError:
        pass
    c.close()
PY
JUNK_PID=$!
socket_state junk.sock failed
ok "a registration socket that is not gRPC fails to register: $(standin plugins | jq -r '.sockets[] | select(.path | endswith("junk.sock")) | .error')"
kill -0 "$STANDIN_PID" || fail "the stand-in died"
reached prepare a uid-8 $V1BETA1
ok "the stand-in goes on serving (prepare on a well-behaved plugin)"
out=$(standin prepare -claim not-a-claim 2>&1) && fail "a malformed claim accepted: $out" || rc=$?
[ "$rc" = 2 ] || fail "a malformed claim: exit $rc, not 2"
ok "a malformed -claim is a usage error (exit 2): $out"
out=$(python3 - "$STANDIN_CTL" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"\x00\xffnot json\n")
print(s.makefile().readline().strip())
PY
)
expect "$out" '(.ok | not) and (.error | test("not a JSON request"))' "a control request that is not JSON gets one error line"

tb=$(date +%s.%N)
echo "the scenarios: $(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.1f", b - a }') s"
echo "PASS"
