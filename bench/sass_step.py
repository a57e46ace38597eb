#!/usr/bin/env python3
"""The MMA warpgroups' step loop of a warp-specialised main kernel, read from
its SASS: how many instructions a step issues, of which kinds, and in what
order its wgmma groups, waits, barriers and fences come (bench/NOTES.md
section 40). For static A/Bs of a code-generation change before a device
session: `--compare` puts two cubins' steps side by side.

The step loop is the smallest loop (a backward branch and its target) that
holds HGMMA instructions and lies after the MMA side's setmaxnreg increase
(USETMAXREG.TRY_ALLOC): the walk over one KV tile's Q tiles. Its body counts
every branch of the step (the diagonal's masked pass too); `--outline`
prints the order.

  python3 bench/sass_step.py build/kernels/d128_causal_br_symmetric_shift_det.cubin
  python3 bench/sass_step.py A.cubin --compare B.cubin
  python3 bench/sass_step.py A.cubin --outline
"""
import argparse
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "scripts"))
import sass_roles  # noqa: E402  (find_cuobjdump)

_INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_GUARD = re.compile(r"^@!?U?P[T0-9]+\s+")
_BRA = re.compile(r"\bBRA(?:\.[A-Z0-9]+)*\s+(?:!?U?P[T0-9]+,\s*)?(0x[0-9a-f]+)")

# (kind, opcode regex), first match wins.
KINDS = [
    ("wgmma", r"HGMMA"),
    ("wgmma sync", r"WARPGROUP\."),
    ("barrier", r"BAR\."),
    ("mbarrier", r"SYNCS\."),
    ("fence", r"(MEMBAR|FENCE)\."),
    ("exp2 (MUFU)", r"MUFU"),
    ("fp32 math", r"(FFMA|FMUL|FADD|FMNMX|FSEL|FSETP)\b"),
    ("convert", r"(F2FP|F2F|I2F|F2I)\b"),
    ("shared ld/st", r"(LDS|STS|LDSM|STSM|ATOMS)\b"),
    ("global/TMA", r"(LDG|STG|RED|ATOMG|UTMA|UBLK|LDGSTS)"),
    ("local (spill)", r"(LDL|STL)\b"),
    ("to uniform (R2UR)", r"R2UR"),
    ("uniform int", r"U[A-Z]"),
    ("vector int", r"(IMAD|IADD|LEA|ISETP|SEL|LOP|SHF|MOV|PRMT|IABS|VIADD|"
                   r"VIMNMX|IMNMX|PLOP|P2R|R2P|CS2R|S2R|SGXT|POPC|FLO|BMSK)"),
    ("control", r"(BRA|BSSY|BSYNC|WARPSYNC|EXIT|CALL|RET|NOP|YIELD|DEPBAR)"),
]
_KIND_RX = [(k, re.compile(r"^" + rx)) for k, rx in KINDS]


def opcode(text):
    """`text`'s opcode, guard predicate dropped: 'HGMMA.64x64x16.F32.BF16'."""
    parts = _GUARD.sub("", text).split()
    return parts[0] if parts else ""


def kind(op):
    for k, rx in _KIND_RX:
        if rx.match(op):
            return k
    return "other"


def parse(sass, function):
    """[(address, text)] of `function` in cuobjdump -sass output."""
    out, on = [], False
    for line in sass.splitlines():
        if "Function :" in line:
            on = line.split("Function :", 1)[1].strip() == function
            continue
        if on:
            m = _INS.search(line)
            if m:
                out.append((int(m.group(1), 16), m.group(2)))
    return out


def step_loop(ins):
    """(first, last) indices of the step loop in `ins`, or None."""
    start = next((i for i, (_, t) in enumerate(ins)
                  if "USETMAXREG.TRY_ALLOC" in t), 0)
    at = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i, (a, t) in enumerate(ins):
        m = _BRA.search(_GUARD.sub("", t))
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= a or target not in at or at[target] < start:
            continue
        lo = at[target]
        if not any(opcode(x).startswith("HGMMA") for _, x in ins[lo:i + 1]):
            continue
        if best is None or i - lo < best[1] - best[0]:
            best = (lo, i)
    return best


def mix(body):
    """Counter of kinds over `body`, plus 'total'."""
    c = collections.Counter(kind(opcode(t)) for _, t in body)
    c["total"] = len(body)
    return c


def outline(body):
    """The step's order: runs of same-shape wgmmas (with the instructions
    between them), waits, barriers, fences, stmatrix stores and branches,
    other instructions as a count between them."""
    lines, gap = [], 0
    run = None  # [shape, count, instructions between them]

    def flush_run():
        nonlocal run
        if run:
            lines.append("HGMMA %s x %d%s" % (run[0], run[1],
                         " (%d between)" % run[2] if run[2] else ""))
            run = None

    def flush_gap():
        nonlocal gap
        if gap:
            lines.append("  ... %d" % gap)
            gap = 0

    for addr, t in body:
        op = opcode(t)
        k = kind(op)
        if k == "wgmma":
            shape = op.split(".")[1] if "." in op else op
            if run and run[0] == shape:
                run[1] += 1
                run[2] += gap
                gap = 0
            else:
                flush_run()
                flush_gap()
                run = [shape, 1, 0]
        elif k in ("wgmma sync", "barrier", "mbarrier", "fence") or \
                op.startswith(("STSM", "BRA")):
            flush_run()
            flush_gap()
            lines.append("%s  (%#x)" % (_GUARD.sub("", t), addr))
        else:
            gap += 1
    flush_run()
    flush_gap()
    return lines


def read_cubin(path, function, cuobjdump=None):
    tool = cuobjdump or sass_roles.find_cuobjdump()
    if not tool:
        sys.exit("sass_step: cuobjdump not found (set CUOBJDUMP or CUDA_HOME)")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(tool) + os.pathsep + env.get("PATH", "")
    out = subprocess.run([tool, "-sass", "-fun", function, path],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit("sass_step: cuobjdump failed on %s: %s"
                 % (path, out.stderr.strip() or out.stdout.strip()))
    return out.stdout


def step_of(sass, function):
    ins = parse(sass, function)
    if not ins:
        return None, "no function %s" % function
    loop = step_loop(ins)
    if loop is None:
        return None, "no loop with wgmma in %s" % function
    return ins[loop[0]:loop[1] + 1], None


def table(mixes, names):
    kinds = [k for k, _ in KINDS] + ["other"]
    rows = ["| kind | " + " | ".join(names) + (" | change |" if len(names) == 2 else " |"),
            "|---" * (len(names) + 1 + (len(names) == 2)) + "|"]
    for k in kinds + ["total"]:
        vals = [m.get(k, 0) for m in mixes]
        if not any(vals):
            continue
        row = "| %s | %s |" % (k, " | ".join(str(v) for v in vals))
        if len(vals) == 2:
            row += " %+d |" % (vals[1] - vals[0])
        rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cubin")
    ap.add_argument("--compare", metavar="CUBIN", help="a second cubin, side by side")
    ap.add_argument("--function", default="dash_bwd_main")
    ap.add_argument("--outline", action="store_true", help="print the step's order too")
    ap.add_argument("--sass", action="store_true",
                    help="the inputs are cuobjdump -sass text files, not cubins")
    args = ap.parse_args(argv)
    paths = [args.cubin] + ([args.compare] if args.compare else [])
    bodies = []
    for p in paths:
        if not os.path.isfile(p):
            print("sass_step: no such file: %s" % p, file=sys.stderr)
            return 2
        sass = open(p).read() if args.sass else read_cubin(p, args.function)
        body, err = step_of(sass, args.function)
        if body is None:
            print("sass_step: %s: %s" % (p, err), file=sys.stderr)
            return 2
        bodies.append(body)
    names = [os.path.basename(p) for p in paths]
    if len(names) == 2 and names[0] == names[1]:
        names = paths
    for p, body in zip(paths, bodies):
        print("%s: step loop %#x..%#x, %d instructions"
              % (p, body[0][0], body[-1][0], len(body)))
    print()
    print("\n".join(table([mix(b) for b in bodies], names)))
    if args.outline:
        for p, body in zip(paths, bodies):
            print()
            print("%s:" % p)
            print("\n".join("  " + l for l in outline(body)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
