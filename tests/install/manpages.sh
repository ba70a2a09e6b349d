#!/usr/bin/env bash
# The man pages say what the code does: cachepin-annotations(7) names every
# cachepin.io/ key oci/annotations.c accepts, and no other; so does
# docs/annotations.md; cachepin(8) names every command and every option of every
# command's --help.  Both render without groff warnings.
#   bash tests/install/manpages.sh CACHEPIN SOURCE_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CACHEPIN=$(realpath "$1") SRC=$(realpath "$2")
command -v groff >/dev/null || { echo "SKIP: needs groff"; exit 77; }
ANN=$SRC/man/cachepin-annotations.7.in MAN8=$SRC/man/cachepin.8.in

for page in "$ANN" "$MAN8"; do
  check "$(basename "$page") renders without warnings: $(man_warnings "$page")" [ -z "$(man_warnings "$page")" ]
done

# The keys the parser accepts: its option_names table.
keys=$(sed -n '/option_names\[OPT_COUNT\] = {/,/};/p' "$SRC/oci/annotations.c" | grep -o '\] = "[a-z0-9-]*"' |
  sed 's/.*"\(.*\)"/\1/' | sort)
check "oci/annotations.c's option_names read ($(echo $keys))" [ "$(wc -w <<< "$keys")" -ge 6 ]
# The keys the page lists, each as a tagged paragraph in its KEYS section.
# (roff spells a hyphen in a name `\-`.)
listed=$(sed -n '/^\.SH KEYS/,/^\.SH /p' "$ANN" | sed 's/\\-/-/g' | sed -n 's/^\.B cachepin\.io\/\([a-z0-9-]*\)$/\1/p' | sort)
check "cachepin-annotations(7) KEYS lists exactly the parser's keys ([$(echo $listed)])" [ "$listed" = "$keys" ]
documented=$(grep -o '^| `cachepin\.io/[a-z0-9-]*`' "$SRC/docs/annotations.md" | sed 's/.*\///; s/`//' | sort)
check "docs/annotations.md lists exactly the parser's keys ([$(echo $documented)])" [ "$documented" = "$keys" ]
for engine in $(grep -o '"io\.kubernetes\.[a-zA-Z.-]*"' "$SRC/oci/annotations.h" | tr -d '"' | sort -u); do
  check "cachepin-annotations(7) names $engine" grep -qF "$(sed 's/-/\\-/g' <<< "$engine")" "$ANN"
done
check "cachepin-annotations(7) names the per-container infix" grep -qF '.container.' "$ANN"

# cachepin(8)'s CONFIGURATION lists exactly the keys hook/state/hostconfig.c parses; the
# shipped config uses no other.
cfgkeys=$(sed -n '/^} fields\[\] = {/,/^};/p' "$SRC/hook/state/hostconfig.c" | grep -o '{ "[a-z_]*",' | tr -d '{", ' | sort)
check "hook/state/hostconfig.c's fields read ($(echo $cfgkeys))" [ "$(wc -w <<< "$cfgkeys")" -ge 9 ]
mancfg=$(sed -n '/^\.SH CONFIGURATION/,/^\.SH /p' "$MAN8" | sed -n '/^\.TP/{n;s/^\.B \([a-z_]*\)$/\1/p}' | sort)
check "cachepin(8) CONFIGURATION lists exactly hostconfig.c's keys ([$(echo $mancfg)])" [ "$mancfg" = "$cfgkeys" ]
shipped=$(jq -r 'keys[]' "$SRC/packaging/config.json" | sort)
check "packaging/config.json uses only those keys ([$(echo $shipped)])" \
  [ -z "$(comm -23 <(echo "$shipped") <(echo "$cfgkeys"))" ]

commands=$("$CACHEPIN" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
for cmd in $commands; do
  check "cachepin(8) describes \`$cmd\`" grep -Eq "^\.B $cmd( [a-z]+)?$" "$MAN8"
  for opt in $("$CACHEPIN" "$cmd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    check "cachepin(8) names $cmd's $opt" grep -qF -- "$(sed 's/-/\\-/g' <<< "$opt")" "$MAN8"
  done
done
finish
