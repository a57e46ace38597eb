#!/usr/bin/env python3
"""The host side of one dash_attn.attention_backward call: wall time per
call of `--calls` calls queued back to back (the GPU stays busy, so this is
the Python + C runtime path alone), the part spent in the C runtime
(Runtime.launch), and cProfile's top functions of the Python part.

  python3 bench/host_path.py [--d 128] [--mask full] [--s 2048] [--calls 50]

bench/attention_bwd.py times each call from an idle GPU, so this path is
part of every measured call. Needs the GPU machine (torch, the runtime).
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--mask", default="full", choices=("full", "causal"))
    ap.add_argument("--s", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    import torch
    import dash_attn
    from dash_attn import _runtime as R
    sys.path.insert(0, HERE)
    from profile_cell import cell_inputs
    cell = cell_inputs(args.d, args.mask, args.s)
    for _ in range(5):
        dash_attn.attention_backward(**cell, deterministic=False)
    torch.cuda.synchronize()
    in_c = []
    launch = R.Runtime.launch

    def timed(self, *a, **kw):
        t = time.perf_counter()
        r = launch(self, *a, **kw)
        in_c.append(time.perf_counter() - t)
        return r
    R.Runtime.launch = timed
    t = time.perf_counter()
    for _ in range(args.calls):
        dash_attn.attention_backward(**cell, deterministic=False)
    per_call = (time.perf_counter() - t) / args.calls
    torch.cuda.synchronize()
    R.Runtime.launch = launch
    c_us = 1e6 * sum(in_c) / len(in_c)
    print("host path per call: %.1f us (C runtime %.1f us, Python %.1f us), d=%d %s s=%d"
          % (per_call * 1e6, c_us, per_call * 1e6 - c_us, args.d, args.mask, args.s))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        dash_attn.attention_backward(**cell, deterministic=False)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
