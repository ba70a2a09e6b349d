#!/usr/bin/env bash
# The Debian package, on this host: built with cpack from the build tree, installed
# with dpkg into /usr, it places a podman container through the hooks.d files podman
# reads by default (no --hooks-dir), its version is the binary's, and `dpkg --purge`
# leaves nothing behind: no file, no /etc/cachepin, no /run/cachepin (packaging/debian/postrm).
#   bash tests/install/deb.sh BUILD_DIR
# Root, podman, runc, jq, cpack, dpkg-shlibdeps; exit 77 (skipped) without them, or when
# a cachepin that is not this package's is on the host (its files and state are not ours).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "$1")
for tool in podman runc jq cpack dpkg-shlibdeps busybox; do
  command -v "$tool" >/dev/null || { echo "SKIP: needs $tool"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (dpkg -i)"; exit 77; }

installed () { dpkg-query -W -f='${Status}' cachepin 2>/dev/null | grep -q 'ok installed\|config-files'; }
# A previous run that died before its trap: its package goes first.
if installed; then
  echo "purging the cachepin package a previous run left"
  dpkg --purge cachepin >/dev/null || { echo "FAIL: cannot purge the installed cachepin"; exit 1; }
fi
for p in /usr/bin/cachepin /etc/cachepin /run/cachepin /usr/share/containers/oci/hooks.d/cachepin-create.json; do
  [ -e "$p" ] && { echo "SKIP: $p exists and no package owns it: not this test's to replace"; exit 77; }
done

DIR=$(mktemp -d /tmp/cachepin-deb.XXXXXX)
IMAGE=localhost/cachepin-install-busybox:latest
cleanup () {
  podman rm -f cachepin-install-pinned >/dev/null 2>&1
  podman rmi -f "$IMAGE" >/dev/null 2>&1
  installed && dpkg --purge cachepin >/dev/null 2>&1
  rm -rf "$DIR"
}
trap cleanup EXIT

# Built from the tree already compiled, whatever its prefix (/usr/local by default):
# the package installs into /usr (CPACK_INSTALL_PREFIX), its hooks naming /usr/bin/cachepin.
DEB=$(build_deb "$BUILD" "$DIR/pkg") || { fail "cpack -G DEB"; finish; exit; }
check "package depends on its shared libraries (shlibdeps): $(dpkg-deb -f "$DEB" Depends)" \
  bash -c "dpkg-deb -f '$DEB' Depends | grep -q libhwloc"
check "package depends on libprotobuf-c1 (the NRI plugin's messages)" \
  bash -c "dpkg-deb -f '$DEB' Depends | grep -q libprotobuf-c1"
# libsystemd is dlopen()ed, invisible to shlibdeps: recommended by hand (CMakeLists.txt).
check "package recommends libsystemd0 and does not depend on it: $(dpkg-deb -f "$DEB" Recommends)" \
  bash -c "dpkg-deb -f '$DEB' Recommends | grep -q libsystemd0 && ! dpkg-deb -f '$DEB' Depends | grep -q libsystemd"

# The NRI plugin's files: shipped, inert. Nothing in /opt (Debian policy 9.1.1, and a file
# in containerd's plugin_path /opt/nri/plugins would be started by containerd unasked).
contents=$(dpkg-deb -c "$DEB" | awk '{print substr($6, 2)}')
check "package ships /usr/lib/systemd/system/cachepin-nri.service" grep -qx /usr/lib/systemd/system/cachepin-nri.service <<< "$contents"
check "package ships /usr/libexec/cachepin/50-cachepin" grep -qx /usr/libexec/cachepin/50-cachepin <<< "$contents"
check "package ships nothing under /opt [$(grep '^/opt' <<< "$contents" | tr '\n' ' ')]" bash -c "! grep -q '^/opt' <<< '$contents'"

# What exists before, so that the purge is judged on what the package added.
dpkg-deb -c "$DEB" | awk '{print substr($6, 2)}' | sed 's|/$||' | grep . > "$DIR/paths"
while read -r p; do [ -e "$p" ] && echo "$p"; done < "$DIR/paths" > "$DIR/existed"

dpkg -i "$DEB" >"$DIR/dpkg.log" 2>&1 || { cat "$DIR/dpkg.log"; fail "dpkg -i"; finish; exit; }
pass "dpkg -i $(basename "$DEB")"
check "package version = cachepin --version ($(/usr/bin/cachepin --version))" \
  [ "cachepin $(dpkg-query -W -f='${Version}' cachepin)" = "$(/usr/bin/cachepin --version)" ]
check "/etc/cachepin/config.json is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' cachepin | grep -q '^ /etc/cachepin/config.json '"
check "the hooks.d files name /usr/bin/cachepin" \
  [ "$(jq -r .hook.path /usr/share/containers/oci/hooks.d/cachepin-{create,poststop}.json | sort -u)" = /usr/bin/cachepin ]
check "man cachepin finds the page" bash -c "man -w cachepin | grep -q /usr/share/man/man8/cachepin.8"
check "man cachepin-annotations finds the page" bash -c "man -w 7 cachepin-annotations | grep -q man7/cachepin-annotations.7"

check "cachepin-nri.service runs /usr/bin/cachepin nri" grep -qx 'ExecStart=/usr/bin/cachepin nri' /usr/lib/systemd/system/cachepin-nri.service
check "50-cachepin execs /usr/bin/cachepin nri" grep -qx 'exec /usr/bin/cachepin nri' /usr/libexec/cachepin/50-cachepin
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify /usr/lib/systemd/system/cachepin-nri.service 2>&1)
  check "systemd-analyze verify of the installed unit: nothing said (binary, man page there) [$out]" [ -z "$out" ]
fi
enabled=$(find /etc/systemd/system -name cachepin-nri.service 2>/dev/null)
check "cachepin-nri.service is not enabled by the package [$enabled]" [ -z "$enabled" ]

# A local busybox image (no pull), as tests/e2e/podman.sh builds it.
mkdir -p "$DIR/rootfs/bin"
cp "$(command -v busybox)" "$DIR/rootfs/bin/busybox"
for c in sh grep cat sleep; do ln -s busybox "$DIR/rootfs/bin/$c"; done
tar -C "$DIR/rootfs" -cf "$DIR/rootfs.tar" . && podman import -q "$DIR/rootfs.tar" "$IMAGE" >/dev/null
# runc: crun refuses this host's hybrid cgroup layout; podman's default rlimits
# exceed what this sandbox grants (docs/troubleshooting.md). No --hooks-dir: podman's default.
RUN=(podman --runtime runc run --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
cpus_of () { awk '/^Cpus_allowed_list/ {print $2}'; }

all=$("${RUN[@]}" --rm "$IMAGE" grep Cpus_allowed_list /proc/self/status | cpus_of)
check "no annotation: left alone (all of $all), the hook did not run (no /run/cachepin)" [ ! -e /run/cachepin ]
want=$(/usr/bin/cachepin plan --cpus 1 --json | jq -r .cpus)
got=$("${RUN[@]}" --rm --annotation cachepin.io/cpus=1 "$IMAGE" grep Cpus_allowed_list /proc/self/status | cpus_of)
check "cachepin.io/cpus=1: placed by the installed hook on $want (got $got)" [ -n "$got" ] && [ "$got" = "$want" ]
check "podman run --rm: poststop released it" [ "$(jq '.entries | length' /run/cachepin/ledger.json)" = 0 ]
"${RUN[@]}" -d --name cachepin-install-pinned --annotation cachepin.io/cpus=1 "$IMAGE" sleep 600 >/dev/null
check "a running placed container is in /run/cachepin/ledger.json" \
  [ "$(jq -r '.entries[0].cpus' /run/cachepin/ledger.json)" = "$want" ]
podman rm -f cachepin-install-pinned >/dev/null 2>&1
out=$("${RUN[@]}" --rm --annotation cachepin.io/cpus=1 --annotation cachepin.io/smt=pe9 "$IMAGE" true 2>&1)
check "a bad annotation is refused with the hook's line" grep -q 'cachepin hook: annotation cachepin.io/smt: invalid value `pe9`' <<< "$out"

dpkg --purge cachepin >"$DIR/dpkg.log" 2>&1 || { cat "$DIR/dpkg.log"; fail "dpkg --purge"; }
check "dpkg --purge: the package is gone" bash -c "! dpkg-query -W cachepin >/dev/null 2>&1"
left=$(while read -r p; do [ -e "$p" ] && ! grep -qxF "$p" "$DIR/existed" && echo "$p"; done < "$DIR/paths")
check "dpkg --purge: nothing the package added is left [$left]" [ -z "$left" ]
check "dpkg --purge: /etc/cachepin is gone" [ ! -e /etc/cachepin ]
check "dpkg --purge: /run/cachepin (the ledger) is gone" [ ! -e /run/cachepin ]
finish
