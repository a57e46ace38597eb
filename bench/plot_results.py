#!/usr/bin/env python3
"""TFLOP/s vs sequence length, one panel per (head dim, mask), from the JSON
of bench/attention_bwd.py (needs matplotlib, not torch: a cut-short run's
JSON can be plotted afterwards).

  python3 bench/plot_results.py RESULTS.json [OUT.png]
"""
import json
import os
import sys


def plot(results, path):
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
        ax.set_xscale("log", base=2)
        ax.set_title("d=%d %s" % (d, mask))
        ax.set_xlabel("seqlen")
        ax.set_ylabel("TFLOP/s (bwd)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.splitext(src)[0] + ".png"
    with open(src) as f:
        plot(json.load(f)["results"], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
