#!/usr/bin/env python3
"""Is cuDNN the same yardstick in our run as in the anchors' run?

The targets compare ours / cuDNN (our run) with FA3 / cuDNN (the anchor
run), so cuDNN must be measured as the anchors measured it. This times
PyTorch's SDPA backends (cuDNN, flash = FlashAttention-2, efficient) and
ours (auto, deterministic) on inputs in both memory orders -- bhsd
(contiguous [B, H, S, D], bench/attention_bwd.py's default) and bshd
(FlashAttention's [B, S, H, D] through transposed views) -- all in the same
round-robin rounds (attention_bwd.timed_interleaved: queued, L2 flushed),
so the two orders see the same clock. --compare then holds each backend's
figures against the anchors' (../shared/anchors/h200-peers-2026-11-29b.json):
a layout whose three PyTorch backends all sit at the anchors' figures is the
one the anchors ran.

  PYTHONPATH=python python3 bench/layout_yardstick.py --out OUT.json \\
      [--hdims 64,128] [--masks causal,full] [--seqlens 2048,4096,8192,16384]
  python3 bench/layout_yardstick.py --compare OUT.json [--anchors PEERS.json]
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PEERS = os.path.join(ROOT, "..", "shared", "anchors", "h200-peers-2026-11-29b.json")
LAYOUTS = ("bhsd", "bshd")
BACKENDS = ("cudnn", "flash", "efficient")


def measure(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import dash_attn
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from attention_bwd import bench_tensor, cell_seed, timed_interleaved

    sdpa = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows = []
    for d in map(int, args.hdims.split(",")):
        for mask in args.masks.split(","):
            for s in map(int, args.seqlens.split(",")):
                b, h, causal = 16384 // s, 2048 // d, mask == "causal"
                flops = 10 * b * h * s * s * d * (0.5 if causal else 1.0)
                scale = d ** -0.5
                names, fns, keep = [], [], []
                for layout in LAYOUTS:
                    torch.manual_seed(0)
                    q, k, v = [bench_tensor(b, h, s, d, layout, grad=True) for _ in range(3)]
                    do = bench_tensor(b, h, s, d, layout)
                    for be in BACKENDS:
                        with sdpa_kernel(sdpa[be]):
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                 scale=scale)
                        keep.append(out)
                        names.append((be, layout))
                        fns.append(lambda out=out, q=q, k=k, v=v, do=do: torch.autograd.grad(
                            out, (q, k, v), do, retain_graph=True))
                    with torch.no_grad():
                        o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
                            q, k, v, 0.0, causal, False, scale=scale)[:2]
                    keep += [o, lse]
                    names.append(("ours-det", layout))
                    fns.append(lambda q=q, k=k, v=v, o=o, do=do, lse=lse:
                               dash_attn.attention_backward(
                                   q.detach(), k.detach(), v.detach(), o, do, lse,
                                   causal=causal, scale=scale, deterministic=True,
                                   schedule="auto", layout="bhsd"))
                for fn in fns:
                    fn()
                times, host_bound = timed_interleaved(fns, args.runs,
                                                      seed=cell_seed(d, mask, s, args.seed))
                for (impl, layout), ms in zip(names, times):
                    rows.append(dict(d=d, mask=mask, s=s, impl=impl, layout=layout, ms=ms,
                                     tflops=flops / ms / 1e9))
                    print("d=%-3d %-6s s=%-5d %-9s %s %8.3f ms %7.1f TFLOP/s" % (
                        d, mask, s, impl, layout, ms, flops / ms / 1e9), flush=True)
                if host_bound:
                    print("  (%d rounds host-bound)" % host_bound)
                del keep, fns
                torch.cuda.empty_cache()
    meta = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                cudnn=torch.backends.cudnn.version(), runs=args.runs, seed=args.seed,
                command=" ".join(sys.argv))
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, results=rows), f, indent=1)
    print("wrote", args.out)


def compare(path, peers_path):
    with open(path) as f:
        rows = json.load(f)["results"]
    with open(peers_path) as f:
        peers = {(p["d"], "causal" if p["causal"] else "full", p["s"]): p for p in json.load(f)}
    got = {(r["d"], r["mask"], r["s"], r["impl"], r["layout"]): r["tflops"] for r in rows}
    cells = sorted({(r["d"], r["mask"], r["s"]) for r in rows})
    head = ["d", "mask", "s"] + ["%s %s / anchor" % (be, lay) for lay in LAYOUTS for be in BACKENDS]
    head += ["ours-det / cuDNN (%s)" % lay for lay in LAYOUTS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        p = peers.get(c)
        line = [str(c[0]), c[1], str(c[2])]
        for lay in LAYOUTS:
            for be in BACKENDS:
                x, a = got.get(c + (be, lay)), (p or {}).get(be)
                line.append("%.3f" % (x / a) if x and a else "-")
        for lay in LAYOUTS:
            x, cu = got.get(c + ("ours-det", lay)), got.get(c + ("cudnn", lay))
            line.append("%.3f" % (x / cu) if x and cu else "-")
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--compare", metavar="JSON")
    ap.add_argument("--anchors", default=DEFAULT_PEERS)
    ap.add_argument("--hdims", default="64,128")
    ap.add_argument("--masks", default="causal,full")
    ap.add_argument("--seqlens", default="2048,4096,8192,16384")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.compare:
        print(compare(args.compare, args.anchors))
    elif args.out:
        measure(args)
    else:
        ap.error("--out (measure) or --compare JSON")


if __name__ == "__main__":
    main()
