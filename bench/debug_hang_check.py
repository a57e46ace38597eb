#!/usr/bin/env python3
"""Debug kernels on the GPU: a correct debug kernel runs; a kernel compiled
from a deliberately wrong rank table (every rank + 1: rank 0 never comes)
reports the stuck wait instead of hanging.

  DASH_KERNEL_DIR=DIR PYTHONPATH=python python3 bench/debug_hang_check.py ok|broken
"""
import sys

import torch

import dash_attn

mode = sys.argv[1]
b, h, s, d = 1, 2, 256, 128
q, k, v, do = [torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, False,
                                                            scale=d ** -0.5)[:2]
try:
    dq, dk, dv = dash_attn.attention_backward(q, k, v, o, do, lse, causal=True,
                                              schedule="descending", layout="bhsd")
    torch.cuda.synchronize()
    print("debug-kernel %s: completed, finite=%s" % (mode, bool(torch.isfinite(dq).all())))
    sys.exit(0 if mode == "ok" else 1)
except Exception as e:  # the broken kernel must land here, not hang
    print("debug-kernel %s: %s: %s" % (mode, type(e).__name__, e))
    sys.exit(0 if mode == "broken" and "hang detected" in str(e) else 1)
