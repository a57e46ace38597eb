"""Local-memory (spill) instructions of a WGMMA main kernel, by warp role.

ptxas -v reports one spill figure per kernel, but the warp-specialised main
kernel runs two register budgets: the MMA warpgroups after
`setmaxnreg.inc` (SASS USETMAXREG.TRY_ALLOC) and warpgroup 2 (dQ reducers,
TMA producer) after `setmaxnreg.dec` (USETMAXREG.DEALLOC). A spill on the MMA
side costs every step; warpgroup 2's mostly hide behind its waits. ptxas lays
the code out as prologue, MMA branch, warpgroup-2 branch, so the position of
each LDL/STL relative to the two USETMAXREG instructions says whose it is.
"""
import importlib.util
import os
import re
import shutil
import subprocess

_LOCAL = re.compile(r"\b(LDL|STL)(\.[A-Z0-9]+)*\s")
_PC = re.compile(r"/\*([0-9a-f]{4,})\*/")
_BRA = re.compile(r"\bBRA(\.[A-Z0-9]+)*\s+(?:`\()?0x([0-9a-f]+)")


def find_cuobjdump():
    """cuobjdump from $CUOBJDUMP, $CUDA_HOME/bin, PATH or the PyPI wheels
    nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (which it runs; scripts/
    bootstrap installs both); None if absent."""
    cands = [os.environ.get("CUOBJDUMP"),
             os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                          "cuobjdump"),
             shutil.which("cuobjdump")]
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13", "cuda_cuobjdump"):
            cands.append(os.path.join(root, sub, "bin", "cuobjdump"))
    def usable(c):  # cuobjdump -sass needs nvdisasm beside it or on PATH
        return (c and os.access(c, os.X_OK) and
                (os.access(os.path.join(os.path.dirname(c), "nvdisasm"), os.X_OK)
                 or shutil.which("nvdisasm") or os.environ.get("NVDISASM_PATH")))
    return next((c for c in cands if usable(c)), None)


def classify(sass):
    """{'prologue', 'mma', 'warpgroup2', 'mma_depth'}: counts of local
    loads/stores in the SASS text of one function, or None without the
    setmaxnreg split. mma_depth splits the MMA side's by loop depth, [outside
    any loop, depth 1, depth 2 or more]: a loop is a backward branch's range
    in the MMA branch, so in the persistent kernel depth 1 is the item loop
    (once per work item) and depth 2 the step loop inside it (every step),
    where a spill costs most."""
    counts = {"prologue": 0, "mma": 0, "warpgroup2": 0}
    role = "prologue"
    seen = False
    mma_pcs, loops = [], []
    for line in sass.splitlines():
        pc = _PC.search(line)
        if "USETMAXREG.TRY_ALLOC" in line:
            role, seen = "mma", True
        elif "USETMAXREG.DEALLOC" in line:
            role, seen = "warpgroup2", True
        elif _LOCAL.search(line):
            counts[role] += 1
            if role == "mma" and pc:
                mma_pcs.append(int(pc.group(1), 16))
        if role == "mma" and pc:
            bra = _BRA.search(line)
            if bra and int(bra.group(2), 16) <= int(pc.group(1), 16):
                loops.append((int(bra.group(2), 16), int(pc.group(1), 16)))
    if not seen:
        return None
    depth = [0, 0, 0]
    for pc in mma_pcs:
        depth[min(2, sum(lo <= pc <= hi for lo, hi in loops))] += 1
    counts["mma_depth"] = depth
    return counts


def local_ops(cubin, function="dash_bwd_main", cuobjdump=None):
    """classify() of `function` in `cubin`; None without cuobjdump or the
    split."""
    tool = cuobjdump or find_cuobjdump()
    if not tool:
        return None
    # cuobjdump runs nvdisasm; the PyPI wheels put both in one bin/.
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(tool) + os.pathsep + env.get("PATH", "")
    try:
        out = subprocess.run([tool, "-sass", "-fun", function, cubin],
                             capture_output=True, text=True, env=env)
    except OSError:
        return None
    if out.returncode != 0:
        return None
    return classify(out.stdout)
