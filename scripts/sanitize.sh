#!/usr/bin/env bash
# Build everything with AddressSanitizer + UndefinedBehaviorSanitizer into
# ./build-asan, and run the unit tests (the ledger's fault-injection tests
# included: unit.test_ledger_fault) and the CLI tests on it.  Any sanitizer
# report fails the test that triggered it (abort_on_error, halt_on_error,
# -fno-sanitize-recover=all), leaks included.
#   bash scripts/sanitize.sh [CTEST-LABEL-REGEX]     default "unit|cli"
#   CC=clang bash scripts/sanitize.sh                 the same with clang, in build-asan-clang
set -euo pipefail
cd "$(dirname "$0")/.."
labels=${1:-unit|cli}
dir=build-asan
cc=${CC:-cc}
case "$cc" in *clang*) dir=build-asan-clang ;; esac

# -Werror with gcc (as CI builds); clang warns where gcc does not (scripts/fuzz.sh).
werror=ON
case "$cc" in *clang*) werror=OFF ;; esac
# No global -DCACHEPIN_FAULT_INJECTION: tests/stress builds a fault-injection copy of
# the library (unit.test_ledger_fault, stress.crash-points), and the other tests
# must run against the library the binary ships.
CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCACHEPIN_SANITIZE=address,undefined \
  -DCACHEPIN_WERROR=$werror -UCMAKE_C_FLAGS >/dev/null
cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1 \
  || { tail -n 40 "$dir/build.log"; echo "scripts/sanitize.sh: build failed ($dir/build.log)" >&2; exit 1; }

# detect_leaks: LeakSanitizer at exit; abort_on_error: a report is a failing exit
# status even where a test only looks at "non-zero"; the hook's children inherit these.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Leaks inside libraries we cannot fix, each with its reason (scripts/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
cd "$dir"
ctest --output-on-failure -L "$labels"
