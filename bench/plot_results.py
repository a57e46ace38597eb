#!/usr/bin/env python3
"""TFLOP/s vs sequence length, one panel per (head dim, mask), from the JSON
of bench/attention_bwd.py (needs matplotlib, not torch: a cut-short run's
JSON can be plotted afterwards).

  python3 bench/plot_results.py RESULTS.json [OUT.png] [--anchors FILE]

Where the anchors file exists (default: ../shared/anchors' FlashAttention-3
run, as bench/summarize.py reads it), each panel also shows FA3's
deterministic and non-deterministic kernels as this run would read them:
the anchor's ratio to its cuDNN times this run's cuDNN (the issue's
yardstick), so "ours above the FA3-det line" is the FA3-class target.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import DEFAULT_ANCHORS, explicit_anchors_missing, load_anchors  # noqa: E402


def anchor_lines(results, anchors):
    """{(d, mask): {label: [(s, tflops)]}}: FA3-det and FA3-nondet of the
    anchor run scaled by this run's cuDNN (cells without both are left
    out)."""
    cudnn = {(r["d"], r["mask"], r["s"]): r["tflops"] for r in results
             if r["impl"] == "sdpa-cudnn" and r.get("tflops")}
    out = {}
    for (d, mask, s), ours in sorted(cudnn.items()):
        a = anchors.get((d, mask, s), {})
        if not a.get("cudnn"):
            continue
        for key, label in (("fa3_det", "FA3-det (anchor / its cuDNN x ours)"),
                           ("fa3_nondet", "FA3-nondet (anchor / its cuDNN x ours)")):
            if a.get(key):
                out.setdefault((d, mask), {}).setdefault(label, []).append(
                    (s, a[key] / a["cudnn"] * ours))
    return out


def plot(results, path, anchors=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib missing, no plot")
        return
    cells = sorted({(r["d"], r["mask"]) for r in results})
    fig, axes = plt.subplots(1, len(cells), figsize=(5 * len(cells), 4), squeeze=False)
    for ax, (d, mask) in zip(axes[0], cells):
        impls = sorted({r["impl"] for r in results if r["d"] == d and r["mask"] == mask})
        colors = plt.get_cmap("tab20").colors
        for i, impl in enumerate(impls):
            pts = sorted((r["s"], r["tflops"]) for r in results
                         if r["d"] == d and r["mask"] == mask and r["impl"] == impl and r["tflops"])
            # One color per implementation; ours deterministic solid and
            # thick for auto, non-deterministic dashed; peers dotted.
            ours = impl.startswith("dash-")
            style = "-" if impl.endswith("-det") else ("--" if ours else ":")
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                        markersize=3, color=colors[i % len(colors)],
                        linewidth=2.5 if impl.startswith("dash-auto") else 1.2, label=impl)
        lines = anchor_lines(results, anchors or {}).get((d, mask), {})
        for label, pts in sorted(lines.items()):
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "--" if "nondet" in label else "-",
                    marker="x", markersize=4, color="0.55" if "nondet" in label else "black",
                    linewidth=1.0, label=label)
        ax.set_xscale("log", base=2)
        ax.set_title("d=%d %s" % (d, mask))
        ax.set_xlabel("seqlen")
        ax.set_ylabel("TFLOP/s (bwd)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--anchors", default=DEFAULT_ANCHORS,
                    help="anchor runs to draw scaled by this run's cuDNN ('' for none)")
    args = ap.parse_args()
    if explicit_anchors_missing(args.anchors):
        print("plot_results: no anchors file %s" % args.anchors, file=sys.stderr)
        return 2
    out = args.out or os.path.splitext(args.results)[0] + ".png"
    try:
        with open(args.results) as f:
            results = json.load(f)["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("plot_results: cannot read results from %s: %s" % (args.results, e),
              file=sys.stderr)
        return 2
    plot(results, out, load_anchors(args.anchors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
