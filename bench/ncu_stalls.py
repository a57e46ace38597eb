#!/usr/bin/env python3
"""Where the main kernel's warps wait: ncu's warp-stall sampling of one
dash_bwd_main launch, summarised per stall reason and per SASS instruction.

  python3 bench/ncu_stalls.py --out DIR [--label TEXT] -- [profile_cell.py args]

Runs `ncu --set full --import-source no` on bench/profile_cell.py (second
main launch, so the first call's module load is not sampled), exports the
SASS source page as CSV and writes DIR/stalls.txt: the reasons' shares of
all samples and the instructions with the most samples, each with the
instruction before it (a wait shows up on the instruction after the one
that waits). DIR keeps the report and the CSV. Needs ncu (the GPU machine).
"""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def number(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def summarise(csv_path, top=25):
    """Lines of text: stall reasons and the hottest instructions."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head is None:
        return ["no 'Source' column in %s" % csv_path]
    cols = rows[head]
    body = [r for r in rows[head + 1:] if len(r) == len(cols)]
    src = cols.index("Source")
    allc = next((i for i, c in enumerate(cols)
                 if c.startswith("Warp Stall Sampling (All")), None)
    if allc is None:
        return ["no warp-stall sampling column; columns: " + ", ".join(cols)]
    samples = [number(r[allc]) or 0.0 for r in body]
    total = sum(samples) or 1.0
    out = ["samples: %d" % total]
    reasons = []
    for i, c in enumerate(cols):
        if c.startswith("stall_") or c.startswith("smsp__pcsamp_warps_issue_stalled"):
            v = sum(number(r[i]) or 0.0 for r in body)
            if v:
                reasons.append((v, c))
    if reasons:
        out.append("stall reasons (share of all samples):")
        out += ["  %-40s %5.1f%%" % (c, 100 * v / total)
                for v, c in sorted(reasons, reverse=True)[:14]]
    else:
        out.append("(no per-reason columns; columns: %s)" % ", ".join(cols))
    out.append("top instructions by samples (share, SASS, the one before):")
    order = sorted(range(len(body)), key=lambda i: -samples[i])[:top]
    for i in order:
        before = body[i - 1][src].strip() if i else ""
        out.append("  %5.2f%%  %-60s after: %s" %
                   (100 * samples[i] / total, body[i][src].strip()[:60], before[:60]))
    local = [i for i, r in enumerate(body) if "LDL" in r[src] or "STL" in r[src]]
    execc = next((i for i, c in enumerate(cols) if c == "Instructions Executed"), None)
    if execc is not None:
        n = sum(number(body[i][execc]) or 0.0 for i in local)
        out.append("local-memory (spill) instructions: %d static, %d executed" % (len(local), n))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--summarise", help="only summarise this CSV")
    ap.add_argument("cell", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    csv_path = a.summarise or os.path.join(a.out, "source.csv")
    if not a.summarise:
        rep = os.path.join(a.out, "main")
        cell = [x for x in a.cell if x != "--"]
        cmd = ["ncu", "--set", "full", "--import-source", "no", "--kernel-name",
               "regex:dash_bwd_main", "--launch-skip", "1", "--launch-count", "1",
               "-f", "-o", rep, sys.executable, os.path.join(HERE, "profile_cell.py")] + cell
        subprocess.run(cmd, check=True)
        with open(csv_path, "w") as f:
            subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                            "--print-source", "sass"], check=True, stdout=f)
        with open(os.path.join(a.out, "details.txt"), "w") as f:
            subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "details"],
                           check=True, stdout=f)
    lines = ([a.label] if a.label else []) + summarise(csv_path)
    with open(os.path.join(a.out, "stalls.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
