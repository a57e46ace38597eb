#!/usr/bin/env python3
"""Where schedule="auto" loses time against the schedule it resolves to:
for a few cells, per call (GPU idle at the start, as bench/attention_bwd.py
times), the host time of the call, and back-to-back calls (host work hidden
behind the GPU). Prints one line per cell and implementation.

  python3 bench/auto_overhead.py [--cells d:mask:s ...] [--runs N]
"""
import argparse
import statistics
import time

import os
import sys

import torch

import dash_attn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_cell import cell_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", nargs="*", default=["128:causal:4096", "64:full:1024"])
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    for cell in a.cells:
        d, mask, s = cell.split(":")
        d, s = int(d), int(s)
        args = cell_inputs(d, mask, s)
        for det in (True, False):
            # A launch first: before one, check may not know the grid and
            # report "auto" itself.
            dash_attn.attention_backward(**args, deterministic=det, schedule="auto")
            info = dash_attn.check_backward(**args, deterministic=det, schedule="auto")
            pols = ["auto", info["policy"]]
            fns = [(lambda p: lambda: dash_attn.attention_backward(
                **args, deterministic=det, schedule=p))(p) for p in pols]
            for f in fns:
                f()
            torch.cuda.synchronize()
            synced = [[], []]
            host = [[], []]
            for order in ([0, 1], [1, 0]) * ((a.runs + 1) // 2):
                for i in order:
                    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    st.record()
                    t0 = time.perf_counter()
                    fns[i]()
                    host[i].append(1e3 * (time.perf_counter() - t0))
                    en.record()
                    en.synchronize()
                    synced[i].append(st.elapsed_time(en))
            b2b = []
            for f in fns:
                torch.cuda.synchronize()
                st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                st.record()
                for _ in range(a.runs):
                    f()
                en.record()
                en.synchronize()
                b2b.append(st.elapsed_time(en) / a.runs)
            for i, p in enumerate(pols):
                print("d=%d %s s=%d %s %-16s synced %.3f ms  host %.3f ms  back-to-back %.3f ms"
                      % (d, mask, s, "det" if det else "nondet", p,
                         statistics.median(synced[i]), statistics.median(host[i]), b2b[i]))


if __name__ == "__main__":
    main()
