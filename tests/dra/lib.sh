# tests/dra/lib.sh: a Kubernetes API server for the DRA tests, on loopback, sourced by them.
# etcd (Debian sid's etcd-server) and dra-apiserver (tests/dra/fetch-apiserver.sh: Debian's
# apiextensions-apiserver with a token file and RBAC rules of our own) serving the
# resource.k8s.io/v1 kinds as CRDs.
#
#   dra_fetch             APISERVER_DIR and ETCD_DIR, or the test skipped (exit 77: the archive
#                         unreachable and nothing cached) or failed (the build failed)
#   dra_up                a scratch directory DRA_D, a CA (DRA_D/ca.crt) and a serving
#                         certificate for 127.0.0.1, the token file DRA_D/tokens.csv (ADMIN_TOKEN,
#                         in system:masters), the rules file DRA_D/rules.json (dra_rules),
#                         etcd, the API server (DRA_URL), the CRDs installed and established
#   dra_api_restart       the API server stopped and started again, same etcd, same files
#   dra_token NAME USER [GROUPS]  a new token for USER added to the token file (printed;
#                         the server reads the file again on its next request)
#   dra_token_drop TOKEN  TOKEN removed from the token file
#   dra_publisher_rules USER [claims]  USER's rules those of cachepin's publisher (and get on
#                         resourceclaims), a token in DRA_D/token
#   dra_run_py SCRIPT ARGS  tests/dra/SCRIPT run against the server, the server stopped after
#   kc TOKEN METHOD PATH [curl args]  one request (JSON; a PATCH a merge patch); the body on
#                         stdout, the HTTP status in $DRA_D/status
#   dra_down              everything stopped, the scratch directory removed
#
# The sourcing script sets HERE (tests/dra) first. Authentication is a static token file
# (the kube-apiserver's CSV format) that the server reads again when it changes: rotating a
# token is adding the new one, moving clients to it and dropping the old one, as projected
# service-account tokens rotate (the old stays valid until it expires). No service-account
# signing key: nothing here issues tokens.
# shellcheck shell=bash

skip () { echo "SKIPPED: $*"; exit 77; }
fail () { echo "FAIL: $*"; [ -z "${DRA_D:-}" ] || dra_logs; exit 1; }

# dra_built VAR SCRIPT WHAT: VAR set to what tests/dra/SCRIPT (a fetch-*.sh) prints, or the
# test skipped (its exit 1: offline, nothing cached) or failed (the build failed).
dra_built () {
  local rc=0 out
  out=$(bash "$HERE/$2") || rc=$?
  case $rc in
    0) printf -v "$1" %s "$out" ;;
    1) skip "$3 from sid: the Debian archive is unreachable and nothing is cached" ;;
    *) fail "$3 could not be built ($2 exit $rc)" ;;
  esac
}

# What every DRA test needs first: root (the cache in /var/cache/cachepin) and TOOLs.
dra_prereqs () {
  [ "$(id -u)" = 0 ] || skip "needs root (the cache in /var/cache/cachepin)"
  for t in "$@"; do command -v "$t" >/dev/null || skip "$t not installed"; done
}

dra_fetch () {
  dra_built APISERVER_DIR fetch-apiserver.sh "the API server"
  ETCD_DIR=$(bash "$HERE/../cri/fetch-debs.sh" --suite sid etcd-server) \
    || skip "etcd-server from sid: the Debian archive is unreachable and nothing is cached"
  [ -x "$ETCD_DIR/usr/bin/etcd" ] || fail "$ETCD_DIR has no usr/bin/etcd"
}

# free_port: a TCP port free on 127.0.0.1 now.
free_port () {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

dra_certs () {
  local d=$DRA_D
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=cachepin-dra-test-ca -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=dra-apiserver \
    -keyout "$d/serving.key" -out "$d/serving.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/serving.ext"
  openssl x509 -req -in "$d/serving.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile "$d/serving.ext" -out "$d/serving.crt" 2>/dev/null
  [ -s "$d/serving.crt" ] || fail "openssl could not make the serving certificate"
}

# dra_token NAME USER [GROUPS]: a new random token for USER (GROUPS comma-separated) added
# to the token file by a rename (the server never reads it half written); printed.
dra_token () {
  local tok
  tok=$1-$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
  { cat "$DRA_D/tokens.csv" 2>/dev/null; printf '%s,%s,uid-%s,"%s"\n' "$tok" "$2" "$2" "${3:-}"; } >"$DRA_D/tokens.new"
  mv "$DRA_D/tokens.new" "$DRA_D/tokens.csv"
  echo "$tok"
}
dra_token_drop () {
  grep -v -F "$1," "$DRA_D/tokens.csv" >"$DRA_D/tokens.new" || true
  mv "$DRA_D/tokens.new" "$DRA_D/tokens.csv"
}

# dra_rules: every authenticated user may read discovery and health (as the
# system:discovery role); the tests add users' rules with jq.
dra_rules () {
  cat >"$DRA_D/rules.json" <<'EOF'
{"users": {}, "groups": {"system:authenticated": [
  {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/openapi/*"]}]}}
EOF
}

# dra_publisher_rules USER [claims]: USER may do what cachepin's publisher does, its node's
# slices (deploy/kubernetes/overlays/nri-dra's ClusterRole, less the claims unless "claims"
# is given: get on resourceclaims, what the kubelet plugin's prepare needs), nothing else;
# the API server started again (it reads the rules at start), and a token of USER in
# DRA_D/token.
dra_publisher_rules () {
  local claims=false
  [ "${2:-}" != claims ] || claims=true
  jq --arg u "$1" --argjson claims "$claims" '.users[$u] = [
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch", "create", "update", "delete"]}]
    + (if $claims then [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]}] else [] end)' \
    "$DRA_D/rules.json" >"$DRA_D/rules.new" && mv "$DRA_D/rules.new" "$DRA_D/rules.json"
  dra_api_restart
  dra_token driver "$1" system:serviceaccounts >"$DRA_D/token"
}

# dra_run_py SCRIPT ARGS: python3 tests/dra/SCRIPT ARGS with the server's address, scratch
# directory and tokens in its environment (DRIVER: the publisher's user), the server stopped
# at exit (the one SCRIPT names in DRA_D/api.pid: it may start the server again), its logs
# shown on a failure; exits with SCRIPT's status, PASS printed on success.
dra_run_py () {
  local script=$1 rc=0
  shift
  echo "$API_PID" >"$DRA_D/api.pid"
  trap 'API_PID=$(cat "$DRA_D/api.pid" 2>/dev/null || echo "$API_PID"); dra_down' EXIT
  DRA_URL=$DRA_URL DRA_D=$DRA_D ADMIN_TOKEN=$ADMIN_TOKEN DRIVER=$DRIVER \
    /usr/bin/python3 "$HERE/$script" "$@" || rc=$?
  [ "$rc" = 0 ] || { [ "$rc" = 77 ] || dra_logs; exit "$rc"; }
  echo "PASS"
}

kc () {
  local tok=$1 method=$2 path=$3 type=application/json
  shift 3
  [ "$method" != PATCH ] || type=application/merge-patch+json
  curl -sS --cacert "$DRA_D/ca.crt" ${tok:+-H "Authorization: Bearer $tok"} -X "$method" \
    -H "Content-Type: $type" -o "$DRA_D/body" -w '%{http_code}' "$@" "$DRA_URL$path" \
    >"$DRA_D/status" 2>"$DRA_D/curl.err" || true
  cat "$DRA_D/body" 2>/dev/null
  rm -f "$DRA_D/body"
}
status () { cat "$DRA_D/status"; }

dra_start_etcd () {
  local port peer
  port=$(free_port) peer=$(free_port)
  "$ETCD_DIR/usr/bin/etcd" --name dra --data-dir "$DRA_D/etcd" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "dra=http://127.0.0.1:$peer" --log-level warn >"$DRA_D/etcd.log" 2>&1 &
  ETCD_PID=$!
  ETCD_URL=http://127.0.0.1:$port
  for _ in $(seq 100); do
    curl -sf "$ETCD_URL/health" 2>/dev/null | grep -q '"health":"true"' && return 0
    kill -0 "$ETCD_PID" 2>/dev/null || fail "etcd exited (see $DRA_D/etcd.log)"
    sleep 0.2
  done
  fail "etcd not healthy after 20 s"
}

dra_start_api () {
  [ -n "${API_PORT:-}" ] || API_PORT=$(free_port)
  DRA_URL=https://127.0.0.1:$API_PORT
  "$APISERVER_DIR/bin/dra-apiserver" --etcd-servers "$ETCD_URL" --bind-address 127.0.0.1 \
    --secure-port "$API_PORT" --tls-cert-file "$DRA_D/serving.crt" --tls-private-key-file "$DRA_D/serving.key" \
    --token-auth-file "$DRA_D/tokens.csv" --authorization-rules-file "$DRA_D/rules.json" \
    >>"$DRA_D/apiserver.log" 2>&1 &
  API_PID=$!
  for _ in $(seq 300); do
    [ "$(kc "$ADMIN_TOKEN" GET /readyz)" = ok ] && return 0
    kill -0 "$API_PID" 2>/dev/null || fail "the API server exited (see $DRA_D/apiserver.log)"
    sleep 0.2
  done
  fail "the API server not ready after 60 s"
}

# stop_pid PID: a child of this shell stopped (SIGTERM, SIGKILL after 10 s) and reaped.
stop_pid () {
  kill "$1" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

dra_stop_api () {
  [ -n "${API_PID:-}" ] || return 0
  stop_pid "$API_PID"
  API_PID=""
}

# dra_api_restart: after a start /readyz says ok before a CRD's storage is (answers 429,
# "storage is (re)initializing", to clients that retry): ready when each kind lists.
dra_api_restart () { dra_stop_api; dra_start_api; dra_served; }

dra_served () {
  local f plural
  for f in "$APISERVER_DIR"/crds/*.json; do
    plural=$(jq -r .spec.names.plural "$f")
    for _ in $(seq 100); do
      kc "$ADMIN_TOKEN" GET "/apis/resource.k8s.io/v1/$plural?limit=1" >/dev/null
      [ "$(status)" = 200 ] && continue 2
      sleep 0.2
    done
    fail "$plural not served 20 s after the start (HTTP $(status))"
  done
}

# dra_crds: the CRDs created and each Established (its resource served).
dra_crds () {
  local f name
  for f in "$APISERVER_DIR"/crds/*.json; do
    kc "$ADMIN_TOKEN" POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions --data-binary "@$f" >"$DRA_D/crd.out"
    [ "$(status)" = 201 ] || fail "CRD $f: HTTP $(status): $(head -c 600 "$DRA_D/crd.out")"
  done
  for f in "$APISERVER_DIR"/crds/*.json; do
    name=$(jq -r .metadata.name "$f")
    for _ in $(seq 100); do
      kc "$ADMIN_TOKEN" GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$name" |
        jq -e '.status.conditions[]? | select(.type == "Established" and .status == "True")' >/dev/null && continue 2
      sleep 0.2
    done
    fail "CRD $name not Established after 20 s"
  done
  dra_served
}

dra_up () {
  DRA_D=$(mktemp -d /tmp/cp-dra.XXXXXX)
  ETCD_PID="" API_PID="" API_PORT=""
  trap dra_down EXIT
  dra_certs
  ADMIN_TOKEN=$(dra_token admin dra-admin system:masters)
  dra_rules
  dra_start_etcd
  dra_start_api
  dra_crds
}

dra_logs () {
  echo "--- the API server's last lines:"
  tail -15 "$DRA_D/apiserver.log" 2>/dev/null
  echo "--- etcd's last lines:"
  tail -5 "$DRA_D/etcd.log" 2>/dev/null
}

dra_down () {
  set +e # the EXIT trap: one failed step must not leave etcd behind
  dra_stop_api
  if [ -n "${ETCD_PID:-}" ]; then
    kill "$ETCD_PID" 2>/dev/null || true
    wait "$ETCD_PID" 2>/dev/null || true
    ETCD_PID=""
  fi
  [ -z "${DRA_D:-}" ] || rm -rf "$DRA_D"
  DRA_D=""
}
