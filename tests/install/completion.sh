#!/usr/bin/env bash
# The bash completion offers what the binary takes: the commands, each command's
# options as its --help lists them (no more, no fewer), and the values of the
# enumerated options.
#   bash tests/install/completion.sh CACHEPIN SOURCE_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CACHEPIN=$(realpath "$1") SRC=$(realpath "$2")
. "$SRC/completion/cachepin.bash"

# What <TAB> offers after the words given (the last one is the word being completed).
complete_words () {
  COMP_WORDS=(cachepin "$@")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMP_LINE="${COMP_WORDS[*]}" COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _cachepin cachepin "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
same () { # $1 what, $2 got, $3 want
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got [$2], want [$3]"; fi
}

check "complete -F _cachepin cachepin is registered" bash -c ". '$SRC/completion/cachepin.bash'; complete -p cachepin | grep -q _cachepin"
commands=$("$CACHEPIN" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
same "commands are those of cachepin --help" "$(complete_words "" | tr ' ' '\n' | grep -v '^-' | tr '\n' ' ' | sed 's/ $//')" "$commands"
same "cachepin --v<TAB>" "$(complete_words --v)" "--version"
same "cachepin st<TAB>" "$(complete_words st)" "status"

for cmd in $commands; do
  want=$("$CACHEPIN" "$cmd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ' | sed 's/ $//')
  [ "$cmd" = release ] && want=$(printf '%s\n' $want --help | sort -u | tr '\n' ' ' | sed 's/ $//') # its usage omits -h
  same "cachepin $cmd --<TAB> offers what \`cachepin $cmd --help\` lists" "$(complete_words "$cmd" --)" "$want"
done
same "hook <TAB>: the stages" "$(complete_words hook "" | tr ' ' '\n' | grep -v '^-' | tr '\n' ' ' | sed 's/ $//')" \
  "createRuntime poststop prestart"
same "plan --smt <TAB>" "$(complete_words plan --smt "")" "any cores pe0 pe0-first"
same "plan --smt pe0<TAB>" "$(complete_words plan --smt pe0)" "pe0 pe0-first"
same "plan --align <TAB>" "$(complete_words plan --align "")" "l2 llc none numa package"
same "apply --mode <TAB>" "$(complete_words apply --cgroup /x --mode "")" "exclusive shared"
same "apply --mems <TAB>" "$(complete_words apply --mems "")" "keep local"
same "plan --cpus <TAB>: a number, nothing offered" "$(complete_words plan --cpus "")" ""
d=$(mktemp -d /tmp/cachepin-compl.XXXXXX) && touch "$d/conf.json"
same "status --config <TAB>: files" "$(complete_words status --config "$d/co")" "$d/conf.json"
rm -rf "$d"
# Every value offered is one the binary takes.
plans () { "$CACHEPIN" plan --topology 'core:2 pu:2' --cpus 2 "$@" >/dev/null; }
for opt in --smt --align --mode; do
  for v in $(complete_words plan "$opt" ""); do check "plan $opt $v is accepted" plans "$opt" "$v"; done
done
finish
