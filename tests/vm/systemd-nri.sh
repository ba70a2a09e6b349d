# shellcheck shell=bash
# shellcheck disable=SC1091
# `cachepin nri` under containerd's systemd cgroup driver, in the systemd guest: sourced by
# systemd-tests.sh (its helpers, STATE, held) as the manager `nri`, results nri.<check>.
#
# sid's containerd (in the rootfs) with `SystemdCgroup = true` for its runc handler and NRI
# on its default socket; the plugin started by the shipped unit (deploy/systemd/
# cachepin-nri.service.in, its binary's path filled in by run-systemd-suite.sh) and the
# default config path; pods driven by tests/cri/cri_client.py as the kubelet drives them: a
# pod's cgroup_parent is its `kubepods-besteffort-pod<uid>.slice`, so containerd's
# cgroupsPath is `<that slice>:cri-containerd:<id>` and runc makes the container the unit
# `cri-containerd-<id>.scope` under kubepods.slice/kubepods-besteffort.slice/. Every
# expectation comes from the guest's sysfs (one L3 of 2 CPUs for cpus=2) and from the
# systemd path computed here, never from cachepin.
#
# Checks: A, a pod asking cachepin.io/cpus=2, is placed on one whole L3: the ledger's CPUs,
# the entry's cgroup (the scope), the spec's linux.resources.cpu.cpus, the scope's cpuset.cpus
# and cpuset.cpus.effective, its init's Cpus_allowed_list and the scope's AllowedCPUs agree;
# `systemctl daemon-reload` and UpdateContainerResources with a cpuset of every CPU leave
# them; the plugin stopped, B (cpus=2) created and started unplaced; the plugin started:
# its resync adopts A's scope (the entry gets that directory's inode) and places B on the
# other L3 (containerd applies the answer's update to B's scope, spec and affinity); the
# plugin restarted: B's scope adopted; A and B stopped and removed: the ledger is empty and
# the scopes are gone.

NRI=/payload/nri
NRI_LOG_SINCE=""

# nri_log: the plugin's journal since the section started.
nri_log() { journalctl --no-pager -o cat -u cachepin-nri --since "$NRI_LOG_SINCE" 2>/dev/null; }

# nri_logged PATTERN N: the plugin's journal has N lines matching PATTERN, waited for 60 s
# at most (TCG: the journal and the plugin each take their turn).
nri_logged() {
  local _
  for _ in $(seq 120); do
    [ "$(nri_log | grep -c -- "$1")" -ge "$2" ] && return 0
    sleep 0.5
  done
  return 1
}

# scope_of POD-UID ID: the container's cgroup as runc's systemd driver makes it of
# containerd's `kubepods-besteffort-pod<uid>.slice:cri-containerd:<id>`.
scope_of() {
  local uid=${1//-/_}
  echo "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod$uid.slice/cri-containerd-$2.scope"
}

# entry_field ID FIELD: the ledger entry's FIELD ("" when none).
entry_field() { jq -r --arg id "$1" --arg f "$2" '.entries[]? | select(.id == $id) | .[$f] // ""' "$STATE/ledger.json" 2>/dev/null; }
held_cpus() { cpvm_cpulist_normalize "$(entry_field "$1" cpus)"; }
spec_cpus() { ctr containers info "$1" 2>/dev/null | jq -r '.Spec.linux.resources.cpu.cpus // ""'; }
task_pid() { ctr tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $2 }'; }

# view ID SCOPE: "cpuset.cpus|cpuset.cpus.effective|Cpus_allowed_list|AllowedCPUs|spec" of a container.
view() {
  local pid
  pid=$(task_pid "$1")
  printf '%s|%s|%s|%s|%s' "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$2/cpuset.cpus" 2>/dev/null)")" \
    "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$2/cpuset.cpus.effective" 2>/dev/null)")" \
    "${pid:+$(cpvm_allowed_cpus "$pid")}" \
    "$(cpvm_cpulist_normalize "$(systemctl show -P AllowedCPUs "${2##*/}" 2>/dev/null)")" \
    "$(cpvm_cpulist_normalize "$(spec_cpus "$1")")"
}

# is_l3 CPUS: CPUS is one whole L3 of the guest (sysfs).
is_l3() { [ -n "$1" ] && cpvm_l3_groups | grep -qx -- "$1"; }

# nri_pod NAME [ANNOTATION...]: a pod asking the annotations (default cachepin.io/cpus=2; pod
# annotations, as the kubelet sends them), one container created and started: POD, C, SCOPE set.
nri_pod() {
  local name=$1 parent="kubepods-besteffort-poduid_$1.slice" a
  shift
  local ann=("${@:-cachepin.io/cpus=2}") pod_ann=()
  for a in "${ann[@]}"; do pod_ann+=("pod:$a"); done
  POD="" C="" SCOPE=""
  POD=$(cri run-pod "$name" "$parent" runc "${ann[@]}") || { cpvm_fail "nri.$name.run" "RunPodSandbox failed"; return 1; }
  C=$(cri create "$POD" app "$NRI_IMAGE" "$parent" "$name" "${pod_ann[@]}") ||
    { cpvm_fail "nri.$name.run" "CreateContainer failed: $(journalctl --no-pager -o cat -u containerd | grep -i error | tail -2)"; return 1; }
  cri start "$C" || { cpvm_fail "nri.$name.run" "StartContainer failed"; return 1; }
  SCOPE=$(scope_of "uid-$name" "$C")
  cpvm_info "nri: pod $name ($POD), container $C, cgroupsPath $(ctr containers info "$C" | jq -r '.Spec.linux.cgroupsPath'), pid $(task_pid "$C")"
}

nri_setup() {
  local _
  [ -f "$NRI/cri_client.py" ] || { cpvm_skip nri.setup "no CRI client staged (run-systemd-suite.sh said why)"; return 1; }
  command -v containerd >/dev/null || { cpvm_skip nri.setup "containerd is not in the rootfs"; return 1; }
  /usr/bin/python3 -c 'import grpc' 2>/dev/null || { cpvm_skip nri.setup "python3-grpcio is not in the rootfs"; return 1; }
  NRI_IMAGE=$(cat "$NRI/image-name")
  # lib.sh's CRI driver (cri, start_client, ctr): D holds its pipes, ctr is /usr/bin/ctr.
  # It also defines held, skip, check... of its own: this section runs last.
  # shellcheck disable=SC2034 # read by lib.sh's functions
  HERE=$NRI PY=/usr/bin/python3 D=/run/cpvm-nri SOCK=/run/containerd/containerd.sock CTRD="" CLIENT_PID=""
  . "$NRI/lib.sh"
  export CRI_STUBS=$NRI/stubs
  mkdir -p "$D" /etc/containerd
  # NRI on its default socket, as containerd 2.x ships it; its request timeout raised from
  # 2 s: under TCG a Synchronize's work alone may take longer. overlayfs is a module the
  # guest does not load: the native snapshotter.
  cat >/etc/containerd/config.toml <<EOF
version = 3
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  plugin_request_timeout = '20s'
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'native'
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '$NRI_IMAGE'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
EOF
  systemctl start containerd || { cpvm_fail nri.setup "containerd did not start: $(journalctl --no-pager -o cat -u containerd | tail -3)"; return 1; }
  start_client
  for _ in $(seq 120); do cri version >/dev/null 2>&1 && [ -S /var/run/nri/nri.sock ] && break; sleep 0.5; done
  [ -S /var/run/nri/nri.sock ] || { cpvm_fail nri.setup "no NRI socket: $(journalctl --no-pager -o cat -u containerd | tail -3)"; return 1; }
  local how imported=""
  # Through the transfer API (ctr's default) containerd 2.1.9 refuses to unpack for the
  # native snapshotter ("no unpack platforms defined"): --local unpacks in ctr itself.
  for how in "--local --snapshotter native" "--snapshotter native" "--no-unpack"; do
    # shellcheck disable=SC2086 # the options, split
    if ctr images import $how "$NRI/image.tar" >"$D/import.log" 2>&1; then imported=$how; break; fi
    cpvm_info "nri: ctr images import $how: $(tr '\n' ' ' <"$D/import.log" | tail -c 300)"
  done
  [ -n "$imported" ] || { cpvm_fail nri.setup "ctr images import failed (above)"; return 1; }
  cp "$NRI/cachepin-nri.service" /etc/systemd/system/
  systemctl daemon-reload
  NRI_LOG_SINCE=$(date '+%Y-%m-%d %H:%M:%S')
  systemctl start cachepin-nri
  if nri_logged 'nri: synchronized' 1; then
    cpvm_pass nri.setup "$(cri version); the shipped unit started the plugin: $(nri_log | grep -m1 'registered as')"
  else
    cpvm_fail nri.setup "the plugin did not synchronize: $(nri_log | tail -3)"
    return 1
  fi
}

nri_section() {
  nri_setup || return 0
  local ncpu all a b va vb
  ncpu=$(nproc)
  all=$(cpvm_cpulist_normalize "0-$((ncpu - 1))")
  nri_pod nria || return 0
  local A=$C APOD=$POD ASCOPE=$SCOPE
  a=$(held_cpus "$A")
  if is_l3 "$a"; then cpvm_pass nri.placed "the ledger holds L3 $a for $A"; else
    cpvm_fail nri.placed "the ledger holds '$a' for $A, not one of the L3s $(cpvm_l3_groups | tr '\n' ' ')"
    nri_log | tail -5 | while read -r l; do cpvm_info "journal: $l"; done
    return 0
  fi
  cpvm_expect_eq nri.entry-cgroup "$ASCOPE" "$(entry_field "$A" cgroup)" "the entry's cgroup (the scope of slice:prefix:name)"
  cpvm_expect_eq nri.scope "0::$ASCOPE" "$(grep '^0::' "/proc/$(task_pid "$A")/cgroup")" "its init's cgroup"
  va=$(view "$A" "$ASCOPE")
  cpvm_expect_eq nri.view "$a|$a|$a|$a|$a" "$va" "cpuset.cpus|cpuset.cpus.effective|Cpus_allowed_list|AllowedCPUs|spec"
  systemctl daemon-reload
  cpvm_expect_eq nri.reload "$va" "$(view "$A" "$ASCOPE")" "after daemon-reload"
  if [ "$all" = "$a" ]; then
    cpvm_skip nri.update "one L3 holds every CPU: a cpuset of every CPU changes nothing"
  elif cri update "$A" 200000 "$all"; then
    cpvm_expect_eq nri.update "$va" "$(view "$A" "$ASCOPE")" "after UpdateContainerResources cpuset $all"
    cpvm_check nri.update-logged nri_logged "update of $A: cpuset $all asked" 1
  else
    cpvm_fail nri.update "UpdateContainerResources failed"
  fi

  # The plugin stopped; B created meanwhile; started again: the resync.
  systemctl stop cachepin-nri
  cpvm_check nri.stopped nri_logged 'nri: stopped by a signal' 1
  nri_pod nrib || return 0
  local B=$C BPOD=$POD BSCOPE=$SCOPE
  cpvm_expect_eq nri.away "|$all|$all||" "$(held_cpus "$B")|$(view "$B" "$BSCOPE" | cut -d'|' -f2-)" \
    "B created with the plugin away: held|effective|allowed|AllowedCPUs|spec"
  systemctl start cachepin-nri
  if ! nri_logged "placed $B .* at resync" 1; then
    cpvm_fail nri.resync "B was not placed at the resync: $(nri_log | tail -3)"
  else
    b=$(held_cpus "$B")
    cpvm_expect_eq nri.resync-adopt "$(stat -c %i "/sys/fs/cgroup$ASCOPE")" "$(entry_field "$A" cgroup_ino)" \
      "A's entry: its scope's inode"
    if is_l3 "$b" && [ "$b" != "$a" ]; then cpvm_pass nri.resync-placed "B holds the other L3, $b"; else
      cpvm_fail nri.resync-placed "B holds '$b' (A holds $a; L3s $(cpvm_l3_groups | tr '\n' ' '))"
    fi
    # containerd applies the answer's update after the Synchronize: waited for.
    for _ in $(seq 120); do [ "$(view "$B" "$BSCOPE")" = "$b|$b|$b|$b|$b" ] && break; sleep 0.5; done
    vb=$(view "$B" "$BSCOPE")
    cpvm_expect_eq nri.resync-view "$b|$b|$b|$b|$b" "$vb" "B: cpuset.cpus|cpuset.cpus.effective|Cpus_allowed_list|AllowedCPUs|spec"
    systemctl restart cachepin-nri
    if nri_logged 'nri: synchronized' 3; then
      cpvm_expect_eq nri.resync-adopt-b "$BSCOPE $(stat -c %i "/sys/fs/cgroup$BSCOPE")" \
        "$(entry_field "$B" cgroup) $(entry_field "$B" cgroup_ino)" "B's entry after the next Synchronize: cgroup, inode"
    else
      cpvm_fail nri.resync-adopt-b "the plugin did not synchronize again: $(nri_log | tail -3)"
    fi
  fi

  # Stopped and removed: released, the scopes gone.
  local p c
  for p in "$APOD:$A" "$BPOD:$B"; do
    c=${p#*:}
    if ! { cri stop "$c" && cri rm "$c" && cri stop-pod "${p%%:*}" && cri rm-pod "${p%%:*}"; }; then
      cpvm_fail nri.removed "stop/remove of $c failed"
    fi
  done
  cpvm_expect_eq nri.released "0" "$(jq '.entries | length' "$STATE/ledger.json")" "ledger entries"
  cpvm_check nri.scopes-gone test ! -d "/sys/fs/cgroup$ASCOPE" -a ! -d "/sys/fs/cgroup$BSCOPE"
  nri_isolate
}

# nri_isolate: a pod asking cachepin.io/isolate (one CPU) through the plugin: placed off the
# host's kept cores at CreateContainer, its partition made at StartContainer by the plugin's
# helper (iso_state, systemd-tests.sh: partition|exclusive.effective|the pod slice's
# exclusive|the root cgroup's effective|PID 1's Cpus_allowed_list), the entry flagged; stopped
# and removed: every ancestor's exclusive list given back, PID 1 on every CPU again.  A strict
# pod of every CPU (the kept core included) fails CreateContainer with the rule's line; a pod
# created while the plugin was away is placed and isolated at the resync.
nri_isolate() {
  local ncpu all i want kv
  kv=$(uname -r)
  kv=${kv%%-*}
  if [ "$(printf '%s\n6.7\n' "$kv" | sort -V | head -1)" != 6.7 ]; then
    cpvm_skip nri.isolate "this kernel has no cpuset.cpus.exclusive ($kv, before 6.7)"
    return 0
  fi
  ncpu=$(nproc)
  all=$(cpvm_cpulist_normalize "0-$((ncpu - 1))")
  cpvm_check nri.isolate.helper nri_logged 'nri: isolation (cachepin.io/isolate): cgroup v2 partitions under /sys/fs/cgroup, made at StartContainer by a helper process' 1
  nri_pod nrii cachepin.io/cpus=1 cachepin.io/isolate=true || return 0
  local I=$C IPOD=$POD ISCOPE=$SCOPE
  i=$(held_cpus "$I")
  cpvm_check nri.isolate.not-kept test -n "$i" -a "$(cpvm_cpulist_minus "$i" "$(cpvm_kept_cores)")" = "$i"
  if ! nri_logged "isolated $I on CPUs $i (partition root)" 1; then
    cpvm_fail nri.isolate.made "no partition: $(nri_log | grep -F "$I" | tail -3)"
  else
    want="root|$i|$i|$(cpvm_cpulist_minus "$all" "$i")|$(cpvm_cpulist_minus "$all" "$i")"
    cpvm_info "nri: isolated $I on $i: $(iso_state "$ISCOPE"); kubepods.slice exclusive $(cat /sys/fs/cgroup/kubepods.slice/cpuset.cpus.exclusive)"
    cpvm_expect_eq nri.isolate.made "$want" "$(iso_state "$ISCOPE")" "partition|exclusive.effective|pod slice exclusive|root effective|PID 1"
    cpvm_expect_eq nri.isolate.task "$i" "$(cpvm_allowed_cpus "$(task_pid "$I")")" "the container's Cpus_allowed_list"
    cpvm_expect_eq nri.isolate.entry "true" "$(entry_field "$I" isolated)" "the entry's isolated"
    cpvm_expect_eq nri.isolate.status "root" \
      "$("$CACHEPIN" status --json 2>/dev/null | jq -r --arg id "$I" '.ledger.entries[] | select(.id == $id) | .isolate.partition')" \
      "status --json .isolate.partition"
  fi
  if ! { cri stop "$I" && cri rm "$I" && cri stop-pod "$IPOD" && cri rm-pod "$IPOD"; }; then
    cpvm_fail nri.isolate.removed "stop/remove of $I failed"
  fi
  cpvm_check nri.isolate.released-logged nri_logged "released the partition of $I" 1
  cpvm_expect_eq nri.isolate.given-back "|$all|$all|0" \
    "$(printf '%s|%s|%s|%s' "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/kubepods.slice/cpuset.cpus.exclusive)")" \
       "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/cpuset.cpus.effective)")" "$(cpvm_allowed_cpus 1)" \
       "$(jq '(.partitions // []) | length' "$STATE/ledger.json")")" \
    "removed: kubepods.slice exclusive|root effective|PID 1|ledger partition records"
  nri_log | grep -F "$I" | tail -4 | while read -r l; do cpvm_info "journal: $l"; done

  # A whole NUMA node (every CPU of the guest), strict: only a placement on the kept core keeps
  # the alignment, so the isolation is refused, and with strict the creation fails with the
  # rule's line.
  local kept0 line
  kept0=$(cpvm_kept_cores)
  local ks=(cachepin.io/cpus="$ncpu" cachepin.io/align=numa cachepin.io/isolate=true cachepin.io/strict=true) kc
  if POD=$(cri run-pod nriks kubepods-besteffort-poduid_nriks.slice runc "${ks[@]}"); then
    if kc=$(cri create "$POD" app "$NRI_IMAGE" kubepods-besteffort-poduid_nriks.slice nriks "${ks[@]/#/pod:}" 2>/dev/null); then
      cpvm_fail nri.isolate.kept-strict "CreateContainer of a strict isolated pod of every CPU succeeded ($kc)"
      cri rm "$kc" >/dev/null 2>&1
    else
      line=$(journalctl --no-pager -o cat -u containerd | grep -o "cachepin.io/isolate: CPUs $all include CPU ${kept0%%[-,]*}, in the first core of NUMA node 0, which the host keeps (never isolated)" | tail -1)
      cpvm_check nri.isolate.kept-strict test -n "$line"
    fi
    cri stop-pod "$POD" >/dev/null 2>&1
    cri rm-pod "$POD" >/dev/null 2>&1
  fi

  # Created while the plugin was away: placed at the resync, and isolated there (its process
  # runs already).
  systemctl stop cachepin-nri
  nri_pod nrij cachepin.io/cpus=1 cachepin.io/isolate=true || return 0
  local J=$C JPOD=$POD JSCOPE=$SCOPE j
  NRI_LOG_SINCE=$(date '+%Y-%m-%d %H:%M:%S')
  systemctl start cachepin-nri
  if nri_logged "isolated $J on CPUs" 1; then
    j=$(held_cpus "$J")
    for _ in $(seq 60); do [ "$(cpvm_allowed_cpus "$(task_pid "$J")")" = "$j" ] && break; sleep 0.5; done
    cpvm_expect_eq nri.isolate.resync "root|$j|$j|$(cpvm_cpulist_minus "$all" "$j")|$(cpvm_cpulist_minus "$all" "$j")" \
      "$(iso_state "$JSCOPE")" "placed at the resync: partition|exclusive.effective|pod slice exclusive|root effective|PID 1"
  else
    cpvm_fail nri.isolate.resync "not isolated at the resync: $(nri_log | grep -F "$J" | tail -3)"
  fi
  cri stop "$J" >/dev/null && cri rm "$J" >/dev/null && cri stop-pod "$JPOD" >/dev/null && cri rm-pod "$JPOD" >/dev/null
  cpvm_expect_eq nri.isolate.resync-given-back "|$all|0" \
    "$(printf '%s|%s|%s' "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/kubepods.slice/cpuset.cpus.exclusive)")" \
       "$(cpvm_allowed_cpus 1)" "$(jq '(.partitions // []) | length' "$STATE/ledger.json")")" \
    "removed: kubepods.slice exclusive|PID 1|ledger partition records"
}

nri_section
