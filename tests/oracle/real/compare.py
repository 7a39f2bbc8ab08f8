#!/usr/bin/env python3
"""Compares a PyTorch key_averages().table() text with trace-analyze's csv or json rows.

  compare.py PYTORCH_TABLE.txt OURS.csv|OURS.json [--allow FILE] [--quiet]

OURS is `trace-analyze --format csv -n -1 ...` (or --format json) of the same trace, with
the same grouping (shapes / stack) as the table. Prints one line per mismatch:

  ROW<TAB>COLUMN<TAB>pytorch=VALUE<TAB>ours=VALUE[<TAB>allowed: REASON]

and exits 1 when a mismatch is not allowed, 0 when every one is, 2 on usage or parse
errors. Numbers are compared at PyTorch's printed precision: our raw value (ns, bytes),
formatted in the unit PyTorch chose for that cell, must print exactly as PyTorch's cell.
Call counts are compared exactly. Percentages and averages are recomputed from our raw
totals (the csv rounds them to 6 significant digits); the percentage denominator is the json's
self_cpu_total_ns, or for csv the sum of our rows' self CPU time, so a csv must hold every
row (-n -1).

Rows are keyed by Name (PyTorch's cut names, "xxx...", match our full names by prefix),
plus Input Shapes and the Source Location frames when the table has those columns; a key
seen twice is matched in order. A row only one side has is reported with the column
"<row>"; the footer is the row "<footer>".

The allowance FILE holds lines `ROW-REGEX<TAB>COLUMN<TAB>REASON` ('#' starts a comment).
ROW-REGEX must match the whole row name (PyTorch's cell or our full name); COLUMN is a
header title as PyTorch prints it, "<row>", or "*" for any column.
Standard library only: no torch needed.
"""
import csv
import json
import re
import sys

# PyTorch header title -> (our csv/json column, kind)
COLUMNS = {
    "Self CPU %": ("self_cpu_pct", "pct_cpu"),
    "Self CPU": ("self_cpu_ns", "time"),
    "CPU total %": ("cpu_total_pct", "pct_cpu"),
    "CPU total": ("cpu_total_ns", "time"),
    "CPU time avg": ("cpu_avg_ns", "avg_cpu"),
    "Self CUDA": ("self_gpu_ns", "time"),
    "Self CUDA %": ("self_gpu_pct", "pct_gpu"),
    "CUDA total": ("gpu_total_ns", "time"),
    "CUDA time avg": ("gpu_avg_ns", "avg_gpu"),
    "CPU Mem": ("cpu_mem_bytes", "mem"),
    "Self CPU Mem": ("self_cpu_mem_bytes", "mem"),
    "CUDA Mem": ("gpu_mem_bytes", "mem"),
    "Self CUDA Mem": ("self_gpu_mem_bytes", "mem"),
    "# of Calls": ("calls", "int"),
    "Node ID": (None, "skip"),
}
PCT_BASE = {"Self CPU %": "self_cpu_ns", "CPU total %": "cpu_total_ns",
            "Self CUDA %": "self_gpu_ns"}
AVG_BASE = {"CPU time avg": "cpu_total_ns", "CUDA time avg": "gpu_total_ns"}
TIME_SCALE = {"us": 1.0, "ms": 1000.0, "s": 1000000.0}
MEM_SCALE = {"Kb": 1024.0, "Mb": 1024.0 ** 2, "Gb": 1024.0 ** 3}


class ParseError(Exception):
    pass


# ---- PyTorch's formatters (SEMANTICS.md 4.4), in a unit given by PyTorch's cell --------------

def fmt_time_in(us, cell):
    m = re.fullmatch(r"(-?[0-9.]+)(us|ms|s)", cell)
    if not m:
        return None
    unit = m.group(2)
    return "%.3f%s" % (us if unit == "us" else us / TIME_SCALE[unit], unit)


def fmt_mem_in(b, cell):
    m = re.fullmatch(r"(-?[0-9.]+) (b|Kb|Mb|Gb)", cell)
    if not m:
        return None
    if m.group(2) == "b":
        return "%d b" % b
    return "%.2f %s" % (b / MEM_SCALE[m.group(2)], m.group(2))


def fmt_time_auto(us):
    if us >= 1e6:
        return "%.3fs" % (us / 1e6)
    if us >= 1000:
        return "%.3fms" % (us / 1000.0)
    return "%.3fus" % us


def trim_frame(f, width):
    if len(f) > width:
        f = f[len(f) - width:]
        if len(f) > 3:
            f = "..." + f[3:]
    return f


# ---- the PyTorch table ------------------------------------------------------------------------

def parse_table(text):
    lines = text.split("\n")
    seps = [i for i, l in enumerate(lines) if l.startswith("-") and set(l) <= {"-", " "} and l]
    if len(seps) < 3:
        raise ParseError("no table: expected three separator lines of dashes")
    s0, s1, s2 = seps[0], seps[1], seps[-1]
    widths = [len(run) for run in lines[s0].split("  ") if run]
    starts, pos = [], 0
    for w in widths:
        starts.append(pos)
        pos += w + 2
    titles = [lines[s0 + 1][st:st + w].strip() for st, w in zip(starts, widths)]
    if titles[0] != "Name":
        raise ParseError("first column is %r, not Name" % titles[0])
    cells_order = list(titles)
    if "Source Location" in titles and titles[-1].startswith("Total") and \
            titles[-1].endswith("FLOPs"):
        # PyTorch prints the FLOPs cell under "Source Location" and the frame last.
        i, j = titles.index("Source Location"), len(titles) - 1
        cells_order[i], cells_order[j] = cells_order[j], cells_order[i]
    col = {t: k for k, t in enumerate(cells_order)}
    src_width = widths[titles.index("Source Location")] if "Source Location" in titles else None
    shapes_width = widths[titles.index("Input Shapes")] if "Input Shapes" in titles else None
    rows = []
    for l in lines[s1 + 1:s2]:
        name = l[:widths[0]].lstrip()   # right-aligned: trailing spaces are the name's
        if not name.strip() and not l[widths[0]:starts[-1]].strip():
            # a continuation (frame) or spacer row: every cell but the last is empty
            # (a row whose name is "" still has numbers)
            frame = l.strip()
            if frame and rows:
                rows[-1]["frames"].append(frame)
            continue
        cells = {}
        for t, k in col.items():
            end = starts[k] + widths[k] if k + 1 < len(widths) else len(l)
            cells[t] = l[starts[k]:end].strip()
        row = {"name": name, "cells": cells, "frames": []}
        if "Source Location" in col:
            f = cells.pop("Source Location")
            if f:
                row["frames"].append(f)
        row["shapes"] = cells.pop("Input Shapes", None)
        rows.append(row)
    footer = {}
    for l in lines[s2 + 1:]:
        m = re.fullmatch(r"(Self \w+ time total): (.*)", l)
        if m:
            footer[m.group(1)] = m.group(2)
    has_src = "Source Location" in titles
    return {"titles": titles, "rows": rows, "footer": footer, "src_width": src_width,
            "shapes_width": shapes_width, "has_src": has_src}


# ---- our rows ---------------------------------------------------------------------------------

def load_ours(path):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        doc = json.loads(text)
        rows = doc["rows"]
        if rows and "self_cpu_total_ns" in doc:
            rows[0]["_totals"] = {"cpu": doc["self_cpu_total_ns"],
                                  "gpu": doc.get("self_gpu_total_ns", 0)}
        for r in rows:
            if isinstance(r.get("stack"), list):
                r["frames"] = r["stack"]
    else:
        rows = list(csv.DictReader(text.splitlines()))
        for r in rows:
            if r.get("stack") is not None:
                r["frames"] = [f for f in r["stack"].split(" <- ")] if r["stack"] else []
    for r in rows:
        for k, v in list(r.items()):
            if k in ("name", "device", "input_shapes", "stack", "frames", "_totals"):
                continue
            if isinstance(v, str):
                try:
                    r[k] = int(v)
                except ValueError:
                    try:
                        r[k] = float(v)
                    except ValueError:
                        pass
        r.setdefault("frames", None)
    return rows


def name_matches(cell, name):
    name = name.lstrip()   # leading spaces cannot be told from the padding
    if cell == name:
        return 2
    return 1 if cell.endswith("...") and name.startswith(cell[:-3]) else 0


def row_matches(pt, ours, table):
    n = name_matches(pt["name"], ours["name"])
    if not n:
        return 0
    if pt["shapes"] is not None:
        s = ours.get("input_shapes")
        if s is None:
            return 0
        cut = s[:table["shapes_width"]]
        if cut != pt["shapes"]:
            return 0
    if table["has_src"]:
        frames = ours.get("frames") or []
        want = [trim_frame(f, table["src_width"]) for f in frames[:5]]
        if want != pt["frames"]:
            return 0
    return n


def pt_label(pt):
    s = pt["name"]
    if pt["shapes"] is not None:
        s += " " + pt["shapes"]
    if pt["frames"]:
        s += " @ " + pt["frames"][0]
    return s


# ---- comparison -------------------------------------------------------------------------------

def load_allow(path):
    rules = []
    if not path:
        return rules
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2:
                raise ParseError("%s:%d: expected ROW-REGEX<TAB>COLUMN<TAB>REASON" % (path, n))
            try:
                rx = re.compile(parts[0])
            except re.error as e:
                raise ParseError("%s:%d: bad regex: %s" % (path, n, e))
            rules.append((rx, parts[1], parts[2] if len(parts) > 2 else ""))
    return rules


def allowed(rules, names, column):
    for rx, c, reason in rules:
        if c not in ("*", column):
            continue
        if any(n is not None and rx.fullmatch(n) for n in names):
            return reason or "allowed"
    return None


def our_cell(title, kind, ours, totals, pt_cell):
    col = COLUMNS[title][0]
    if kind == "time":
        v = ours.get(col)
        return None if v is None else fmt_time_in(v / 1000.0, pt_cell)
    if kind in ("avg_cpu", "avg_gpu"):
        tot, calls = ours.get(AVG_BASE[title]), ours.get("calls")
        if tot is None or not calls:
            return None
        return fmt_time_in((tot / 1000.0) / calls, pt_cell)
    if kind in ("pct_cpu", "pct_gpu"):
        x = ours.get(PCT_BASE[title])
        total = totals["cpu" if kind == "pct_cpu" else "gpu"]
        if x is None:
            return None
        if title == "CPU total %" and pt_cell == "0":
            # PyTorch prints a bare 0 for a row whose first event is async.
            if "is_async" not in ours:
                return "(no is_async column)"
            return "0" if ours["is_async"] else "(not async)"
        if total == 0:
            return "NaN" if x == 0 else "(total 0)"
        return "%.2f%%" % ((x / 1000.0) * 100.0 / (total / 1000.0))
    if kind == "mem":
        v = ours.get(col)
        return None if v is None else fmt_mem_in(int(v), pt_cell)
    if kind == "int":
        v = ours.get(col)
        return None if v is None else str(int(v))
    return pt_cell


def compare(table, ours, rules, out):
    totals = {"cpu": sum(r.get("self_cpu_ns", 0) or 0 for r in ours),
              "gpu": sum(r.get("self_gpu_ns", 0) or 0 for r in ours
                         if r.get("device") not in (None, "cpu"))}
    if ours and "_totals" in ours[0]:
        totals = ours[0]["_totals"]
    used = [False] * len(ours)
    bad = allowed_n = 0

    def report(label, names, column, pv, ov):
        nonlocal bad, allowed_n
        why = allowed(rules, names, column)
        line = "%s\t%s\tpytorch=%s\tours=%s" % (label, column, pv, ov)
        if why:
            allowed_n += 1
            line += "\tallowed: " + why
        else:
            bad += 1
        out.append(line)

    for pt in table["rows"]:
        best, score = None, 0
        for i, r in enumerate(ours):
            if used[i]:
                continue
            s = row_matches(pt, r, table)
            if s > score:
                best, score = i, s
                if s == 2:
                    break
        label = pt_label(pt)
        if best is None:
            report(label, [pt["name"]], "<row>", "present", "missing")
            continue
        used[best] = True
        r = ours[best]
        for title, pv in pt["cells"].items():
            if title == "Name":
                continue
            if title not in COLUMNS:
                continue
            kind = COLUMNS[title][1]
            if kind == "skip":
                continue
            ov = our_cell(title, kind, r, totals, pv)
            if ov != pv:
                report(label, [pt["name"], r["name"]], title, pv, ov)
    for i, r in enumerate(ours):
        if not used[i]:
            report(r["name"], [r["name"]], "<row>", "missing", "present")
    for k, pv in table["footer"].items():
        kind = "cpu" if "CPU" in k else "gpu"
        ov = fmt_time_in(totals[kind] / 1000.0, pv)
        if ov != pv:
            report("<footer>", ["<footer>"], k, pv, ov)
    return bad, allowed_n


def main(argv):
    args, allow, quiet = [], None, False
    it = iter(argv[1:])
    for a in it:
        if a == "--allow":
            allow = next(it, None)
            if allow is None:
                print("compare.py: --allow needs a file", file=sys.stderr)
                return 2
        elif a == "--quiet":
            quiet = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    if len(args) != 2:
        print("usage: compare.py PYTORCH_TABLE.txt OURS.csv|OURS.json [--allow FILE]",
              file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8", newline="") as f:
            table = parse_table(f.read())
        ours = load_ours(args[1])
        rules = load_allow(allow)
    except (OSError, ParseError, ValueError, KeyError) as e:
        print("compare.py: %s" % e, file=sys.stderr)
        return 2
    out = []
    bad, ok = compare(table, ours, rules, out)
    if not quiet:
        for l in out:
            print(l)
    print("compare.py: %d rows, %d mismatches, %d allowed" % (len(table["rows"]), bad, ok),
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
