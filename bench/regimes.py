#!/usr/bin/env python3
"""The speed targets judged over several timing runs of the same kernels.

  python3 bench/regimes.py LABEL=FILE[,FILE...] LABEL=FILE... [--anchors A.json] [--json OUT]

Under the H200's power cap one run's ratio to cuDNN moves by a few percent
with the timing regime (round-robin rounds, per-implementation windows) and
the seed that orders it (bench/NOTES.md sections 25, 26), so a cell at the
line passes or misses by chance in any single run. Each LABEL is one run;
several files under one label are merged (a run completed in a second call
for the cells the first one did not reach; a cell in two files of one label
is an error, as is any row given twice). Per target cell (s >= 2048): ours det (auto) / cuDNN in every
run, their median and spread (max - min), FA3-det / cuDNN of the anchor, and
whether the median meets it (and 1.1x of it at d = 128 causal s >= 8192).
A cell missing from a run is judged on the runs that have it, and marked.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import summarize  # noqa: E402  (load_anchors, DEFAULT_ANCHORS)


def cell_ratios(rows):
    """{(d, mask, s): ours det (auto) / cuDNN} of one run's {(cell, impl): tflops}."""
    cells = {}
    for (key, impl), tflops in rows.items():
        cells.setdefault(key, {})[impl] = tflops
    out = {}
    for key, c in cells.items():
        det, cudnn = c.get("dash-auto-det"), c.get("sdpa-cudnn")
        if det and cudnn:
            out[key] = det / cudnn
    return out


def merge_run(label, docs):
    """One run's ratios from the files of its label (a run completed in a
    second call); a row (cell, implementation) given twice is an error."""
    rows = {}
    for name, results in docs:
        for r in results:
            key = ((r["d"], r["mask"], r["s"]), r["impl"])
            if key in rows:
                raise ValueError("run %s: %s of cell d=%d %s s=%d is given twice (%s)"
                                 % (label, key[1], key[0][0], key[0][1], key[0][2], name))
            rows[key] = r.get("tflops")
    return cell_ratios(rows)


def judge(runs, anchors):
    """Rows per target cell and the two counts, judged by the median ratio."""
    labels = [label for label, _ in runs]
    keys = sorted({k for _, r in runs for k in r if k[2] >= 2048 and k in anchors
                   and anchors[k].get("fa3_det") and anchors[k].get("cudnn")})
    rows, fa3, fa3x11 = [], [0, 0], [0, 0]
    for key in keys:
        d, mask, s = key
        per = [r.get(key) for _, r in runs]
        have = [v for v in per if v is not None]
        a = anchors[key]
        need = a["fa3_det"] / a["cudnn"]
        med = statistics.median(have)
        row = dict(d=d, mask=mask, s=s, ratios=dict(zip(labels, per)), median=med,
                   spread=max(have) - min(have), anchor=need, meets=med >= need,
                   runs=len(have), missing=[lb for lb, v in zip(labels, per) if v is None])
        fa3[0] += row["meets"]
        fa3[1] += 1
        if d == 128 and mask == "causal" and s >= 8192:
            row["meets_1p1"] = med >= 1.1 * need
            fa3x11[0] += row["meets_1p1"]
            fa3x11[1] += 1
        rows.append(row)
    return rows, fa3, fa3x11


def render(labels, rows, fa3, fa3x11):
    head = "| d | mask | s | " + " | ".join(labels) + " | median | spread | FA3-det (anchor) | meets |"
    lines = [head, "|" + "---|" * (7 + len(labels))]
    for r in rows:
        vals = ["-" if r["ratios"][lb] is None else "%.3f" % r["ratios"][lb] for lb in labels]
        meets = "yes" if r["meets"] else "no (%.1f%% short)" % (100 * (r["anchor"] / r["median"] - 1))
        if "meets_1p1" in r:
            meets += "; 1.1x: %s" % ("yes" if r["meets_1p1"] else "no")
        lines.append("| %d | %s | %d | %s | %.3f | %.3f | %.3f | %s |" % (
            r["d"], r["mask"], r["s"], " | ".join(vals), r["median"], r["spread"], r["anchor"], meets))
    lines.append("")
    lines.append("By the median over runs: FA3-class %d / %d; 1.1x FA3-det at d=128 causal s >= 8192: %d / %d"
                 % (fa3[0], fa3[1], fa3x11[0], fa3x11[1]))
    short = [r for r in rows if r["missing"]]
    if short:
        lines.append("Cells judged on fewer runs: " + ", ".join(
            "d=%d %s %d (no %s)" % (r["d"], r["mask"], r["s"], "/".join(r["missing"])) for r in short))
    return "\n".join(lines)


def parse_run(spec):
    if "=" not in spec:
        raise ValueError("a run is LABEL=FILE[,FILE...], got %r" % spec)
    label, files = spec.split("=", 1)
    if not label or not files:
        raise ValueError("a run is LABEL=FILE[,FILE...], got %r" % spec)
    docs = []
    for name in files.split(","):
        with open(name) as f:
            docs.append((name, json.load(f)["results"]))
    return label, docs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", metavar="LABEL=FILE[,FILE...]")
    ap.add_argument("--anchors", default=summarize.DEFAULT_ANCHORS)
    ap.add_argument("--json", help="write the rows and counts here")
    args = ap.parse_args()
    try:
        runs = []
        for spec in args.runs:
            label, docs = parse_run(spec)
            if any(label == lb for lb, _ in runs):
                raise ValueError("run label %r given twice" % label)
            runs.append((label, merge_run(label, docs)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("regimes: %s" % e, file=sys.stderr)
        return 2
    try:
        anchors = summarize.load_anchors(args.anchors)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("regimes: cannot read the anchors %s: %s" % (args.anchors, e), file=sys.stderr)
        return 2
    if not anchors:
        print("regimes: no anchors at %s" % args.anchors, file=sys.stderr)
        return 2
    rows, fa3, fa3x11 = judge(runs, anchors)
    if not rows:
        print("regimes: no target cell (s >= 2048 with an anchor) in these runs", file=sys.stderr)
        return 2
    labels = [lb for lb, _ in runs]
    print(render(labels, rows, fa3, fa3x11))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(runs=labels, rows=rows,
                           fa3_class=fa3, fa3_x1p1=fa3x11), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
