#!/usr/bin/env python3
"""What the GPU does during one backward call, activity by activity: every
kernel and memcpy/memset of a DASH call (and, beside it, of PyTorch's cuDNN
backward on the same inputs) from CUPTI via torch.profiler, as offsets from
the call's first GPU activity, so the time between the kernels (launch
gaps, the tensor-map copy) can be told from the kernels themselves.

  python3 bench/call_timeline.py --cells 64:causal:4096,128:causal:8192 \\
      [--det 1] [--calls 5] [--out FILE.json]

Each call is queued behind a GPU sleep (the host runs ahead, as in
bench/attention_bwd.py) with an L2 flush (a bitwise-not of 256 MB, which
also marks where a call starts in the profile) before it; the profile covers
--calls calls and the table shows the median of each activity's start and
duration over them. Needs the GPU machine (torch, the runtime).
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

L2_FLUSH_BYTES = 256 << 20
LEAD_CYCLES = 50_000_000  # ~25 ms: the host queues everything meanwhile


def is_marker(name):
    """The flush that starts each call: a bitwise-not kernel."""
    return "bitwise_not" in name.lower() or "BitwiseNot" in name


def split_calls(acts):
    """[(start, end, name)] GPU activities (any order, times in us) ->
    [[(name, offset_us, dur_us), ...] per call]: each call is what follows a
    flush marker up to the next one, offsets from its first activity;
    activities before the first marker and empty calls are dropped."""
    per_call, cur = [], None
    for st, en, name in sorted(acts):
        if is_marker(name):
            cur = []
            per_call.append(cur)
        elif cur is not None:
            cur.append((name, st, en))
    out = []
    for c in per_call:
        if c:
            t0 = c[0][1]
            out.append([(n, st - t0, en - st) for n, st, en in c])
    return out


def calls_timeline(fn, calls, flush):
    """split_calls of `calls` calls of fn, each after a flush, as CUPTI
    (torch.profiler) saw them; the GPU sleep ahead of them is dropped."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(LEAD_CYCLES)
        for _ in range(calls):
            flush.bitwise_not_()
            fn()
        torch.cuda.synchronize()
    acts = [(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA
            and "sleep" not in e.name.lower()]
    return split_calls(acts)


def short(name):
    for key in ("dash_bwd_preprocess", "dash_bwd_main", "dash_bwd_postprocess"):
        if key in name:
            return key
    return name[:60]


def summarise(label, timelines):
    """Median start / duration of the i-th activity over the calls whose
    activity sequence is the first call's; prints them and returns a dict
    (span: first start to last end; between: span minus the activities)."""
    seq = [short(n) for n, _, _ in timelines[0]]
    same = [t for t in timelines if [short(n) for n, _, _ in t] == seq]
    rows = []
    for i, name in enumerate(seq):
        st = statistics.median(t[i][1] for t in same)
        du = statistics.median(t[i][2] for t in same)
        rows.append(dict(name=name, start_us=st, dur_us=du))
    span = statistics.median(t[-1][1] + t[-1][2] for t in same)
    busy = sum(r["dur_us"] for r in rows)
    print("%s: %d calls alike, span %.1f us, activities %.1f us, between %.1f us"
          % (label, len(same), span, busy, span - busy))
    for r in rows:
        print("   %9.1f  +%9.1f us  %s" % (r["start_us"], r["dur_us"], r["name"]))
    return dict(label=label, calls=len(same), span_us=span, busy_us=busy,
                between_us=span - busy, rows=rows)


def main():
    sys.path.insert(0, HERE)
    import torch
    import dash_attn
    from profile_cell import cell_inputs
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="64:causal:4096,128:causal:8192")
    ap.add_argument("--det", type=int, default=1)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--no-cudnn", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    results = []
    for spec in args.cells.split(","):
        d, mask, s = spec.split(":")
        d, s = int(d), int(s)
        cell = cell_inputs(d, mask, s)

        def ours():
            dash_attn.attention_backward(**cell, deterministic=bool(args.det))
        for _ in range(3):
            ours()
        torch.cuda.synchronize()
        r = summarise("d=%d %s s=%d ours det=%d" % (d, mask, s, args.det),
                      calls_timeline(ours, args.calls, flush))
        results.append(dict(r, d=d, mask=mask, s=s, impl="ours"))
        if not args.no_cudnn:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            q, k, v = [cell[n].detach().clone().requires_grad_(True) for n in "qkv"]
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                out = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=cell["causal"], scale=cell["scale"])

            def cudnn():
                torch.autograd.grad(out, (q, k, v), cell["do"], retain_graph=True)
            for _ in range(3):
                cudnn()
            torch.cuda.synchronize()
            r = summarise("d=%d %s s=%d cuDNN" % (d, mask, s),
                          calls_timeline(cudnn, args.calls, flush))
            results.append(dict(r, d=d, mask=mask, s=s, impl="cudnn"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=dict(device=torch.cuda.get_device_name(),
                                     det=args.det, calls=args.calls),
                           results=results), f, indent=1)


if __name__ == "__main__":
    main()
