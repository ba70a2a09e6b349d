#!/usr/bin/env bash
# `cachepin plan --isolate` and `apply --isolate` on this host, against the real
# binary ($1): whether the plan's CPUs would be made a partition now and, if not,
# why (issue 23's request side).  Expectations come from this host's sysfs (its
# NUMA nodes and its cores' threads), by the documented rule: the first core of
# each NUMA node (all its threads) is the host's, never isolated, and an isolated
# request is placed off those cores when the rest can hold it; the host config's
# `isolate: deny` grants none; only an exclusive request may ask.
#   - plan: the isolate line and its JSON, granted or not as the rule says, for
#     every CPU (refused) and for one whole core (placed off the kept cores and
#     granted when the host has another core);
#     --strict turns a refusal into exit 3; shared mode is an input error (exit 2);
#     `reserved` cores are the host's own; without --isolate nothing is said;
#   - apply (root, a cpuset hierarchy): --isolate in shared mode refused before
#     anything is written; --dry-run --isolate prints the line.
# The kernel's support is not judged here: it is the engine's, when placing.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
BIN=$(realpath "${1:?usage: plan_isolate.sh PATH-TO-cachepin}")
command -v jq >/dev/null || cli_skip plan_isolate "no jq (scripts/deps.sh installs it)"
T=$(mktemp -d /tmp/cachepin-plan_isolate.XXXXXX)
trap 'rm -rf "$T"' EXIT

# The rule, from sysfs: `rule.py kept` prints the kept cores' CPUs (the first core
# of each NUMA node with allowed CPUs), `rule.py verdict CPUS` "granted" or the
# reason for CPUS (a cpulist).
cat >"$T/rule.py" <<'EOF'
import glob, re, sys
def expand(s):
    out = set()
    for r in s.strip().split(","):
        if r:
            a, _, b = r.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out
def fmt(cpus):
    cpus, out, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)
online = expand(open("/sys/devices/system/cpu/online").read())
allowed = expand(re.search(r"Cpus_allowed_list:\s*(\S+)", open("/proc/self/status").read()).group(1))
cores = {frozenset(expand(open(p).read())) & online
         for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")}
nodes = sorted((int(re.search(r"node(\d+)$", d).group(1)), expand(open(d + "/cpulist").read()) & online)
               for d in glob.glob("/sys/devices/system/node/node[0-9]*")) or [(0, online)]
kept = [(n, next(c for c in cores if min(ncpus & allowed) in c)) for n, ncpus in nodes if ncpus & allowed]
if sys.argv[1] == "kept":
    print(",".join(str(c) for c in sorted(set().union(*(core for _, core in kept)))))
    sys.exit()
cpus = expand(sys.argv[2])
for n, core in kept:
    if core & cpus:
        print("CPUs %s include CPU %d, in the first core of NUMA node %d, which the host keeps "
              "(never isolated)" % (fmt(cpus), min(core & cpus), n))
        sys.exit()
print("granted")
EOF
verdict () { python3 "$T/rule.py" verdict "$1"; }
GRANTED="the host config allows it and the CPUs leave the first core of each NUMA node to the host; the kernel's support (cgroup v2, cpuset.cpus.exclusive) is checked when placing, not here"
GRANTED_KERNEL="the host config allows it and the CPUs leave the first core of each NUMA node to the host, and this kernel makes cgroup v2 partitions (cpuset.cpus.exclusive)"
# kernel_verdict [CGROUP]: "" when this kernel makes partitions for CGROUP (a
# directory under the cpuset hierarchy; none: the hierarchy's root), else why not,
# as the engine says it: cgroup v1; on v2 the first of CGROUP and its ancestors
# with cpuset files decides (cpuset.cpus.exclusive there), the root by its
# cpuset.cpus.isolated.
kernel_verdict () {
  local mnt cg
  mnt=$(find_cpuset_mount)
  if [ "$(stat -f -c %T "$mnt")" != cgroup2fs ]; then echo "unsupported here (cgroup v1)"; return; fi
  cg=${1:-$mnt}
  while [ "$cg" != "$mnt" ] && [ ! -e "$cg/cpuset.cpus" ]; do cg=$(dirname "$cg"); done
  if { [ "$cg" = "$mnt" ] && [ -e "$mnt/cpuset.cpus.isolated" ]; } || { [ "$cg" != "$mnt" ] && [ -e "$cg/cpuset.cpus.exclusive" ]; }; then
    echo
  else
    echo "unsupported here (kernel has no cpuset.cpus.exclusive (Linux 6.7+))"
  fi
}
plan () { "$BIN" plan --empty "$@" >"$T/out" 2>"$T/err"; RC=$?; }
# expect_verdict NAME ARGS...: plan ARGS --isolate in JSON and in text agree with the rule
expect_verdict () {
  local name=$1
  shift
  plan "$@" --isolate --json
  check "$name: exit" "$RC" 0
  local cpus want
  cpus=$(jq -r .cpus "$T/out")
  want=$(verdict "$cpus")
  if [ "$want" = granted ]; then
    check "$name (CPUs $cpus): granted" "$(jq -c '.isolate | [.granted, .reason, .kernel_checked]' "$T/out")" \
      "$(jq -cn --arg r "$GRANTED" '[true, $r, false]')"
    plan "$@" --isolate
    contains_view "$name: the text says yes" "$T/out" "isolate: yes: $GRANTED"
  else
    check "$name (CPUs $cpus): not granted" "$(jq -c '.isolate | [.granted, .reason, .kernel_checked]' "$T/out")" \
      "$(jq -cn --arg r "$want" '[false, $r, false]')"
    plan "$@" --isolate
    contains_view "$name: the text says no, and why" "$T/out" "isolate: no, placed without isolation: $want"
  fi
  VERDICT=$want CPUS=$cpus
}
# expect_refused NAME CODE LINE ARGS...: exit CODE, nothing on stdout, LINE on stderr
expect_refused () {
  local name=$1 code=$2 line=$3
  shift 3
  plan "$@"
  check "$name: exit" "$RC" "$code"
  check "$name: nothing on stdout" "$(wc -c <"$T/out")" 0
  check "$name: one line" "$(cat "$T/err")" "$line"
}

N=$(nproc)
# The threads of the core of this process's first allowed CPU.
FIRST=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}' | cut -d, -f1 | cut -d- -f1)
SMT=$(awk -F, '{n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n}' \
  "/sys/devices/system/cpu/cpu$FIRST/topology/thread_siblings_list")
echo "== this host: $N CPUs allowed, $SMT thread(s) per core, NUMA nodes $(cat /sys/devices/system/node/online 2>/dev/null || echo 0)"

echo "== every CPU: the first cores are among them"
expect_verdict "all $N CPUs" --cpus "$N" --align none --smt any
check "all CPUs: the rule refuses them" "$([ "$VERDICT" = granted ] && echo granted || echo refused)" refused
expect_refused "all CPUs, strict" 3 "cachepin plan: cachepin.io/isolate: $VERDICT" \
  --cpus "$N" --align none --smt any --strict --isolate

echo "== one whole core: placed off the kept cores, granted, when the host has another core"
expect_verdict "one core ($SMT CPUs)" --cpus "$SMT" --smt cores --align none
ONE=$CPUS
CORES=$(python3 -c 'import glob; print(len({open(p).read() for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")}))')
NODES=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if [ "$CORES" -gt "$((NODES > 0 ? NODES : 1))" ]; then
  check "one core: granted ($CORES cores, $NODES nodes: one core is not a kept one)" "$VERDICT" granted
else
  check "one core: refused (every core is a node's first)" "$([ "$VERDICT" = granted ] && echo granted || echo refused)" refused
fi

echo "== only exclusive placements ask"
expect_refused "--mode shared" 2 "cachepin plan: --isolate: needs --mode exclusive (mode is shared)" \
  --mode shared --isolate
echo '{"defaults": {"mode": "shared"}}' >"$T/shared.json"
expect_refused "the config's default mode shared" 2 "cachepin plan: --isolate: needs --mode exclusive (mode is shared)" \
  --config "$T/shared.json" --isolate
plan --config "$T/shared.json" --mode exclusive --cpus "$SMT" --smt cores --align none --isolate --json
check "--mode exclusive over the config's shared: exit" "$RC" 0

echo "== the host config's isolate: deny"
echo '{"isolate": "deny"}' >"$T/deny.json"
plan --config "$T/deny.json" --cpus "$SMT" --smt cores --align none --isolate --json
check "deny: not granted" "$(jq -c '.isolate | [.granted, .reason]' "$T/out")" \
  '[false,"host setting isolate is deny"]'
DENIED=$(jq -r .cpus "$T/out")
plan --config "$T/deny.json" --cpus "$SMT" --smt cores --align none --json
check "deny: placed as without --isolate (the kept cores are not avoided)" "$DENIED" "$(jq -r .cpus "$T/out")"
expect_refused "deny, strict" 3 "cachepin plan: cachepin.io/isolate: host setting isolate is deny" \
  --config "$T/deny.json" --cpus "$SMT" --smt cores --align none --isolate --strict
check "deny: status --json shows the setting" \
  "$("$BIN" status --json --config "$T/deny.json" 2>/dev/null | jq -r .config.isolate)" deny
echo '{"isolate": "allow"}' >"$T/allow.json"
expect_verdict "allow, as without a config" --config "$T/allow.json" --cpus "$SMT" --smt cores --align none

echo "== reserved cores are the host's own: the rest of every node may be isolated"
RESERVED=$(python3 "$T/rule.py" kept)
REST=$((N - $(tr ',' '\n' <<<"$RESERVED" | grep -c .)))
if [ "$REST" -ge 1 ]; then
  jq -n --arg r "$RESERVED" '{reserved: $r}' >"$T/reserved.json"
  expect_verdict "reserved $RESERVED, the other $REST CPUs" --config "$T/reserved.json" --cpus "$REST" --align none --smt any
  check "reserved: granted" "$VERDICT" granted
  check "reserved: none of the plan's CPUs is reserved" \
    "$(comm -12 <(tr ',' '\n' <<<"$RESERVED" | sort) <(python3 -c 'import sys
for r in sys.argv[1].split(","):
    a, _, b = r.partition("-"); print("\n".join(str(c) for c in range(int(a), int(b or a) + 1)))' "$CPUS" | sort))" ""
else
  ok "reserved: skipped, every CPU is a reserved core's ($RESERVED)"
fi

echo "== without --isolate, nothing is said"
plan --cpus 1 --json
check "no --isolate: no isolate key" "$(jq 'has("isolate")' "$T/out")" false
plan --cpus 1
check "no --isolate: no isolate line" "$(grep -c '^isolate:' "$T/out")" 0

echo "== apply --isolate (root, a cpuset hierarchy)"
"$BIN" apply --help | grep -q -- '--isolate' && ok "apply --help lists --isolate" || ko "apply --help: no --isolate"
"$BIN" plan --help | grep -q -- '--isolate' && ok "plan --help lists --isolate" || ko "plan --help: no --isolate"
if [ "$(id -u)" != 0 ] || [ -z "$(find_cpuset_mount)" ]; then
  finish plan_isolate || exit 1
  cli_skip plan_isolate "apply's part needs root and a cpuset hierarchy"
fi
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup plan_isolate
trap 'cg_test_cleanup; rm -rf "$T"' EXIT
jq -n --arg s "$D/state" --arg k "$D/no-kubelet" '{state_dir: $s, kubelet_state: $k}' >"$D/cfg.json"
BEFORE=$(cat "$TOP/cpuset.cpus" "$TOP/cpuset.mems")
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP" --mode shared --isolate >"$T/out" 2>"$T/err"
check "apply --isolate --mode shared: exit" "$?" 2
check "apply --isolate --mode shared: one line" "$(cat "$T/err")" \
  "cachepin apply: --isolate: needs --mode exclusive (mode is shared)"
check "apply --isolate --mode shared: the cgroup unchanged" "$(cat "$TOP/cpuset.cpus" "$TOP/cpuset.mems")" "$BEFORE"
check "apply --isolate --mode shared: no state directory" "$([ -e "$D/state" ] && echo present || echo absent)" absent
"$BIN" apply --config "$D/cfg.json" --cgroup "$TOP" --cpus 1 --isolate --dry-run --json >"$T/out" 2>"$T/err"
check "apply --dry-run --isolate: exit" "$?" 0
# The kernel first, for this cgroup, then the rule.
WANT=$(kernel_verdict "$TOP")
[ -n "$WANT" ] || WANT=$(verdict "$(jq -r .cpus "$T/out")")
[ "$WANT" = granted ] && WANT=$GRANTED_KERNEL
check "apply --dry-run --isolate: the verdict, the kernel judged for $TOP" \
  "$(jq -c '.isolate | [.reason, .kernel_checked]' "$T/out")" "$(jq -cn --arg r "$WANT" '[$r, true]')"

echo "== plan of this host now: the kernel judged in its cpuset hierarchy"
"$BIN" plan --config "$D/cfg.json" --cpus 1 --isolate --json >"$T/out" 2>"$T/err"
check "plan --isolate (this host now): exit" "$?" 0
WANT=$(kernel_verdict)
[ -n "$WANT" ] || WANT=$(verdict "$(jq -r .cpus "$T/out")")
[ "$WANT" = granted ] && WANT=$GRANTED_KERNEL
check "plan --isolate (this host now): the verdict" \
  "$(jq -c '.isolate | [.reason, .kernel_checked]' "$T/out")" "$(jq -cn --arg r "$WANT" '[$r, true]')"
if [ "$WANT" != "$GRANTED_KERNEL" ]; then
  "$BIN" plan --config "$D/cfg.json" --cpus 1 --isolate --strict >"$T/out" 2>"$T/err"
  check "plan --isolate --strict (this host now): refused" "$?" 3
  check "plan --isolate --strict (this host now): the line" "$(cat "$T/err")" "cachepin plan: cachepin.io/isolate: $WANT"
fi
"$BIN" plan --config "$D/cfg.json" --empty --cpus 1 --isolate --json >"$T/out" 2>"$T/err"
check "plan --empty --isolate: the kernel not judged" "$(jq -c .isolate.kernel_checked "$T/out")" false
check "apply --dry-run --isolate: the cgroup unchanged" "$(cat "$TOP/cpuset.cpus" "$TOP/cpuset.mems")" "$BEFORE"
check "apply --dry-run --isolate: no state directory" "$([ -e "$D/state" ] && echo present || echo absent)" absent
finish plan_isolate
