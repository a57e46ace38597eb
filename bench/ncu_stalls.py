#!/usr/bin/env python3
"""Where the main kernel's warps wait: ncu's warp-stall sampling of one
dash_bwd_main launch, summarised per stall reason and per SASS instruction.

  python3 bench/ncu_stalls.py --out DIR [--label TEXT] -- [profile_cell.py args]

Runs `ncu --set full --import-source no` on bench/profile_cell.py (second
main launch, so the first call's module load is not sampled), exports the
SASS source page as CSV and writes DIR/stalls.txt: the reasons' shares of
all samples, the instructions with the most samples, each with the
instruction before it (a wait shows up on the instruction after the one
that waits), and each warp role's share (the code reachable from its
setmaxnreg: MMA warpgroups vs reducers + producer). DIR keeps the report and the CSV. Needs ncu (the GPU machine).
FlashAttention-3's main kernel beside ours: `--kernel-regex FlashAttnBwdSm90 --
--fa3-lib LIB ...` (profile_cell.py runs the peer; its roles are found the same way).
"""
import argparse
import csv
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def number(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return None


_BRANCH = re.compile(r"\b(?:BRA|BRX|JMP|CALL)\b[^;]*?(0x[0-9a-fA-F]+)\s*(?:;|$)")


def roles(addresses, sources):
    """The instructions of each warp role: those reachable (fall-through and
    branch targets) from its setmaxnreg, `USETMAXREG.TRY_ALLOC` (the MMA
    warpgroups, registers raised) and `USETMAXREG.DEALLOC` (warpgroup 2: the
    dQ reducers and the producer). {name: set of row indices}; empty when
    the kernel has no setmaxnreg."""
    at = {a: i for i, a in enumerate(addresses)}

    def successors(i):
        src = sources[i]
        out = []
        m = _BRANCH.search(src)
        if m and int(m.group(1), 16) in at:
            out.append(at[int(m.group(1), 16)])
        unconditional = (m and not src.startswith("@")) or (
            src.startswith("EXIT") or src.startswith("RET"))
        if not unconditional and i + 1 < len(sources):
            out.append(i + 1)
        return out

    found = {}
    for i, src in enumerate(sources):
        if "SETMAXREG" in src or "SETMAXNREG" in src:
            name = "MMA warpgroups" if "ALLOC" in src and "DEALLOC" not in src \
                else "reducers + producer"
            seen, stack = set(), [i]
            while stack:
                j = stack.pop()
                if j not in seen:
                    seen.add(j)
                    stack += successors(j)
            found[name] = found.get(name, set()) | seen
    return found


def summarise(csv_path, top=25):
    """Lines of text: stall reasons and the hottest instructions."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head is None:
        return ["no 'Source' column in %s" % csv_path]
    cols = rows[head]
    body = [r for r in rows[head + 1:] if len(r) == len(cols)]
    src = cols.index("Source")
    allc = next((i for i, c in enumerate(cols)
                 if c.startswith("Warp Stall Sampling (All")), None)
    if allc is None:
        return ["no warp-stall sampling column; columns: " + ", ".join(cols)]
    samples = [number(r[allc]) or 0.0 for r in body]
    total = sum(samples) or 1.0
    out = ["samples: %d" % total]
    reasons = []
    for i, c in enumerate(cols):
        if c.startswith("stall_") or c.startswith("smsp__pcsamp_warps_issue_stalled"):
            v = sum(number(r[i]) or 0.0 for r in body)
            if v:
                reasons.append((v, c))
    if reasons:
        out.append("stall reasons (share of all samples):")
        out += ["  %-40s %5.1f%%" % (c, 100 * v / total)
                for v, c in sorted(reasons, reverse=True)[:14]]
    else:
        out.append("(no per-reason columns; columns: %s)" % ", ".join(cols))
    out.append("top instructions by samples (share, SASS, the one before):")
    order = sorted(range(len(body)), key=lambda i: -samples[i])[:top]
    for i in order:
        before = body[i - 1][src].strip() if i else ""
        out.append("  %5.2f%%  %-60s after: %s" %
                   (100 * samples[i] / total, body[i][src].strip()[:60], before[:60]))
    addrc = cols.index("Address") if "Address" in cols else None
    if addrc is not None:
        try:
            addresses = [int(r[addrc], 16) for r in body]
        except ValueError:
            addresses = None
        found = roles(addresses, [r[src].strip() for r in body]) if addresses else {}
        if found:
            out.append("samples per warp role (reachable from its setmaxnreg):")
            reason_cols = [(i, c) for i, c in enumerate(cols)
                           if c.startswith("stall_") and "Not Issued" not in c]
            for name, rows in sorted(found.items()):
                share = sum(samples[i] for i in rows) / total
                why = sorted(((sum(number(body[i][j]) or 0.0 for i in rows), c)
                              for j, c in reason_cols), reverse=True)[:3]
                out.append("  %-22s %5.1f%%  (%s)" % (name, 100 * share, ", ".join(
                    "%s %.1f%%" % (c[6:], 100 * v / total) for v, c in why if v)))
    local = [i for i, r in enumerate(body) if "LDL" in r[src] or "STL" in r[src]]
    execc = next((i for i, c in enumerate(cols) if c == "Instructions Executed"), None)
    if execc is not None:
        n = sum(number(body[i][execc]) or 0.0 for i in local)
        out.append("local-memory (spill) instructions: %d static, %d executed" % (len(local), n))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--summarise", help="only summarise this CSV")
    ap.add_argument("--kernel-regex", default="dash_bwd_main",
                    help="the main kernel's name (FA3's: FlashAttnBwdSm90)")
    ap.add_argument("cell", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    csv_path = a.summarise or os.path.join(a.out, "source.csv")
    if not a.summarise:
        rep = os.path.join(a.out, "main")
        cell = [x for x in a.cell if x != "--"]
        cmd = ["ncu", "--set", "full", "--import-source", "no",
               "--kernel-name-base", "demangled", "--kernel-name",
               "regex:" + a.kernel_regex, "--launch-skip", "1", "--launch-count", "1",
               "-f", "-o", rep, sys.executable, os.path.join(HERE, "profile_cell.py")] + cell
        subprocess.run(cmd, check=True)
        with open(csv_path, "w") as f:
            subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                            "--print-source", "sass"], check=True, stdout=f)
        with open(os.path.join(a.out, "details.txt"), "w") as f:
            subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "details"],
                           check=True, stdout=f)
    lines = ([a.label] if a.label else []) + summarise(csv_path)
    with open(os.path.join(a.out, "stalls.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
