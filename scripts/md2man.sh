#!/bin/sh
# md2man.sh NAME SECTION SUMMARY FILE.md
#   Writes a manual page (roff) on standard output from a markdown document of
#   this project (docs/schema.md gives run.db(5)): headings, paragraphs, bullet
#   lists, tables (one entry per row: the first cell as the tag, the others
#   after it) and code blocks.  Only the markdown this project writes is read:
#   `code`, **bold**, [text](link).
set -eu
[ $# = 4 ] || { echo "usage: md2man.sh NAME SECTION SUMMARY FILE.md" >&2; exit 2; }
name=$1 section=$2 summary=$3 file=$4
date=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%d 2>/dev/null) || date=
printf '.TH %s %s "%s" "tracekit" "tracekit manual"\n' "$(echo "$name" | tr a-z A-Z)" "$section" "$date"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
awk '
function esc(s) { gsub(/\\/, "\\e", s); return s }
function lead(s) { return s ~ /^[.'"'"']/ ? "\\&" s : s }
function inline(s,   out, i, n, parts) {
    s = esc(s)
    while (match(s, /\[[^]]*\]\([^)]*\)/)) {          # [text](link) -> text
        t = substr(s, RSTART + 1); t = substr(t, 1, index(t, "]") - 1)
        s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
    }
    while (match(s, /\*\*[^*]+\*\*/)) s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
    while (match(s, /`[^`]*`/)) s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
    return lead(s)
}
function cells(line, arr,   n) {                     # "| a | b |" -> arr[1..n]
    sub(/^ *\| */, "", line); sub(/ *\| *$/, "", line)
    # a "\|" inside a cell is a literal bar
    gsub(/\\\|/, "\001", line)
    n = split(line, arr, / *\| */)
    for (i = 1; i <= n; i++) gsub(/\001/, "|", arr[i])
    return n
}
BEGIN { code = 0; first = 1 }
code && /^```/ { print ".fi"; print ".RE"; code = 0; next }
code { print lead(esc($0)); next }
/^```/ { print ".PP"; print ".RS 4"; print ".nf"; code = 1; next }
/^# / { t = substr($0, 3); if (first) { print ".SH DESCRIPTION"; print inline(t) "."; first = 0 } else print ".SH " toupper(inline(t)); next }
/^## / { print ".SH " toupper(inline(substr($0, 4))); next }
/^### / { print ".SS " inline(substr($0, 5)); next }
/^\|/ {
    n = cells($0, c)
    if (!intable) { intable = 1; for (i = 1; i <= n; i++) head[i] = c[i]; nhead = n; next }   # the header row
    if ($0 ~ /^\| *:?-+/) next                    # the separator row
    print ".TP"; print inline(c[1])
    rest = ""
    for (i = 2; i <= n; i++) if (c[i] != "") rest = rest (rest == "" ? "" : "\002") c[i]
    rest = inline(rest); gsub(/\002/, " \\(em ", rest)
    if (rest != "") print rest
    next }
{ intable = 0 }
/^- / { print ".IP \\(bu 2"; print inline(substr($0, 3)); inlist = 1; next }
/^ +[^ ]/ && inlist { sub(/^ +/, ""); print inline($0); next }
/^$/ { print ".PP"; inlist = 0; next }
{ print inline($0) }
' "$file"
