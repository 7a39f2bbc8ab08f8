# Helpers for the CLI tests (sourced by run.sh into each t-*.sh).
# $BIN holds the tools; $TRACES the shared traces (empty when absent);
# $TMP a scratch directory for this test file.

fail() { echo "    FAIL: $*" >&2; TEST_FAILED=1; }
skip() { echo "    skip: $*"; TEST_SKIPPED=1; }
need_traces() { [ -n "$TRACES" ] || { skip "shared traces not present"; return 1; }; }

# expect_status N CMD...: runs CMD, checks its exit status, keeps stdout/stderr in $TMP/out, $TMP/err
expect_status() {
    want=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    [ "$got" = "$want" ] || fail "exit $got, expected $want: $* ($(head -c 300 "$TMP/err"))"
}
# expect_one_line_error: stderr is exactly one line
expect_one_line_error() {
    n=$(wc -l <"$TMP/err")
    [ "$n" = 1 ] || fail "expected one line on stderr, got $n: $(head -c 300 "$TMP/err")"
}
expect_no_file() { [ ! -e "$1" ] || fail "$1 should not exist"; ls "$1".tmp.* >/dev/null 2>&1 && fail "temporary files left beside $1"; true; }
expect_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: got '$1', expected '$2'"; }
expect_grep() { grep -q -- "$1" "$2" || fail "'$1' not found in $2"; }
expect_no_grep() { ! grep -q -- "$1" "$2" || fail "'$1' unexpected in $2"; }
# golden NAME FILE: compares FILE with tests/cli/golden/NAME (UPDATE_GOLDEN=1 rewrites it)
golden() {
    g="$GOLDEN_DIR/$1"
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then cp "$2" "$g"; return; fi
    [ -f "$g" ] || { fail "golden $1 missing (run with UPDATE_GOLDEN=1)"; return; }
    cmp -s "$g" "$2" || { fail "output differs from golden $1"; diff "$g" "$2" | head -20 >&2; }
}
q() { sqlite3 -batch -noheader "$@"; }
