#!/usr/bin/env python3
"""Calibrate `auto` (the schedule model's r and tie gap) on a benchmark run.

For every cell of bench/attention_bwd.py's JSON (run with --all-policies) and
every (r, tie) on a grid, asks dash-sched for the model's makespans, applies
the runtime's pick rule (lib/Schedule/Choose.cpp: smallest makespan; within
the tie gap keep the earlier policy unless it depends on G and the other does
not) and counts the cells where the pick measured within 3% of the best
deterministic schedule. In-sample: the counts say how well the model can be
fitted to these measurements, not how it predicts new ones.

  python3 bench/calibrate_auto.py RESULTS.json [MORE.json ...]
      [--dash-sched build/bin/dash-sched] [--staging 64=1 --staging 128=2]

Several result files are pooled (each cell counted once per file). With
--staging D=B the model is the staged one (dash-sched --staging: a unit
computes on while B hand-offs wait for their reducers, as the WGMMA kernels
do at head dim D) and --read-fractions is searched as well.
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
    ap.add_argument("results", nargs="+")
    ap.add_argument("--dash-sched", default="build/bin/dash-sched")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--launch", default="persistent", choices=["persistent", "fa3"],
                    help="how the model runs ascending/spt/descending (DASH's kernels: persistent)")
    ap.add_argument("--top", type=int, default=8, help="how many (r, tie) rows to print")
    ap.add_argument("--staging", action="append", default=[], metavar="D=B",
                    help="staged model with B dQ staging buffers at head dim D (repeatable)")
    ap.add_argument("--read-fractions", default="0.25,0.5,1.0",
                    help="staged model: read fractions to search")
    args = ap.parse_args()
    staging = {int(k): int(v) for k, v in (x.split("=") for x in args.staging)}
    # Cells keyed by (file index, d, mask, s, b, h): every run counts.
    measured = {}
    for i, path in enumerate(args.results):
        res = json.load(open(path))["results"]
        for r in res:
            if (r["impl"].startswith("dash-") and r["impl"].endswith("-det")
                    and r["impl"] != "dash-auto-det" and r.get("tflops")):
                key = (i, r["d"], r["mask"], r["s"], r["b"], r["h"])
                measured.setdefault(key, {})[r["impl"][5:-4]] = r["tflops"]
    rs = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
    ties = [0.0, 0.01, 0.03, 0.05, 0.1]
    fracs = [float(x) for x in args.read_fractions.split(",")] if staging else [None]
    model = {}
    shapes = sorted({c[1:] for c in measured})
    for shape in shapes:
        d, mask, s, b, h = shape
        bm = 128 if d == 64 else 64
        for r in rs:
            for f in fracs:
                cmd = [args.dash_sched, "--batch", str(b), "--heads", str(h), "--seqlen", str(s),
                       "--hdim", str(d), "--mask", mask, "--block-m", str(bm), "--block-n", "128",
                       "--sms", str(args.sms), "--r", str(r), "--launch", args.launch, "--json"]
                if f is not None:
                    cmd += ["--staging", str(staging.get(d, 0)), "--read-fraction", str(f)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                sch = json.loads(out)["schedules"]
                model[shape, r, f] = {x["name"]: x["makespan"] for x in sch if x["legal"]}
    table = []
    for r in rs:
        for f in fracs:
            for t in ties:
                ok = sum(1 for c, m in measured.items()
                         if m.get(pick(model[c[1:], r, f], t), 0) >= 0.97 * max(m.values()))
                table.append((ok, r, f, t))
    table.sort(key=lambda x: (-x[0], x[1], x[2] or 0, x[3]))
    print("cells: %d (%d files)" % (len(measured), len(args.results)))
    for ok, r, f, t in table[:args.top]:
        print("r=%-5s %stie=%-5s within 3%% of the best schedule: %d/%d" % (
            r, "" if f is None else "read=%-5s " % f, t, ok, len(measured)))
    ok, r, f, t = table[0]
    print("\nper cell at r=%s%s tie=%s:" % (r, "" if f is None else " read=%s" % f, t))
    for c, m in sorted(measured.items()):
        p = pick(model[c[1:], r, f], t)
        best = max(m, key=m.get)
        print("  run %d d=%d %-6s s=%-5d pick %-15s %6.1f  best %-15s %6.1f  %s" % (
            c[0], c[1], c[2], c[3], p, m.get(p, 0), best, m[best],
            "ok" if m.get(p, 0) >= 0.97 * m[best] else "MISS"))


if __name__ == "__main__":
    main()
