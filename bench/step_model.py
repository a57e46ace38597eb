#!/usr/bin/env python3
"""A cycle model of one SM's two MMA warpgroups walking their steps, to rank
reorderings of the step before they are built (bench/NOTES.md section 21).

Each warpgroup runs a program per step: local work (`alu`), work on the SM's
special-function units (`sfu`, shared by both warpgroups: two at once run at
half rate each), wgmma groups (`issue`: one instruction per cycle into the
SM's tensor pipe, which runs one instruction at a time in arrival order and
accepts a new one only while fewer than `depth` wait; the warpgroup stalls at
the issue otherwise, as the phase trace showed), `wait n` (at most n of its
groups unfinished), the dS^T barrier (`bar`: both warpgroups), a one-way
signal (`post` a name for this step, `await` the other's post of this or an
earlier step), and the Q/dO
stage protocol (`full` waits for a step's stage, `release` frees one; the
producer refills a stage `load` cycles after both warpgroups released it).

The costs of the local phases come from the phase trace of the shipped
kernels (call 1 of bench/results/2026-12-02-h200-phases): they are inputs,
not predictions. What the model predicts is how the step's length moves when
the order of the programs changes.

  python3 bench/step_model.py            # every variant, both head dims
"""
import argparse

# wgmma instruction times on one SM (4096 FLOP/clk): m64nNk16 = N / 2 cycles.
def mma(n, count):
    return [n // 2] * count


class Sim:
    def __init__(self, programs, steps, depth=2, load=900, stages=2, log=None):
        self.log = log                 # a list: (cycle, warpgroup, step, op) appended
        self.progs = programs          # per warpgroup: f(step) -> op list
        self.steps = steps
        self.depth = depth
        self.load = load
        self.stages = stages

    def run(self):
        t = 0
        wgs = [dict(step=0, ops=list(self.progs[w](0)), pc=0, busy=0, groups=[],
                    issuing=None, done_at=[], bar_wait=False) for w in range(2)]
        pipe = []                       # [remaining cycles, group record]
        sfu_users = []
        bars = {}                       # barrier id -> set of warpgroups waiting
        released = {}                   # step -> warpgroups that released it
        posted = set()                  # (name, step) signalled by a "post"
        full_at = {s: 0 for s in range(self.stages)}  # step -> cycle its stage is full
        tensor_busy = 0
        limit = 10 ** 7
        while t < limit:
            if all(w["step"] >= self.steps for w in wgs):
                break
            # the tensor pipe: one instruction at a time
            if pipe:
                tensor_busy += 1
                pipe[0][0] -= 1
                if pipe[0][0] == 0:
                    inst = pipe.pop(0)
                    inst[1]["left"] -= 1
            # the SFU: processor sharing among its users
            active_sfu = [w for w in wgs if w.get("sfu", 0) > 0]
            for w in active_sfu:
                w["sfu"] -= 1.0 / len(active_sfu)
            for wi, w in enumerate(wgs):
                if w["step"] >= self.steps:
                    continue
                if w["busy"] > 0:
                    w["busy"] -= 1
                    continue
                if w.get("sfu", 0) > 0:
                    continue
                if w["issuing"] is not None:
                    g = w["issuing"]
                    if len(pipe) < self.depth:
                        pipe.append([g["todo"].pop(0), g])
                        if not g["todo"]:
                            w["issuing"] = None
                    continue
                if w["pc"] == len(w["ops"]):
                    w["done_at"].append(t)
                    w["step"] += 1
                    w["pc"] = 0
                    if w["step"] < self.steps:
                        w["ops"] = list(self.progs[wi](w["step"]))
                    continue
                op = w["ops"][w["pc"]]
                kind = op[0]
                if self.log is not None and w.get("logged") != (w["step"], w["pc"]):
                    w["logged"] = (w["step"], w["pc"])
                    self.log.append((t, wi, w["step"], op[0], op[1] if len(op) > 1 else ""))
                if kind == "alu":
                    w["busy"] = op[1] - 1
                    w["pc"] += 1
                elif kind == "sfu":
                    w["sfu"] = float(op[1])
                    w["pc"] += 1
                elif kind == "issue":
                    g = dict(name=op[1], todo=list(op[2]), left=len(op[2]))
                    w["groups"].append(g)
                    w["issuing"] = g
                    w["pc"] += 1
                elif kind == "wait":
                    if sum(1 for g in w["groups"] if g["left"] > 0) <= op[1]:
                        w["groups"] = [g for g in w["groups"] if g["left"] > 0]
                        w["pc"] += 1
                elif kind == "bar":
                    key = (op[1], w["step"])
                    s = bars.setdefault(key, set())
                    s.add(wi)
                    if len(s) == 2:
                        w["pc"] += 1
                elif kind == "post":  # (name, this step) done, for the other
                    posted.add((op[1], w["step"]))
                    w["pc"] += 1
                elif kind == "await":  # ("await", name, k): (name, step - k) posted
                    k = op[2] if len(op) > 2 else 0
                    if w["step"] - k < 0 or (op[1], w["step"] - k) in posted:
                        w["pc"] += 1
                elif kind == "full":
                    s = op[1]
                    if s in full_at and full_at[s] <= t:
                        w["pc"] += 1
                elif kind == "release":
                    s = op[1]
                    r = released.setdefault(s, set())
                    r.add(wi)
                    if len(r) == 2:
                        full_at[s + self.stages] = t + self.load
                    w["pc"] += 1
                else:
                    raise ValueError(op)
            t += 1
        if t >= limit:
            raise RuntimeError("step model: no progress (a barrier or stage never completes)")
        # the steady state: the mean step length over the second half
        ends = wgs[0]["done_at"]
        h = len(ends) // 2
        per_step = (ends[-1] - ends[h - 1]) / (len(ends) - h)
        return dict(step=per_step, tensor_share=tensor_busy / t, cycles=t)


# Local phase costs (cycles) from the phase trace: the step top (FULL_Q check,
# the opaque thread values), the exp2 pass's FMA/LSU part, the dS pass, the dQ
# hand-off (staging stores, fence, barriers). The SFU work is 16 exp2 per
# clock: 64 x 128 values per warpgroup at d = 64, 64 x 64 at d = 128.
COST = {
    64: dict(top=140, exp_fma=350, sfu=512, ds=300, handoff=450,
             s=mma(128, 4), dp=mma(128, 4), dv=mma(64, 8), dq=mma(64, 8), dk=mma(64, 8)),
    128: dict(top=160, exp_fma=380, sfu=256, ds=480, handoff=560,
              s=mma(64, 8), dp=mma(64, 8), dv=mma(128, 4), dq=mma(64, 8), dk=mma(128, 4)),
}


def step_top(c, d, n):
    """The step's FULL wait, S^T and dP^T issued, S^T complete."""
    ops = [("full", n), ("alu", c["top"]), ("issue", "S", c["s"])]
    if d == 64:  # dP^T's accumulator starts at dPsum: ptxas waits for S^T first
        ops.append(("wait", 0))
    return ops + [("issue", "dP", c["dp"])]


def dv_and_ds(c, d):
    """After the exp2 pass: dV (64-row tiles: at once, under the dS pass;
    128-row tiles: after it) and the dS pass, dP^T complete."""
    if d == 128:
        return [("issue", "dV", c["dv"]), ("wait", 1), ("alu", c["ds"])]
    return [("wait", 0), ("alu", c["ds"]), ("issue", "dV", c["dv"])]


def exp2_pass(c, slices=1, between=lambda i: []):
    """The exp2 pass (FMA/LSU part, then the SFU), in `slices` with
    `between(i)` after slice i."""
    ops = []
    for i in range(slices):
        ops += [("alu", c["exp_fma"] // slices), ("sfu", c["sfu"] // slices)]
        ops += between(i)
    return ops


def shipped(d):
    """The shipped step (docs/GPU.md, 'Per step')."""
    c = COST[d]

    def prog(n):
        return (step_top(c, d, n) + [("wait", 1)] + exp2_pass(c) + dv_and_ds(c, d)
                + [("bar", "dS"), ("issue", "dQ", c["dq"]), ("issue", "dK", c["dk"]),
                   ("wait", 1), ("alu", c["handoff"]), ("wait", 0), ("release", n)])
    return prog


def dk_in_next_step(d, interleaved):
    """dK of step n issued in step n + 1, from shared memory: as one group
    behind S^T and dP^T (`deferred-dk`; rejected, call 2: 10-18% slower), or
    one instruction at a time between slices of the exp2 pass (the mask
    applied after the pass) so the pass proceeds while dK runs. The stage of
    step n is released once that dK is complete."""
    c = COST[d]
    k = len(c["dk"])

    def prog(n):
        ops = step_top(c, d, n)
        if interleaved:
            ops += [("wait", 1)]
            ops += exp2_pass(c, k, lambda i: [("issue", "dKprev%d" % i, c["dk"][i:i + 1])]
                             if n > 0 else [])
        else:
            if n > 0:
                ops.append(("issue", "dKprev", c["dk"]))
            ops += [("wait", 2 if n > 0 else 1)] + exp2_pass(c)
        ops += [("issue", "dV", c["dv"]), ("wait", 1)] if d == 128 else [("wait", 0)]
        if n > 0:
            ops.append(("release", n - 1))
        ops += [("alu", c["ds"])]
        if d == 64:
            ops.append(("issue", "dV", c["dv"]))
        return ops + [("bar", "dS"), ("issue", "dQ", c["dq"]), ("wait", 0),
                      ("alu", c["handoff"])]
    return prog


def early_st(d, after_handoff):
    """The next step's S^T issued once dQ is complete, ahead of the hand-off
    (early-st=1, 5e9ef8f), or after it, behind dK; carried complete."""
    c = COST[d]

    def prog(n):
        ops = [("full", 0), ("issue", "S", c["s"]), ("wait", 0)] if n == 0 else []
        ops += [("alu", c["top"]), ("issue", "dP", c["dp"]), ("wait", 1)]
        ops += exp2_pass(c) + dv_and_ds(c, d)
        ops += [("bar", "dS"), ("issue", "dQ", c["dq"]), ("issue", "dK", c["dk"]),
                ("wait", 1)]
        next_s = [("full", n + 1), ("issue", "S", c["s"])]
        handoff = [("alu", c["handoff"])]
        ops += handoff + next_s if after_handoff else next_s + handoff
        return ops + [("wait", 0), ("release", n)]
    return prog


def dq_kv_split(d, store=500, add=900, stagger=0):
    """dq-kv-split=1 (128-row Q tiles): no dS^T barrier; each warpgroup's dQ
    covers the whole tile over its own KV rows; warpgroup 0 stores its
    partial, warpgroup 1 waits for it and adds its own (two staging buffers:
    warpgroup 0 reuses step n - 2's once warpgroup 1 has added into it).
    `stagger`: warpgroup 1 starts that many cycles late. The store and add
    costs are estimates (no phase trace of this form): 2x and ~3.5x the
    shipped hand-off's 64-value staging, per 64 values."""
    c = COST[d]

    def prog(wg):
        def p(n):
            ops = [("alu", stagger)] if n == 0 and wg == 1 and stagger else []
            ops += step_top(c, d, n) + [("wait", 1)] + exp2_pass(c) + dv_and_ds(c, d)
            if wg == 0:
                ops.append(("await", "added", 2))
            ops += [("issue", "dQ", c["dq"]), ("issue", "dK", c["dk"]), ("wait", 1)]
            ops += ([("alu", store), ("post", "stored")] if wg == 0 else
                    [("await", "stored"), ("alu", add), ("post", "added")])
            return ops + [("wait", 0), ("release", n)]
        return p
    return prog(0), prog(1)


VARIANTS = {
    "shipped": shipped,
    "deferred-dk": lambda d: dk_in_next_step(d, interleaved=False),
    "early-st": lambda d: early_st(d, after_handoff=False),
    "early-st-after-handoff": lambda d: early_st(d, after_handoff=True),
    "interleaved-dk": lambda d: dk_in_next_step(d, interleaved=True),
}


# Variants whose warpgroups run different programs (d = 64 only: 128-row Q
# tiles). Measured even on the H200 (bench/NOTES.md section 19); modelled
# even too, with or without a starting stagger (section 22).
PAIRS = {
    "dq-kv-split": dq_kv_split,
    "dq-kv-split-staggered": lambda d: dq_kv_split(d, stagger=1600),
}


def model(d, variant, steps=12, depth=2, load=900):
    if variant in PAIRS:
        return Sim(list(PAIRS[variant](d)), steps, depth=depth, load=load).run()
    prog = VARIANTS[variant](d)
    return Sim([prog, prog], steps, depth=depth, load=load).run()


def without_exp2(d, depth=2, load=900):
    """The shipped step's speed-up when the SFU part of the exp2 pass costs
    nothing: what ablate-exp2=1 kernels measure on the H200 (bench/NOTES.md
    section 22: +11..+16% at d = 64, ~+3% at d = 128; the model: ~+18% and
    ~0%, its d = 128 step not monotone in the SFU cost: 3290 cycles at 192,
    3354 at the shipped 256, 3355 at 1)."""
    base = model(d, "shipped", depth=depth, load=load)["step"]
    saved = COST[d]
    COST[d] = dict(saved, sfu=1)
    try:
        return base / model(d, "shipped", depth=depth, load=load)["step"] - 1
    finally:
        COST[d] = saved


def sensitivity(d, cut=100, depth=2, load=900):
    """The shipped step's change when one local phase is `cut` cycles
    shorter: which phase is on the critical path, and how much of it."""
    base = model(d, "shipped", depth=depth, load=load)["step"]
    out = {}
    for key in ("top", "exp_fma", "sfu", "ds", "handoff"):
        saved = dict(COST[d])
        COST[d] = dict(saved, **{key: max(1, saved[key] - cut)})
        try:
            out[key] = model(d, "shipped", depth=depth, load=load)["step"] - base
        finally:
            COST[d] = saved
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=2,
                    help="wgmma instructions the tensor pipe holds waiting (default 2)")
    ap.add_argument("--load", type=int, default=900,
                    help="cycles from a stage's release to its next FULL (default 900)")
    args = ap.parse_args()
    print("| d | variant | step cycles | vs shipped | tensor busy |")
    print("|---|---|---|---|---|")
    for d in (64, 128):
        base = model(d, "shipped", depth=args.depth, load=args.load)["step"]
        for v in list(VARIANTS) + (list(PAIRS) if d == 64 else []):
            r = model(d, v, depth=args.depth, load=args.load)
            print("| %d | %s | %.0f | %+.1f%% | %.0f%% |"
                  % (d, v, r["step"], 100 * (r["step"] / base - 1), 100 * r["tensor_share"]))
    print()
    print("| d | shipped step's speed-up without the exp2's SFU work (ablate-exp2) |")
    print("|---|---|")
    for d in (64, 128):
        print("| %d | %+.1f%% |" % (d, 100 * without_exp2(d, depth=args.depth, load=args.load)))
    print()
    print("| d | shipped step change when a phase is 100 cycles shorter | top | exp2 FMA part | "
          "exp2 SFU part | dS pass | dQ hand-off |")
    print("|---|---|---|---|---|---|---|")
    for d in (64, 128):
        sv = sensitivity(d, depth=args.depth, load=args.load)
        print("| %d | | %s |" % (d, " | ".join("%+.0f" % sv[k] for k in
                                             ("top", "exp_fma", "sfu", "ds", "handoff"))))


if __name__ == "__main__":
    main()
