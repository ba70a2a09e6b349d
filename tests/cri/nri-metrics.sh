#!/usr/bin/env bash
# The NRI plugin's metrics listener scraped by a real Prometheus while containerd 2.1.9's CRI
# runs pods, driven as the kubelet drives it (docs/metrics.md, "The NRI plugin's listener").
#
#   tests/cri/nri-metrics.sh --cachepin BIN --stubs DIR
#
# containerd from Debian sid and Prometheus from Debian bookworm's prometheus package (both
# fetched by fetch-debs.sh and run from the unpacked copy, never installed); the plugin on
# containerd's private NRI socket with --metrics-listen on a free loopback port, Prometheus
# scraping it every second into a scratch TSDB. Checked through Prometheus' HTTP API
# (/api/v1/query), as an admin's queries would see it: the target is up and the plugin
# registered; a pod asking for 1 CPU placed: cachepin_placements_total{route="nri"} goes up
# by one, the held CPUs of the LLCs (sum of cachepin_llc_cpus{state="held"}) by one and the
# free ones down by one, the CreateContainer histogram counts its call; an invalid annotation
# refused: cachepin_refusals_total{route="nri",reason="invalid"} up by one; the pod removed:
# cachepin_releases_total{route="nri"} up by one and the held CPUs back; /readyz 200 while
# registered; `promtool check metrics` passes on the exposition as served.
#
# Exit: 0 passed, 1 failed, 77 skipped (what nri.sh skips for, or no prometheus .deb to be
# had). CACHEPIN_CRI_KEEP=1 keeps the scratch directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args nri-metrics "$@"
cri_prereqs
cri_fetch sid containerd=2.1.9+ds1-5
PROM=$(bash "$HERE/fetch-debs.sh" --suite bookworm prometheus) && [ -x "$PROM/usr/bin/prometheus" ] \
  || skip "prometheus from bookworm: the Debian archive is unreachable and nothing is cached"

cri_scratch nrim
NRISOCK=$D/nri.sock
PLUGIN_PID="" PROM_PID=""
PODS=()
cleanup () {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  nri_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port () { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MPORT=$(free_port) PPORT=$(free_port)

mkdir -p -m 0700 "$D/cpstate"
jq -n --arg s "$D/cpstate" '{"state_dir": $s, "log_level": "debug"}' >"$D/cachepin.json"
config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
mkdir -p "$D/nri-plugins" "$D/nri-conf"
cat >"$D/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cachepin
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF

# The pods as nri.sh runs them (nri-lib.sh: run_pod, create_start), removed with their containers.
teardown () {
  local pod=$1 c p kept=()
  shift
  for c in "$@"; do cri stop "$c" && cri rm "$c" || bad "stop/remove $c"; done
  cri stop-pod "$pod" && cri rm-pod "$pod" || bad "stop/remove pod $pod"
  for p in "${PODS[@]}"; do [ "$p" = "$pod" ] || kept+=("$p"); done
  PODS=(${kept[@]+"${kept[@]}"})
}

# q EXPR: the value of a PromQL instant query that gives one sample ("" when none).
q () {
  "$PY" - "$PPORT" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
port, expr = sys.argv[1], sys.argv[2]
url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
try:
    r = json.load(urllib.request.urlopen(url, timeout=5))
    res = r["data"]["result"]
    print(res[0]["value"][1] if len(res) == 1 else "")
except Exception:
    print("")
PY
}
# until_q EXPR WANT: EXPR's value is WANT within 20 s (Prometheus scrapes every second).
until_q () {
  local v=""
  for _ in $(seq 100); do
    v=$(q "$1")
    [ "$v" = "$2" ] && return 0
    sleep 0.2
  done
  echo "  $1 = ${v:-no sample}, want $2"
  return 1
}
num () { local v; v=$(q "$1"); echo "${v:-0}"; }

# ---- the test -------------------------------------------------------------------------------
build_image || { echo "FAIL: building the image"; exit 1; }
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image
NRI_PLUGIN_ARGS=(--metrics-listen "127.0.0.1:$MPORT")
if start_plugin; then pass "the plugin registered with --metrics-listen 127.0.0.1:$MPORT"
else bad "the plugin did not start"; exit 1; fi
"$PROM/usr/bin/prometheus" --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/tsdb" \
  --web.listen-address="127.0.0.1:$PPORT" >"$D/prometheus.log" 2>&1 7>&- 8<&- &
PROM_PID=$!
echo "prometheus: $("$PROM/usr/bin/prometheus" --version 2>&1 | head -1)"
check "Prometheus scrapes the plugin: up{job=\"cachepin\"} 1" until_q 'up{job="cachepin"}' 1 \
  || tail -5 "$D/prometheus.log"
check "cachepin_nri_registered 1" until_q cachepin_nri_registered 1
check "/readyz: 200 while registered" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/readyz")" = 200 ]

placed0=$(num 'cachepin_placements_total{route="nri"}')
held0=$(num 'sum(cachepin_llc_cpus{state="held"})')
free0=$(num 'sum(cachepin_llc_cpus{state="free"})')
refused0=$(num 'cachepin_refusals_total{route="nri",reason="invalid"}')
released0=$(num 'cachepin_releases_total{route="nri"}')
creates0=$(num 'cachepin_nri_request_duration_seconds_count{method="CreateContainer"}')
echo "before: placed $placed0, held $held0, free $free0, refused (invalid) $refused0, released $released0"

# 1. A pod asking 1 CPU: placed, and the counters and gauges say so.
if run_pod "$TAG-pod" cachepin.io/cpus=1 && create_start "$POD" app "$TAG-pod" pod:cachepin.io/cpus=1; then
  P1=$POD C1=$C
  check "placed: the ledger holds 1 CPU ($(held "$C1"))" [ "$(ncpus "$(held "$C1")")" = 1 ]
  check "placed: cachepin_placements_total{route=\"nri\"} $placed0 -> $((placed0 + 1))" \
    until_q 'cachepin_placements_total{route="nri"}' $((placed0 + 1))
  check "placed: the LLCs' held CPUs $held0 -> $((held0 + 1))" \
    until_q 'sum(cachepin_llc_cpus{state="held"})' $((held0 + 1))
  check "placed: the LLCs' free CPUs $free0 -> $((free0 - 1))" \
    until_q 'sum(cachepin_llc_cpus{state="free"})' $((free0 - 1))
  creates=$(num 'cachepin_nri_request_duration_seconds_count{method="CreateContainer"}')
  check "placed: the CreateContainer histogram counted its calls ($creates0 -> $creates)" \
    [ "${creates%.*}" -gt "${creates0%.*}" ]
else
  bad "placed: the pod asking 1 CPU did not run"
fi

# 2. An invalid annotation: refused, counted as invalid.
if run_pod "$TAG-bad" cachepin.io/cpus=1 cachepin.io/smt=pe1; then
  check "refused: CreateContainer with cachepin.io/smt=pe1 fails" \
    fails cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-bad" pod:cachepin.io/cpus=1 pod:cachepin.io/smt=pe1
  check "refused: cachepin_refusals_total{route=\"nri\",reason=\"invalid\"} $refused0 -> $((refused0 + 1))" \
    until_q 'cachepin_refusals_total{route="nri",reason="invalid"}' $((refused0 + 1))
  teardown "$POD"
else
  bad "refused: the pod with cachepin.io/smt=pe1 did not run"
fi

# 3. The placed pod gone: released, its CPU free again.
if [ -n "${C1:-}" ]; then
  teardown "$P1" "$C1"
  check "released: cachepin_releases_total{route=\"nri\"} $released0 -> $((released0 + 1))" \
    until_q 'cachepin_releases_total{route="nri"}' $((released0 + 1))
  check "released: the LLCs' held CPUs back to $held0" until_q 'sum(cachepin_llc_cpus{state="held"})' "$held0"
  check "released: the LLCs' free CPUs back to $free0" until_q 'sum(cachepin_llc_cpus{state="free"})' "$free0"
else
  bad "released: no placed container to remove"
fi

# 4. The exposition as served passes promtool.
curl -s "http://127.0.0.1:$MPORT/metrics" >"$D/exposition.prom"
if "$PROM/usr/bin/promtool" check metrics <"$D/exposition.prom" >"$D/promtool.out" 2>&1; then
  pass "promtool check metrics: the exposition as served ($(grep -c '^cachepin_' "$D/exposition.prom") samples)"
else
  bad "promtool check metrics: $(head -3 "$D/promtool.out")"
fi
echo "a scrape (a few lines):"
grep -E '^cachepin_(placements_total\{route="nri"\}|llc_cpus\{llc="0"|nri_registered|nri_request_duration_seconds_count)' \
  "$D/exposition.prom" | sed 's/^/  /'

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
