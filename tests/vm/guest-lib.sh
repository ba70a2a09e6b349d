# shellcheck shell=bash
# Helpers for test scripts that run inside the test VM (bash; source it):
#
#   . /cpvm/guest-lib.sh
#
# Result protocol (read by run-vm.sh on the host):
#   CPVM-RESULT <name> PASS|FAIL|SKIP <detail>   one per check; names have no spaces
#   CPVM-INFO <text>                             diagnostics, shown in the summary
#   CPVM-DONE <rc>                               written by the guest init after run-tests.sh
# The lines go to $CPVM_RESULTS_DEV (ttyS1, set by the init) and to the console.
#
# The guest has busybox, bash, jq, runc, crun, and whatever the payload brought;
# /cpvm/rootfs is a read-only busybox image for containers, /cpvm/spec-template.json
# the host's `runc spec` output, and /cpvm/env what run-vm.sh said about the VM
# (CPVM_CGROUP, CPVM_SMP, CPVM_TOPOLOGY, CPVM_NUMA_NODES, CPVM_KERNEL, --env values).
# busybox syslogd writes /run/cpvm/syslog; the init prints it to the console
# when run-tests.sh fails (or always, with --env CPVM_DUMP_SYSLOG=1).

: "${CPVM_RESULTS_DEV:=/dev/console}"
: "${CPVM_BUNDLES:=/run/cpvm/bundles}"
: "${CPVM_ROOTFS:=/cpvm/rootfs}"
: "${CPVM_SPEC_TEMPLATE:=/cpvm/spec-template.json}"
: "${CPVM_RUN_TIMEOUT:=120}"      # seconds for one runtime command
: "${CPVM_RUNTIME_FLAGS:=}"       # global flags for every runc/crun call, e.g. --debug
CPVM_PASSED=0
CPVM_FAILED=0
CPVM_SKIPPED=0

# ------------------------------------------------------------------ results

# cpvm_result NAME PASS|FAIL|SKIP [DETAIL...]: one result line (the detail is
# folded onto one line).
cpvm_result() {
  local name=$1 status=$2 detail
  shift 2
  detail=$(printf '%s' "$*" | tr '\n\r\t' '   ')
  name=${name// /_}
  case $status in
    PASS) CPVM_PASSED=$((CPVM_PASSED + 1)) ;;
    FAIL) CPVM_FAILED=$((CPVM_FAILED + 1)) ;;
    SKIP) CPVM_SKIPPED=$((CPVM_SKIPPED + 1)) ;;
    *) cpvm_result "$name" FAIL "bad status '$status': $detail"; return 1 ;;
  esac
  printf 'CPVM-RESULT %s %s %s\n' "$name" "$status" "$detail" >>"$CPVM_RESULTS_DEV"
  [ "$CPVM_RESULTS_DEV" = /dev/console ] ||
    printf 'CPVM-RESULT %s %s %s\n' "$name" "$status" "$detail" >/dev/console
}
cpvm_pass() { cpvm_result "$1" PASS "${@:2}"; }
cpvm_fail() { cpvm_result "$1" FAIL "${@:2}"; return 1; }
cpvm_skip() { cpvm_result "$1" SKIP "${@:2}"; }

# cpvm_info TEXT...: a diagnostic line.
cpvm_info() {
  local text
  text=$(printf '%s' "$*" | tr '\n\r\t' '   ')
  printf 'CPVM-INFO %s\n' "$text" >>"$CPVM_RESULTS_DEV"
  [ "$CPVM_RESULTS_DEV" = /dev/console ] || printf 'CPVM-INFO %s\n' "$text" >/dev/console
}

# cpvm_expect_eq NAME EXPECTED ACTUAL [WHAT]: PASS if the strings are equal.
cpvm_expect_eq() {
  if [ "$2" = "$3" ]; then cpvm_pass "$1" "${4:+$4 }'$3'"
  else cpvm_fail "$1" "${4:+$4: }expected '$2', got '$3'"; fi
}

# cpvm_check NAME COMMAND...: PASS if COMMAND exits 0, FAIL with its output if not.
cpvm_check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then cpvm_pass "$name" "$out"
  else cpvm_fail "$name" "'$*' failed: $out"; fi
}

# cpvm_finish: the exit status for run-tests.sh (0 when nothing failed).
cpvm_finish() {
  cpvm_info "$CPVM_PASSED passed, $CPVM_FAILED failed, $CPVM_SKIPPED skipped"
  [ "$CPVM_FAILED" -eq 0 ]
}

# ------------------------------------------------------------------ cpulists

# One awk program does all cpulist work: process start-up is slow under TCG.
# norm(list) gives the canonical form ("0-3,8"): sorted, merged, no duplicates.
CPVM__CPULIST_AWK='
function norm(s,    n, parts, r, i, a, b, c, seen, max, out, first, last, run) {
  n = split(s, parts, ","); max = -1
  for (i = 1; i <= n; i++) {
    if (parts[i] !~ /^[0-9]+(-[0-9]+)?$/) continue
    if (split(parts[i], r, "-") == 2) { a = r[1] + 0; b = r[2] + 0 } else { a = b = parts[i] + 0 }
    for (c = a; c <= b; c++) { seen[c] = 1; if (c > max) max = c }
  }
  out = ""; run = 0
  for (c = 0; c <= max + 1; c++) {
    if (c in seen) { if (!run) { first = c; run = 1 } last = c }
    else if (run) { out = out (out == "" ? "" : ",") (first == last ? first : first "-" last); run = 0 }
  }
  return out
}
function count(s,    k, n, parts, r, i, c) {
  k = norm(s); if (k == "") return 0
  n = split(k, parts, ","); c = 0
  for (i = 1; i <= n; i++) { if (split(parts[i], r, "-") == 2) c += r[2] - r[1] + 1; else c++ }
  return c
}'

# cpvm_cpulist_normalize LIST: LIST in canonical form ("3,0-2,1" -> "0-3").
cpvm_cpulist_normalize() { awk -v s="$1" "$CPVM__CPULIST_AWK"' BEGIN { print norm(s) }'; }

# cpvm_cpulist_count LIST: how many CPUs LIST names.
cpvm_cpulist_count() { awk -v s="$1" "$CPVM__CPULIST_AWK"' BEGIN { print count(s) }'; }

# cpvm_cpulist_expand LIST: the CPUs of LIST, one per line, ascending.
cpvm_cpulist_expand() {
  awk -v s="$1" "$CPVM__CPULIST_AWK"' BEGIN { n = split(norm(s), p, ",")
    for (i = 1; i <= n; i++) { if (split(p[i], r, "-") == 2) { for (c = r[1]; c <= r[2]; c++) print c } else print p[i] } }'
}

# cpvm_cpulist_compress [CPU...]: CPUs (arguments, or lines on stdin) as a canonical cpulist.
cpvm_cpulist_compress() {
  { if [ $# -gt 0 ]; then printf '%s\n' "$@"; else cat; fi; } |
    awk "$CPVM__CPULIST_AWK"' NF { s = s "," $1 } END { print norm(s) }'
}

# cpvm_cpulist_minus A B: the cpulist A without B's CPUs, canonical (empty when none is left).
cpvm_cpulist_minus() {
  local c out=() b
  b=" $(cpvm_cpulist_expand "$2" | tr '\n' ' ') "
  for c in $(cpvm_cpulist_expand "$1"); do [[ $b == *" $c "* ]] || out+=("$c"); done
  if [ ${#out[@]} -gt 0 ]; then cpvm_cpulist_compress "${out[@]}"; else echo; fi
}

# ------------------------------------------------------------------ topology

# The unique cpulists in FILES (one per CPU), canonical, ordered by first CPU.
cpvm__unique_lists() {
  awk "$CPVM__CPULIST_AWK"' { k = norm($0); if (k != "" && !(k in done)) { done[k] = 1; split(k, f, /[-,]/); print f[1], k } }' "$@" |
    sort -n | cut -d' ' -f2
}

# cpvm_l3_groups: one line per L3 cache (the CPUs that share it).
cpvm_l3_groups() {
  local files=() idx level
  for idx in /sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*; do
    read -r level <"$idx/level" 2>/dev/null || continue
    [ "$level" = 3 ] && files+=("$idx/shared_cpu_list")
  done
  [ ${#files[@]} -gt 0 ] && cpvm__unique_lists "${files[@]}"
}

# cpvm_smt_groups: one line per core (its hardware threads).
cpvm_smt_groups() {
  cpvm__unique_lists /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list
}

# cpvm_nodes: one line per NUMA node: "<id> <cpulist>".
cpvm_nodes() {
  local n list
  for n in /sys/devices/system/node/node[0-9]*; do
    read -r list <"$n/cpulist" || list=""
    echo "${n##*node} $list"
  done | awk "$CPVM__CPULIST_AWK"' { print $1, norm($2) }' | sort -n
}

# cpvm_cgroup_version: v2, v1 (a cpuset v1 hierarchy at /sys/fs/cgroup/cpuset), or none.
cpvm_cgroup_version() {
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo v2
  elif [ -f /sys/fs/cgroup/cpuset/cpuset.cpus ]; then echo v1
  else echo none; fi
}

# cpvm_topology_summary: one line for CPVM-INFO.
cpvm_topology_summary() {
  local l3 smt nodes
  l3=$(cpvm_l3_groups | paste -sd' ')
  smt=$(cpvm_smt_groups | paste -sd' ')
  nodes=$(cpvm_nodes | sed 's/ /:/' | paste -sd' ')
  echo "cpus $(cat /sys/devices/system/cpu/online); L3 [$l3]; cores [$smt]; nodes [$nodes]; cgroup $(cpvm_cgroup_version)"
}

# ------------------------------------------------------------------ containers

# cpvm_bundle ID [OPTIONS] -- CMD...: write a bundle at $CPVM_BUNDLES/ID whose
# process runs CMD in the busybox rootfs, and print its directory. OPTIONS:
#   --cpus LIST          linux.resources.cpu.cpus
#   --mems LIST          linux.resources.cpu.mems
#   --annotations JSON   an object merged into .annotations
#   --hooks JSON         the .hooks object (default: $CPVM_HOOKS when set)
#   --cgroups-path PATH  linux.cgroupsPath (default: the runtime's own choice)
#   --template FILE      the config.json to start from (default: `runc spec` output)
#   --rootfs DIR         the root filesystem (default /cpvm/rootfs, read-only)
#   --jq FILTER          a jq filter applied last, repeatable
cpvm_bundle() {
  local id=$1 cpus="" mems="" ann='{}' hooks=${CPVM_HOOKS:-null} cgpath="" template=$CPVM_SPEC_TEMPLATE
  local rootfs=$CPVM_ROOTFS extra=() b args filter
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --cpus) cpus=$2; shift 2 ;;
      --mems) mems=$2; shift 2 ;;
      --annotations) ann=$2; shift 2 ;;
      --hooks) hooks=$2; shift 2 ;;
      --cgroups-path) cgpath=$2; shift 2 ;;
      --template) template=$2; shift 2 ;;
      --rootfs) rootfs=$2; shift 2 ;;
      --jq) extra+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) echo "cpvm_bundle: unknown option '$1'" >&2; return 2 ;;
    esac
  done
  [ $# -gt 0 ] || { echo "cpvm_bundle: no command" >&2; return 2; }
  b=$CPVM_BUNDLES/$id
  rm -rf "$b"
  mkdir -p "$b"
  args=$(cpvm_json_array "$@")
  # shellcheck disable=SC2016 # $names are jq variables
  filter='
      .process.terminal = false
    | .process.args = $args
    | .root = {"path": $rootfs, "readonly": true}
    | .hostname = $id
    | .annotations = ((.annotations // {}) + $ann)
    | if $hooks != null then .hooks = $hooks else . end
    | if $cpus != "" then .linux.resources.cpu.cpus = $cpus else . end
    | if $mems != "" then .linux.resources.cpu.mems = $mems else . end
    | if $cgpath != "" then .linux.cgroupsPath = $cgpath else . end
    | .mounts += [{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                   "options": ["nosuid", "nodev", "mode=1777"]}]'
  local f
  for f in "${extra[@]}"; do filter="$filter | ($f)"; done
  jq --arg id "$id" --arg rootfs "$rootfs" --argjson args "$args" --argjson ann "$ann" \
     --argjson hooks "$hooks" --arg cpus "$cpus" --arg mems "$mems" --arg cgpath "$cgpath" \
     "$filter" "$template" >"$b/config.json" || { echo "cpvm_bundle: jq failed" >&2; return 2; }
  echo "$b"
}

# cpvm_json_string STRING: STRING as a JSON string (jq would do, but each jq
# start costs a quarter of a second under TCG).
cpvm_json_string() {
  local s=$1 c out="" i
  s=${s//\\/\\\\}; s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}
  case $s in
    *[$'\001'-$'\037']*)   # other control characters: \u escapes, one by one
      for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in [$'\001'-$'\037']) printf -v c '\\u%04x' "'$c" ;; esac
        out+=$c
      done
      s=$out ;;
  esac
  printf '"%s"' "$s"
}

# cpvm_json_array STRING...: the strings as a JSON array.
cpvm_json_array() {
  local a sep=""
  printf '['
  for a in "$@"; do printf '%s' "$sep"; cpvm_json_string "$a"; sep=,; done
  printf ']'
}

# cpvm__rt RUNTIME ARGS...: one runtime call with the global flags, bounded in time.
cpvm__rt() {
  local rt=$1
  shift
  # shellcheck disable=SC2086 # the flags are words on purpose
  timeout -s KILL "$CPVM_RUN_TIMEOUT" "$rt" $CPVM_RUNTIME_FLAGS "$@"
}

# cpvm_run RUNTIME ID [OPTIONS] -- CMD...: run a container to completion with
# RUNTIME (runc, crun, or a path) and print what it wrote to stdout. Its stdout
# and stderr (with the runtime's errors) stay in $CPVM_BUNDLES/ID/stdout and
# /stderr. Returns the runtime's exit status (the container's, when it ran).
cpvm_run() {
  local rt=$1 id=$2 b rc
  shift 2
  b=$(cpvm_bundle "$id" "$@") || return $?
  cpvm__rt "$rt" run --bundle "$b" "$id" </dev/null >"$b/stdout" 2>"$b/stderr"
  rc=$?
  cpvm__rt "$rt" delete -f "$id" >/dev/null 2>&1
  cat "$b/stdout"
  return $rc
}

# cpvm_create RUNTIME ID [OPTIONS] -- CMD...: create a container (the
# createRuntime and createContainer hooks run; the process waits for start).
# Its stdout and stderr go to $CPVM_BUNDLES/ID/stdout and /stderr.
cpvm_create() {
  local rt=$1 id=$2 b
  shift 2
  b=$(cpvm_bundle "$id" "$@") || return $?
  echo "$rt $id" >>"$CPVM_BUNDLES/.created"
  cpvm__rt "$rt" create --bundle "$b" "$id" </dev/null >"$b/stdout" 2>"$b/stderr"
}

# cpvm_start RUNTIME ID: start a created container.
cpvm_start() { cpvm__rt "$1" start "$2" 2>>"$CPVM_BUNDLES/$2/stderr"; }

# cpvm_exec RUNTIME ID CMD...: run CMD in a running container; prints its output.
cpvm_exec() {
  local rt=$1 id=$2
  shift 2
  cpvm__rt "$rt" exec "$id" "$@" </dev/null
}

# cpvm_state RUNTIME ID: the runtime's state JSON.
cpvm_state() { cpvm__rt "$1" state "$2"; }

# cpvm_pid RUNTIME ID: the container's init pid as the host sees it.
cpvm_pid() { cpvm_state "$1" "$2" | jq -r '.pid'; }

# cpvm_delete RUNTIME ID: kill and delete a container (no error if it is gone).
cpvm_delete() {
  cpvm__rt "$1" kill "$2" KILL >/dev/null 2>&1
  cpvm__rt "$1" delete -f "$2" >/dev/null 2>&1
  return 0
}

# cpvm_cleanup: delete every container cpvm_create made.
cpvm_cleanup() {
  local rt id
  [ -f "$CPVM_BUNDLES/.created" ] || return 0
  while read -r rt id; do cpvm_delete "$rt" "$id"; done <"$CPVM_BUNDLES/.created"
  rm -f "$CPVM_BUNDLES/.created"
}

# cpvm_cgroup_dir PID [CONTROLLER]: the directory of PID's cgroup: in v2 the
# unified one, in v1 the one of CONTROLLER's hierarchy (default cpuset).
cpvm_cgroup_dir() {
  local pid=$1 ctrl=${2:-cpuset} line path hier
  if [ "$(cpvm_cgroup_version)" = v2 ]; then
    path=$(sed -n 's/^0::\(.*\)/\1/p' "/proc/$pid/cgroup")
    echo "/sys/fs/cgroup${path%/}"
    return
  fi
  while IFS= read -r line; do
    hier=${line#*:}; hier=${hier%%:*}
    path=${line#*:*:}
    case ",$hier," in *",$ctrl,"*) echo "/sys/fs/cgroup/$hier${path%/}"; return 0 ;; esac
  done <"/proc/$pid/cgroup"
  return 1
}

# cpvm_cgroup_read PID FILE [CONTROLLER]: a file of PID's cgroup, e.g. cpuset.cpus.
cpvm_cgroup_read() {
  local dir
  dir=$(cpvm_cgroup_dir "$1" "${3:-${2%%.*}}") || return 1
  cat "$dir/$2"
}

# cpvm_allowed_cpus PID: Cpus_allowed_list of PID, canonical.
cpvm_allowed_cpus() {
  cpvm_cpulist_normalize "$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/status")"
}

# cpvm_kept_cores: the first core (all its threads) of each NUMA node, the cores the
# host keeps, never isolated (policy/isolate.h), from sysfs.
cpvm_kept_cores() {
  local id list first out=""
  while read -r id list; do
    [ -n "$list" ] || continue
    first=${list%%[-,]*}
    out+="$(cat /sys/devices/system/cpu/cpu$first/topology/thread_siblings_list),"
  done < <(cpvm_nodes)
  cpvm_cpulist_normalize "${out%,}"
}
