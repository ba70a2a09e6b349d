#!/usr/bin/env bash
# docs.blocks: run the command blocks of README.md and docs/*.md against the built binary,
# so that the examples cannot drift from the code (issue 21, item 5).
#   run-blocks.sh PATH-TO-cachepin plain|host [FILE.md...]   (default: README.md docs/*.md)
# Each command block carries a marker saying whether it runs here and what it needs
# (tests/docs/blocks.py describes them); an unmarked one fails. `plain` runs the blocks
# that need nothing of the host (docs.blocks: they run on any clone, as any user), `host`
# the ones that need root, podman, runc, a cpuset hierarchy or a captured topology
# (docs.blocks.host). The selected blocks of one file run in order in one bash
# (set -eE -o pipefail), as a newcomer would type them, in a temporary working directory,
# with:
#   - PATH: a `cachepin` that execs the built binary and adds `--config T/config.json` to
#     each command that takes one and was not given one, so the host config and the ledger
#     (state_dir T/state) are the test's own, never /etc/cachepin or /run/cachepin;
#   - podman: CONTAINERS_CONF naming T/hooks.d (the shipped hook files with the built
#     binary and that config), nothing else: a podman command runs as the docs write it
#     (their --ulimit options included).
# Blocks that need root, podman, runc or a cpuset hierarchy touch host-global things (real
# cgroups, podman's store, /tmp/bb): run `host` under `flock /tmp/cachepin-global.lock`.
# A block whose needs this host lacks is skipped, said by name, and the other blocks still
# run; any skip makes the exit 77 (unless something failed: 1).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(realpath "${1:?usage: run-blocks.sh PATH-TO-cachepin plain|host [FILE.md...]}")
SELECT=${2:-}
case "$SELECT" in plain|host) ;; *) echo "usage: run-blocks.sh PATH-TO-cachepin plain|host [FILE.md...]" >&2; exit 2 ;; esac
shift 2
if [ $# -eq 0 ]; then set -- "$SRC/README.md" "$SRC"/docs/*.md; fi
FILES=()   # relative to the source tree when inside it, as the messages name them
for f in "$@"; do f=$(realpath "$f"); FILES+=("${f#"$SRC"/}"); done

T=$(mktemp -d /tmp/cachepin-docs.XXXXXX)
# What the podman examples leave behind, as they would for a reader: removed again when
# this run made them (the image and the directory of the docs' local busybox). Only the
# host blocks make them: a plain run leaves them alone (a host run may be using them).
DOCS_IMAGE=localhost/busybox DOCS_DIR=/tmp/bb
image_was=1 dir_was=1
if [ "$SELECT" = host ]; then
  image_was=0 dir_was=0
  command -v podman >/dev/null && [ "$(id -u)" = 0 ] && podman image exists "$DOCS_IMAGE" 2>/dev/null && image_was=1
  [ -e "$DOCS_DIR" ] && dir_was=1
fi
cleanup () {
  [ "$image_was" = 1 ] || [ "$(id -u)" != 0 ] || { command -v podman >/dev/null && podman rmi -f "$DOCS_IMAGE" >/dev/null 2>&1; }
  [ "$dir_was" = 1 ] || rm -rf "$DOCS_DIR"
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/bin" "$T/hooks.d"   # (not T/state: cachepin makes it, 0700, or refuses it)
jq -n --arg s "$T/state" '{state_dir: $s, kubelet_state: ""}' > "$T/config.json"

# The wrapper. A command takes --config when its --help names it (plan may one day).
cat > "$T/bin/cachepin" <<EOF
#!/usr/bin/env bash
bin='$BIN'
cfg='$T/config.json'
case " \$* " in *" --config "*|*" --config="*) exec "\$bin" "\$@" ;; esac
if [ \$# -gt 0 ] && [ "\${1#-}" = "\$1" ] && "\$bin" "\$1" --help 2>&1 | grep -q -- '--config'; then
  sub=\$1; shift; exec "\$bin" "\$sub" --config "\$cfg" "\$@"
fi
exec "\$bin" "\$@"
EOF
chmod +x "$T/bin/cachepin"
export PATH="$T/bin:$PATH"

# podman's hooks: the shipped templates, the built binary, the test's config.
for stage in createRuntime poststop; do
  name=create; [ "$stage" = poststop ] && name=poststop
  jq --arg p "$BIN" --arg c "$T/config.json" --arg s "$stage" \
    '.hook.path = $p | .hook.args = ["cachepin", "hook", "--config", $c, $s]' \
    "$SRC/deploy/hooks.d/cachepin-$name.json.in" > "$T/hooks.d/cachepin-$name.json"
done
printf '[engine]\nhooks_dir = ["%s"]\n' "$T/hooks.d" > "$T/containers.conf"
export CONTAINERS_CONF="$T/containers.conf"

have () { # have NEED: this host has it (blocks.py's NEEDS)
  case "$1" in
    root) [ "$(id -u)" = 0 ] ;;
    podman|runc) command -v "$1" >/dev/null ;;
    cpuset) grep -q ' - cgroup cgroup .*cpuset' /proc/self/mountinfo \
              || grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null ;;
    *) return 1 ;;
  esac
}
HAVE=""
for n in root podman runc cpuset; do have "$n" && HAVE+="$n,"; done

echo "== the command blocks, and whether they run here"
(cd "$SRC" && python3 "$HERE/blocks.py" list "${FILES[@]}") || { echo "docs.blocks: FAIL: unmarked or malformed blocks above"; exit 1; }

FAILED=() SKIPPED=() RAN=0
for rel in "${FILES[@]}"; do
  out="$T/blocks/${rel//\//_}" work="$T/work/${rel//\//_}"
  mkdir -p "$out" "$work"
  info=$(cd "$SRC" && python3 "$HERE/blocks.py" script "$out" "$rel" "$SELECT" "$HAVE" "${CACHEPIN_TOPOLOGIES:-}") \
    || { FAILED+=("$rel: blocks.py"); continue; }
  while read -r what arg; do
    case "$what" in
      copy) cp "$arg" "$work/" ;;
      skip) SKIPPED+=("$arg"); echo "== skipped: $arg" ;;
    esac
  done <<<"$info"
  grep -q '(run)"$\|^__expect \|(cleanup)"$' "$out/script.sh" || continue   # nothing runs here
  # __expect DIR/N EXIT: run N.cmd in this shell's state, compare with N.exp.
  cat > "$out/prelude.sh" <<'EOF'
__expect () {
  local rc=0   # (a command in a || list does not fire the ERR trap)
  ( eval "$(cat "$1.cmd")" ) > "$1.out" 2>&1 || rc=$?
  if [ "$rc" != "$2" ]; then
    echo "docs.blocks: FAIL $__blk: exited $rc, the docs say $2:" >&2; cat "$1.cmd" "$1.out" >&2; exit 1
  fi
  if ! python3 "$__blocks" match "$1.exp" "$1.out"; then
    echo "docs.blocks: FAIL $__blk: the output differs from the docs' (- docs, + now; \"...\" stands for any lines):" >&2
    { diff -u "$1.exp" "$1.out" || true; } | tail -n +3 >&2
    exit 1
  fi
}
EOF
  echo "== $rel"
  if (cd "$work" && __blocks="$HERE/blocks.py" bash -c ". '$out/prelude.sh'; . '$out/script.sh'" </dev/null); then
    RAN=$((RAN + 1))
  else
    FAILED+=("$rel")
  fi
done

echo "== files whose $SELECT blocks ran: $RAN; failed: ${#FAILED[@]}; blocks skipped: ${#SKIPPED[@]}"
for x in "${FAILED[@]}"; do echo "FAIL $x"; done
for x in "${SKIPPED[@]}"; do echo "SKIP $x"; done
[ ${#FAILED[@]} -eq 0 ] || exit 1
[ ${#SKIPPED[@]} -eq 0 ] || exit 77
exit 0
