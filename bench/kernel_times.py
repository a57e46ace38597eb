#!/usr/bin/env python3
"""Where a call's time goes: per benchmark cell, the whole call timed with
CUDA events (median of --runs) beside ncu's duration of each of its three
kernels (preprocess, main, postprocess) and the main kernel's tensor-pipe
and shared-memory-pipe utilisation, so that a fixed per-call cost and the
main kernel's own throughput can be told apart.

  python3 bench/kernel_times.py --cells 128:full:2048,128:full:16384 \\
      [--det 1] [--runs 20] [--out FILE.json]

Cells are d:mask:s (shapes as bench/attention_bwd.py). Needs the GPU machine
(ncu, torch, the runtime); prints a table and writes JSON if --out is given.
--fa3-lib LIB measures FlashAttention-3's backward instead (bench/peers/fa3/):
its three kernels map to the same columns.
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

METRICS = [
    "gpu__time_duration.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
]
# Shared-memory bank traffic of every client (LSU, wgmma operand reads,
# TMA, bulk copies): whether a main kernel is bound by shared-memory
# bandwidth (bench/NOTES.md section 20). Dropped if this ncu lacks them.
BANK_METRICS = [
    "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed",
]


def flops(d, mask, s):
    b, h = 16384 // s, 2048 // d
    f = 10.0 * b * h * s * s * d
    return f / 2 if mask == "causal" else f


def role_of(kernel):
    """preprocess / main / postprocess for DASH's kernels and FA3's (whose
    names are CUTLASS templates), else the name itself."""
    for role, marks in (("preprocess", ("dash_bwd_preprocess", "FlashAttnBwdPreprocess")),
                        ("main", ("dash_bwd_main", "FlashAttnBwdSm90")),
                        ("postprocess", ("dash_bwd_postprocess", "FlashAttnBwdPostprocess"))):
        if any(m in kernel for m in marks):
            return role
    return kernel.split("(")[0]


def call_of(cell, det, fa3_lib=None):
    """The cell's backward as a callable: DASH's, or FA3's with fa3_lib."""
    import dash_attn
    if not fa3_lib:
        return lambda: dash_attn.attention_backward(**cell, deterministic=bool(det))
    import fa3_peer
    return fa3_peer.cell_call(fa3_peer.Fa3Peer(fa3_lib), cell, det)


def time_call(d, mask, s, det, runs, fa3_lib=None):
    """(median ms of whole calls timed one at a time, the GPU idle at each
    start as in bench/attention_bwd.py --timing sync, so the host's launch
    path counts;
    mean ms of `runs` calls queued back to back, where it hides)."""
    import torch
    sys.path.insert(0, HERE)
    from profile_cell import cell_inputs
    call = call_of(cell_inputs(d, mask, s), det, fa3_lib)
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        a, e = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        call()
        e.record()
        e.synchronize()
        times.append(a.elapsed_time(e))
    torch.cuda.synchronize()
    a, e = torch.cuda.Event(True), torch.cuda.Event(True)
    a.record()
    t0 = time.perf_counter()
    for _ in range(runs):
        call()
    host_us = (time.perf_counter() - t0) / runs * 1e6
    e.record()
    e.synchronize()
    return statistics.median(times), a.elapsed_time(e) / runs, host_us


# ncu spells the duration's unit either way, depending on its version (the
# H200's ncu of 2026-12-02 said "ns"; reading it as us made main 1000x slow).
_TO_US = {"nsecond": 1e-3, "nsec": 1e-3, "ns": 1e-3, "usecond": 1.0, "usec": 1.0,
          "us": 1.0, "msecond": 1e3, "msec": 1e3, "ms": 1e3}


def duration_us(unit):
    """The factor from ncu's duration unit to microseconds."""
    if unit not in _TO_US:
        raise ValueError("ncu reported gpu__time_duration in unknown unit %r" % unit)
    return _TO_US[unit]


def ncu_kernels(d, mask, s, det, extra=(), fa3_lib=None):
    """{role (role_of): {metric: value}} of the second call's launches
    (`extra`: more ncu metrics, e.g. L2 hit rate and the SM clock)."""
    try:
        return ncu_run(d, mask, s, det, METRICS + BANK_METRICS + list(extra), fa3_lib)
    except RuntimeError as e:
        print("kernel_times: without the bank metrics (%s)" % str(e).splitlines()[0],
              file=sys.stderr)
    try:
        return ncu_run(d, mask, s, det, METRICS + list(extra), fa3_lib)
    except RuntimeError as e:
        if not extra:
            raise
        raise RuntimeError("kernel_times: ncu failed with --extra-metrics %s: %s"
                           % (",".join(extra), e)) from e


def ncu_run(d, mask, s, det, metrics, fa3_lib=None):
    # Every launch of both calls (two or three per call: no postprocess
    # without GQA since dq-in-main); rows of the second call come last and
    # overwrite the first's in `out`.
    # Matched against demangled names: FA3's kernels are all
    # cutlass::device_kernel<...>, whose base name says nothing.
    cmd = ["ncu", "--clock-control", "none", "--csv", "--kernel-name-base", "demangled",
           "--kernel-name",
           "regex:FlashAttnBwd" if fa3_lib else "regex:dash_bwd",
           "--metrics", ",".join(metrics), sys.executable,
           os.path.join(HERE, "profile_cell.py"), "--d", str(d), "--mask", mask,
           "--s", str(s), "--det", str(det), "--calls", "2"]
    if fa3_lib:
        cmd += ["--fa3-lib", fa3_lib]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("ncu failed (%d):\n%s%s" % (p.returncode, p.stdout[-2000:],
                                                       p.stderr[-2000:]))
    lines = [l for l in p.stdout.splitlines() if l.startswith('"')]
    out = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = role_of(row["Kernel Name"])
        val = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "")
        if row["Metric Name"] == "gpu__time_duration.sum":
            val *= duration_us(unit)
        out.setdefault(name, {})[row["Metric Name"]] = val
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", required=True)
    ap.add_argument("--det", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--extra-metrics", default="",
                    help="comma-separated ncu metrics also read (JSON main_metrics), "
                         "e.g. lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second")
    ap.add_argument("--fa3-lib", help="FlashAttention-3's backward (the peer library) instead")
    args = ap.parse_args()
    extra = [m for m in args.extra_metrics.split(",") if m]
    rows = []
    for cell in args.cells.split(","):
        d, mask, s = cell.split(":")
        d, s = int(d), int(s)
        if mask not in ("full", "causal"):
            sys.exit("kernel_times: mask must be full or causal, got '%s'" % mask)
        ms, queued_ms, host_us = time_call(d, mask, s, args.det, args.runs, args.fa3_lib)
        k = ncu_kernels(d, mask, s, args.det, extra, args.fa3_lib)
        us = {n: v["gpu__time_duration.sum"] for n, v in k.items()}
        main_m = k.get("main", {})
        f = flops(d, mask, s)
        row = dict(d=d, mask=mask, s=s, det=args.det, impl="fa3" if args.fa3_lib else "dash",
                   call_ms=ms, queued_ms=queued_ms,
                   host_us=host_us,
                   kernels_us=us,
                   call_tflops=f / ms / 1e9,
                   main_tflops=f / us["main"] / 1e6 if "main" in us else None,
                   gap_us=ms * 1e3 - sum(us.values()),
                   main_metrics=main_m)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| d | mask | s | call ms | queued ms | host us | pre us | main us | post us | gap us | call TF/s"
          " | main TF/s | tensor % | smem % | bank rd % | bank wr % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        u, m = r["kernels_us"], r["main_metrics"]
        print("| %d | %s | %d | %.3f | %.3f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %.0f"
              " | %s | %s |" % (
                  r["d"], r["mask"], r["s"], r["call_ms"], r["queued_ms"], r["host_us"],
                  u.get("preprocess", 0), u.get("main", 0), u.get("postprocess", 0), r["gap_us"],
                  r["call_tflops"], r["main_tflops"] or 0, m.get(METRICS[1], 0), m.get(METRICS[2], 0),
                  *("%.0f" % m[x] if x in m else "-" for x in BANK_METRICS)))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
