#!/usr/bin/env python3
"""Same-call A/B table of a bench/attention_bwd.py sweep run with --variant:
per cell, cuDNN and each kernel set's auto det / nondet TFLOP/s, the
variants' change against the default set, and whether the deterministic
runs of every set that ran the cell were bitwise equal (torch-free).

  python3 bench/compare_variants.py SWEEP.json [--variants NAME,...] [--control NAME]

Without --variants, every @NAME found in the file. --control names the
identical-cubin copy of the default set that the sweep timed as a variant:
then each other variant gets a verdict line per mode: in how many cells its
change against the default exceeds the control's own change there (the
spread of two identical rows in that cell), i.e. a change that noise of the
run's size would not have made. Where the rows carry the cubin's digest
(cubin_sha256, written by bench/attention_bwd.py), a line first says
whether the control timed the default set's binaries: a control copied
from an older build reads old against new, not noise.
"""
import argparse
import json
import sys


def cells_of(results):
    cells = {}
    for r in results:
        cells.setdefault((r["d"], r["mask"], r["s"]), {})[r["impl"]] = r
    return cells


def variants_in(results):
    return sorted({r["impl"].split("@", 1)[1] for r in results if "@" in r["impl"]})


def tflops(cell, impl):
    r = cell.get(impl)
    return r["tflops"] if r and r.get("tflops") else None


def table(results, variants):
    """Markdown lines: one row per cell."""
    sets = [""] + ["@" + v for v in variants]
    head = ["d", "mask", "s", "cuDNN"]
    for kind in ("det", "nondet"):
        head += [kind + (s or " (default)") for s in sets]
    lines = ["| " + " | ".join(head + ["bitwise"]) + " |", "|" + "---|" * (len(head) + 1)]
    for key, cell in sorted(cells_of(results).items()):
        row = [str(key[0]), key[1], str(key[2])]
        cudnn = tflops(cell, "sdpa-cudnn")
        row.append("%.1f" % cudnn if cudnn else "-")
        for kind in ("det", "nondet"):
            for s in sets:
                v, d = tflops(cell, "dash-auto-%s%s" % (kind, s)), change(cell, kind, s)
                if v is None:
                    row.append("-")
                elif s and d is not None:
                    row.append("%.1f (%+.1f%%)" % (v, d * 100))
                else:
                    row.append("%.1f" % v)
        # Sets that ran here: one without this cell's kernel (a partial
        # variant directory; its row holds an error) has no say.
        dets = [r for r in (cell.get("dash-auto-det" + s) for s in sets)
                if r and r.get("tflops")]
        row.append(str(all(r.get("bitwise_deterministic") for r in dets))
                   if dets else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def change(cell, kind, suffix):
    """Relative change of a set's auto row against the default's, or None."""
    base = tflops(cell, "dash-auto-" + kind)
    v = tflops(cell, "dash-auto-%s%s" % (kind, suffix))
    return v / base - 1 if base and v else None


def verdicts(results, variants, control):
    """One line per (variant, mode): cells where the variant's change beats
    the control's absolute change, over the cells where both ran."""
    lines = []
    cells = [c for _, c in sorted(cells_of(results).items())]
    for v in variants:
        if v == control:
            continue
        for kind in ("det", "nondet"):
            pairs = [(change(c, kind, "@" + v), change(c, kind, "@" + control)) for c in cells]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            if not pairs:
                continue
            gains = sum(a > abs(b) for a, b in pairs)
            losses = sum(a < -abs(b) for a, b in pairs)
            lines.append(
                "%s %s: above the control's spread in %d / %d cells, below it in %d "
                "(change %+.1f..%+.1f%%, control %+.1f..%+.1f%%)" % (
                    v, kind, gains, len(pairs), losses,
                    100 * min(a for a, _ in pairs), 100 * max(a for a, _ in pairs),
                    100 * min(b for _, b in pairs), 100 * max(b for _, b in pairs)))
    return lines


def control_identity(results, control):
    """One line: whether the control's rows timed the same cubins as the
    default set's, over the rows where both name one."""
    rows = checked = 0
    differ = []
    for key, cell in sorted(cells_of(results).items()):
        for kind in ("det", "nondet"):
            a, b = cell.get("dash-auto-" + kind), cell.get("dash-auto-%s@%s" % (kind, control))
            if not (a and b and a.get("tflops") and b.get("tflops")):
                continue
            rows += 1
            if a.get("cubin_sha256") and b.get("cubin_sha256"):
                checked += 1
                if a["cubin_sha256"] != b["cubin_sha256"]:
                    differ.append("d=%d %s s=%d %s" % (key + (kind,)))
    if not checked:
        return ("control %s: no cubin digests in this file, so whether it timed the default "
                "set's binaries is unchecked" % control)
    if differ:
        return ("WARNING: control %s timed other cubins than the default set in %d / %d rows "
                "(%s): its change is not the run's noise, and the verdicts below compare "
                "against another kernel" % (control, len(differ), checked, ", ".join(differ[:4])
                                            + (", ..." if len(differ) > 4 else "")))
    return "control %s: the default set's cubins in %d / %d rows%s" % (
        control, checked, rows, "" if checked == rows else " (the rest carry no digest)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep")
    ap.add_argument("--variants", help="comma-separated NAMEs (default: all in the file)")
    ap.add_argument("--control", metavar="NAME",
                    help="the variant that is an identical-cubin copy of the default set")
    args = ap.parse_args(argv)
    with open(args.sweep) as f:
        results = json.load(f)["results"]
    variants = args.variants.split(",") if args.variants else variants_in(results)
    if not variants:
        print("compare_variants: %s has no @NAME rows (run the sweep with --variant)"
              % args.sweep, file=sys.stderr)
        return 2
    if args.control and args.control not in variants:
        print("compare_variants: control %r is not among the variants (%s)"
              % (args.control, ", ".join(variants)), file=sys.stderr)
        return 2
    print("\n".join(table(results, variants)))
    if args.control:
        print()
        print(control_identity(results, args.control))
        print("\n".join(verdicts(results, variants, args.control)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
