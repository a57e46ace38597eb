#!/usr/bin/env python3
"""Calibrate `auto` (the schedule model's r and tie gap) on a benchmark run.

For every cell of bench/attention_bwd.py's JSON (run with --all-policies) and
every (r, tie) on a grid, asks dash-sched for the model's makespans, applies
the runtime's pick rule (lib/Schedule/Choose.cpp: smallest makespan; within
the tie gap keep the earlier policy unless it depends on G and the other does
not) and counts the cells where the pick measured within 3% of the best
deterministic schedule. In-sample: the counts say how well the model can be
fitted to these measurements, not how it predicts new ones.

  python3 bench/calibrate_auto.py RESULTS.json [--dash-sched build/bin/dash-sched]
"""
import argparse
import json
import subprocess

ORDER = ["ascending", "spt", "descending", "shift", "symmetric-shift"]
DEPENDS_ON_G = {"shift", "symmetric-shift"}


def pick(makespans, tie):
    best = None
    for p in ORDER:
        if p not in makespans:
            continue
        m = makespans[p]
        if best is None:
            best = p
            continue
        b = makespans[best]
        is_tie = abs(m - b) <= tie * max(abs(m), abs(b))
        if (not is_tie and m < b) or (is_tie and best in DEPENDS_ON_G and p not in DEPENDS_ON_G):
            best = p
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--dash-sched", default="build/bin/dash-sched")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--launch", default="persistent", choices=["persistent", "fa3"],
                    help="how the model runs ascending/spt/descending (DASH's kernels: persistent)")
    ap.add_argument("--top", type=int, default=8, help="how many (r, tie) rows to print")
    args = ap.parse_args()
    res = json.load(open(args.results))["results"]
    cells = sorted({(r["d"], r["mask"], r["s"], r["b"], r["h"]) for r in res})
    measured = {}
    for c in cells:
        m = {r["impl"][5:-4]: r["tflops"] for r in res
             if (r["d"], r["mask"], r["s"], r["b"], r["h"]) == c and r["impl"].startswith("dash-")
             and r["impl"].endswith("-det") and r["impl"] != "dash-auto-det" and r.get("tflops")}
        if m:
            measured[c] = m
    rs = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
    ties = [0.0, 0.01, 0.03, 0.05, 0.1]
    model = {}
    for c in measured:
        d, mask, s, b, h = c
        bm = 128 if d == 64 else 64
        for r in rs:
            out = subprocess.run([args.dash_sched, "--batch", str(b), "--heads", str(h), "--seqlen", str(s),
                                  "--hdim", str(d), "--mask", mask, "--block-m", str(bm), "--block-n", "128",
                                  "--sms", str(args.sms), "--r", str(r), "--launch", args.launch, "--json"],
                                 capture_output=True, text=True, check=True).stdout
            sch = json.loads(out)["schedules"]
            model[c, r] = {x["name"]: x["makespan"] for x in sch if x["legal"]}
    table = []
    for r in rs:
        for t in ties:
            ok = sum(1 for c, m in measured.items()
                     if m.get(pick(model[c, r], t), 0) >= 0.97 * max(m.values()))
            table.append((ok, r, t))
    table.sort(key=lambda x: (-x[0], x[1], x[2]))
    print("cells: %d" % len(measured))
    for ok, r, t in table[:args.top]:
        print("r=%-5s tie=%-5s within 3%% of the best schedule: %d/%d" % (r, t, ok, len(measured)))
    ok, r, t = table[0]
    print("\nper cell at r=%s tie=%s:" % (r, t))
    for c, m in sorted(measured.items()):
        p = pick(model[c, r], t)
        best = max(m, key=m.get)
        print("  d=%d %-6s s=%-5d pick %-15s %6.1f  best %-15s %6.1f  %s" % (
            c[0], c[1], c[2], p, m.get(p, 0), best, m[best],
            "ok" if m.get(p, 0) >= 0.97 * m[best] else "MISS"))


if __name__ == "__main__":
    main()
