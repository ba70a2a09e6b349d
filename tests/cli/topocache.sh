#!/usr/bin/env bash
# The topology cache (hook/state/topocache.h) through the real binary ($1), real cpuset
# cgroups and a real ledger (root, a cpuset hierarchy, jq; skipped without them).
#
#   - a createRuntime discovers and writes STATE/topology.cache (0600, ours); the
#     next one uses it (the debug log says so) and places the same way;
#   - a cache that is garbage, truncated, bit-flipped, owned by another uid,
#     group-writable, hard-linked or a symlink is ignored (the log says why),
#     rediscovered and replaced, and never changes the placement;
#   - an XML source whose file changed (mtime) is discovered again;
#   - `cachepin status` reads the cache but never writes it, and says whether it
#     used it and, when not, why (JSON topology.cache, the text's cache line);
#   - a "sysfs:DIR" source (hwloc's Linux discovery on a dump) is discovered and
#     cached when a dump is at hand ($CACHEPIN_TOPOLOGIES); a missing directory,
#     or one that is no dump (/proc), lets the container start unplaced, saying why;
#   - on every dump at hand, the model the hook discovers (hwloc told to build
#     only what the model reads) is the one `cachepin status` shows for the XML
#     that lstopo exports from a full discovery of the same dump (with lstopo;
#     that an XML file's model is a full load's is test_topologies.c's check).
#
#   bash tests/cli/topocache.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: topocache.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
# A failure shows the hook's stderr.
ko () { FAIL=$((FAIL + 1)); echo "FAIL: $1"; [ -s "$D/err" ] && sed 's/^/    stderr: /' "$D/err"; }
says () { if grep -qF -- "$2" "$D/err"; then ok "$1"; else ko "$1: no line with '$2'"; fi; }

need_cpuset topocache jq

D=$(mktemp -d /tmp/cachepin-topocache.XXXXXX)
TOP="$MNT/cachepin-topocache-$$"
SLEEPER=""
cleanup () {
  [ -n "$SLEEPER" ] && { kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; }
  rmdir "$TOP/c" "$TOP" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT

make_cgroup "$TOP"
make_cgroup "$TOP/c"
ALL=$(cat "$TOP/c/cpuset.cpus")
sleep 600 </dev/null >/dev/null 2>&1 &
SLEEPER=$!
echo "$SLEEPER" > "$TOP/c/cgroup.procs"
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
S=$D/state
C=$S/topology.cache
config () { # config TOPOLOGY
  jq -n --arg s "$S" --arg t "$1" '{state_dir: $s, topology: $t, log_level: "debug", on_error: "allow"}' > "$D/cfg.json"
}
# place: createRuntime of the sleeper, then its poststop; the CPUs it got in $GOT
place () {
  echo "$ALL" > "$TOP/c/cpuset.cpus"
  jq -cn --argjson pid "$SLEEPER" --arg b "$D/bundle" '{"ociVersion": "1.0.2", id: "tc", status: "creating",
    pid: $pid, bundle: $b, annotations: {"cachepin.io/cpus": "1"}}' \
    | "$BIN" hook --config "$D/cfg.json" createRuntime 2>"$D/err"
  RC=$?
  GOT=$(cat "$TOP/c/cpuset.cpus")
  jq -cn --arg b "$D/bundle" '{"ociVersion": "1.0.2", id: "tc", status: "stopped", bundle: $b,
    annotations: {"cachepin.io/cpus": "1"}}' | "$BIN" hook --config "$D/cfg.json" poststop 2>/dev/null
}
is_ours () { stat -c '%F %a %u %h' "$C" 2>/dev/null; }

echo "== host: written, then used"
config host
place
check "first run succeeds" "$RC" 0
says "first run discovers" "topology: cache $C not used"
says "first run saves" "topology: saved the cache $C"
check "the cache is a regular 0600 file of root's" "$(is_ours)" "regular file 600 0 1"
FIRST=$GOT
if [[ $FIRST =~ ^[0-9]+$ ]]; then ok "placed on one CPU ($FIRST)"; else ko "not placed on one CPU: $FIRST"; fi
GOOD=$(mktemp "$D/good.XXXXXX")
cp "$C" "$GOOD"
place
says "second run uses it" "topology: from the cache $C"
if grep -qF "not used" "$D/err"; then ko "second run also discovered"; else ok "second run does not discover"; fi
check "same placement from the cache" "$GOT" "$FIRST"

# bad NAME WHY-IN-LOG: the cache as the test left it must be ignored, replaced by a
# good one, and the placement unchanged
bad () {
  place
  check "$1: the run succeeds" "$RC" 0
  says "$1: ignored, saying why" "$2"
  says "$1: replaced" "topology: saved the cache $C"
  check "$1: same placement" "$GOT" "$FIRST"
  check "$1: the new cache is a regular file of ours" "$(is_ours)" "regular file 600 0 1"
  place
  says "$1: the new cache is used" "topology: from the cache $C"
}

echo "== corrupt, foreign, not ours"
head -c 300 /dev/urandom > "$C"; chmod 600 "$C"
bad "garbage" "topology cache: not a cachepin topology cache"
head -c 60 "$GOOD" > "$C"
bad "truncated" "topology cache: checksum mismatch"
cp "$GOOD" "$C"
printf '\x01' | dd of="$C" bs=1 seek=100 conv=notrunc status=none
cmp -s "$C" "$GOOD" && printf '\x02' | dd of="$C" bs=1 seek=100 conv=notrunc status=none
bad "one byte changed" "topology cache: checksum mismatch"
cp "$GOOD" "$C"; chown 65534 "$C"
bad "owned by another uid" "is not a regular file of ours"
cp "$GOOD" "$C"; chmod 660 "$C"
bad "group-writable" "is not a regular file of ours"
cp "$GOOD" "$C"; ln "$C" "$S/other-link"
bad "hard-linked" "is not a regular file of ours"
rm -f "$S/other-link"
cp "$GOOD" "$D/elsewhere"; rm -f "$C"; ln -s "$D/elsewhere" "$C"
bad "a symlink to a good cache" "is a symlink"
check "the symlink's target is left alone" "$(cmp -s "$D/elsewhere" "$GOOD" && echo same)" same
rm -f "$C"; mkfifo "$C"
bad "a FIFO" "is not a regular file of ours"

echo "== status reads, never writes, and says whether it used the cache"
rm -f "$C"
"$BIN" status --config "$D/cfg.json" --json > "$D/status.json" 2>/dev/null
check "status without a cache writes none" "$([ -e "$C" ] && echo written || echo none)" none
check "status without a cache: not used, the file missing" \
  "$(jq -r '.topology.cache | "\(.file) \(.used) \(.why_not | test("No such file"))"' "$D/status.json")" "$C false true"
place
cp "$C" "$D/before"
touch -d '2001-01-01' "$C"
"$BIN" status --config "$D/cfg.json" --json > "$D/status.json" 2>/dev/null
check "status with a cache leaves it as it was" "$(cmp -s "$C" "$D/before" && stat -c %Y "$C")" \
  "$(date -d 2001-01-01 +%s)"
check "status with a valid cache: used" "$(jq -c '.topology.cache | [.used, .why_not]' "$D/status.json")" '[true,null]'
check "status text: the cache line says used" "$("$BIN" status --wide --config "$D/cfg.json" 2>/dev/null | grep '^  cache ')" \
  "  cache      $C: used"
head -c 60 "$D/before" > "$C"
"$BIN" status --config "$D/cfg.json" --json > "$D/status.json" 2>/dev/null
check "status with a torn cache: not used, and why" \
  "$(jq -r '.topology.cache | "\(.used) \(.why_not)"' "$D/status.json")" "false topology cache: checksum mismatch (torn or changed)"
check "status text: the cache line says why not" \
  "$("$BIN" status --wide --config "$D/cfg.json" 2>/dev/null | grep -c "^  cache      $C: not used (topology cache: checksum mismatch (torn or changed))")" 1
cp "$D/before" "$C"

echo "== XML source: a changed file is rediscovered"
if lstopo-no-graphics --of xml "$D/host.xml" 2>/dev/null || lstopo --of xml "$D/host.xml" 2>/dev/null; then
  config "$D/host.xml"
  place
  says "xml: first run saves" "topology: saved the cache $C"
  XFIRST=$GOT
  place
  says "xml: second run uses it" "topology: from the cache $C"
  touch -d '2002-02-02' "$D/host.xml"
  place
  says "xml: a new mtime is another key" "topology cache: made for another key"
  says "xml: replaced" "topology: saved the cache $C"
  check "xml: same placement" "$GOT" "$XFIRST"
  place
  says "xml: the new cache is used" "topology: from the cache $C"
  config host
  place
  says "another source is another key" "topology cache: made for another key"
else
  echo "SKIP: xml cases (no lstopo to export this host's topology)"
fi

echo "== sysfs: sources"
config "sysfs:$D/no-such-dir"
place
check "missing sysfs dir: the container still starts" "$RC" 0
says "missing sysfs dir: says why" "sysfs:$D/no-such-dir\`: not an absolute path to a directory"
config "sysfs:/proc"
place
check "sysfs:/proc: the container still starts" "$RC" 0
says "sysfs:/proc: says it is no dump" "sysfs:/proc\`: not a sysfs dump (no directory sys/devices/system/cpu in it)"
TARBALL=${CACHEPIN_TOPOLOGIES:-/nonexistent}/hwloc/sysfs-tarballs/nvidia-dgx-gb10.tar.bz2
if [ -f "$TARBALL" ] && tar -xjf "$TARBALL" -C "$D" 2>/dev/null && [ -d "$D/nvidia-dgx-gb10" ]; then
  config "sysfs:$D/nvidia-dgx-gb10"
  place
  says "sysfs dump: discovered and saved" "topology: saved the cache $C"
  place
  says "sysfs dump: then from the cache" "topology: from the cache $C"
  "$BIN" status --config "$D/cfg.json" --json > "$D/status.json" 2>/dev/null
  check "sysfs dump: status shows its topology" "$(jq -r .topology.source "$D/status.json")" "sysfs:$D/nvidia-dgx-gb10"
  check "sysfs dump: 20 cores there" "$(jq -r .topology.cores "$D/status.json")" 20
else
  echo "SKIP: sysfs dump cases (no $TARBALL, or no bzip2 to extract it)"
fi

# status of TOPOLOGY, its topology part without the source, one line
status_topology () {
  jq -n --arg s "$D/state-model" --arg t "$1" '{state_dir: $s, topology: $t}' > "$D/cfg-model.json"
  "$BIN" status --config "$D/cfg-model.json" --json 2>>"$D/err-model" | jq -c '.topology | del(.source, .cache)'
}
DUMPS=${CACHEPIN_TOPOLOGIES:-/nonexistent}/hwloc/sysfs-tarballs
if ! command -v lstopo-no-graphics >/dev/null; then
  echo "SKIP: sysfs models against a full discovery (no lstopo-no-graphics: Debian package hwloc)"
elif ! command -v bzip2 >/dev/null; then
  echo "SKIP: sysfs models against a full discovery (no bzip2 for the .tar.bz2 dumps: scripts/deps.sh installs it)"
elif ! compgen -G "$DUMPS/*.tar.bz2" >/dev/null; then
  echo "SKIP: sysfs models against a full discovery (no dumps in $DUMPS)"
else
  mkdir -p "$D/dumps"
  for tarball in "$DUMPS"/*.tar.bz2; do
    name=$(basename "$tarball" .tar.bz2)
    if ! tar -xjf "$tarball" -C "$D/dumps" 2>"$D/err-tar" || [ ! -d "$D/dumps/$name" ]; then
      ko "sysfs $name: cannot extract $tarball: $(head -1 "$D/err-tar")"
      continue
    fi
    HWLOC_FSROOT="$D/dumps/$name" lstopo-no-graphics --disallowed --of xml "$D/dumps/$name.xml" 2>/dev/null
    sysfs=$(status_topology "sysfs:$D/dumps/$name")
    full=$(status_topology "$D/dumps/$name.xml")
    if [ -n "$sysfs" ] && [ "$sysfs" = "$full" ]; then ok "sysfs $name: the hook's model is a full discovery's"
    else ko "sysfs $name: the hook's model differs from a full discovery's: $sysfs vs $full"; fi
  done
fi

echo "topocache.sh: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
