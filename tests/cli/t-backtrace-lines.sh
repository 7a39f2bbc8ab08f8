# trace-record --backtrace with the fake libcupti: native frames gain file:line
# from DWARF (the binary's own, a .gnu_debuglink file, a build-id debug file),
# inlined calls become frames, and broken debug files never break the ingest.
REC=$BIN/trace-record
FAKE=$BIN/../rec/libcupti.so.13
root=$(cd "$GOLDEN_DIR/../../.." && pwd)
if [ ! -x "$REC" ] || [ ! -f "$FAKE" ]; then
    skip "trace-record not built (no CUDA toolkit)"
elif ! command -v cc >/dev/null || ! command -v objcopy >/dev/null; then
    skip "no C compiler or objcopy"
else
# libdw asks debuginfod servers when this is set: the test stays offline
unset DEBUGINFOD_URLS

cat > bt_lines.c <<'EOF'
#include <dlfcn.h>
#include <stdlib.h>
#include "fake_cupti.h"

static void inject(void)
{
    const char *cuda = getenv("CUDA_INJECTION64_PATH");
    void *h = cuda && *cuda ? dlopen(cuda, RTLD_NOW) : NULL;
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (!init || init() != 1)
        exit(90);
}

static inline __attribute__((always_inline)) void launch_inlined(void)
{
    fake_cupti_kernel(fake_cupti_api(0, 505), "inlined_kernel", 7, 1); /* @INLINED */
}

__attribute__((noinline)) void launch_direct(void)
{
    fake_cupti_kernel(fake_cupti_api(0, 505), "direct_kernel", 7, 1); /* @DIRECT */
}

int main(void)
{
    inject();
    fake_cupti_context();
    for (int i = 0; i < 3; i++) {
        launch_direct();   /* @CALL_DIRECT */
        launch_inlined();  /* @CALL_INLINED */
    }
    return 0;
}
EOF
at() { grep -n "@$1 " bt_lines.c | cut -d: -f1; }
D=$(at DIRECT) I=$(at INLINED) CD=$(at CALL_DIRECT) CI=$(at CALL_INLINED)

# the two innermost frames of the launch of kernel $2 in $1: "caller > callee"
inner() {
    q "$1" "SELECT DISTINCT p.value || ' > ' || l.value FROM events k
        JOIN strings kn ON kn.id = k.name_id AND kn.value = '$2'
        JOIN events a ON a.correlation = k.correlation AND a.kind = 4
        JOIN stack_nodes n ON n.id = a.stack_id JOIN strings l ON l.id = n.frame_id
        JOIN stack_nodes pn ON pn.id = n.parent_id JOIN strings p ON p.id = pn.frame_id
        WHERE k.kind = 7"
}
# every distinct frame of the launch stacks, one per line
frames() { q "$1" "SELECT DISTINCT s.value FROM stack_nodes n JOIN strings s ON s.id = n.frame_id ORDER BY 1"; }
build() { # OUT CFLAGS...
    out=$1; shift
    cc -std=c11 "$@" -I"$root/record/tests/fakecupti" -o "$out" bt_lines.c "$FAKE" \
        -Wl,-rpath,"$(dirname "$FAKE")" -Wl,--build-id -ldl || fail "cannot build $out"
}
record() { # DB PROGRAM
    expect_status 0 "$REC" -o "$1" --backtrace "./$2"
    expect_no_grep "unsymbolised" "$TMP/err"
}
want_lines() { # DB PROG: both launches named with the lines above
    expect_eq "$(inner "$1" direct_kernel)" "main (bt_lines.c:$CD) > launch_direct (bt_lines.c:$D)" \
        "$2: direct launch frames"
    expect_eq "$(inner "$1" inlined_kernel)" "main (bt_lines.c:$CI) > launch_inlined (bt_lines.c:$I)" \
        "$2: inlined launch frames"
}

# -g: the binary's own DWARF
build prog_g -O0 -g
record g.db prog_g
want_lines g.db prog_g

# optimised: the inlined call is still a frame of its own
build prog_o2 -O2 -g
record o2.db prog_o2
expect_eq "$(inner o2.db inlined_kernel)" "main (bt_lines.c:$CI) > launch_inlined (bt_lines.c:$I)" \
    "-O2: inlined launch frames"

# no DWARF: exactly the symbol names, as before
build prog_nog -O0
record nog.db prog_nog
expect_eq "$(inner nog.db direct_kernel)" "main > launch_direct" "no -g: symbol names only"
expect_eq "$(inner nog.db inlined_kernel | sed 's/.* > //')" "main" "no -g: the inlined call is main's"
expect_eq "$(frames nog.db | grep -c 'bt_lines')" 0 "no -g: no frame with a line of the program"

# stripped, its DWARF and symbols in a .gnu_debuglink file beside it
cp prog_g prog_link
objcopy --only-keep-debug prog_link prog_link.debug
objcopy --strip-all --add-gnu-debuglink=prog_link.debug prog_link
record link.db prog_link
want_lines link.db prog_link
# ... in its .debug/ subdirectory
mkdir -p .debug && mv prog_link.debug .debug/
expect_status 0 "$BIN/trace-ingest" -o link2.db link.db.raw/*.ctr
want_lines link2.db "prog_link, .debug/"
# ... gone: the stripped binary's frames stay offsets, with the warning
rm .debug/prog_link.debug
expect_status 0 "$BIN/trace-ingest" -o link3.db link.db.raw/*.ctr
expect_grep "prog_link left unsymbolised: no function symbols" "$TMP/err"
expect_eq "$(inner link3.db direct_kernel | grep -c 'prog_link+0x.* > prog_link+0x')" 1 \
    "no debug file: offsets"
# ... and the missing debug file is not asked of a debuginfod server unless the user says so
if command -v python3 >/dev/null && command -v timeout >/dev/null; then
    timeout 60 python3 - > dbgd.port 2> dbgd.log <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
s.settimeout(55)
try:
    while True:
        c, _ = s.accept(); sys.stderr.write("asked\n"); sys.stderr.flush(); c.close()
except Exception:
    pass
PY
    srv=$!
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s dbgd.port ] && break; sleep 0.2; done
    url="http://127.0.0.1:$(cat dbgd.port)"
    DEBUGINFOD_URLS=$url expect_status 0 "$BIN/trace-ingest" -o link4.db link.db.raw/*.ctr
    expect_eq "$(grep -c asked dbgd.log)" 0 "a debuginfod server asked without TRACEKIT_DEBUGINFOD=1"
    DEBUGINFOD_URLS=$url TRACEKIT_DEBUGINFOD=1 DEBUGINFOD_CACHE_PATH=$TMP/dbgd-cache \
        expect_status 0 "$BIN/trace-ingest" -o link5.db link.db.raw/*.ctr
    if ldconfig -p 2>/dev/null | grep -q libdebuginfod.so; then
        [ "$(grep -c asked dbgd.log)" -gt 0 ] || fail "TRACEKIT_DEBUGINFOD=1: the server was not asked"
    fi
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
fi

# stripped, its debug file under TRACE_DEBUG_ROOT/.build-id (no debuglink)
cp prog_g prog_bid
id=$(readelf -n prog_bid | sed -n 's/.*Build ID: //p')
mkdir -p "dbg/.build-id/$(echo "$id" | cut -c1-2)"
dbgfile="dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
objcopy --only-keep-debug prog_bid "$dbgfile"
objcopy --strip-all prog_bid
# (a relative root is taken from the working directory)
TRACE_DEBUG_ROOT=dbg record bid.db prog_bid
want_lines bid.db prog_bid

# hostile debug files: the ingest ends, in time, with the symbol names
# a truncated build-id debug file (its build-id note intact)
size=$(stat -c %s "$dbgfile")
cp "$dbgfile" full.debug
head -c $((size / 2)) full.debug > "$dbgfile"
TRACE_DEBUG_ROOT=$TMP/dbg expect_status 0 timeout 60 "$BIN/trace-ingest" -o trunc.db bid.db.raw/*.ctr
head -c 3000 full.debug > "$dbgfile"
TRACE_DEBUG_ROOT=$TMP/dbg expect_status 0 timeout 60 "$BIN/trace-ingest" -o trunc2.db bid.db.raw/*.ctr
# a FIFO where the debug file should be: never opened (that would block)
rm "$dbgfile" && mkfifo "$dbgfile"
TRACE_DEBUG_ROOT=$TMP/dbg expect_status 0 timeout 60 "$BIN/trace-ingest" -o fifo.db bid.db.raw/*.ctr
expect_eq "$(inner fifo.db direct_kernel | grep -c 'prog_bid+0x.* > prog_bid+0x')" 1 "FIFO debug file: offsets"
rm -f "$dbgfile"
# a -g binary whose DWARF sections are overwritten with noise (the same
# bytes on every run), and one cut short: the ingest ends, and symbols still
# name the functions where the file can still be read
for i in 1 2 3 4 5 6 7 8; do gzip -9nc < prog_nog; done > noise
for sec in .debug_info .debug_line .debug_abbrev .debug_str .debug_line_str .debug_aranges; do
    off=$(readelf -SW prog_g | awk -v s="$sec" '$2 == s { print $5 }')
    len=$(readelf -SW prog_g | awk -v s="$sec" '$2 == s { print $6 }')
    [ -n "$off" ] && head -c $((0x$len)) noise | dd of=prog_g bs=1 seek=$((0x$off)) conv=notrunc status=none
done
expect_status 0 timeout 60 "$BIN/trace-ingest" -o junk.db g.db.raw/*.ctr
for f in main launch_direct; do
    frames junk.db | grep -q "^$f\( (\|\$\)" || fail "noise for DWARF: no frame of $f"
done
size=$(stat -c %s prog_o2)
for cut in $((size * 3 / 4)) $((size / 2)) 4096; do
    head -c $cut prog_o2 > cut && cat cut > prog_o2
    expect_status 0 timeout 60 "$BIN/trace-ingest" -o cut$cut.db o2.db.raw/*.ctr
done
fi
