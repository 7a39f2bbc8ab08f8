# make install with DESTDIR and PREFIX installs the build under test (the tools,
# their manual pages made from their --help, run.db(5) and the bash completion);
# the pages render, say every option the help says, and completion answers with
# the tools' own names.

root=$(cd "$GOLDEN_DIR/../../.." && pwd)
build=${BIN%/bin}
build=${build#"$root"/}
# install what BIN holds: the tools are taken as they are, never rebuilt here; the
# pages are made again from them (-o makes make take the tools as older than any page)
rm -rf "${root:?}/$build/man"
keep="-o all"
for t in "$BIN"/trace-*; do keep="$keep -o $build/bin/${t##*/}"; done
# shellcheck disable=SC2086
make -s -C "$root" install BUILD="$build" DESTDIR="$TMP/root" PREFIX=/usr $keep >"$TMP/make.out" 2>&1 \
    || fail "make install failed: $(tail -5 "$TMP/make.out")"
usr=$TMP/root/usr
tools="trace-ingest trace-analyze trace-export"
[ -x "$BIN/trace-record" ] && tools="$tools trace-record"
for t in $tools; do
    [ -x "$usr/bin/$t" ] || fail "$t not installed"
    [ -f "$usr/share/man/man1/$t.1" ] || fail "$t.1 not installed"
    [ -e "$usr/share/bash-completion/completions/$t" ] || fail "no completion for $t"
    expect_status 0 "$usr/bin/$t" --version
    expect_grep "^$t [0-9]" "$TMP/out"
done
[ -f "$usr/share/man/man5/run.db.5" ] || fail "run.db.5 not installed"

if command -v man >/dev/null 2>&1; then
    expect_eq "$(MANPATH=$usr/share/man man -w trace-analyze 2>/dev/null)" "$usr/share/man/man1/trace-analyze.1" \
        "man -w trace-analyze"
    expect_eq "$(MANPATH=$usr/share/man man -w 5 run.db 2>/dev/null)" "$usr/share/man/man5/run.db.5" "man -w 5 run.db"
    for page in "$usr"/share/man/man1/*.1 "$usr"/share/man/man5/run.db.5; do
        LC_ALL=C MANWIDTH=200 man -l "$page" >"$TMP/page" 2>"$TMP/warn" || fail "man -l $page failed"
        [ -s "$TMP/warn" ] && fail "man -l $page: $(head -3 "$TMP/warn")"
        expect_grep '^NAME' "$TMP/page"
    done
    # every option of the help is in the page: they come from the same text
    for t in $tools; do
        LC_ALL=C MANWIDTH=200 man -l "$usr/share/man/man1/$t.1" 2>/dev/null | col -b >"$TMP/page"
        for o in $("$BIN/$t" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
            grep -q -- "$o" "$TMP/page" || fail "$t.1 lacks $o"
        done
        expect_grep '^EXIT STATUS' "$TMP/page"
    done
    LC_ALL=C MANWIDTH=200 man -l "$usr/share/man/man5/run.db.5" 2>/dev/null | col -b >"$TMP/page"
    for tbl in $(sed -n 's/^### `\([a-z_]*\)`$/\1/p' "$root/docs/schema.md"); do
        grep -q "^   $tbl" "$TMP/page" || fail "run.db.5 lacks the table $tbl"
    done
    LC_ALL=C MANWIDTH=200 man -l "$usr/share/man/man1/trace-analyze.1" 2>/dev/null | col -b >"$TMP/page"
    expect_grep '^REPORTS' "$TMP/page"
    expect_grep 'gpu-time' "$TMP/page"
else
    skip "man is not installed: pages not rendered"
fi

# completion, as bash calls it, with the installed tools first on PATH
if command -v bash >/dev/null 2>&1; then
    PATH="$usr/bin:$PATH" bash -c '
        . "$1/share/bash-completion/completions/trace-analyze"
        c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _tracekit "$1"; echo "${COMPREPLY[*]}"; }
        c trace-analyze --so
        c trace-analyze --sort self_cu
        c trace-analyze --kind ops,kerne
        c trace-analyze --report gpu
        c trace-analyze --list dev
        c trace-export --metric self_g
        c trace-ingest --format kin
    ' sh "$usr" >"$TMP/comp" 2>&1
    expect_eq "$(tr '\n' '|' <"$TMP/comp")" \
        "--sort|self_cuda_time_total self_cuda_memory_usage|ops,kernels ops,kernel|gpu-time|devices|self_gpu self_gpu_mem|kineto|" \
        "bash completion"
fi

# uninstall removes what install put there
# shellcheck disable=SC2086
make -s -C "$root" uninstall BUILD="$build" DESTDIR="$TMP/root" PREFIX=/usr >/dev/null 2>&1 || fail "make uninstall failed"
left=$(find "$usr" -type f -o -type l | grep -v '/share/doc/' | head -3)
expect_eq "$left" "" "files left after uninstall"
