# tests/dra/standin-lib.sh: the kubelet stand-in (tests/dra/kubelet, built by
# fetch-kubelet-standin.sh) for the DRA tests, sourced by them after lib.sh (skip, fail).
#
#   standin_fetch          STANDIN_DIR (DIR/bin/kubelet-standin, DIR/bin/dra-refplugin), or
#                          the test skipped (exit 77: the archive unreachable and nothing
#                          cached) or failed (the build failed)
#   standin_up ROOT        the stand-in serving ROOT (plugins register in
#                          ROOT/plugins_registry), its control socket STANDIN_CTL
#                          (ROOT/standin.sock), its log ROOT/standin.log, its pid STANDIN_PID;
#                          extra serve options in the array STANDIN_ARGS (-services,
#                          -call-timeout, -backoff, -give-up, -dial-timeout)
#   standin OP ARGS...     kubelet-standin OP -ctl STANDIN_CTL ARGS...: wait [-driver NAME]
#                          [-registrations N] [-gone] [-timeout D], prepare|unprepare -claim
#                          UID/NS/NAME [-driver NAME], plugins; its JSON line on stdout, its
#                          exit status (0 ok, 1 the call failed, 2 usage)
#   standin_down           the stand-in stopped (the caller's EXIT trap calls it)
# shellcheck shell=bash

standin_fetch () {
  dra_built STANDIN_DIR fetch-kubelet-standin.sh "the kubelet stand-in"
  [ -x "$STANDIN_DIR/bin/kubelet-standin" ] || fail "$STANDIN_DIR has no bin/kubelet-standin"
}

standin_up () {
  local root=$1
  mkdir -p "$root"
  STANDIN_CTL=$root/standin.sock
  "$STANDIN_DIR/bin/kubelet-standin" serve -root "$root" -ctl "$STANDIN_CTL" ${STANDIN_ARGS[@]+"${STANDIN_ARGS[@]}"} \
    >>"$root/standin.log" 2>&1 &
  STANDIN_PID=$!
  for _ in $(seq 100); do
    [ -S "$STANDIN_CTL" ] && standin plugins >/dev/null && return 0
    kill -0 "$STANDIN_PID" 2>/dev/null || fail "the kubelet stand-in exited: $(tail -5 "$root/standin.log")"
    sleep 0.1
  done
  fail "the kubelet stand-in's control socket not there after 10 s"
}

standin () {
  local op=$1
  shift
  "$STANDIN_DIR/bin/kubelet-standin" "$op" -ctl "$STANDIN_CTL" "$@"
}

standin_down () {
  [ -n "${STANDIN_PID:-}" ] || return 0
  stop_pid "$STANDIN_PID"
  STANDIN_PID=""
}
