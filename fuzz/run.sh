#!/usr/bin/env bash
# Run one libFuzzer target for a bounded time on its seed corpus.
#   fuzz/run.sh BUILD/fuzz/fuzz_<name> SECONDS
# The seeds (fuzz/corpus/<name>) are read, never written: new inputs go to a
# temporary directory (kept in $FUZZ_KEEP_CORPUS/<name> if that is set).  A crash,
# a leak, an invariant broken (abort), an input slower than 10 s or a 2 GB RSS
# fails the run; the input is saved under $FUZZ_ARTIFACTS (default: next to the
# binary, artifacts/<name>/) and can be replayed with `fuzz_<name> FILE`.
# Prints one summary line; with FUZZ_STATS=FILE also appends
# "<name> <executions> <seconds> <new inputs> <exec/s>" to FILE.  FUZZ_ARGS adds
# libFuzzer options.
set -euo pipefail

bin=${1:?usage: fuzz/run.sh FUZZ-BINARY SECONDS}
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$bin")
name=${name#fuzz_}
seeds=$here/corpus/$name
[ -x "$bin" ] || { echo "fuzz/run.sh: $bin: not an executable" >&2; exit 2; }
[ -d "$seeds" ] || { echo "fuzz/run.sh: no seed corpus $seeds" >&2; exit 2; }

artifacts=${FUZZ_ARTIFACTS:-$(dirname "$bin")/artifacts}/$name
mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/cachepin-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"

args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$artifacts/")
[ -f "$here/dict/$name.dict" ] && args+=(-dict="$here/dict/$name.dict")
# shellcheck disable=SC2206
args+=(${FUZZ_ARGS:-})

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

start=$(date +%s)
set +e
# The first directory receives new inputs; the seeds are only read.
"$bin" "${args[@]}" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))

stat () { sed -n "s/^stat::$1: *//p" "$work/log" | tail -n 1; }
execs=$(stat number_of_executed_units)
rate=$(stat average_exec_per_sec)
rss=$(stat peak_rss_mb)
new=$(find "$work/corpus" -type f | wc -l)
nseeds=$(find "$seeds" -type f | wc -l)

if [ -n "${FUZZ_KEEP_CORPUS:-}" ]; then
  mkdir -p "$FUZZ_KEEP_CORPUS/$name"
  cp -n "$work/corpus/"* "$FUZZ_KEEP_CORPUS/$name/" 2>/dev/null || true
fi

if [ "$rc" != 0 ]; then
  echo "---- fuzz_$name log (last 80 lines) ----"
  tail -n 80 "$work/log"
  echo "----"
  echo "fuzz $name: FAILED (exit $rc) after ${execs:-?} executions in ${elapsed} s; input saved in $artifacts/"
  exit 1
fi
[ -n "$execs" ] || { tail -n 40 "$work/log"; echo "fuzz $name: no final stats from libFuzzer" >&2; exit 1; }
echo "fuzz $name: $execs executions in ${elapsed} s (${rate}/s), $nseeds seeds + $new new inputs, peak RSS ${rss} MB: ok"
if [ -n "${FUZZ_STATS:-}" ]; then
  echo "$name $execs $elapsed $new $rate" >>"$FUZZ_STATS"
fi
