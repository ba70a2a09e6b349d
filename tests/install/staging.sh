#!/usr/bin/env bash
# `cmake --install` into a staging directory (DESTDIR) puts every file of the layout
# (README.md "Install") where it belongs, with hooks.d files that name the installed
# binary, a host configuration the binary accepts and that equals the defaults, man
# pages that render, and the completion; a second install keeps an edited config.
#   bash tests/install/staging.sh BUILD_DIR VERSION
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "$1") VERSION=$2
command -v jq >/dev/null && command -v groff >/dev/null || { echo "SKIP: needs jq and groff"; exit 77; }
DIR=$(mktemp -d /tmp/cachepin-install.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

# $1: the prefix given to `cmake --install`; the staged tree is $DIR/$1.
layout () {
  local prefix=$1 root=$DIR/$1
  mkdir -p "$DIR/cwd"
  (cd "$DIR/cwd" && DESTDIR=$root cmake --install "$BUILD" --prefix "$prefix") >"$DIR/log" 2>&1 ||
    { fail "install to $prefix: $(cat "$DIR/log")"; return; }
  check "$prefix: the install wrote nothing into its working directory [$(ls -A "$DIR/cwd")]" [ -z "$(ls -A "$DIR/cwd")" ]
  local bin=$root$prefix/bin/cachepin share=$root$prefix/share cfg=$root/etc/cachepin/config.json
  check "$prefix: bin/cachepin is executable" [ -x "$bin" ]
  # libsystemd is dlopen()ed on the systemd path only (hook/host/systemd.h): every other
  # run would pay for loading it and its own dependencies (issue 12).
  check "$prefix: bin/cachepin does not NEED libsystemd [$(readelf -d "$bin" | grep -o 'libsystemd[^]]*')]" \
    bash -c "readelf -d '$bin' | grep NEEDED | grep -q . && ! readelf -d '$bin' | grep NEEDED | grep -q libsystemd"
  check "$prefix: --version is the project's ($VERSION)" [ "$("$bin" --version)" = "cachepin $VERSION" ]
  for stage in create:createRuntime poststop:poststop; do
    local f=$share/containers/oci/hooks.d/cachepin-${stage%%:*}.json
    check "$prefix: $(basename "$f") parses" jq -e -c . "$f"
    check "$prefix: $(basename "$f") path is the installed binary" [ "$(jq -r .hook.path "$f")" = "$prefix/bin/cachepin" ]
    check "$prefix: $(basename "$f") runs the ${stage#*:} stage" \
      [ "$(jq -c '[.hook.args, .stages]' "$f")" = "[[\"cachepin\",\"hook\",\"${stage#*:}\"],[\"${stage#*:}\"]]" ]
    check "$prefix: $(basename "$f") only for cachepin.io/ annotations" \
      [ "$(jq -c .when "$f")" = '{"annotations":{"^cachepin\\.io/":".*"}}' ]
  done
  # The installed config is read the way the hook reads it; it changes nothing.
  printf '{}' > "$DIR/empty.json"
  local got want
  got=$("$bin" status --json --config "$cfg" | jq -c '.config | del(.path)')
  want=$("$bin" status --json --config "$DIR/empty.json" | jq -c '.config | del(.path)')
  check "$prefix: /etc/cachepin/config.json is accepted ($(jq -r .error <<< "$got"))" [ "$(jq -r .error <<< "$got")" = null ]
  check "$prefix: /etc/cachepin/config.json equals the defaults" [ "$got" = "$want" ]
  for page in man8/cachepin.8 man7/cachepin-annotations.7; do
    check "$prefix: $page renders without warnings" [ -s "$share/man/$page" ] && [ -z "$(man_warnings "$share/man/$page")" ]
    check "$prefix: $page names version $VERSION" grep -q "^\.TH .*\"cachepin $VERSION\"" "$share/man/$page"
  done
  check "$prefix: bash completion installed" bash -c ". '$share/bash-completion/completions/cachepin' && complete -p cachepin >/dev/null"
}
layout /usr/local
layout /opt/cachepin # the hooks follow the prefix given at install time

# An admin's edit survives a reinstall (an upgrade from source).
cfg=$DIR/usr/local/etc/cachepin/config.json
printf '{"reserved": "0"}\n' > "$cfg"
DESTDIR=$DIR/usr/local cmake --install "$BUILD" --prefix /usr/local >/dev/null 2>&1
check "reinstall keeps an edited /etc/cachepin/config.json" [ "$(cat "$cfg")" = '{"reserved": "0"}' ]
finish
