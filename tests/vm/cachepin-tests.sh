#!/bin/bash
# shellcheck disable=SC2046 # $(expand LIST) is split into CPUs on purpose
# cachepin end-to-end tests on a real kernel (the VM payload): real runc and crun
# containers with the cachepin hook in their config.json as a user configures
# it (createRuntime and poststop, a host config with a state_dir and debug
# logs), and every expectation derived from the guest's own sysfs
# (cache/index*/shared_cpu_list of level 3, topology/thread_siblings_list,
# node*/cpulist), never from `cachepin plan`, so any -smp/-numa shape passes.
#
#   tests/vm/run-cachepin-suite.sh                  # four boots, see there
#   tests/vm/run-vm.sh --payload DIR --topology 2s2d --cgroup v2   # one boot
# DIR: run-tests.sh (this file), bin/cachepin, e2e/{hook.sh,lib.sh}
# (run-cachepin-suite.sh stages it as tests/vm/work/cachepin-payload).
#
# Environment (run-vm.sh --env KEY=VALUE):
#   CACHEPIN_VM_RUNTIMES  runtimes to test (default "runc crun")
#   CACHEPIN_VM_SECTIONS  sections to run (default "pe0 strict spread parallel e2e")
#   CACHEPIN_VM_SPLIT     "auto" (default) shares the two slow parts out over the
#                         suite's four configurations, to keep it within minutes:
#                         parallel: runc on v1:2s2d and v2:odd18, crun on v2:2s2d
#                         and v1:odd18 (each runtime on both cgroup versions and
#                         both shapes); e2e (tests/e2e/hook.sh, 2-3 minutes under
#                         TCG): runc on v2:2s2d (the host's CTest e2e runs it on the
#                         host's cgroup layout), crun on v1:odd18 (the shortest boot;
#                         crun on v2 is in every other section).  It ran crun's e2e
#                         twice, and v2:2s2d, paired with v1:2s2d's e2e, hit its
#                         540 s timeout on a clean CI run.
#                         Other configurations, and "none", run both everywhere.
#
# Checks, per runtime RT (result names RT.section.check):
#   pe0      cpus=2 smt=pe0: the PE0s of two cores of one L3 (the best-fit one),
#            seen from inside the container; local mems; the cgroup's cpuset.cpus;
#            the ledger holds the cores' siblings idle; runtime delete releases it
#   strict   a strict request for more CPUs than the largest L3 has: the container
#            fails with the hook's "cannot place" message, the ledger is unchanged
#   spread   exclusive cpus=4 pe0-first containers, one per L3 that holds 4 (four on
#            2s2d): all on different L3s, PE0s first, mems the local node(s)
#   release  (on the spread containers, or whole-L3 ones where spread cannot run)
#            with every L3 taken: a container without annotations gets the parent
#            cgroup's effective cpuset, and the same strict request is refused;
#            runtime delete (poststop), then kill -9 of another container's init,
#            each give the CPUs back: the same strict request succeeds and gets them
#   parallel eight strict containers created at once (background jobs), sized so
#            that they fit: all placed, each in one L3, no CPU shared, ledger agrees
#   e2e      tests/e2e/hook.sh under RT; one result with its PASS/FAIL counts

# shellcheck source=guest-lib.sh
. /cpvm/guest-lib.sh

CACHEPIN=${CACHEPIN_VM_BIN:-/payload/bin/cachepin}
RUNTIMES=${CACHEPIN_VM_RUNTIMES:-runc crun}
SECTIONS=${CACHEPIN_VM_SECTIONS:-pe0 strict spread parallel e2e}
SPLIT=${CACHEPIN_VM_SPLIT:-auto}
STATE=/run/cachepin-vm/state
CONFIG=/run/cachepin-vm/config.json
LEDGER=$STATE/ledger.json

mkdir -p /run/cachepin-vm
# The host configuration: a state dir of its own, debug logs. lock_timeout_ms:
# under TCG every vCPU shares one host core, so with eight hooks at once the one
# holding the ledger lock runs at an eighth of a slow CPU; the default 5 s was
# seen to expire there (runc, 3 of 8 hooks timed out).
printf '{"state_dir": "%s", "log_level": "debug", "lock_timeout_ms": 60000}\n' "$STATE" >"$CONFIG"
CPVM_HOOKS=$(printf '{"createRuntime": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "createRuntime"], "timeout": 60}],
 "poststop": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "poststop"], "timeout": 60}]}' \
  "$CACHEPIN" "$CONFIG" "$CACHEPIN" "$CONFIG")
export CPVM_HOOKS

# ------------------------------------------------------------------ cpulists (bash, no processes)

# expand LIST: the CPUs of a cpulist, space separated, ascending.
expand() {
  local -a set=()
  local r c
  local IFS=,
  for r in $1; do
    [ -n "$r" ] || continue
    if [[ $r == *-* ]]; then
      for ((c = ${r%-*}; c <= ${r#*-}; c++)); do set[c]=1; done
    else
      set[r]=1
    fi
  done
  IFS=' '
  echo "${!set[*]}"
}

# compress CPU...: a canonical cpulist.
compress() {
  local -a set=()
  local c out="" first=-1 last=-1
  for c in "$@"; do set[c]=1; done
  for c in "${!set[@]}" -2; do
    if [ "$first" -ge 0 ] && [ "$c" -eq $((last + 1)) ]; then last=$c; continue; fi
    if [ "$first" -ge 0 ]; then
      out+=${out:+,}$first
      [ "$first" = "$last" ] || out+=-$last
    fi
    first=$c last=$c
  done
  echo "$out"
}

norm() { compress $(expand "$1"); }
count() { local a; read -ra a <<<"$(expand "$1")"; echo "${#a[@]}"; }

# ------------------------------------------------------------------ topology from sysfs

mapfile -t L3S < <(cpvm_l3_groups)
mapfile -t CORES < <(cpvm_smt_groups)
mapfile -t NODE_LINES < <(cpvm_nodes)
ONLINE=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")
declare -A L3_OF=() CORE_OF=() NODE_OF=()
for i in "${!L3S[@]}"; do for c in $(expand "${L3S[$i]}"); do L3_OF[$c]=$i; done; done
for i in "${!CORES[@]}"; do for c in $(expand "${CORES[$i]}"); do CORE_OF[$c]=$i; done; done
for l in "${NODE_LINES[@]}"; do
  read -r n list <<<"$l"
  for c in $(expand "$list"); do NODE_OF[$c]=$n; done
done

# Per core: its PE0 (lowest-numbered thread: every CPU is allowed in the
# containers' parent) and its L3.
CORE_PE0=() CORE_L3=()
for i in "${!CORES[@]}"; do
  read -ra t <<<"$(expand "${CORES[$i]}")"
  CORE_PE0[i]=${t[0]}
  CORE_L3[i]=${L3_OF[${t[0]}]:-none}
done

# cores_of_l3 I: the core indexes of L3 I, in core order (by first CPU).
cores_of_l3() {
  local i out=()
  for i in "${!CORES[@]}"; do [ "${CORE_L3[i]}" != "$1" ] || out+=("$i"); done
  echo "${out[*]}"
}

pe0_of() { echo "${CORE_PE0[$1]}"; }

# l3s_of LIST: the distinct L3 indexes of LIST's CPUs, space separated
# ("none" for a CPU without an L3).
l3s_of() {
  local -a seen=()
  local c none=""
  for c in $(expand "$1"); do
    if [ -n "${L3_OF[$c]:-}" ]; then seen[${L3_OF[$c]}]=1; else none=" none"; fi
  done
  echo "${!seen[*]}$none"
}

# nodes_of LIST: the NUMA nodes local to LIST's CPUs, as a cpulist of node ids.
nodes_of() {
  local c out=()
  for c in $(expand "$1"); do [ -z "${NODE_OF[$c]:-}" ] || out+=("${NODE_OF[$c]}"); done
  compress "${out[@]}"
}

# pe0_first_expect L3 N: what smt=pe0-first gives N CPUs on that L3 when it is
# free: the PE0 of each core in core order, then the other threads core by core.
pe0_first_expect() {
  local l3=$1 n=$2 core c got=()
  local -a cores
  read -ra cores <<<"$(cores_of_l3 "$l3")"
  for core in "${cores[@]}"; do
    [ ${#got[@]} -lt "$n" ] || break
    got+=("$(pe0_of "$core")")
  done
  for core in "${cores[@]}"; do
    for c in $(expand "${CORES[$core]}"); do
      [ ${#got[@]} -lt "$n" ] || break 2
      [ "$c" = "$(pe0_of "$core")" ] || got+=("$c")
    done
  done
  compress "${got[@]}"
}

# ------------------------------------------------------------------ containers

# Every container runs the same process, which prints its own *_allowed_list
# lines and sleeps; its config.json is this template (one jq run, in
# cpvm_bundle) with the id and the annotations put in by string substitution
# (a jq start costs a quarter of a second here).
TEMPLATE=$(cat "$(cpvm_bundle template --jq '.hostname = "@ID@" | .annotations = "@ANN@"' \
  -- sh -c 'grep _allowed_list /proc/self/status; exec sleep 600')/config.json")

# ct_bundle RT ID ANNOTATIONS_JSON: write the bundle, print its directory. For
# crun, a container with annotations also gets run.oci.hooks.stderr, crun's way
# to keep a hook's stderr (crun does not relay it; runc puts it in its error).
ct_bundle() {
  local rt=$1 id=$2 ann=$3 b=$CPVM_BUNDLES/$2 text
  rm -rf "$b"
  mkdir -p "$b"
  if [ "$rt" = crun ] && [ "$ann" != '{}' ]; then ann="${ann%\}}, \"run.oci.hooks.stderr\": \"$b/hooks.stderr\"}"; fi
  text=${TEMPLATE//@ID@/"$id"}
  text=${text//\"@ANN@\"/"$ann"}
  printf '%s\n' "$text" >"$b/config.json"
  echo "$b"
}

# ct_up RT ID ANNOTATIONS_JSON: start a container, detached (`run -d`: create,
# the createRuntime hook, start). Returns the runtime's status; its errors are
# in $CPVM_BUNDLES/ID/stderr.
ct_up() {
  local rt=$1 id=$2 b
  b=$(ct_bundle "$rt" "$id" "$3")
  cpvm__rt "$rt" run -d --bundle "$b" --pid-file "$b/pid" "$id" </dev/null >"$b/stdout" 2>"$b/stderr"
}

# ct_down RT ID...: delete containers (delete -f kills them; poststop runs).
ct_down() {
  local rt=$1 id
  shift
  for id in "$@"; do cpvm__rt "$rt" delete -f "$id" >/dev/null 2>&1; done
  return 0
}

# ct_read ID: sets CT_PID, CT_CPUS and CT_MEMS, what the container printed about
# itself (waits up to 20 s for it). Returns 1 if it printed nothing.
ct_read() {
  local b=$CPVM_BUNDLES/$1 i text=""
  CT_PID=$(cat "$b/pid" 2>/dev/null) CT_CPUS="" CT_MEMS=""
  for ((i = 0; i < 200; i++)); do
    text=$(<"$b/stdout")
    [[ $text == *Mems_allowed_list* ]] && break
    sleep 0.1
  done
  CT_CPUS=$(norm "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' <<<"$text")")
  CT_MEMS=$(norm "$(sed -n 's/^Mems_allowed_list:[[:space:]]*//p' <<<"$text")")
  [ -n "$CT_CPUS" ]
}

# ct_err ID: the runtime's error output and (crun) the hooks' stderr, on one line.
ct_err() { cat "$CPVM_BUNDLES/$1/stderr" "$CPVM_BUNDLES/$1/hooks.stderr" 2>/dev/null | tail -c 600 | tr '\n' ' '; }

# ct_hook_message ID: the hook's "cachepin hook: ..." line, from the runtime's
# error (runc) or the hooks' stderr (crun).
ct_hook_message() {
  cat "$CPVM_BUNDLES/$1/stderr" "$CPVM_BUNDLES/$1/hooks.stderr" 2>/dev/null |
    grep -o 'cachepin hook: [^"\\]*' | head -1
}

# ledger: one line per entry, "id pid cpus held mems" (- for empty).
ledger() {
  [ -s "$LEDGER" ] || return 0
  jq -r '.entries[] | [.id, (.pid | tostring), (.cpus, .held, .mems | if . == "" or . == null then "-" else . end)] | join(" ")' "$LEDGER"
}
ledger_entry() { ledger | awk -v id="$1" '$1 == id'; }
ledger_sum() { sha256sum "$LEDGER" 2>/dev/null | cut -d' ' -f1; }

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------------ sections

# split_skip SECTION RT RESULT: with CACHEPIN_VM_SPLIT=auto, SKIP (and return 0)
# when another configuration of the suite runs SECTION under RT.
split_skip() {
  local sec=$1 rt=$2 conf=$CPVM_CGROUP:${CPVM_TOPOLOGY:-custom} want="runc crun"
  [ "$SPLIT" = auto ] || return 1
  case $sec:$conf in
    parallel:v1:2s2d|parallel:v2:odd18|e2e:v2:2s2d) want=runc ;;
    parallel:v2:2s2d|parallel:v1:odd18|e2e:v1:odd18) want=crun ;;
    e2e:v1:2s2d|e2e:v2:odd18) want="" ;;
  esac
  [[ " $want " == *" $rt "* ]] && return 1
  cpvm_skip "$rt.$3" "CACHEPIN_VM_SPLIT=auto: on $conf $sec runs under ${want:-neither runtime} (runc: parallel on v1:2s2d v2:odd18, e2e on v2:2s2d; crun: parallel on v2:2s2d v1:odd18, e2e on v1:odd18)"
  return 0
}

# cpus=2 smt=pe0: the PE0 threads of two cores of one L3.
sec_pe0() {
  local rt=$1 id=$1-pe0 best=-1 bestn=0 i nc cores want_cpus want_held entry
  # best fit: the L3 left with the fewest whole free cores after taking 2 (lowest index on ties)
  for i in "${!L3S[@]}"; do
    read -ra cores <<<"$(cores_of_l3 "$i")"
    nc=${#cores[@]}
    if [ "$nc" -ge 2 ] && { [ "$best" -lt 0 ] || [ "$nc" -lt "$bestn" ]; }; then best=$i bestn=$nc; fi
  done
  if [ "$best" -lt 0 ]; then cpvm_skip "$rt.pe0" "no L3 has 2 cores (L3s: ${L3S[*]})"; return; fi
  read -ra cores <<<"$(cores_of_l3 "$best")"
  want_cpus=$(compress "${CORE_PE0[${cores[0]}]}" "${CORE_PE0[${cores[1]}]}")
  want_held=$(compress $(expand "${CORES[${cores[0]}]}") $(expand "${CORES[${cores[1]}]}"))

  if ! ct_up "$rt" "$id" '{"cachepin.io/cpus": "2", "cachepin.io/smt": "pe0"}'; then
    cpvm_fail "$rt.pe0.start" "$(ct_err "$id")"
    ct_down "$rt" "$id"
    return
  fi
  ct_read "$id"
  cpvm_pass "$rt.pe0.start" "pid $CT_PID"
  cpvm_expect_eq "$rt.pe0.cpus" "$want_cpus" "$CT_CPUS" "Cpus_allowed_list in the container (PE0s of cores ${CORES[${cores[0]}]} and ${CORES[${cores[1]}]} of L3#$best ${L3S[$best]})"
  local l3s c why=""
  l3s=$(l3s_of "$CT_CPUS")
  [ "$(count "$CT_CPUS")" = 2 ] || why+="not 2 CPUs; "
  [ "$(wc -w <<<"$l3s")" = 1 ] || why+="spans L3s $l3s; "
  declare -A seen_core=()
  for c in $(expand "$CT_CPUS"); do
    [ "$c" = "${CORE_PE0[${CORE_OF[$c]}]}" ] || why+="$c is not its core's PE0; "
    [ -z "${seen_core[${CORE_OF[$c]}]:-}" ] || why+="two CPUs of core ${CORES[${CORE_OF[$c]}]}; "
    seen_core[${CORE_OF[$c]}]=1
  done
  if [ -z "$why" ]; then cpvm_pass "$rt.pe0.one-l3" "$CT_CPUS: PE0s of 2 cores, in L3#$l3s ${L3S[$l3s]}"
  else cpvm_fail "$rt.pe0.one-l3" "$CT_CPUS: $why"; fi
  cpvm_expect_eq "$rt.pe0.mems" "$(nodes_of "$want_cpus")" "$CT_MEMS" "Mems_allowed_list in the container"
  local cg
  cg=$(cpvm_cgroup_dir "$CT_PID" cpuset)
  cpvm_expect_eq "$rt.pe0.cgroup" "$want_cpus" "$(norm "$(cat "$cg/cpuset.cpus" 2>/dev/null)")" "$cg/cpuset.cpus"
  entry=$(ledger_entry "$id")
  cpvm_expect_eq "$rt.pe0.ledger" "$id $CT_PID $want_cpus $want_held" "$(cut -d' ' -f1-4 <<<"$entry")" "ledger: id pid cpus held (siblings idle)"
  ct_down "$rt" "$id"
  cpvm_expect_eq "$rt.pe0.poststop" "" "$(ledger_entry "$id")" "ledger entry after $rt delete"
}

# A strict request that no L3 can hold.
sec_strict() {
  local rt=$1 id=$1-strict i max=0 total sum msg
  for i in "${!L3S[@]}"; do [ "$(count "${L3S[$i]}")" -le "$max" ] || max=$(count "${L3S[$i]}"); done
  total=$(count "$ONLINE")
  if [ "$max" = 0 ] || [ "$max" -ge "$total" ]; then
    cpvm_skip "$rt.strict" "the largest L3 ($max CPUs) is the whole machine ($total): no count is larger yet possible"
    return
  fi
  sum=$(ledger_sum)
  if ct_up "$rt" "$id" "{\"cachepin.io/cpus\": \"$((max + 1))\", \"cachepin.io/strict\": \"true\"}"; then
    ct_read "$id"
    cpvm_fail "$rt.strict.refused" "strict cpus=$((max + 1)) > largest L3 ($max CPUs) started, on CPUs $CT_CPUS"
  else
    cpvm_pass "$rt.strict.refused" "strict cpus=$((max + 1)) > largest L3 ($max CPUs): container not created"
  fi
  msg=$(ct_hook_message "$id")
  if [[ $msg == *"cannot place $((max + 1)) CPUs"* ]]; then cpvm_pass "$rt.strict.message" "$msg"
  else cpvm_fail "$rt.strict.message" "no 'cachepin hook: cannot place $((max + 1)) CPUs' from the hook: $(ct_err "$id")"; fi
  cpvm_expect_eq "$rt.strict.ledger" "$sum" "$(ledger_sum)" "ledger checksum"
  ct_down "$rt" "$id"
}

# Containers that hold every L3 for the release checks: HOLD_IDS, HOLD_CPUS,
# HOLD_REQS (the strict request that gets a holder's CPUs back once they are
# free), and FULL_REQ (a strict request refused while they all run).
HOLD_IDS=() HOLD_CPUS=() HOLD_REQS=() FULL_REQ=""

# Exclusive cpus=4 pe0-first containers, one per L3 that holds 4: different L3s.
sec_spread() {
  local rt=$1 i n id l3 want big=() small=0 huge=0 got_l3s=()
  local req='{"cachepin.io/cpus": "4", "cachepin.io/smt": "pe0-first", "cachepin.io/strict": "true"}'
  HOLD_IDS=() HOLD_CPUS=() HOLD_REQS=() FULL_REQ=$req
  for i in "${!L3S[@]}"; do
    n=$(count "${L3S[$i]}")
    if [ "$n" -ge 8 ]; then huge=1; fi
    if [ "$n" -ge 4 ]; then big+=("$i"); else small=1; fi
  done
  n=${#big[@]}
  if [ "$huge" = 1 ] || [ "$n" -lt 2 ]; then
    # Best fit puts a second 4-CPU container in an L3 of 8 or more: no spread to expect.
    cpvm_skip "$rt.spread" "needs >= 2 L3s of 4 to 7 CPUs and none larger (L3s: ${L3S[*]})"
    sec_release_fill "$rt"
    return
  fi
  [ "$n" -ge 4 ] || cpvm_skip "$rt.spread.four" "only $n L3s with >= 4 CPUs (L3s: ${L3S[*]}): $n containers instead of 4"
  for ((i = 0; i < n; i++)); do
    id=$rt-spread$i
    if ! ct_up "$rt" "$id" "$req"; then
      cpvm_fail "$rt.spread.c$i" "container $((i + 1)) of $n not started: $(ct_err "$id")"
      continue
    fi
    ct_read "$id"
    HOLD_IDS+=("$id") HOLD_CPUS+=("$CT_CPUS") HOLD_REQS+=("$req")
    l3=$(l3s_of "$CT_CPUS")
    if [ "$(wc -w <<<"$l3")" != 1 ] || [ "$l3" = none ]; then
      cpvm_fail "$rt.spread.c$i" "cpus $CT_CPUS span L3s [$l3]"
      continue
    fi
    got_l3s+=("$l3")
    want=$(pe0_first_expect "$l3" 4)
    if [ "$CT_CPUS" = "$want" ] && [ "$CT_MEMS" = "$(nodes_of "$want")" ]; then
      cpvm_pass "$rt.spread.c$i" "cpus $CT_CPUS mems $CT_MEMS (L3#$l3 ${L3S[$l3]}, PE0s first)"
    else
      cpvm_fail "$rt.spread.c$i" "expected cpus $want mems $(nodes_of "$want") (L3#$l3 ${L3S[$l3]}), got cpus $CT_CPUS mems $CT_MEMS"
    fi
  done
  local distinct
  distinct=$(printf '%s\n' "${got_l3s[@]}" | sort -u | grep -c .)
  if [ "${#got_l3s[@]}" = "$n" ] && [ "$distinct" = "$n" ]; then
    cpvm_pass "$rt.spread.distinct" "$n containers at once on $n different L3s (${got_l3s[*]})"
  else
    cpvm_fail "$rt.spread.distinct" "$n containers; in one L3 each: ${#got_l3s[@]}, on L3s [${got_l3s[*]}] ($distinct different)"
  fi
  if [ "$small" = 1 ]; then
    # an L3 of fewer than 4 CPUs is not taken: the refusal below would not hold
    ct_down "$rt" "${HOLD_IDS[@]}"
    sec_release_fill "$rt"
    return
  fi
  sec_release "$rt"
}

# The holders where spread cannot run: one strict container per L3, each the
# whole L3 (largest first, so each lands on an L3 of exactly its size).
sec_release_fill() {
  local rt=$1 i id order=() bad="" union="" l3 req
  HOLD_IDS=() HOLD_CPUS=() HOLD_REQS=()
  FULL_REQ='{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'
  mapfile -t order < <(for i in "${!L3S[@]}"; do echo "$(count "${L3S[$i]}") $i"; done | sort -k1,1nr -k2,2n | cut -d' ' -f2)
  if [ ${#order[@]} = 0 ]; then cpvm_skip "$rt.release" "no L3 in sysfs"; return; fi
  for i in "${order[@]}"; do
    id=$rt-fill$i
    req="{\"cachepin.io/cpus\": \"$(count "${L3S[$i]}")\", \"cachepin.io/smt\": \"any\", \"cachepin.io/strict\": \"true\"}"
    if ! ct_up "$rt" "$id" "$req"; then
      bad+="$id not started: $(ct_err "$id"); "
      continue
    fi
    ct_read "$id"
    HOLD_IDS+=("$id") HOLD_CPUS+=("$CT_CPUS") HOLD_REQS+=("$req")
    union+=",$CT_CPUS"
    l3=$(l3s_of "$CT_CPUS")
    if [ "$(wc -w <<<"$l3")" != 1 ] || [ "$CT_CPUS" != "${L3S[$l3]}" ]; then bad+="$id: cpus $CT_CPUS are not one whole L3; "; fi
  done
  if [ -z "$bad" ] && [ "$(norm "${union#,}")" = "$ONLINE" ]; then
    cpvm_pass "$rt.release.fill" "${#HOLD_IDS[@]} strict containers, one per whole L3: ${HOLD_CPUS[*]}"
  else
    cpvm_fail "$rt.release.fill" "${bad}union $(norm "${union#,}") vs online $ONLINE"
  fi
  sec_release "$rt"
}

# With the holders in place (no L3 can take FULL_REQ): no annotations,
# refusal when full, release by delete and by kill -9.
sec_release() {
  local rt=$1 id sum i
  if [ ${#HOLD_IDS[@]} = 0 ]; then cpvm_skip "$rt.release" "no holders started"; return; fi

  # A container without annotations: the runtime's CPUs, the parent's effective cpuset.
  id=$rt-plain
  sum=$(ledger_sum)
  if ct_up "$rt" "$id" '{}'; then
    ct_read "$id"
    local cg parent pcpus pmems
    cg=$(cpvm_cgroup_dir "$CT_PID" cpuset)
    parent=$(dirname "$cg")
    if [ "$(cpvm_cgroup_version)" = v2 ]; then
      pcpus=$(cat "$parent/cpuset.cpus.effective") pmems=$(cat "$parent/cpuset.mems.effective")
    else
      pcpus=$(cat "$parent/cpuset.effective_cpus") pmems=$(cat "$parent/cpuset.effective_mems")
    fi
    cpvm_expect_eq "$rt.release.plain-cpus" "$(norm "$pcpus")" "$CT_CPUS" "no annotations, CPUs held by others: Cpus_allowed_list = $parent's effective"
    cpvm_expect_eq "$rt.release.plain-mems" "$(norm "$pmems")" "$CT_MEMS" "Mems_allowed_list = $parent's effective"
    cpvm_expect_eq "$rt.release.plain-ledger" "$sum" "$(ledger_sum)" "ledger checksum (untouched)"
  else
    cpvm_fail "$rt.release.plain-cpus" "container without annotations not started: $(ct_err "$id")"
  fi
  ct_down "$rt" "$id"

  # Every L3 taken: the holders' own strict request is refused.
  id=$rt-full
  if ct_up "$rt" "$id" "$FULL_REQ"; then
    ct_read "$id"
    cpvm_fail "$rt.release.full-refused" "strict $FULL_REQ started while every L3 is taken, on CPUs $CT_CPUS"
  elif [[ $(ct_hook_message "$id") == *"cannot place"* ]]; then
    cpvm_pass "$rt.release.full-refused" "while every L3 is taken: $(ct_hook_message "$id")"
  else
    cpvm_fail "$rt.release.full-refused" "refused, but not by the hook's 'cannot place': $(ct_err "$id")"
  fi
  ct_down "$rt" "$id"

  # runtime delete (poststop) gives the CPUs back.
  local a_id=${HOLD_IDS[0]} a_cpus=${HOLD_CPUS[0]} a_req=${HOLD_REQS[0]} r_id=$rt-reuse1
  ct_down "$rt" "$a_id"
  cpvm_expect_eq "$rt.release.poststop-ledger" "" "$(ledger_entry "$a_id")" "ledger entry of $a_id after $rt delete"
  if ct_up "$rt" "$r_id" "$a_req"; then
    ct_read "$r_id"
    cpvm_expect_eq "$rt.release.poststop-reuse" "$a_cpus" "$CT_CPUS" "the same strict request after deleting $a_id"
  else
    cpvm_fail "$rt.release.poststop-reuse" "strict request for $a_id's CPUs refused after delete: $(ct_err "$r_id")"
  fi

  # kill -9 of an init, no delete, no poststop: the next hook run reclaims.
  local k_id k_cpus k_req k_pid n_id=$rt-reuse2
  if [ ${#HOLD_IDS[@]} -ge 2 ]; then k_id=${HOLD_IDS[1]} k_cpus=${HOLD_CPUS[1]} k_req=${HOLD_REQS[1]}
  else k_id=$r_id k_cpus=$a_cpus k_req=$a_req; fi
  k_pid=$(cat "$CPVM_BUNDLES/$k_id/pid")
  kill -9 "$k_pid"
  for ((i = 0; i < 100; i++)); do
    if [ ! -e "/proc/$k_pid" ] || [ "$(awk '{ print $3 }' "/proc/$k_pid/stat" 2>/dev/null)" = Z ]; then break; fi
    sleep 0.1
  done
  if ct_up "$rt" "$n_id" "$k_req"; then
    ct_read "$n_id"
    cpvm_expect_eq "$rt.release.kill9-reuse" "$k_cpus" "$CT_CPUS" "the same strict request after kill -9 of $k_id's init ($k_pid)"
  else
    cpvm_fail "$rt.release.kill9-reuse" "strict request for $k_id's CPUs refused after kill -9 of $k_pid: $(ct_err "$n_id")"
  fi
  cpvm_expect_eq "$rt.release.kill9-ledger" "" "$(ledger_entry "$k_id")" "ledger entry of $k_id after kill -9"

  ct_down "$rt" "${HOLD_IDS[@]}" "$r_id" "$n_id"
  cpvm_expect_eq "$rt.release.empty" "" "$(ledger)" "ledger after deleting everything"
}

# Eight strict containers at once, sized so that they fit in the L3s: no CPU shared.
sec_parallel() {
  local rt=$1 total size=1 s i id ids=() pids=() fit bad="" all="" n_ok=0 t0 c
  split_skip parallel "$rt" parallel && return
  total=$(count "$ONLINE")
  if [ "$total" -lt 8 ]; then cpvm_skip "$rt.parallel" "$total CPUs < 8"; return; fi
  # the largest size of which eight fit in the L3s
  for ((s = 1; s <= total / 8; s++)); do
    fit=0
    for i in "${!L3S[@]}"; do fit=$((fit + $(count "${L3S[$i]}") / s)); done
    [ ${#L3S[@]} -gt 0 ] || fit=$((total / s))
    [ "$fit" -lt 8 ] || size=$s
  done
  t0=$(now)
  for ((i = 0; i < 8; i++)); do
    id=$rt-par$i
    ids+=("$id")
    ( ct_up "$rt" "$id" "{\"cachepin.io/cpus\": \"$size\", \"cachepin.io/strict\": \"true\"}"; echo $? >"$CPVM_BUNDLES/$id.rc" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  cpvm_info "$rt: 8 containers of $size CPUs created and started in parallel in $(since "$t0") s"
  declare -A owner=()
  for id in "${ids[@]}"; do
    if [ "$(cat "$CPVM_BUNDLES/$id.rc" 2>/dev/null)" != 0 ]; then bad+="$id failed: $(ct_err "$id"); "; continue; fi
    ct_read "$id"
    n_ok=$((n_ok + 1))
    all+=" $id=$CT_CPUS"
    [ "$(count "$CT_CPUS")" = "$size" ] || bad+="$id got $CT_CPUS, not $size CPUs; "
    [ "$(wc -w <<<"$(l3s_of "$CT_CPUS")")" = 1 ] || bad+="$id: $CT_CPUS spans L3s $(l3s_of "$CT_CPUS"); "
    for c in $(expand "$CT_CPUS"); do
      if [ -n "${owner[$c]:-}" ]; then bad+="CPU $c in ${owner[$c]} and $id; "; fi
      owner[$c]=$id
    done
  done
  cpvm_expect_eq "$rt.parallel.started" 8 "$n_ok" "containers placed (strict, $size CPUs each)"
  if [ -z "$bad" ]; then cpvm_pass "$rt.parallel.disjoint" "each in one L3, no CPU shared:$all"
  else cpvm_fail "$rt.parallel.disjoint" "$bad"; fi
  # the ledger agrees: 8 entries, their held sets disjoint
  local entries held_all
  entries=$(ledger)
  held_all=$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $4 }' <<<"$entries")
  if [ "$(grep -c . <<<"$entries")" = 8 ] && [ "$(count "$held_all")" = $((8 * size)) ]; then
    cpvm_pass "$rt.parallel.ledger" "8 entries, $((8 * size)) CPUs held, none twice"
  else
    cpvm_fail "$rt.parallel.ledger" "ledger: $(tr '\n' ';' <<<"$entries")"
  fi
  pids=()
  for id in "${ids[@]}"; do ct_down "$rt" "$id" & pids+=($!); done
  wait "${pids[@]}"
  cpvm_expect_eq "$rt.parallel.released" "" "$(ledger)" "ledger after 8 deletes in parallel"
}

# tests/e2e/hook.sh, unchanged, under this runtime: one result with its counts.
sec_e2e() {
  local rt=$1 log rc counts fails
  split_skip e2e "$rt" e2e.hook && return
  if [ ! -f /payload/e2e/hook.sh ]; then cpvm_skip "$rt.e2e.hook" "/payload/e2e/hook.sh not in the payload"; return; fi
  log=/run/cpvm/e2e-$rt.log
  RUNTIME=$rt CACHEPIN=$CACHEPIN timeout -s KILL 600 bash /payload/e2e/hook.sh >"$log" 2>&1
  rc=$?
  sed "s/^/e2e-$rt: /" "$log" >/dev/console
  counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  fails=$(grep '^FAIL' "$log" | head -20 | tr '\n' ';')
  if [ $rc = 0 ] && [ -n "$counts" ]; then
    cpvm_pass "$rt.e2e.hook" "tests/e2e/hook.sh under $rt: $counts"
  else
    cpvm_fail "$rt.e2e.hook" "tests/e2e/hook.sh under $rt, exit $rc: ${counts:-no summary}: $fails"
  fi
}

# ------------------------------------------------------------------ main

cpvm_info "$(cpvm_topology_summary)"
cpvm_info "$("$CACHEPIN" --version 2>&1 | head -1); runtimes: $RUNTIMES; sections: $SECTIONS; split: $SPLIT"
if [ ${#L3S[@]} = 0 ]; then cpvm_info "no L3 cache in sysfs: the L3 checks skip"; fi

for rt in $RUNTIMES; do
  ver=$("$rt" --version | head -1)
  for sec in $SECTIONS; do
    t0=$(now)
    "sec_$sec" "$rt"
    cpvm_info "$rt ($ver) $sec: $(since "$t0") s"
    # Nothing may leak into the next section (each deletes its own; this is a net).
    left=$(cpvm__rt "$rt" list -q 2>/dev/null | grep .)
    if [ -n "$left" ]; then
      cpvm_info "$rt $sec left containers behind: $(paste -sd' ' <<<"$left")"
      # shellcheck disable=SC2086 # ids, one per word
      ct_down "$rt" $left
    fi
  done
done

cpvm_finish
