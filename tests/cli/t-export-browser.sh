# The flamegraph SVG in a real browser (headless Chromium): the script runs without
# errors, a search (?s=REGEX) highlights exactly the matching frames and reports their
# share, and a screenshot is taken (kept in $TMP; EXPORT_SHOT=FILE copies it out).
# Skips when chromium is absent (scripts/setup-deps.sh installs it with WITH_TEST_TOOLS=1).
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
[ -n "$CHROMIUM" ] || { skip "chromium not installed"; return 0; }
command -v timeout >/dev/null || { skip "timeout not installed"; return 0; }
browse() {   # browse URL ARGS...: headless run with a fresh profile
    url=$1; shift
    prof=$(mktemp -d "$TMP/prof.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$prof" "$@" "$url" 2>>"$TMP/chromium.log"
}
db="$TMP/s.db"
"$BIN/trace-ingest" -q -o "$db" "$root/sample-traces/lm-step.nvvp" || { fail "ingest sample"; return 0; }
q "$db" "UPDATE strings SET value = '<script>window.pwned=1</script>' WHERE id IN (SELECT name_id FROM events WHERE kind = 2 LIMIT 1)"
"$BIN/trace-export" --flamegraph --metric self_cpu -o "$TMP/fg.svg" "$db" || { fail "export"; return 0; }
re='LaunchKernel'
browse "file://$TMP/fg.svg?s=$re" --dump-dom >"$TMP/dom.svg"
grep -q 'data-fg-ready="1"' "$TMP/dom.svg" || fail "the flamegraph script did not finish ($(tail -c 300 "$TMP/chromium.log"))"
grep -q 'data-fg-error="' "$TMP/dom.svg" && fail "script error: $(grep -o 'data-fg-error="[^"]*"' "$TMP/dom.svg")"
grep -q 'pwned' "$TMP/dom.svg" && ! grep -q '&lt;script&gt;window.pwned' "$TMP/dom.svg" && fail "hostile name not escaped"
python3 - "$TMP/dom.svg" "$re" <<'PY' >/dev/null || fail "search highlighted the wrong frames"
import re, sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
pat = re.compile(sys.argv[2])
frames = [g for g in d.getElementsByTagName("g") if g.getAttribute("class").split()[0:1] == ["f"]]
assert frames, "no frames"
hits = 0
for g in frames:
    title = g.getElementsByTagName("title")[0].firstChild.data
    name = title[:title.rfind(" (")]
    want = bool(pat.search(name))
    got = g.getAttribute("data-match") == "1"
    fill = g.getElementsByTagName("rect")[0].getAttribute("fill")
    assert want == got and (fill == "rgb(230,0,230)") == want, (name, want, got, fill)
    hits += got
assert hits > 0
m = [t for t in d.getElementsByTagName("text") if t.getAttribute("id") == "matched"][0]
share = float(m.getAttribute("data-share"))
assert 0 < share <= 100, share
print(hits, share)
PY
# click-to-zoom: zooming to a narrow frame widens it to the full width and hides
# every frame that is neither inside it nor one of its ancestors
z=$(python3 - "$TMP/dom.svg" <<'PY'
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
frames = [g for g in d.getElementsByTagName("g") if g.getAttribute("class").split()[0:1] == ["f"]]
ws = [float(g.getElementsByTagName("rect")[0].getAttribute("width")) for g in frames]
print(min(range(len(ws)), key=lambda i: (ws[i] < 1, -ws[i] if ws[i] < max(ws) / 2 else 0)))
PY
)
browse "file://$TMP/fg.svg?z=$z" --dump-dom >"$TMP/zoom.svg"
python3 - "$TMP/zoom.svg" "$z" <<'PY' >/dev/null || fail "zoom did not widen the frame or hide the others"
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
frames = [g for g in d.getElementsByTagName("g") if g.getAttribute("class").split()[0:1] == ["f"]]
z = frames[int(sys.argv[2])]
widths = [float(g.getElementsByTagName("rect")[0].getAttribute("width")) for g in frames]
assert float(z.getElementsByTagName("rect")[0].getAttribute("width")) == max(widths)
assert any("hide" in g.getAttribute("class").split() for g in frames)
PY
browse "file://$TMP/fg.svg?s=$re" --screenshot="$TMP/fg.png" --window-size=1200,400 >/dev/null
[ -s "$TMP/fg.png" ] || fail "no screenshot"
[ -n "${EXPORT_SHOT:-}" ] && cp "$TMP/fg.png" "$EXPORT_SHOT"
true
