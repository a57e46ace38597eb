"""The order in which bench/attention_bwd.py times a cell's implementations:
round by round (--timing queued, sync), a seeded random permutation per
round (round_orders), or in windows of one implementation's calls (--timing
window, window_order).

Why: a call's time depends on what ran before it (clocks, L2, the
allocator), and under the H200's power cap not only on the call right
before. Rotating one fixed order by one each round kept every
implementation's predecessor fixed: in the 2026-11-29 sweeps the auto rows,
always right after SDPA's efficient backend, measured 2-13% below the very
kernel they resolve to. The balanced Latin square (Williams design) that
replaced it balanced the predecessors but built each round from index
offsets (k, k+1, k-1, k+2, ...), so an implementation's second and third
neighbours were always those of nearby index: the auto rows (index 3) sat
among SDPA's lighter backends and measured 1.5-5% above their own kernel's
row at full-mask s = 16384 in three sweeps, 3-5% above an identical twin
row (bench/NOTES.md section 25). Independent random rounds average every
neighbourhood out. torch-free (tests import it).
"""
import random


def round_orders(n, rounds, seed=0):
    """The order of each of `rounds` rounds over n implementations: an
    independent seeded random permutation per round (the benchmark seeds it
    per cell), so both what runs right before a call and what ran two or
    three calls earlier vary from round to round."""
    if n < 1:
        return []
    rng = random.Random(seed)
    return [rng.sample(range(n), n) for _ in range(rounds)]


def window_order(n, runs, seed=0):
    """--timing window: (implementation, calls) per window, each
    implementation timed in windows of its own calls as do_bench does (the
    anchors' method), the implementations in a seeded random order and then
    in the reverse of it, its runs split between its two windows (the first
    takes the odd one), so a drift over the cell weighs on every
    implementation alike and the neighbours differ from cell to cell (the
    benchmark also idles the GPU before every window)."""
    if n < 1 or runs < 1:
        return []
    base = random.Random(seed).sample(range(n), n)
    first, second = runs - runs // 2, runs // 2
    out = [(i, first) for i in base]
    if second:
        out += [(i, second) for i in reversed(base)]
    return out
