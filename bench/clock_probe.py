#!/usr/bin/env python3
"""SM clock and board power while one implementation runs back to back, to
tell a slower step from a lower clock (bench/NOTES.md section 25).

For each cell and implementation (ours deterministic and not with `auto`,
PyTorch's cuDNN backend) the calls run back to back for --seconds while
`nvidia-smi` samples the SM clock, the power draw and the active clock-event
reasons every --sample-ms; the first quarter is the ramp (untimed), and the
table gives the rest's median clock and power, its throughput (back to
back, L2 warm: not the sweep's figure) and the reasons seen. --fa3-lib adds
FlashAttention-3's backward, deterministic and not (bench/peers/fa3/): whether
FA3 reaches a higher clock under the same power cap.

  python3 bench/clock_probe.py [--cells 128:causal:8192,...] [--seconds 2]
                               [--fa3-lib LIB]
"""
import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def parse_smi_line(line, now):
    """One `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits` line
    as (host time, SM MHz, W, C, reasons), or None for anything else (a
    header, a field nvidia-smi reports as [N/A], a short line)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 4:
        return None
    try:
        return (now, float(parts[0]), float(parts[1]), float(parts[2]), parts[3])
    except ValueError:
        return None


def window_stats(rows, t0, t1):
    """Median SM clock and power, the hottest reading and the clock-event
    reasons of the samples taken in [t0, t1] (the caller leaves out the
    clock's ramp after a pause); Nones if none. nvidia-smi reports the SM
    clock in 15 MHz steps: one step is ~0.9% at these clocks."""
    w = [r for r in rows if t0 <= r[0] <= t1]
    if not w:
        return dict(samples=0, sm_mhz=None, power_w=None, temp_c=None, reasons=[])
    return dict(samples=len(w), sm_mhz=statistics.median(r[1] for r in w),
                power_w=statistics.median(r[2] for r in w),
                temp_c=max(r[3] for r in w), reasons=sorted({r[4] for r in w}))


class Sampler:
    """nvidia-smi in the background; each line stamped with the host clock."""

    def __init__(self, period_ms):
        self.rows = []
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=" + QUERY, "--format=csv,noheader,nounits",
             "-lms", str(period_ms)], stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            row = parse_smi_line(line, time.monotonic())
            if row is not None:
                self.rows.append(row)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def parse_cells(text):
    """'d:mask:s,...' as [(d, mask, s)]; ValueError naming a bad cell."""
    cells = []
    for c in text.split(","):
        parts = c.split(":")
        if (len(parts) != 3 or parts[0] not in ("64", "128") or
                parts[1] not in ("full", "causal") or not parts[2].isdigit() or
                int(parts[2]) < 1 or 16384 % int(parts[2])):
            raise ValueError("a cell is d:mask:s with d 64 or 128, mask "
                             "full or causal and s dividing 16384 (b = 16384 / s), "
                             "got '%s'" % c)
        cells.append((int(parts[0]), parts[1], int(parts[2])))
    return cells


def impls_of(d, mask, s, fa3_lib=None):
    """The cell's FLOPs and its timed calls: ours det / nondet (auto) on
    profile_cell.cell_inputs (the sweep's inputs), cuDNN's backward of the
    same q, k, v, and FA3's det / nondet with fa3_lib."""
    import os
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import dash_attn
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from profile_cell import cell_inputs
    cell = cell_inputs(d, mask, s)
    q, k, v = (cell[n].detach().requires_grad_() for n in "qkv")
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=cell["causal"],
                                             scale=cell["scale"])

    def ours(det):
        return lambda: dash_attn.attention_backward(**cell, deterministic=det, schedule="auto")
    b, h = 16384 // s, 2048 // d
    flops = 10 * b * h * s * s * d * (0.5 if mask == "causal" else 1.0)
    impls = [("dash-auto-det", ours(True)), ("dash-auto-nondet", ours(False)),
             ("sdpa-cudnn", lambda: torch.autograd.grad(out, (q, k, v), cell["do"],
                                                        retain_graph=True))]
    if fa3_lib:
        import fa3_peer
        peer = fa3_peer.Fa3Peer(fa3_lib)
        for det in (True, False):
            impls.append(("fa3-det" if det else "fa3-nondet",
                          fa3_peer.cell_call(peer, cell, det)))
    return flops, impls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="128:causal:8192,128:causal:16384,64:causal:8192,"
                                        "64:full:16384")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--sample-ms", type=int, default=20)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--fa3-lib", help="also FlashAttention-3's backward (the peer library)")
    args = ap.parse_args()
    try:
        cells = parse_cells(args.cells)
    except ValueError as e:
        print("clock_probe: %s" % e, file=sys.stderr)
        return 2
    import torch
    sampler = Sampler(args.sample_ms)
    rows = []
    try:
        time.sleep(0.5)
        for d, mask, s in cells:
            flops, impls = impls_of(d, mask, s, args.fa3_lib)
            for name, fn in impls:
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                time.sleep(0.3)  # let the clock settle between windows
                # The ramp (the first quarter): calls run but are neither
                # timed nor sampled, so the throughput and the clock cover
                # the same interval.
                ramp_end, ramp_calls = time.monotonic() + args.seconds / 4, 0
                while time.monotonic() < ramp_end:
                    fn()
                    ramp_calls += 1
                    if ramp_calls % 8 == 0:
                        torch.cuda.synchronize()
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.monotonic()
                start.record()
                calls = 0
                while time.monotonic() - t0 < args.seconds * 3 / 4:
                    fn()
                    calls += 1
                    if calls % 8 == 0:
                        torch.cuda.synchronize()
                end.record()
                torch.cuda.synchronize()
                t1 = time.monotonic()
                ms = start.elapsed_time(end) / calls
                row = dict(d=d, mask=mask, s=s, impl=name, calls=calls, ms=ms,
                           tflops=flops / ms / 1e9)
                row.update(window_stats(sampler.rows, t0, t1))
                if not row["samples"]:
                    print("clock_probe: no nvidia-smi samples for %s (its query fields "
                          "unsupported?)" % name, file=sys.stderr)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        sampler.stop()
    print()
    print("| d | mask | s | impl | TFLOP/s (back to back) | SM MHz | W | max C | TFLOP/s per GHz | reasons |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per_ghz = r["tflops"] / (r["sm_mhz"] / 1000) if r["sm_mhz"] else None
        print("| %d | %s | %d | %s | %.1f | %s | %s | %s | %s | %s |" % (
            r["d"], r["mask"], r["s"], r["impl"], r["tflops"],
            "%.0f" % r["sm_mhz"] if r["sm_mhz"] else "-",
            "%.0f" % r["power_w"] if r["power_w"] else "-",
            "%.0f" % r["temp_c"] if r["temp_c"] else "-",
            "%.1f" % per_ghz if per_ghz else "-", " ".join(r["reasons"])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
