#!/usr/bin/env bash
# Run the unit test binaries (CTest's unit.test_*) under valgrind's memcheck: no
# invalid access, no use of uninitialised memory, no bad syscall argument, no
# definite or indirect leak.  Builds ./build-valgrind (a plain build, as shipped)
# and runs each test with the environment CTest would give it.
#   bash scripts/valgrind.sh [TEST-NAME-REGEX]      default: ^unit\.
#   VALGRIND_SKIP=REGEX                             tests not to run (default below)
#
# The verdict comes from valgrind's logs, one per process, not from
# --error-exitcode: the tests fork (cgroup members, lock holders, sandboxed
# children), every forked child gets its own leak check at exit, and there the
# parent's heap it inherited is reported as lost although the parent frees it;
# --error-exitcode would also change the exit status those children report to
# the test.  So: the test's own process must have no error at all, leaks
# included; a forked child must have no error other than a leak.
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-^unit\\.}
command -v valgrind >/dev/null || { echo "scripts/valgrind.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }

# unit.test_scale(.captured): 3000 placements and ledger commits on 384-CPU topologies: 5 s
#   natively, over 6 minutes under valgrind (clean when last run:
#   VALGRIND_SKIP='^$' bash scripts/valgrind.sh test_scale), and nothing the other
#   tests do not already run under valgrind; it runs under ASan in sanitize.sh.
# unit.layers*: `cmake -P` over the sources, no program of ours to check (and the
#   two that prove the check fails pass by the message CTest matches, not by exit 0).
skip=${VALGRIND_SKIP:-^unit\\.(test_scale(\\.captured)?|layers.*)$}

cmake -S . -B build-valgrind -DCACHEPIN_WERROR=ON >/dev/null
cmake --build build-valgrind -j"$(nproc)" >build-valgrind/build.log 2>&1 \
  || { tail -n 40 build-valgrind/build.log; echo "scripts/valgrind.sh: build failed (build-valgrind/build.log)" >&2; exit 1; }

logs=build-valgrind/valgrind
rm -rf "$logs"
mkdir -p "$logs"
# status, name, working directory, environment and command (fields joined by \x1f),
# from CTest itself.
python3 - "$filter" "$skip" >"$logs/tests.tsv" <<'PY'
import json, re, subprocess, sys
filt, skip = re.compile(sys.argv[1]), re.compile(sys.argv[2])
info = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd="build-valgrind",
                                 check=True, capture_output=True, text=True).stdout)
for t in info["tests"]:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if "unit" not in props.get("LABELS", []) or not filt.search(t["name"]):
        continue
    status = "skip" if skip.search(t["name"]) else "run"
    print("\t".join([status, t["name"], props.get("WORKING_DIRECTORY", "."),
                     "\x1f".join(props.get("ENVIRONMENT", [])), "\x1f".join(t["command"])]))
PY

supp=$PWD/scripts/valgrind.supp
failed=()
while IFS=$'\t' read -r status name workdir envs cmd; do
  if [ "$status" = skip ]; then
    echo "skip $name (VALGRIND_SKIP)"
    continue
  fi
  IFS=$'\x1f' read -r -a envlist <<<"$envs"
  IFS=$'\x1f' read -r -a cmdlist <<<"$cmd"
  out=$PWD/$logs/$name
  start=$(date +%s)
  set +e
  (cd "$workdir" && env "${envlist[@]}" valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
     --show-leak-kinds=definite,indirect --track-origins=yes --suppressions="$supp" \
     --log-file="$out.%p.log" "${cmdlist[@]}") >"$out.out" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  verdict=0
  python3 scripts/valgrind-verdict.py "$out" >"$out.verdict" || verdict=$?
  if [ "$rc" = 0 ] && [ "$verdict" = 0 ]; then
    echo "ok   $name ($secs s; $(cat "$out.verdict"))"
  elif [ "$rc" = 77 ] && [ "$verdict" = 0 ]; then
    # 77: some of its tests skipped themselves, none failed (every unit test's
    # SKIP_RETURN_CODE, testutil.h's tu_exit()); what ran was clean.
    echo "skip $name (it skipped some of its tests; $secs s; $(cat "$out.verdict"))"
  else
    failed+=("$name")
    echo "FAIL $name (test exit $rc, $secs s)"
    [ "$rc" = 0 ] || tail -n 30 "$out.out"
    cat "$out.verdict"
  fi
done <"$logs/tests.tsv"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "scripts/valgrind.sh: ${failed[*]} failed under valgrind (logs in $logs/)" >&2
  exit 1
fi
