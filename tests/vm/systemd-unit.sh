#!/bin/bash
# shellcheck disable=SC2154 # CACHEPIN, STATE: set by systemd-tests.sh, which sources this
# `cachepin apply --unit` in the systemd guest (sourced by systemd-tests.sh, manager
# `unit`): a service kept placed across restarts, docs/apply.md ("Pin a service").
# Two services that sleep, Restart=always; each check reads the live cgroup's
# cpuset.cpus, the main process's Cpus_allowed_list and `cachepin status --json`.
# Results unit.<check>:
#   refused      apply --unit of a unit that does not exist: exit 2, one line naming --unit
#   pinned       apply --unit on a running service: 2 CPUs in its cgroup and its process,
#                the drop-in written, status's entry apply:unit:<unit> ok on them
#   restart      systemctl restart: a new cgroup and process on the same CPUs, entry ok
#   kill9        kill -9 of the main process, Restart=always: the same
#   reload       systemctl daemon-reload: the same
#   stopped      systemctl stop: the entry held (status: pending) on the same CPUs
#   exclusive    a second service pinned (2 CPUs) while the first is stopped: none of
#                the first's CPUs
#   start        the first started again: its CPUs back, none of the second's
#   full         a third service asking 1 exclusive CPU of a host whose 4 are held: refused, exit 3
#   release      release --unit: the drop-in gone, no entry, the cgroup on every CPU
#   released-restart  restarted after release: every CPU (not placed again)
#   removed      the second unit stopped and its file removed: the entry held until
#                release --unit, which then frees it (exit 0)

ALLCPUS=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")

# unit_file NAME: a service that sleeps, restarted always (a start under TCG is slow).
unit_file() {
  printf '[Service]\nExecStart=/bin/sleep infinity\nRestart=always\nRestartSec=1\nTimeoutStartSec=300\n' \
    >"/etc/systemd/system/$1"
}
# unit_state UNIT: "cgroup cpuset.cpus|main process's Cpus_allowed_list|status state|status cpus".
unit_state() {
  local pid cg st
  pid=$(systemctl show -P MainPID "$1")
  cg=$(systemctl show -P ControlGroup "$1")
  st=$("$CACHEPIN" status --json 2>/dev/null |
    jq -r --arg id "apply:unit:$1" '[.ledger.entries[] | select(.id == $id)][0] | "\(.state)|\(.cpus)"')
  printf '%s|%s|%s' "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$cg/cpuset.cpus" 2>/dev/null)")" \
    "$( [ "${pid:-0}" != 0 ] && cpvm_allowed_cpus "$pid")" "$st"
}
# wait_restarted UNIT OLDPID: until UNIT runs with another main process (60 s).
wait_restarted() {
  local i pid
  for i in $(seq 120); do
    pid=$(systemctl show -P MainPID "$1")
    [ "${pid:-0}" != 0 ] && [ "$pid" != "$2" ] && [ "$(systemctl is-active "$1")" = active ] && return 0
    sleep 0.5
  done
  return 1
}
journal_of() { journalctl -b --no-pager -u "$1" | tail -"${2:-6}" | while read -r l; do cpvm_info "journal $1: $l"; done; }

unit_file cp-one.service
unit_file cp-two.service
unit_file cp-three.service
systemctl daemon-reload
systemctl start cp-one.service cp-two.service cp-three.service

out=$("$CACHEPIN" apply --unit cp-none.service --cpus 1 2>&1)
rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && [[ $out == *"--unit"* ]]; then
  cpvm_pass unit.refused "exit 2: $out"
else
  cpvm_fail unit.refused "exit $rc: $out"
fi

if ! out=$("$CACHEPIN" apply --unit cp-one.service --cpus 2 2>&1); then
  cpvm_fail unit.pinned "apply --unit failed: $out"
fi
cpvm_info "apply --unit cp-one.service: $out"
ONE=$(unit_state cp-one.service)
C1=${ONE%%|*}
if [ "$(cpvm_cpulist_count "$C1")" = 2 ] && [ "$ONE" = "$C1|$C1|ok|$C1" ] &&
   [ -f /etc/systemd/system/cp-one.service.d/50-cachepin.conf ]; then
  cpvm_pass unit.pinned "cpuset|allowed|state|cpus = $ONE"
else
  cpvm_fail unit.pinned "cpuset|allowed|state|cpus = '$ONE', wanted 2 CPUs everywhere, state ok, and the drop-in"
fi

pid=$(systemctl show -P MainPID cp-one.service)
systemctl restart cp-one.service
cpvm_expect_eq unit.restart "$ONE" "$(unit_state cp-one.service)" "after restart: cpuset|allowed|state|cpus" ||
  journal_of cp-one.service

pid=$(systemctl show -P MainPID cp-one.service)
kill -9 "$pid"
if wait_restarted cp-one.service "$pid"; then
  cpvm_expect_eq unit.kill9 "$ONE" "$(unit_state cp-one.service)" "after kill -9 and Restart=always" ||
    journal_of cp-one.service
else
  cpvm_fail unit.kill9 "not restarted after kill -9 of $pid"
  journal_of cp-one.service
fi

systemctl daemon-reload
cpvm_expect_eq unit.reload "$ONE" "$(unit_state cp-one.service)" "after daemon-reload"

systemctl stop cp-one.service
cpvm_expect_eq unit.stopped "||pending|$C1" "$(unit_state cp-one.service)" "stopped: cpuset|allowed|state|cpus"

"$CACHEPIN" apply --unit cp-two.service --cpus 2 >/dev/null 2>&1
TWO=$(unit_state cp-two.service)
C2=${TWO%%|*}
if [ "$(cpvm_cpulist_count "$C2")" = 2 ] && [ "$TWO" = "$C2|$C2|ok|$C2" ] &&
   [ "$(cpvm_cpulist_minus "$C2" "$C1")" = "$C2" ]; then
  cpvm_pass unit.exclusive "cp-two on $C2, cp-one holds $C1"
else
  cpvm_fail unit.exclusive "cp-two: '$TWO', cp-one holds $C1"
fi

systemctl start cp-one.service
cpvm_expect_eq unit.start "$ONE" "$(unit_state cp-one.service)" "started again" || journal_of cp-one.service

out=$("$CACHEPIN" apply --unit cp-three.service --cpus 1 2>&1)
rc=$?
cpvm_expect_eq unit.full "3" "$rc" "apply --unit cp-three.service --cpus 1 with every CPU held: $out"

out=$("$CACHEPIN" release --unit cp-one.service 2>&1)
rc=$?
cpvm_info "release --unit cp-one.service: $out"
dropin=$([ -e /etc/systemd/system/cp-one.service.d/50-cachepin.conf ] && echo present || echo gone)
eff=$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$(systemctl show -P ControlGroup cp-one.service)/cpuset.cpus.effective")")
st=$(unit_state cp-one.service)
cpvm_expect_eq unit.release "0|gone|$ALLCPUS|$ALLCPUS|null|null" "$rc|$dropin|$eff|${st#*|}" \
  "exit|drop-in|cpuset.cpus.effective|allowed|state|cpus"

systemctl restart cp-one.service
st=$(unit_state cp-one.service)
cpvm_expect_eq unit.released-restart "$ALLCPUS|null|null" "${st#*|}" "restarted after release: |allowed|state|cpus" 

systemctl stop cp-two.service
rm /etc/systemd/system/cp-two.service
systemctl daemon-reload
held_state=$(unit_state cp-two.service)
out=$("$CACHEPIN" release --unit cp-two.service 2>&1)
rc=$?
cpvm_expect_eq unit.removed "||pending|$C2 0 null" "$held_state $rc $(unit_state cp-two.service | cut -d'|' -f3)" \
  "unit removed: held state, release exit, state after: $out"

systemctl stop cp-one.service cp-three.service
rm -rf /etc/systemd/system/cp-*.service /etc/systemd/system/cp-*.service.d
systemctl daemon-reload
