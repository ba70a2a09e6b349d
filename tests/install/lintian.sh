#!/usr/bin/env bash
# The Debian package passes lintian: no error and no warning (policy's stripped binary,
# compressed man pages, copyright, changelog, a maintainer with a real mail host), and the
# binary has full RELRO (-z now; lintian only mentions it, as an info tag).
#   bash tests/install/lintian.sh BUILD_DIR
# cpack, dpkg-shlibdeps, lintian, readelf; exit 77 (skipped) without them.
# Before packaging/deb-files.cmake (7a108f2), lintian 2.116 said: E bogus-mail-host
# (cachepin@localhost), E no-changelog, E no-copyright-file, E uncompressed-manual-page (x2),
# E unstripped-binary-or-object, W extended-description-line-too-long, I hardening-no-bindnow.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "$1")
for tool in cpack dpkg-shlibdeps lintian readelf; do
  command -v "$tool" >/dev/null || { echo "SKIP: needs $tool (scripts/deps.sh)"; exit 77; }
done
DIR=$(mktemp -d /tmp/cachepin-lintian.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

DEB=$(build_deb "$BUILD" "$DIR/pkg") || { fail "cpack -G DEB"; finish; exit; }
# Info tags shown too (--display-info), so that the log says what is left below warnings.
out=$(lintian --display-info --fail-on error,warning "$DEB" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/  lintian: /'
check "lintian $(basename "$DEB"): no error, no warning (exit $rc)" [ "$rc" = 0 ]

dpkg-deb -x "$DEB" "$DIR/root"
bin=$DIR/root/usr/bin/cachepin
check "usr/bin/cachepin: bound at start (-z now: DT_FLAGS BIND_NOW)" \
  bash -c "readelf -d '$bin' | grep -q 'BIND_NOW'"
check "usr/bin/cachepin: a read-only GOT after relocation (GNU_RELRO)" \
  bash -c "readelf -lW '$bin' | grep -q GNU_RELRO"
check "usr/bin/cachepin: stripped (no .symtab)" bash -c "! readelf -SW '$bin' | grep -q '\.symtab'"
finish
