#!/usr/bin/env python3
"""One benchmark cell's DASH backward, called a few times: the program to run
under a profiler (ncu) to split a call into its preprocess, main and
postprocess kernels, or to sample where the main kernel stalls.

  ncu --clock-control none --kernel-name regex:dash_bwd \\
      --metrics gpu__time_duration.sum python3 bench/profile_cell.py --d 128 --s 512

Shapes as bench/attention_bwd.py: b = 16384/s, h = 2048/d, bf16, BHSD.
--fa3-lib LIB calls FlashAttention-3's backward instead (bench/peers/fa3/), the
same inputs, to profile beside ours (main kernel: regex:FlashAttnBwdSm90).
"""
import argparse
import os
import sys

import torch

import dash_attn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fa3_peer  # noqa: E402


def cell_inputs(d, mask, s):
    """One sweep cell's inputs (b = 16384/s, h = 2048/d, bf16, BHSD, seed
    0) and its forward by SDPA's flash kernel: a dict of the
    attention_backward arguments."""
    b, h = 16384 // s, 2048 // d
    causal = mask == "causal"
    torch.manual_seed(0)
    q, k, v, do = [torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                   for _ in range(4)]
    scale = d ** -0.5
    o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
        q, k, v, 0.0, causal, False, scale=scale)[:2]
    return dict(q=q, k=k, v=v, o=o, do=do, lse=lse, causal=causal, scale=scale,
                layout="bhsd")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--mask", default="full", choices=("full", "causal"))
    ap.add_argument("--s", type=int, default=4096)
    ap.add_argument("--det", type=int, default=1)
    ap.add_argument("--schedule", default="auto")
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--fa3-lib", help="call FA3's backward (the peer library) instead")
    args = ap.parse_args()
    cell = cell_inputs(args.d, args.mask, args.s)
    if args.fa3_lib:
        call = fa3_peer.cell_call(fa3_peer.Fa3Peer(args.fa3_lib), cell, args.det)
    else:
        def call():
            dash_attn.attention_backward(**cell, deterministic=bool(args.det),
                                         schedule=args.schedule)
    for _ in range(args.calls):
        call()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
