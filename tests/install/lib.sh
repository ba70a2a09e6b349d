# Shared by tests/install/*.sh: the PASS/FAIL counting of tests/e2e/podman.sh.
PASS=0 FAIL=0
pass () { echo "PASS: $*"; PASS=$((PASS + 1)); }
fail () { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
check () { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
finish () { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; }

# groff's warnings (-ww) for man page $1, empty when it renders cleanly.
man_warnings () { groff -man -Tutf8 -ww "$1" 2>&1 >/dev/null; }

# build_deb BUILD_DIR OUT_DIR: the package cpack makes from the tree already compiled in
# BUILD_DIR (CMakeLists.txt, "the Debian package"), into OUT_DIR; prints its path, or
# cpack's log on stderr and fails.
build_deb () {
  if ! cpack --config "$1/CPackConfig.cmake" -G DEB -B "$2" >"$2.cpack.log" 2>&1; then
    cat "$2.cpack.log" >&2; return 1
  fi
  ls "$2"/cachepin_*.deb
}
