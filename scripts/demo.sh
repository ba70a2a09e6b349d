#!/usr/bin/env bash
# The main job, on this host: install, build, and run a real container (runc, busybox)
# whose cachepin.io/ annotations make the cachepin hook place it; show where it
# landed, from inside the container and from the ledger.
#   CPUS=N SMT=pe0|pe0-first|cores|any bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "scripts/demo.sh: run as root (runc and cgroup writes)" >&2; exit 2; }
CACHEPIN_WITH_VM=0 CACHEPIN_WITH_CHECKS=0 bash scripts/deps.sh
bash scripts/build.sh cachepin >/dev/null

export CACHEPIN=$PWD/build/cachepin RUNTIME=runc
. tests/e2e/lib.sh
e2e_setup
set +e  # lib.sh reports failures itself
ncpus=$(nproc)
CPUS=${CPUS:-$(( ncpus > 1 ? ncpus / 2 : 1 ))}
SMT=${SMT:-pe0-first}

echo "== what cachepin would do on this host (cachepin plan --cpus $CPUS --smt $SMT)"
"$CACHEPIN" plan --cpus "$CPUS" --smt "$SMT"
echo
echo "== a busybox container under runc with cachepin.io/cpus=$CPUS cachepin.io/smt=$SMT"
e2e_start demo "{\"cachepin.io/cpus\": \"$CPUS\", \"cachepin.io/smt\": \"$SMT\"}"
if [ "$E2E_RC" != 0 ]; then echo "$E2E_OUT"; exit 1; fi
echo "inside the container:"
runc exec demo grep _allowed_list /proc/self/status | sed 's/^/  /'
echo "ledger ($E2E_STATE/ledger.json):"
jq -c '.entries[]' "$E2E_STATE/ledger.json" | sed 's/^/  /'
runc delete -f demo >/dev/null
echo "after runc delete (poststop): $(jq -c '.entries' "$E2E_STATE/ledger.json") held"
