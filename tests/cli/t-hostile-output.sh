# Hostile outputs: -o paths (empty, the input itself, devices, FIFOs, /proc links,
# directories, symbolic links, permissions), inputs that are pipes or devices,
# signals at random moments, SIGPIPE, control characters and invalid UTF-8 in
# names, huge names, and the recorder's paths.  Every run has a time limit, and
# the checks cover exit status, one stderr line, temporary files and inputs.
S=$root/sample-traces/lm-step.nvvp
TMPDIR=$TMP/tmpdir
export TMPDIR
mkdir -p "$TMPDIR"
T() { timeout 10 "$@"; }
ck() { cksum <"$1"; }
mode_of() { stat -c %a "$1"; }
no_temp_left() { # DIR...: no temporary file of ours in DIR or $TMPDIR
    left=$(find "$@" "$TMPDIR" -maxdepth 1 \( -name '*.tmp.*' -o -name 'trace-*' \) 2>/dev/null | head -3)
    [ -z "$left" ] || fail "temporary files left: $left"
}
"$BIN/trace-ingest" -q -o pristine.db "$S" || { fail "cannot ingest the bundled sample"; return 0; }
fresh() { cp pristine.db in.db; }   # each section starts from an intact input
fresh
db_ck=$(ck in.db) sample_ck=$(ck "$S")

# ---- -o '' is a usage error; nothing is created ----
expect_status 2 T "$BIN/trace-ingest" -o '' "$S"; expect_one_line_error
expect_status 2 T "$BIN/trace-export" --stacks -o '' in.db; expect_one_line_error
no_temp_left .

# ---- an output that is an input is refused, the input untouched ----
cp "$S" in.nvvp; nv_ck=$(ck in.nvvp)
expect_status 2 T "$BIN/trace-ingest" -o in.nvvp in.nvvp; expect_one_line_error
expect_grep in.nvvp "$TMP/err"
expect_eq "$(ck in.nvvp)" "$nv_ck" "ingest changed its input"
expect_status 2 T "$BIN/trace-ingest" -o in.nvvp "$S" in.nvvp
ln -s in.nvvp sym.nvvp; ln in.nvvp hard.nvvp
expect_status 2 T "$BIN/trace-ingest" -o sym.nvvp in.nvvp; expect_one_line_error
expect_status 2 T "$BIN/trace-ingest" -o hard.nvvp in.nvvp; expect_one_line_error
expect_eq "$(ck in.nvvp)" "$nv_ck" "ingest changed its input through a link"
for fmt in stacks flamegraph chrome; do
    expect_status 2 T "$BIN/trace-export" --$fmt -o in.db in.db; expect_one_line_error
done
ln -s in.db sym.db; ln in.db hard.db
expect_status 2 T "$BIN/trace-export" --stacks -o sym.db in.db; expect_one_line_error
expect_status 2 T "$BIN/trace-export" --stacks -o hard.db in.db; expect_one_line_error
expect_eq "$(ck in.db)" "$db_ck" "export changed its input"
[ -L sym.db ] || fail "export replaced a symbolic link to its input"
rm -f sym.nvvp hard.nvvp sym.db hard.db
no_temp_left .

# ---- devices, FIFOs and /proc links are written in place, never renamed over ----
fresh
"$BIN/trace-export" --stacks in.db >want.folded
ln -s /proc/self/fd/1 so
expect_status 0 T "$BIN/trace-export" --stacks -o so in.db
[ -L so ] || fail "-o through a /proc link replaced the link"
cmp -s "$TMP/out" want.folded || fail "-o of a link to /proc/self/fd/1 did not write to stdout"
expect_status 0 T "$BIN/trace-export" --stacks -o - in.db
cmp -s "$TMP/out" want.folded || fail "-o - did not write to stdout"
expect_status 0 T "$BIN/trace-ingest" -q -o - "$S"
expect_eq "$(q "$TMP/out" 'PRAGMA integrity_check')" ok "run.db written to stdout"
if mknod cdev c 1 3 2>/dev/null; then   # a null device of our own
    expect_status 0 T "$BIN/trace-export" --chrome -o cdev in.db
    [ -c cdev ] || fail "-o of a character device replaced it"
    expect_status 0 T "$BIN/trace-ingest" -q -o cdev "$S"
    [ -c cdev ] || fail "ingest -o of a character device replaced it"
fi
if [ "$(id -u)" != 0 ]; then   # root could replace the machine's /dev/null if this regressed
    expect_status 0 T "$BIN/trace-export" --stacks -o /dev/null in.db
    [ -c /dev/null ] || fail "/dev/null is no longer a device"
fi
mkfifo ff
T cat ff >got.folded &
reader=$!
expect_status 0 T "$BIN/trace-export" --stacks -o ff in.db
wait $reader
[ -p ff ] || fail "-o of a FIFO replaced it"
cmp -s got.folded want.folded || fail "nothing or the wrong bytes came out of the FIFO"
expect_status 1 T "$BIN/trace-export" --stacks -o ff in.db   # nothing reads it
expect_one_line_error; expect_grep ff "$TMP/err"
expect_status 2 T "$BIN/trace-export" --stacks -o . in.db; expect_one_line_error
expect_status 2 T "$BIN/trace-ingest" -o "$TMP" "$S"; expect_one_line_error
expect_status 1 T "$BIN/trace-export" --stacks -o no/such/dir.folded in.db; expect_one_line_error
expect_status 1 T "$BIN/trace-ingest" -o no/such/dir.db "$S"; expect_one_line_error
[ -e no ] && fail "a missing directory was created"
nl='bad
name.folded'
expect_status 1 T "$BIN/trace-export" --stacks -o "no/$nl" in.db; expect_one_line_error
no_temp_left .

# ---- permissions: kept when replacing, the umask's for a new file; links kept ----
fresh
printf old >p.folded; chmod 600 p.folded
expect_status 0 T "$BIN/trace-export" --stacks -o p.folded in.db
expect_eq "$(mode_of p.folded)" 600 "mode of a replaced export"
cp in.db p.db; chmod 640 p.db
expect_status 0 T "$BIN/trace-ingest" -q -o p.db "$S"
expect_eq "$(mode_of p.db)" 640 "mode of a replaced run.db"
(umask 027 && T "$BIN/trace-export" --stacks -o new.folded in.db && T "$BIN/trace-ingest" -q -o new.db "$S")
expect_eq "$(mode_of new.folded)" 640 "mode of a new export under umask 027"
expect_eq "$(mode_of new.db)" 640 "mode of a new run.db under umask 027"
printf old >target.folded; chmod 604 target.folded; ln -s target.folded link.folded
expect_status 0 T "$BIN/trace-export" --stacks -o link.folded in.db
[ -L link.folded ] || fail "-o of a symbolic link replaced the link"
cmp -s target.folded want.folded || fail "-o of a symbolic link did not write its target"
expect_eq "$(mode_of target.folded)" 604 "mode of a target replaced through a link"
no_temp_left .

# ---- inputs that are pipes or devices ----
fresh
n_want=$(q in.db 'SELECT count(*) FROM events')
cat "$S" | T "$BIN/trace-ingest" -q -o pipe.db /dev/stdin
expect_eq "$?:$(q pipe.db 'SELECT count(*) FROM events')" "0:$n_want" "ingest of a pipe"
expect_eq "$(q pipe.db 'SELECT path FROM sources')" /dev/stdin "source path of a pipe"
piped() { # CMD... | trace-ingest -o z.db /dev/stdin
    sh -c '"$@" | timeout 10 "$BIN/trace-ingest" -o z.db /dev/stdin' sh "$@"
}
expect_status 3 piped head -c 100000 /dev/zero
expect_one_line_error; expect_no_file z.db
expect_status 3 piped yes
expect_one_line_error; expect_no_file z.db
expect_status 3 T "$BIN/trace-ingest" -o z.db /dev/zero; expect_one_line_error
expect_status 3 T "$BIN/trace-ingest" -o z.db /dev/null; expect_one_line_error
expect_status 3 T "$BIN/trace-ingest" -o z.db "$TMP"; expect_one_line_error
mkfifo nowriter
expect_status 3 T "$BIN/trace-ingest" -o z.db nowriter; expect_one_line_error
expect_no_file z.db
no_temp_left .

# ---- signals: old output or the complete new one, never a temporary file ----
"$BIN/gen-kineto" -n 150000 -o sig.json >/dev/null 2>&1 || fail "gen-kineto failed"
"$BIN/trace-ingest" -q -o big.db sig.json || fail "cannot ingest sig.json"
n_sig=$(q big.db 'SELECT count(*) FROM events')
rnd() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }
i=0
for sig in INT TERM HUP INT TERM HUP INT TERM; do
    i=$((i + 1))
    delay=$(awk -v r="$(rnd)" 'BEGIN { printf "%.3f", r / 65536 * 0.8 }')
    cp pristine.db sig.db   # an old output that differs from the new one
    if [ $((i % 3)) = 0 ]; then   # the input is a pipe: a spool file under $TMPDIR too
        cat sig.json | "$BIN/trace-ingest" -q -o sig.db /dev/stdin &
    else
        "$BIN/trace-ingest" -q -o sig.db sig.json &
    fi
    pid=$!
    sleep "$delay"; kill -s $sig $pid 2>/dev/null
    wait $pid 2>/dev/null; st=$?
    case $sig:$st in INT:130|TERM:143|HUP:129|*:0) ;; *) fail "ingest killed by SIG$sig after ${delay}s: status $st" ;; esac
    if ! cmp -s sig.db pristine.db; then
        expect_eq "$(q sig.db 'PRAGMA integrity_check')" ok "run.db after SIG$sig at ${delay}s"
        expect_eq "$(q sig.db 'SELECT count(*) FROM events')" "$n_sig" "events after SIG$sig at ${delay}s"
    fi
    no_temp_left .
    delay=$(awk -v r="$(rnd)" 'BEGIN { printf "%.3f", r / 65536 * 0.8 }')
    printf old >sig.cj; ck_old=$(ck sig.cj)
    "$BIN/trace-export" --chrome -o sig.cj big.db &
    pid=$!
    sleep "$delay"; kill -s $sig $pid 2>/dev/null
    wait $pid 2>/dev/null; st=$?
    case $sig:$st in INT:130|TERM:143|HUP:129|*:0) ;; *) fail "export killed by SIG$sig after ${delay}s: status $st" ;; esac
    if [ "$(ck sig.cj)" != "$ck_old" ]; then
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' sig.cj 2>/dev/null \
            || fail "chrome trace after SIG$sig at ${delay}s is neither old nor complete"
    fi
    no_temp_left .
done
# SIGPIPE: quiet, status 141 (128 + SIGPIPE), whether or not the parent ignores it
for ign in no yes; do
    for tool in analyze export; do
        set -- "$BIN/trace-analyze" --group-by-stack 5 -n -1 big.db
        [ $tool = export ] && set -- "$BIN/trace-export" --chrome big.db
        if [ $ign = yes ]; then
            (trap '' PIPE; T "$@" 2>pipe.err; echo $? >pipe.st) | head -c 100 >/dev/null
        else
            (T "$@" 2>pipe.err; echo $? >pipe.st) | head -c 100 >/dev/null
        fi
        expect_eq "$(cat pipe.st)" 141 "status of trace-$tool on a closed pipe (SIGPIPE ignored: $ign)"
        [ -s pipe.err ] && fail "trace-$tool on a closed pipe said: $(head -c 200 pipe.err)"
    done
done

# ---- control characters and invalid UTF-8 in names ----
fresh
cp in.db names.db
hostile="'bad' || char(10) || 'name' || char(9) || 'tab' || CAST(x'ff41' AS TEXT) || char(27) || '[31m|x_y,z\"q'"
q names.db "UPDATE strings SET value = $hostile WHERE id IN (SELECT name_id FROM events WHERE kind = 7 LIMIT 1)"
q names.db "UPDATE strings SET value = 'line1' || char(10) || 'line2' WHERE id IN (SELECT name_id FROM events WHERE kind = 2 LIMIT 1)"
expect_status 0 T "$BIN/trace-analyze" -n -1 in.db; rows_clean=$(wc -l <"$TMP/out")
expect_status 0 T "$BIN/trace-analyze" -n -1 names.db
expect_eq "$(wc -l <"$TMP/out")" "$rows_clean" "lines of the text table with newlines in names"
grep -q "$(printf '\033')" "$TMP/out" && fail "a terminal escape reached the text table"
iconv -f UTF-8 -t UTF-8 "$TMP/out" >/dev/null 2>&1 || fail "text table is not UTF-8"
for fmt in csv json markdown; do
    expect_status 0 T "$BIN/trace-analyze" -n -1 --format $fmt names.db
    iconv -f UTF-8 -t UTF-8 "$TMP/out" >/dev/null 2>&1 || fail "$fmt output is not UTF-8"
    cp "$TMP/out" names.$fmt
done
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' names.json || fail "invalid JSON"
n_groups=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rows"]))' names.json)
expect_eq "$(python3 -c 'import csv,sys; print(len(list(csv.reader(open(sys.argv[1], newline=""))))-1)' names.csv)" \
    "$n_groups" "CSV rows"
expect_eq "$(grep -c '^|' names.markdown)" "$((n_groups + 2))" "markdown rows"
expect_status 0 T "$BIN/trace-export" --stacks -o names.folded names.db
expect_eq "$(grep -cv '^[^;].* [0-9][0-9]*$' names.folded)" 0 "malformed folded lines"
expect_status 0 T "$BIN/trace-export" --flamegraph -o names.svg names.db
python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' names.svg || fail "invalid SVG"
expect_status 0 T "$BIN/trace-export" --chrome -o names.cj names.db
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' names.cj || fail "invalid chrome JSON"

# a NUL inside a Kineto name keeps the rest of the name and the later stack frames
printf '%s\n' '{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::a\u0000b","pid":1,"tid":1,' \
    '"ts":1,"dur":5,"args":{"Call stack":"f1\u0000x;f2;f3"}}]}' >nul.json
expect_status 0 T "$BIN/trace-ingest" -q -o nul.db nul.json
expect_eq "$(q nul.db "SELECT count(*) FROM strings WHERE value LIKE 'aten::a%b' OR value IN ('f2', 'f3')")" 3 \
    "name and frames after a NUL"

# ---- a huge name must not blow up the outputs ----
fresh
cp in.db huge.db
q huge.db "UPDATE strings SET value = 'HUGE' || hex(zeroblob(1000000)) WHERE id IN
           (SELECT name_id FROM events WHERE kind = 2 GROUP BY name_id ORDER BY count(*) DESC LIMIT 1)"
expect_status 0 T "$BIN/trace-export" --flamegraph -o huge.svg huge.db
size=$(wc -c <huge.svg)
[ "$size" -lt 1500000 ] || fail "SVG of a 2 MB name is $size bytes"
python3 - huge.svg <<'EOF' || fail "huge-name SVG: invalid, or a label or tooltip not capped"
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
t = [e.firstChild.data for e in d.getElementsByTagName('title') if e.firstChild]
x = [e.firstChild.data for e in d.getElementsByTagName('text') if e.firstChild]
assert max(len(s) for s in t) <= 64 * 1024 + 100 and any('\u2026' in s for s in t)
assert max(len(s) for s in x) <= 1100
EOF
expect_status 0 T "$BIN/trace-export" --chrome -o huge.json huge.db
size=$(wc -c <huge.json)
[ "$size" -lt 8000000 ] || fail "chrome trace of a 2 MB name is $size bytes"

# ---- the recorder's paths ----
REC=$BIN/trace-record
if [ -x "$REC" ]; then
    expect_status 1 T "$REC" -o no/such/run.db true; expect_one_line_error
    [ -e no ] && fail "trace-record created a missing directory"
    : >f.db.raw
    expect_status 1 T "$REC" -o f.db true; expect_one_line_error; expect_grep f.db.raw "$TMP/err"
    mkdir elsewhere; ln -s elsewhere l.db.raw
    expect_status 1 T "$REC" -o l.db true; expect_one_line_error
    expect_status 2 T "$REC" -o '' true; expect_one_line_error
    expect_status 0 T "$REC" -o e.db true   # never initialises CUDA: nothing written
    [ -e e.db.raw ] && fail "an empty raw directory was left"
    mkdir kept.db.raw
    expect_status 0 T "$REC" -o kept.db true
    [ -d kept.db.raw ] || fail "a raw directory the user made was removed"
fi
no_temp_left .
expect_eq "$(ck pristine.db)" "$db_ck" "an input run.db changed"
expect_eq "$(ck "$S")" "$sample_ck" "the bundled sample changed"
true
