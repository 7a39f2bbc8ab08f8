#!/bin/sh
# mkman.sh TOOL SUMMARY [TITLE COMMAND]...
#   Writes TOOL's section 1 manual page (roff) on standard output, made from the
#   text of `TOOL --help` itself, so the page and the help cannot drift apart.
#   Each TITLE COMMAND pair adds a section holding COMMAND's output as it is
#   (trace-analyze's `--report list`, for example).
#
# The help layout it reads: "usage: ..." first; a description up to the first
# option; option lines indented at most 6 columns ("-o, --output FILE   text"),
# their continuation lines indented further; "Heading:" lines; and
# "Label: text" paragraphs, of which "Exit status:" becomes EXIT STATUS.
set -eu
[ $# -ge 2 ] || { echo "usage: mkman.sh TOOL SUMMARY [TITLE COMMAND]..." >&2; exit 2; }
tool=$1 summary=$2
shift 2
name=$(basename "$tool")
help=$("$tool" --help)
version=$("$tool" --version 2>/dev/null | awk '{print $NF}') || version=
# the date of the page: SOURCE_DATE_EPOCH for reproducible builds, else today
date=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} +%Y-%m-%d 2>/dev/null) || date=

# roff-safe text: backslashes, a leading dot or quote, and '-' as a minus sign
# in option names (so they can be searched and copied)
esc='function esc(s) { gsub(/\\/, "\\e", s); sub(/^[.'"'"']/, "\\\\\\&&", s); return s }
function opt(s) { s = esc(s); gsub(/-/, "\\-", s); return s }'

printf '.TH %s 1 "%s" "tracekit %s" "tracekit manual"\n' "$(echo "$name" | tr a-z A-Z)" "$date" "$version"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
printf '%s\n' "$help" | awk -v summary="$summary" "$esc"'
function flush_item() { if (item != "") { print ".TP"; print "\\fB" opt(item) "\\fR"; if (desc != "") print esc(desc); } item = ""; desc = "" }
function section(t) {
    flush_item()
    if (t == "OPTIONS" && !described) { print ".SH DESCRIPTION"; print toupper(substr(summary, 1, 1)) esc(substr(summary, 2)) "." }
    if (t == "DESCRIPTION") described = 1
    print ".SH " t; insec = t }
NR == 1 && /^usage: / {
    sub(/^usage: /, ""); print ".SH SYNOPSIS"; print ".nf"; print opt($0); insyn = 1; next }
insyn && /^ +[^ ]/ { sub(/^ +/, ""); print opt($0); next }   # more usage lines
insyn { print ".fi"; insyn = 0 }
/^$/ { flush_item(); if (insec == "DESCRIPTION") print ".PP"; next }
/^ *$/ { next }
/^[^ ][^:]*:$/ {                      # a heading: "Formats:", "Selection (combined with AND):"
    if (insec != "OPTIONS") section("OPTIONS")
    flush_item(); h = $0; sub(/:$/, "", h); print ".SS " esc(h); next }
/^Exit status:/ { sub(/^Exit status: */, ""); section("EXIT STATUS"); print esc($0); next }
/^[^ ]/ {                             # description, or a "Label: words" paragraph
    if (insec == "") { section("DESCRIPTION"); print esc($0); next }
    if (insec == "DESCRIPTION" || insec == "EXIT STATUS") { print esc($0); next }
    flush_item()
    if (match($0, /^[A-Z][A-Za-z ]*: /)) {
        print ".PP"; print "\\fB" esc(substr($0, 1, RLENGTH - 1)) "\\fR"; print esc(substr($0, RLENGTH + 1))
    } else print esc($0)
    next }
{
    match($0, /^ */); ind = RLENGTH; text = substr($0, ind + 1)
    if (ind <= 6) {                   # an option or a list item: NAME  description
        if (insec != "OPTIONS") section("OPTIONS")
        flush_item()
        if (match(text, /   *|\t/)) { item = substr(text, 1, RSTART - 1); desc = substr(text, RSTART + RLENGTH) }
        else if (col > ind && length(text) > col - ind && substr(text, col - ind, 1) == " ") {
            item = substr(text, 1, col - ind - 1); desc = substr(text, col - ind + 1) }
        else { item = text; desc = "" }
        if (!col && desc != "") col = index($0, desc) - 1
    } else {                          # a continuation line
        if (!col) col = ind
        desc = desc == "" ? text : desc " " text
    }
}
END { flush_item() }'

while [ $# -ge 2 ]; do
    printf '.SH %s\n.nf\n' "$1"
    sh -c "$2" | awk "$esc"'{ print esc($0) }'
    printf '.fi\n'
    shift 2
done

printf '.SH SEE ALSO\n'
for t in trace-ingest trace-analyze trace-export trace-record; do
    [ "$t" = "$name" ] || printf '.BR %s (1),\n' "$t"
done
printf '.BR run.db (5)\n'
printf '.PP\nREADME.md and docs/*.md in %s.\n' "${DOCDIR:-the tracekit documentation directory}"
