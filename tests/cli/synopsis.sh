#!/usr/bin/env bash
# The synopses a user reads first name every option each command takes (issue 33,
# item 5: README's and the man page's missed --isolate, the man page --name): for each
# command, every long option its `--help` names (its usage line and its option list)
# is in README.md's "Commands" block and in cachepin(8)'s SYNOPSIS, under that
# command; `[request options]` stands for the request's own (--cpus --align --smt
# --mode --strict), which both explain once. The real binary ($1); no root.
set -u
BIN=$(realpath "${1:?usage: synopsis.sh PATH-TO-cachepin}")
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
REQUEST="--cpus --align --smt --mode --strict"

# README: the fenced block after "## Commands", each command's lines (a line starting
# with `cachepin CMD` and the indented ones after it).
awk '/^## Commands/ {on = 1; next} on && /^```/ {n++; if (n == 2) exit; next} on && n == 1' \
  "$SRC/README.md" > "$D/readme"
# man: .SH SYNOPSIS to the next .SH, \- unescaped, one line per word.
awk '/^\.SH SYNOPSIS/ {on = 1; next} on && /^\.SH/ {exit} on' "$SRC/man/cachepin.8.in" \
  | sed 's/\\-/-/g' > "$D/man"
[ -s "$D/readme" ] || ko "README.md: no Commands block found"
[ -s "$D/man" ] || ko "man/cachepin.8.in: no SYNOPSIS found"

readme_of () { # readme_of CMD: its lines in README's block
  awk -v c="cachepin $1" 'index($0, c) == 1 {on = 1; print; next} on && /^ / {print; next} {on = 0}' "$D/readme"
}
man_of () { # man_of CMD: its lines in the man SYNOPSIS (from `.B cachepin CMD` to the next .br)
  awk -v c=".B cachepin $1" 'index($0, c) == 1 {on = 1} on && /^\.br/ {on = 0} on' "$D/man"
}
has () { # has TEXT OPTION: OPTION is a word of TEXT, or one of [request options] there
  grep -qE -- "(^|[^a-z-])$2([^a-z-]|\$)" <<<"$1" && return 0
  case " $REQUEST " in *" $2 "*) grep -qF "request options" <<<"$1" ;; *) return 1 ;; esac
}

for cmd in plan hook apply release nri status measure; do
  opts=$("$BIN" "$cmd" --help | grep -oE -- '--[a-z][a-z-]*' | grep -vx -- '--help' | sort -u)
  [ -n "$opts" ] || { ko "$cmd --help names no option"; continue; }
  r=$(readme_of "$cmd") m=$(man_of "$cmd")
  [ -n "$r" ] || ko "README.md's Commands block has no \`cachepin $cmd\` line"
  [ -n "$m" ] || ko "cachepin(8)'s SYNOPSIS has no \`cachepin $cmd\`"
  for o in $opts; do
    if has "$r" "$o"; then ok "README: cachepin $cmd $o"; else ko "README.md's Commands block: cachepin $cmd lacks $o"; fi
    if has "$m" "$o"; then ok "man: cachepin $cmd $o"; else ko "cachepin(8) SYNOPSIS: cachepin $cmd lacks $o"; fi
  done
done
finish synopsis.sh
