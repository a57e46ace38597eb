#!/usr/bin/env python3
"""What the ordered dQ chain costs when steps and adds vary: a Monte-Carlo
companion to dash-sched, whose model has fixed costs (where no persistent
schedule ever waits).

Takes one schedule's unit work lists and per-row ranks from
`dash-sched --json --detail --launch persistent` and simulates the WGMMA
kernel's hand-off: each unit computes its steps in order (cost c = 1, times
1 + N(0, sigma), `--boundary` more on an item's first step), writes the dQ
partial into one of `--staging` buffers (waiting until the reducer has read
the one it reuses: `--read-fraction` of the add), and that buffer's reducer
adds it once the row's earlier ranks have landed (cost r, same jitter).
Prints the makespan with the ranks (deterministic) and without them (the
counted non-deterministic kernels), per seed.

  python3 bench/rank_jitter_model.py --seqlen 16384 --hdim 128 --sigma 0.2 --r 1.0

bench/NOTES.md section 47 used it to predict the symmetric-shift rectangle
spread (with the rectangle formula switched back to the paper's for "before").
"""
import argparse
import heapq
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(args):
    cmd = [args.dash_sched, "--batch", str(args.tokens // args.seqlen),
           "--heads", str(args.width // args.hdim), "--seqlen", str(args.seqlen),
           "--hdim", str(args.hdim), "--mask", args.mask, "--policy", args.policy,
           "--launch", "persistent", "--sms", str(args.sms), "--json", "--detail"]
    sched = json.loads(subprocess.run(cmd, capture_output=True, text=True,
                                      check=True).stdout)["schedules"][0]
    if not sched["legal"]:
        sys.exit("rank_jitter_model: %s is illegal here: %s" % (args.policy, sched["reason"]))
    rank = {}
    for row in sched["ranks"]:
        for k, kv in enumerate(row["kv_order"]):
            rank[(row["b"], row["h"], row["q_tile"], kv)] = k
    units = []
    for items in sched["units"]:
        seq = []
        for it in items:
            for n, q in enumerate(it["q_tiles"]):
                row = (it["b"], it["h"], q)
                seq.append((row, rank[row + (it["kv_tile"],)], n == 0))
        units.append(seq)
    return units


def simulate(units, sigma, r, read_fraction, staging, boundary, ordered, seed):
    rnd = random.Random(seed)
    jitter = lambda: max(0.3, 1 + rnd.gauss(0, sigma))
    events, tick = [], [0]

    def push(t, *what):
        tick[0] += 1
        heapq.heappush(events, (t, tick[0]) + what)

    read = {}      # (unit, step) -> when its staging buffer was read
    reducer = {}   # (unit, buffer) -> when its last add landed
    blocked = {}   # unit -> (step, compute done) waiting for a buffer
    turn, landed, parked = {}, {}, {}
    end = [0.0] * len(units)

    def compute(u, k):
        return (1.0 + (boundary if units[u][k][2] else 0.0)) * jitter()

    def hand_over(u, k, full):           # the partial is in its buffer
        push(full, "full", u, k)
        if k + 1 < len(units[u]):
            push(full + compute(u, k + 1), "done", u, k + 1)

    def add(u, k, start):
        row, rk, _ = units[u][k]
        took = r * jitter()
        read[(u, k)] = start + read_fraction * took
        reducer[(u, k % staging)] = start + took
        end[u] = max(end[u], start + took)
        if ordered:
            push(start + took, "release", row, rk + 1)
        if blocked.get(u, (None,))[0] == k + staging:
            kk, done = blocked.pop(u)
            hand_over(u, kk, max(done, read[(u, k)]))

    def try_add(u, k, ready):
        row, rk, _ = units[u][k]
        if not ordered:
            add(u, k, ready)
        elif turn.get(row, 0) == rk:
            add(u, k, max(ready, landed.get(row, 0.0)))
        else:
            parked[(row, rk)] = (u, k, ready)

    for u, seq in enumerate(units):
        if seq:
            push(compute(u, 0), "done", u, 0)
    while events:
        t, _, kind, a, b = heapq.heappop(events)
        if kind == "done":
            if b < staging:
                hand_over(a, b, t)
            elif (a, b - staging) in read:
                hand_over(a, b, max(t, read[(a, b - staging)]))
            else:
                blocked[a] = (b, t)
        elif kind == "full":
            try_add(a, b, max(t, reducer.get((a, b % staging), 0.0)))
        else:  # release: row a's rank b may add
            turn[a], landed[a] = b, t
            waiting = parked.pop((a, b), None)
            if waiting:
                try_add(*waiting)
    assert not parked and not blocked, "deadlock in the simulation"
    return max(end)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seqlen", type=int, default=16384)
    ap.add_argument("--hdim", type=int, default=128)
    ap.add_argument("--mask", default="causal")
    ap.add_argument("--policy", default="symmetric-shift")
    ap.add_argument("--tokens", type=int, default=16384, help="b * s")
    ap.add_argument("--width", type=int, default=2048, help="h * d")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--sigma", type=float, default=0.2, help="relative jitter of steps and adds")
    ap.add_argument("--r", type=float, default=1.0, help="ordered add time, in steps")
    ap.add_argument("--read-fraction", type=float, default=0.5)
    ap.add_argument("--staging", type=int, default=2)
    ap.add_argument("--boundary", type=float, default=0.8, help="extra steps on an item's first step")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--dash-sched", default=os.path.join(ROOT, "build", "bin", "dash-sched"))
    args = ap.parse_args()
    units = load(args)
    for seed in range(args.seeds):
        run = lambda ordered: simulate(units, args.sigma, args.r, args.read_fraction,
                                       args.staging, args.boundary, ordered, seed)
        det, nondet = run(True), run(False)
        print("seed %d: det %.1f  nondet %.1f  det/nondet %.4f" % (seed, det, nondet, nondet / det))


if __name__ == "__main__":
    main()
