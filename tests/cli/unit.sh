#!/usr/bin/env bash
# `cachepin apply --unit` and `release --unit` where they can run without systemd
# (docs/apply.md, "Keep a systemd service pinned"; cachepin(8) apply): the drop-in
# `--dry-run` prints (its path, ExecStartPre=+ with the same request options, each
# word quoted for systemd, ExecStopPost=+), nothing written; the refusals, one line
# naming the option, exit 2: a name that is not a service's, --unit with --cgroup,
# --runtime without --unit, a control character bound for the unit file, and (where
# PID 1 is not systemd) --unit itself.  The real thing runs in the systemd guest
# (tests/vm/systemd-unit.sh, CTest vm.systemd).  The real binary ($1); no root.
set -u
BIN=$(realpath "${1:?usage: unit.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
U=cachepin-clitest-$$.service

# refused NAME WANT-TEXT ARGS...: exit 2, one line on stderr naming WANT-TEXT, nothing on stdout.
refused () {
  local name=$1 want=$2 rc
  shift 2
  "$BIN" "$@" >"$D/out" 2>"$D/err"
  rc=$?
  check "$name: exit" "$rc" 2
  check "$name: one line" "$(wc -l <"$D/err")" 1
  check "$name: nothing on stdout" "$(wc -c <"$D/out")" 0
  contains "$name: names it" "$D/err" "$want"
}

# The drop-in, printed.
"$BIN" apply --unit "$U" --cpus 2 --align l2 --mode exclusive --strict --name 'web "front" 50% $HOME' \
  --config /etc/cachepin/other.json --dry-run >"$D/dry" 2>"$D/err"
check "dry-run: exit" "$?" 0
check "dry-run: first line is the drop-in's path" "$(head -1 "$D/dry")" "/etc/systemd/system/$U.d/50-cachepin.conf"
contains "dry-run: [Service]" "$D/dry" "[Service]"
contains "dry-run: ExecStartPre=+ places each start with the same request, quoted" "$D/dry" \
  "ExecStartPre=+\"$BIN\" \"apply\" \"--unit-start\" \"$U\" \"--cpus\" \"2\" \"--align\" \"l2\" \"--mode\" \"exclusive\" \"--strict\" \"--name\" \"web \\\"front\\\" 50%% \$\$HOME\" \"--config\" \"/etc/cachepin/other.json\""
contains "dry-run: ExecStopPost=+ holds its CPUs" "$D/dry" \
  "ExecStopPost=+\"$BIN\" \"release\" \"--unit-stop\" \"$U\" \"--config\" \"/etc/cachepin/other.json\""
contains "dry-run: says nothing was written" "$D/dry" "dry run: nothing was written"
check "dry-run: no drop-in written" "$(ls -d "/etc/systemd/system/$U.d" "/run/systemd/system/$U.d" 2>/dev/null)" ""
# Options not given are not in the line: the host config's defaults fill them in at each start.
"$BIN" apply --unit "$U" --cpus 1 --runtime --dry-run >"$D/rt" 2>&1
check "dry-run --runtime: under /run" "$(head -1 "$D/rt")" "/run/systemd/system/$U.d/50-cachepin.conf"
check "dry-run: only the options given" "$(grep -c -e '--align\|--smt\|--mode\|--strict\|--config' "$D/rt")" 0

refused "not a service" "--unit: \`web\` is not a service's name (NAME.service)" apply --unit web --cpus 1
refused "a path for a name" "--unit:" apply --unit ../web.service --cpus 1
refused "release: not a service" "--unit:" release --unit web.socket
refused "--unit with --cgroup" "--unit: not with --cgroup" apply --unit "$U" --cgroup /x --cpus 1
refused "--runtime without --unit" "--runtime: only with --unit" apply --cgroup /x --cpus 1 --runtime
refused "a newline for the unit file" "--name: a control character cannot go into a unit file" \
  apply --unit "$U" --cpus 1 --name "$(printf 'a\nExecStart=/bin/evil')" --dry-run

if [ ! -e /run/systemd/system ]; then
  refused "no systemd: apply" "--unit: systemd is not running here (PID 1 is not systemd)" apply --unit "$U" --cpus 1
  refused "no systemd: release" "--unit: systemd is not running here" release --unit "$U"
else
  echo "SKIP: no systemd refusals: PID 1 is systemd here (the systemd guest checks the rest)"
  refused "no such unit" "--unit" apply --unit "$U" --cpus 1
fi
finish unit.sh
