#!/bin/sh
# Runs every tests/cli/t-*.sh; prints a line per test file and the totals.
# Environment: BIN (tools dir, default build/bin), TR_SHARED_TRACES (default ../shared/traces).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=$(cd "${BIN:-$root/build/bin}" && pwd)
TRACES=${TR_SHARED_TRACES:-$root/../shared/traces}
[ -d "$TRACES" ] && TRACES=$(cd "$TRACES" && pwd) || TRACES=
GOLDEN_DIR=$here/golden
export BIN TRACES GOLDEN_DIR
[ -n "$TRACES" ] || echo "note: ../shared/traces not found: tests that use the shared traces are skipped"
passed=0 failed=0 skipped=0
for t in "$here"/t-*.sh; do
    [ -n "${ONLY:-}" ] && case "$t" in *"$ONLY"*) ;; *) continue ;; esac
    TMP=$(mktemp -d)
    # a trace given to trace-analyze or trace-export is cached: in the test's own directory
    XDG_CACHE_HOME=$TMP/.cache
    export TMP XDG_CACHE_HOME
    echo "  $(basename "$t")"
    (
        cd "$TMP" || exit 1
        TEST_FAILED=0 TEST_SKIPPED=0
        . "$here/lib.sh"
        . "$t"
        [ "$TEST_FAILED" = 1 ] && exit 1
        [ "$TEST_SKIPPED" = 1 ] && exit 77
        exit 0
    )
    case $? in
        0) passed=$((passed + 1)) ;;
        77) skipped=$((skipped + 1)) ;;
        *) failed=$((failed + 1)); echo "  ^ FAILED: $(basename "$t")" ;;
    esac
    rm -rf "$TMP"
done
echo "cli: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
