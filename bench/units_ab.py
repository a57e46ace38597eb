#!/usr/bin/env python3
"""Same kernel, different grid: ours (det, auto) with G = occupancy x SMs
(the runtime's choice, 132 on an H200) against smaller G, round-robin in one
process (bench/attention_bwd.py's timing: queued, L2 flushed, seeded random
rounds).

  DASH_LIB_DIR=... DASH_KERNEL_DIR=... PYTHONPATH=python \\
      python3 bench/units_ab.py --cells 64:causal:16384,128:full:16384 --units 0,128

Why: at s = 16384 every cell runs 15.52 or 31.03 rounds of equal items as 16
or 32 (bench/NOTES.md section 22), so G = 128 has the same makespan in steps
with 4 SMs idle throughout instead of 68 idle for the last round; under the
H200's power cap (section 25) fewer busy SMs may hold a higher clock. The
model cannot say which wins; this measures it. Prints TFLOP/s per G, the
schedule auto resolved to for it, and the ratio to G = 0."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from clock_probe import parse_cells  # noqa: E402  (torch-free)
from kernel_times import flops  # noqa: E402  (torch-free)


def parse_units(text):
    units = [int(u) for u in text.split(",")]
    if not units or any(u < 0 for u in units) or len(set(units)) != len(units):
        raise ValueError("--units: distinct non-negative integers (0 = the runtime's G)")
    return units


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", required=True)
    ap.add_argument("--units", default="0,128")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        cells = parse_cells(args.cells)
    except ValueError as e:
        print("units_ab: bad cell: %s" % e, file=sys.stderr)
        return 2
    try:
        units = parse_units(args.units)
    except ValueError as e:
        print("units_ab: %s" % e, file=sys.stderr)
        return 2
    import torch
    from dash_attn import _runtime as R
    from attention_bwd import timed_interleaved, cell_seed
    from profile_cell import cell_inputs
    idx = torch.cuda.current_device()
    rt = R.get_runtime(idx)
    print("| d | mask | s | G | schedule | ms | TFLOP/s | vs G=%d |" % units[0])
    print("|---|---|---|---|---|---|---|---|")
    for d, mask, s in cells:
        c = cell_inputs(d, mask, s)
        ins = (c["q"], c["k"], c["v"], c["o"], c["do"], c["lse"])
        grads = tuple(torch.empty_like(t) for t in ins[:3])
        metas = R.metas_of(ins + grads)
        stream = torch.cuda.current_stream().cuda_stream
        fns, infos = [], []
        for g in units:
            a = R.build_args(metas, causal=c["causal"], causal_align="bottom_right",
                             scale=c["scale"], deterministic=True, schedule="auto",
                             layout="bhsd")
            a.num_units = g
            st, info = rt.launch(a, stream)
            if st != R.SUCCESS:
                print("units_ab: G=%d refused: %s" % (g, rt.last_error()), file=sys.stderr)
                return 1
            infos.append((info.num_units, R.info_dict(info)["policy"]))

            def call(a=a, g=g):
                st, _ = rt.launch(a, stream)
                if st != R.SUCCESS:  # a timed call that did not launch must not be timed
                    raise RuntimeError("units_ab: G=%d failed: %s" % (g, rt.last_error()))
            fns.append(call)
        times, _ = timed_interleaved(fns, args.runs, seed=cell_seed(d, mask, s, args.seed))
        f = flops(d, mask, s)
        for (g, pol), ms in zip(infos, times):
            print("| %d | %s | %d | %d | %s | %.3f | %.1f | %.3f |" % (
                d, mask, s, g, pol, ms, f / ms / 1e9, times[0] / ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
