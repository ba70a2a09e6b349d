# Sourced by the CLI tests: their PASS/FAIL tally and checks.
#   ok NAME / ko WHY            count a result and print it
#   check NAME GOT WANT          equal strings
#   contains NAME FILE TEXT      FILE holds TEXT (fixed string)
#   finish NAME                  the summary line; exit status 1 when anything failed
PASS=0 FAIL=0
ok () { PASS=$((PASS + 1)); echo "PASS: $1"; }
ko () { FAIL=$((FAIL + 1)); echo "FAIL: $1"; }
check () { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else ko "$1: got '$2', expected '$3'"; fi; }
contains () { if grep -qF -- "$3" "$2"; then ok "$1"; else ko "$1: no '$3' in: $(head -c 600 "$2")"; fi; }
finish () { echo "$1: $PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; }
# contains_view NAME FILE TEXT: TEXT in FILE as the text view (plan, status) wrote it, its
# lines wrapped at 80 columns (after a space or a comma, continuations indented): compared
# with every space and line break taken out of both.
contains_view () {
  if tr -d ' \n' <"$2" | grep -qF -- "$(tr -d ' \n' <<< "$3")"; then ok "$1"; else ko "$1: no '$3' in: $(head -c 600 "$2")"; fi
}
