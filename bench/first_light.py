#!/usr/bin/env python3
"""First-light check of the AOT kernels with PyTorch as the reference.

Loads a cubin + manifest (scripts/aot) through the CUDA driver API (ctypes),
runs preprocess/main/postprocess on torch tensors, compares dq/dk/dv with a
float64 PyTorch reference and checks bitwise determinism over repeats.
Independent of lib/Runtime on purpose: a second implementation of the ABI.

  python3 bench/first_light.py --kernels build/kernels [--only d128_causal]
"""
import argparse
import ctypes
import glob
import json
import math
import os
import sys
import time

import torch

cuda = ctypes.CDLL("libcuda.so.1")


def check(res, what):
    if res != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(res, ctypes.byref(s))
        raise RuntimeError("%s failed: %d %s" % (what, res, s.value))


class Kernel:
    def __init__(self, manifest_path):
        self.m = json.load(open(manifest_path))
        path = os.path.join(os.path.dirname(manifest_path), self.m["cubin"])
        self.module = ctypes.c_void_p()
        check(cuda.cuModuleLoad(ctypes.byref(self.module), path.encode()), "cuModuleLoad")
        self.funcs = {}
        for role, k in self.m["kernels"].items():
            f = ctypes.c_void_p()
            check(cuda.cuModuleGetFunction(ctypes.byref(f), self.module, k["entry"].encode()), "getFunction")
            # Always opt in: the kernels' own static shared memory (1 B for the
            # dynamic-smem symbol) counts against the 48 KiB default too.
            if k["shared_bytes"] > 0:
                check(cuda.cuFuncSetAttribute(f, 8, k["shared_bytes"]), "setAttr")  # MAX_DYNAMIC_SHARED
            self.funcs[role] = f

    def occupancy(self):
        n = ctypes.c_int()
        check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(n), self.funcs["main"], self.m["threads"],
            ctypes.c_size_t(self.m["kernels"]["main"]["shared_bytes"])), "occupancy")
        return n.value

    def launch(self, tensors, scale, G, stream=0):
        args = []  # keep ctypes objects alive
        for p in self.m["params"]:
            if p["kind"] == "f32":
                args.append(ctypes.c_float(scale))
                continue
            t = tensors[p["name"]]
            assert t.dim() == p["rank"], p
            ptr = ctypes.c_void_p(t.data_ptr())
            args += [ptr, ctypes.c_void_p(t.data_ptr()), ctypes.c_int64(0)]
            args += [ctypes.c_int64(s) for s in t.shape]
            args += [ctypes.c_int64(s) for s in t.stride()]
        arr = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        T = self.m["threads"]
        for role in ("preprocess", "main", "postprocess"):
            grid = G if role == "main" else 264
            smem = self.m["kernels"][role]["shared_bytes"]
            check(cuda.cuLaunchKernel(self.funcs[role], grid, 1, 1, T, 1, 1, smem,
                                      ctypes.c_void_p(stream), arr, None), "launch " + role)


def reference(q, k, v, o, do, lse, scale, causal, off):
    # float64, BSHD; GQA by repeating K/V heads.
    B, Sq, H, D = q.shape
    Hkv = k.shape[2]
    rep = H // Hkv
    qd, kd, vd, dod, od = [x.double().transpose(1, 2) for x in (q, k, v, do, o)]
    kd = kd.repeat_interleave(rep, 1)
    vd = vd.repeat_interleave(rep, 1)
    s = torch.matmul(qd, kd.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(k.shape[1], device=q.device)[None, :]
        s = s.masked_fill(j > i + off, float("-inf"))
    p = torch.exp(s - lse.double()[..., None])
    p = torch.nan_to_num(p, nan=0.0)
    dp = torch.matmul(dod, vd.transpose(-1, -2))
    delta = (dod * od).sum(-1, keepdim=True)
    ds = p * (dp - delta)
    dq = torch.matmul(ds, kd) * scale
    dk = torch.matmul(ds.transpose(-1, -2), qd) * scale
    dv = torch.matmul(p.transpose(-1, -2), dod)
    dk = dk.view(B, Hkv, rep, -1, D).sum(2)
    dv = dv.view(B, Hkv, rep, -1, D).sum(2)
    return dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2)


def forward(q, k, v, scale, causal, off):
    B, Sq, H, D = q.shape
    rep = H // k.shape[2]
    qd, kd, vd = [x.double().transpose(1, 2) for x in (q, k, v)]
    kd = kd.repeat_interleave(rep, 1)
    vd = vd.repeat_interleave(rep, 1)
    s = torch.matmul(qd, kd.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(k.shape[1], device=q.device)[None, :]
        s = s.masked_fill(j > i + off, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.nan_to_num(torch.exp(s - lse[..., None]), nan=0.0)
    o = torch.matmul(p, vd)
    return o.transpose(1, 2).to(q.dtype).contiguous(), lse.float().contiguous()


def rel(x, ref):
    x = x.double()
    if torch.isnan(x).any():
        return float("inf")
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def run_case(kern, B, H, Hkv, Sq, Sk, repeats, G=None, bhsd=False):
    m = kern.m
    D = m["head_dim"]
    causal = m["mask"] == "causal"
    off = (Sk - Sq) if m.get("align", "bottom_right") == "bottom_right" else 0
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    def rnd(*shape):
        x = torch.randn(*shape, device=dev, generator=g, dtype=torch.float32).to(torch.bfloat16)
        return x
    if bhsd:
        q = rnd(B, H, Sq, D).transpose(1, 2)
        do = rnd(B, H, Sq, D).transpose(1, 2)
    else:
        q, do = rnd(B, Sq, H, D), rnd(B, Sq, H, D)
    k, v = rnd(B, Sk, Hkv, D), rnd(B, Sk, Hkv, D)
    scale = 1.0 / math.sqrt(D)
    o, lse = forward(q, k, v, scale, causal, off)
    lse3 = lse  # [B, H, Sq]
    M = (Sq + m["block_m"] - 1) // m["block_m"]
    f32 = dict(device=dev, dtype=torch.float32)
    ws = {"dq_accum": torch.empty(B, H, Sq, D, **f32), "dk_accum": torch.empty(B, H, Sk, D, **f32),
          "dv_accum": torch.empty(B, H, Sk, D, **f32), "dpsum": torch.empty(B, H, Sq, **f32),
          "lse_log2": torch.empty(B, H, Sq, **f32),
          "semaphores": torch.empty(B, H, M, device=dev, dtype=torch.int32)}
    if G is None:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        G = kern.occupancy() * sms
    hashes = set()
    t0 = time.time()
    times = []
    for r in range(repeats):
        dq = torch.full_like(q, float("nan")); dk = torch.full_like(k, float("nan")); dv = torch.full_like(v, float("nan"))
        tens = dict(q=q, k=k, v=v, o=o, dO=do, lse=lse3, dq=dq, dk=dk, dv=dv, **ws)
        st = torch.cuda.Event(enable_timing=True); en = torch.cuda.Event(enable_timing=True)
        st.record()
        kern.launch(tens, scale, G)
        en.record()
        torch.cuda.synchronize()
        times.append(st.elapsed_time(en))
        hashes.add(hash((dq.view(torch.int16).cpu().numpy().tobytes(), dk.view(torch.int16).cpu().numpy().tobytes(),
                         dv.view(torch.int16).cpu().numpy().tobytes())))
    rq, rk, rv = reference(q, k, v, o, do, lse3, scale, causal, off)
    errs = (rel(dq, rq), rel(dk, rk), rel(dv, rv))
    ms = sorted(times)[len(times) // 2]
    flops = 4 * 2.5 * B * H * Sq * Sk * D * (0.5 if causal and Sq == Sk else 1.0)
    return errs, len(hashes), ms, flops / ms / 1e9, G


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="build/kernels")
    ap.add_argument("--only", default="")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--big", action="store_true")
    args = ap.parse_args()
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    failures = 0
    print("%-40s %-22s %28s %6s %9s %8s %4s" % ("kernel", "shape", "rel err dq/dk/dv", "hashes", "ms", "TFLOP/s", "G"))
    for path in sorted(glob.glob(os.path.join(args.kernels, "*.json"))):
        kern = Kernel(path)
        if args.only and args.only not in kern.m["name"]:
            continue
        shapes = [(2, 4, 4, 128, 128), (2, 4, 4, 1000, 1000), (1, 4, 2, 256, 256)]
        if kern.m["mask"] == "causal" and kern.m["policy"] != "symmetric-shift":
            shapes.append((1, 2, 2, 300, 500))
            shapes.append((1, 2, 2, 500, 300))
        if args.big:
            shapes.append((1, 16, 16, 4096, 4096))
        for (B, H, Hkv, Sq, Sk) in shapes:
            try:
                errs, nh, ms, tf, G = run_case(kern, B, H, Hkv, Sq, Sk, args.repeats)
            except Exception as e:  # report and go on
                print("%-40s ERROR %s" % (kern.m["name"], e))
                failures += 1
                continue
            det = kern.m["deterministic"]
            ok = max(errs) < 1e-2 and (nh == 1 or not det)
            failures += not ok
            print("%-40s %-22s %9.2e %9.2e %9.2e %6d %9.3f %8.2f %4d %s" % (
                kern.m["name"], "b%d h%d/%d s%d/%d" % (B, H, Hkv, Sq, Sk), *errs, nh, ms, tf, G,
                "" if ok else "FAIL"), flush=True)
    print("first_light: %d failures" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
