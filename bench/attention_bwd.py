#!/usr/bin/env python3
"""DASH attention backward beside PyTorch's kernels, in one process (H200).

For d in {64, 128}, mask in {full, causal}, s in {512, ..., 16384} with
b = 16384 / s and h = 2048 / d (bf16): DASH with each legal schedule and
auto, deterministic on and off; PyTorch SDPA flash, cuDNN and efficient
backends, and FlexAttention (compiled once per shape, dynamic=False).
Backward only (our pre/postprocess kernels included), median of >= 30 timed
runs after warm-up, each its GPU time after an L2 flush, as triton's
do_bench (a round is queued behind a GPU-side sleep so the host runs ahead;
--timing sync puts a synchronize after every call instead), the
implementations of a cell timed round-robin (one call of each per round:
drift shifts them alike; each round in a seeded random order, so what ran
before a call varies, bench/round_order.py) or, --timing window, each in windows
of its own calls (do_bench per implementation), TFLOP/s = 10*b*h*s*s*d / t (full) or
half (causal), a bitwise-determinism column for every implementation,
workspace bytes and peak allocated memory. Writes JSON (and a PNG plot when matplotlib exists);
its meta names the commit: --commit, $DASH_COMMIT, or else the one
scripts/aot recorded in the kernels' manifests (bench/source_commit.py).

  PYTHONPATH=python python3 bench/attention_bwd.py --out bench/results/DIR \
      [--hdims 64,128] [--masks full,causal] [--seqlens 512,...] [--runs 30]
      [--all-policies] [--no-flex] [--timing queued|sync|window] [--commit SHA]
      [--layout bhsd|bshd] [--variant NAME=DIR]... [--fa3-lib LIB]

--variant NAME=DIR also times the kernel set in DIR in the same rounds (a
same-call A/B: rows dash-SCHEDULE-{det,nondet}@NAME). --fa3-lib (or
$DASH_FA3_LIB) adds FlashAttention-3's backward, deterministic and not (rows
fa3-det, fa3-nondet; bench/peers/fa3/ builds the library), on the same inputs,
with its gradients' relative difference from DASH's.
"""
import argparse
import functools
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # pragma: no cover
    SDPBackend = sdpa_kernel = None

import dash_attn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_results import plot  # noqa: E402  (torch-free, also a CLI)
from summarize import DEFAULT_ANCHORS, load_anchors  # noqa: E402
from round_order import round_orders, window_order  # noqa: E402  (torch-free)
import source_commit  # noqa: E402  (torch-free)
import fa3_peer  # noqa: E402  (torch only inside backward)

POLICIES = {"full": ["ascending", "spt", "descending", "shift"],
            "causal": ["ascending", "spt", "descending", "symmetric-shift"]}


def queue_timed(fn, flush=None):
    """Queues fn between two timing events, after an L2 flush (a memset of
    `flush`) when one is given; returns the events."""
    if flush is not None:
        flush.zero_()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    st.record()
    fn()
    en.record()
    return st, en


def timed_interleaved(fns, runs, warmup=3, queued=True, seed=0):
    """Median ms of each fn, timed round-robin (one call of each per round,
    each round in its own seeded random order, bench/round_order.py): clock
    and thermal drift during a cell shifts every implementation alike, and
    what ran before a call -- which moves its time by up to ~10% -- varies
    from round to round.

    queued (default), as triton's do_bench (the anchors' cuDNN method): a
    round is queued behind a GPU-side sleep and read after it, so the host
    runs ahead and each call's time is its GPU time; L2 is flushed before
    every call (a 256 MB memset, untimed). With a synchronize after every
    call (queued=False, the method before 2026-12-02) each short call also
    carried the host's launch path -- PyTorch's autograd and cuDNN frontend,
    our ctypes front end -- and cuDNN read ~25% low at s = 2048
    (bench/NOTES.md section 20). Also returns how many rounds the GPU had
    finished before the host had queued them (then some call may include
    host time; 0 expected)."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if queued else None
    times = [[] for _ in fns]
    host_bound = 0
    for order in round_orders(len(fns), runs, seed):
        ev = []
        if queued:
            torch.cuda._sleep(LEAD_CYCLES)
        for i in order:
            st, en = queue_timed(fns[i], flush)
            if not queued:
                en.synchronize()
            ev.append((i, st, en))
        if queued and ev[-1][2].query():
            host_bound += 1
        torch.cuda.synchronize()
        for i, st, en in ev:
            times[i].append(st.elapsed_time(en))
    return [statistics.median(t) for t in times], (host_bound if queued else None)


# --timing window: the idle time before each window (the clock probe's pause,
# bench/clock_probe.py, after which the clock is back at its boost).
WINDOW_IDLE_S = 0.3


def timed_windows(fns, runs, warmup=3, idle_s=WINDOW_IDLE_S, seed=0):
    """Median ms of each fn, each timed in windows of its own calls
    (--timing window): triton's do_bench per implementation, the method the
    anchors used for cuDNN (FA3's: back-to-back calls too), every call after
    an L2 flush and queued behind a GPU-side sleep per window so the host
    runs ahead. Round-robin rounds (timed_interleaved) put every call in a
    neighbourhood of other implementations, and under the H200's power cap
    (bench/NOTES.md section 25) what ran two or three calls before moves a
    long call's clock: at full-mask s = 16384 the auto row measured 3-5% above
    the same kernel's row elsewhere in the round. Windows go in order, then
    in reverse (round_order.window_order, seeded per cell), each after `idle_s` of an idle GPU
    so every window starts from the same power state (without it a window
    inherits the previous one's heat: the first window run of section 25 had
    ours, timed in adjacent windows, 0-10% below its round-robin figures).
    Also returns how many windows the GPU had finished before the host had
    queued them (0 expected)."""
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    times = [[] for _ in fns]
    host_bound = 0
    for i, calls in window_order(len(fns), runs, seed):
        torch.cuda.synchronize()
        time.sleep(idle_s)
        for _ in range(warmup):
            fns[i]()
        torch.cuda.synchronize()
        torch.cuda._sleep(LEAD_CYCLES)
        ev = [queue_timed(fns[i], flush) for _ in range(calls)]
        if ev and ev[-1][1].query():
            host_bound += 1
        torch.cuda.synchronize()
        times[i] += [st.elapsed_time(en) for st, en in ev]
    return [statistics.median(t) for t in times], host_bound


# A queued round's GPU-side head start (~2.5 ms at the H200's clock): more
# than the host needs to queue the round's first call; from there each
# call's GPU time exceeds its host time at the benchmark's shapes.
LEAD_CYCLES = 5_000_000
L2_FLUSH_BYTES = 256 * 1024 * 1024  # do_bench's; the H200's L2 is 50 MB


def digest(ts):
    return tuple(hash(t.view(torch.int16).cpu().numpy().tobytes()) for t in ts)


def bits_equal(fn, repeats):
    first = digest(fn())
    return all(digest(fn()) == first for _ in range(repeats - 1))


@functools.lru_cache(maxsize=None)
def ptxas_report(kdir, kernel):
    """The AOT step's ptxas report of the kernel's main entry (registers,
    spill stores/loads, stack), from its manifest in kernel directory kdir."""
    with open(os.path.join(kdir, kernel + ".json")) as f:
        return json.load(f).get("ptxas", {}).get("main")


@functools.lru_cache(maxsize=None)
def cubin_digest(kdir, kernel):
    """The first 16 hex digits of the SHA-256 of the kernel's cubin: which
    binary a row timed, so an A/B can tell an identical-cubin control from
    a stale copy (bench/compare_variants.py --control)."""
    with open(os.path.join(kdir, kernel + ".cubin"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def with_runtime(rt, fn):
    """fn, run with the runtime `rt` (another kernel directory) in place of
    the device's cached one: a same-process A/B of two kernel sets, timed
    with everything else in the cell, as --timing says (--variant)."""
    from dash_attn import _runtime
    idx = torch.cuda.current_device()

    def call():
        saved = _runtime._runtimes.get(idx)
        _runtime._runtimes[idx] = rt
        try:
            return fn()
        finally:
            _runtime._runtimes[idx] = saved
    return call


def cell_seed(d, mask, s, seed=0):
    """The cell's round-order seed: fixed per cell and --seed (a rerun times
    in the same orders), different between cells (no implementation keeps
    one neighbourhood across the sweep)."""
    return seed * 1_000_000_007 + d * 1_000_003 + s * 7 + (mask == "causal")


def bench_tensor(b, h, s, d, layout, grad=False):
    """A random bf16 [B, H, S, D] tensor whose memory is in `layout` order:
    bhsd contiguous, or bshd (FlashAttention's order) seen through a
    transposed view. With grad, the view of a leaf that requires grad
    (autograd.grad takes the view)."""
    shape = (b, s, h, d) if layout == "bshd" else (b, h, s, d)
    t = torch.randn(*shape, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
    return t.transpose(1, 2) if layout == "bshd" else t


def rel_diff(got, ref):
    """The largest of ||a - b|| / ||b|| over the gradients."""
    return max(((a.float() - r.float()).norm() / r.float().norm()).item()
               for a, r in zip(got, ref))


def add_fa3_rows(args, q, k, v, o, do, lse, causal, scale, entries, record):
    """FlashAttention-3's backward (--fa3-lib), deterministic and not, as
    entries of the cell: its gradients are held against DASH's deterministic
    ones (which the matrix checks against float64) once, so a peer set up
    wrong shows as a difference, not as a fast row."""
    b, h, s, d = q.shape
    # FA3 takes one memory order for all tensors: o from SDPA's flash
    # forward may come in another than q's.
    o = o if o.stride() == q.stride() else torch.empty_like(q).copy_(o)
    ref = dash_attn.attention_backward(q.detach(), k.detach(), v.detach(), o, do, lse,
                                       causal=causal, scale=scale, deterministic=True,
                                       schedule="auto", layout="bhsd")
    for det in (True, False):
        name = "fa3-det" if det else "fa3-nondet"
        fn = (lambda det=det: fa3_peer.backward(args.fa3, q.detach(), k.detach(), v.detach(),
                                                o, do, lse, causal, scale, det))
        try:
            diff = rel_diff(fn(), ref)
        except (ValueError, RuntimeError) as e:
            record(name, None, None, {"error": str(e).splitlines()[0][:120]})
            continue
        if diff > 1e-2:
            print("d=%d s=%d %s: gradients differ from DASH's by %.3g" % (d, s, name, diff),
                  flush=True)

        def finish(ms, name=name, fn=fn, diff=diff):
            eq = bits_equal(fn, args.repeats)
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            fn()
            record(name, ms, eq, {
                "peak_extra_bytes": torch.cuda.max_memory_allocated() - base,
                "workspace_bytes": args.fa3.workspace_bytes(d, causal, b, h, s),
                "rel_diff_vs_dash": diff})
        entries.append((name, fn, finish))


def run_cell(d, mask, s, args, results):
    b, h = 16384 // s, 2048 // d
    causal = mask == "causal"
    flops = 10 * b * h * s * s * d * (0.5 if causal else 1.0)
    torch.manual_seed(0)
    # SDPA's logical order [B, H, S, D], DASH reads it through layout="bhsd";
    # --layout sets the memory order (bshd: FlashAttention's, views of it).
    q, k, v = [bench_tensor(b, h, s, d, args.layout, grad=True) for _ in range(3)]
    do = bench_tensor(b, h, s, d, args.layout)
    scale = d ** -0.5
    cell = dict(d=d, mask=mask, s=s, b=b, h=h, flops=flops)

    def record(impl, ms, det, extra=None):
        r = dict(cell, impl=impl, ms=ms, tflops=flops / ms / 1e9 if ms else None,
                 bitwise_deterministic=det)
        r.update(extra or {})
        results.append(r)
        print("d=%-3d %-6s s=%-5d %-28s %9s ms %7s TFLOP/s  det=%s %s" % (
            d, mask, s, impl, "%.3f" % ms if ms else "-",
            "%.1f" % r["tflops"] if ms else "-", det,
            " ".join("%s=%s" % kv for kv in (extra or {}).items())), flush=True)

    # Every implementation of the cell is set up first and then timed
    # (timed_interleaved or timed_windows); determinism and memory per entry after.
    entries = []  # (name, fn, finish(ms) -> None)

    def grads_of(out):  # a PyTorch forward's backward, repeatable
        return lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)

    # PyTorch backends: forward once, time autograd.grad of the backward.
    backends = []
    if sdpa_kernel is not None:
        backends = [("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                    ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION),
                    ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION)]
    outs = []
    for name, be in backends:
        try:
            with sdpa_kernel(be):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
            fn = grads_of(out)
            fn()
            outs.append(out)

            def finish(ms, name=name, fn=fn):
                det = bits_equal(fn, args.repeats)
                torch.cuda.reset_peak_memory_stats()
                fn()
                record(name, ms, det, {"peak_bytes": torch.cuda.max_memory_allocated()})
            entries.append((name, fn, finish))
        except Exception as e:  # a backend may refuse a shape
            record(name, None, None, {"error": str(e).splitlines()[0][:120]})
    if args.flex:
        try:
            from torch.nn.attention.flex_attention import flex_attention, create_block_mask
            torch._dynamo.config.cache_size_limit = 1000
            torch._dynamo.config.recompile_limit = 1000
            bm = create_block_mask(lambda b_, h_, i, j: i >= j, None, None, s, s) if causal else None
            flex = torch.compile(flex_attention, dynamic=False)
            out = flex(q, k, v, block_mask=bm, scale=scale)
            fn = grads_of(out)
            fn()
            outs.append(out)
            entries.append(("flex", fn,
                            lambda ms, fn=fn: record("flex", ms, bits_equal(fn, args.repeats))))
        except Exception as e:
            record("flex", None, None, {"error": str(e).splitlines()[0][:120]})

    # DASH: forward by SDPA's flash kernel (it returns the lse we take).
    with torch.no_grad():
        o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
            q, k, v, 0.0, causal, False, scale=scale)[:2]
    pols = ["auto"] + (POLICIES[mask] if args.all_policies else [])
    # The default kernels, then each --variant's, with the same schedules
    # (rows dash-SCHEDULE-{det,nondet}@NAME).
    kernel_sets = [("", None, dash_attn.kernel_dir())] + [
        ("@" + name, rt, kdir) for name, rt, kdir in args.variant_runtimes]
    runs = [(suffix, rt, kdir, pol, det) for suffix, rt, kdir in kernel_sets
            for pol in pols for det in (True, False)]
    for suffix, rt, kdir, pol, det in runs:
        name = "dash-%s-%s%s" % (pol, "det" if det else "nondet", suffix)
        # The call and its check_backward twin, bound to this row's schedule.
        def bound(api, pol=pol, det=det):
            return lambda: api(
                q.detach(), k.detach(), v.detach(), o, do, lse, causal=causal,
                scale=scale, deterministic=det, schedule=pol, layout="bhsd")
        fn = bound(dash_attn.attention_backward)
        check = bound(dash_attn.check_backward)
        if rt is not None:
            fn, check = with_runtime(rt, fn), with_runtime(rt, check)
        try:
            fn()
        except (ValueError, RuntimeError) as e:
            record(name, None, None, {"error": str(e).splitlines()[0][:120]})
            continue

        def finish(ms, name=name, fn=fn, check=check, kdir=kdir):
            eq = bits_equal(fn, args.repeats)
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            fn()
            # peak_extra_bytes: what torch allocated for the call (the
            # three gradients). The workspace is the runtime's own
            # allocation (outside torch's allocator): workspace_bytes is
            # what the resolved kernel needs, the figure to hold against
            # FA3's fp32 dQ accumulator + dPsum + lse + semaphores.
            extra = {"peak_extra_bytes": torch.cuda.max_memory_allocated() - base}
            try:  # a missing report costs this row's fields, not the sweep
                info = check()
                extra.update(workspace_bytes=info["workspace_bytes"], kernel=info["kernel"],
                             resolved_policy=info["policy"], num_units=info["num_units"],
                             ptxas_main=ptxas_report(kdir, info["kernel"]),
                             cubin_sha256=cubin_digest(kdir, info["kernel"]))
            except (OSError, ValueError, RuntimeError) as e:
                extra["info_error"] = str(e).splitlines()[0][:120]
            record(name, ms, eq, extra)
        entries.append((name, fn, finish))

    if args.fa3 is not None and args.fa3.covers(d):
        add_fa3_rows(args, q, k, v, o, do, lse, causal, scale, entries, record)

    seed = cell_seed(d, mask, s, args.seed)
    if args.timing == "window":
        times, host_bound = timed_windows([fn for _, fn, _ in entries], args.runs, seed=seed)
    else:
        times, host_bound = timed_interleaved([fn for _, fn, _ in entries], args.runs,
                                              queued=args.timing == "queued", seed=seed)
    if host_bound is not None:
        cell["host_bound_rounds"] = host_bound
        if host_bound:
            print("d=%d %s s=%d: in %d rounds the GPU caught up with the host" %
                  (d, mask, s, host_bound), flush=True)
    for (name, fn, finish), ms in zip(entries, times):
        finish(ms)
    del outs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/latest")
    ap.add_argument("--hdims", default="64,128")
    ap.add_argument("--masks", default="full,causal")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3, help="runs compared bitwise")
    ap.add_argument("--all-policies", action="store_true")
    ap.add_argument("--timing", choices=("queued", "sync", "window"), default="queued",
                    help="queued: each call's GPU time after an L2 flush, the host "
                         "queueing ahead, the implementations round-robin (default); "
                         "window: the same clock, each implementation in windows of "
                         "its own calls (do_bench per implementation, as the anchors "
                         "were measured); sync: a synchronize after every call, the "
                         "host's launch path included (the method before 2026-12-02)")
    ap.add_argument("--layout", choices=("bhsd", "bshd"), default="bhsd",
                    help="memory order of q, k, v, dO (the calls see [B, H, S, D] "
                         "either way): bhsd contiguous (default) or bshd, "
                         "FlashAttention's order, through transposed views")
    ap.add_argument("--no-flex", dest="flex", action="store_false")
    ap.add_argument("--commit", default=os.environ.get("DASH_COMMIT"),
                    help="commit to record; default: the kernels' manifests' "
                         "source_commit (scripts/aot)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                    help="also time the kernels of DIR (the same schedules) as "
                         "dash-*@NAME, with the rest of the cell (--timing)")
    ap.add_argument("--seed", type=int, default=0,
                    help="mixed into each cell's seed for the order of its rounds "
                         "or windows (default 0: a rerun times in the same orders)")
    ap.add_argument("--fa3-lib", default=os.environ.get("DASH_FA3_LIB"), metavar="LIB",
                    help="FlashAttention-3's backward as a peer (rows fa3-det, "
                         "fa3-nondet): libdash_fa3_peer.so from bench/peers/fa3/build.sh")
    args = ap.parse_args()
    try:
        args.fa3 = fa3_peer.Fa3Peer(args.fa3_lib) if args.fa3_lib else None
    except (OSError, ValueError) as e:
        ap.error(str(e))
    fa3_check = None
    if args.fa3 is not None:
        # In a child first: FA3's launch checks exit the process on a CUDA
        # error, which must cost the peer's rows, not the sweep.
        p = subprocess.run([sys.executable, fa3_peer.__file__, "--check", args.fa3_lib],
                           capture_output=True, text=True)
        fa3_check = (p.stdout + p.stderr).strip().splitlines()
        print("\n".join(fa3_check), flush=True)
        if p.returncode != 0:
            print("bench: the FA3 peer failed its check (exit %d): no fa3 rows" % p.returncode,
                  flush=True)
            args.fa3 = None
    from dash_attn import _runtime
    args.variant_runtimes = []
    for v in args.variant:
        name, sep, kdir = v.partition("=")
        if not sep or not name or not os.path.isdir(kdir):
            ap.error("--variant wants NAME=DIR with an existing kernel directory, got %r" % v)
        args.variant_runtimes.append((name, _runtime.Runtime(kernel_dir=kdir), kdir))
    if not args.commit:
        args.commit = source_commit.of_kernel_dir(dash_attn.kernel_dir())
    os.makedirs(args.out, exist_ok=True)
    results = []
    meta = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                commit=args.commit, timing=args.timing, layout=args.layout,
                round_order="random" if args.timing != "window" else "windows, random mirrored",
                seed=args.seed, fa3_lib=args.fa3_lib, fa3_check=fa3_check,
                command=" ".join(sys.argv),
                date=time.strftime("%Y-%m-%d %H:%M:%S"), host=platform.node())

    def save():  # after every cell: a run cut short keeps what it measured
        with open(os.path.join(args.out, "attention_bwd.json"), "w") as f:
            json.dump(dict(meta=meta, results=results), f, indent=1)

    for d in map(int, args.hdims.split(",")):
        for mask in args.masks.split(","):
            for s in map(int, args.seqlens.split(",")):
                run_cell(d, mask, s, args, results)
                torch.cuda.empty_cache()
                save()
    plot(results, os.path.join(args.out, "attention_bwd.png"), load_anchors(DEFAULT_ANCHORS))
    print("bench: wrote", args.out)


if __name__ == "__main__":
    main()
