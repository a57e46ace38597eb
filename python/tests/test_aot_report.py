"""scripts/aot's reading of the ptxas report: spills per kernel, and the note
ptxas gives when it serialises a function's wgmmas (every wgmma then waits for
the previous one; bench/NOTES.md section 24: the wg-turns kernels measured in
sections 15 and 23 were such kernels)."""
import glob
import json
import os

import pytest

import bench_scripts

ROOT = bench_scripts.ROOT


aot = bench_scripts.load("aot", "scripts")

# ptxas -v's order: the serialisation note names its function and comes
# before that function's block.
REPORT = """\
ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.AR in divergent path in the function 'dash_bwd_main'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'dash_bwd_postprocess' for 'sm_90a'
ptxas info    : Function properties for dash_bwd_postprocess
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 80 registers, used 0 barriers, 8 bytes cumulative stack size
ptxas info    : Compiling entry function 'dash_bwd_main' for 'sm_90a'
ptxas info    : Function properties for dash_bwd_main
    88 bytes stack frame, 108 bytes spill stores, 148 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers, 88 bytes cumulative stack size, 1 bytes smem
"""


def test_serialised_wgmmas_are_recorded_for_their_function():
    rep = aot.parse_ptxas(REPORT)
    assert rep["dash_bwd_main"]["wgmma_serialized"] == (
        "C7520: program dependence on compiler-inserted WG.AR in divergent path")
    assert rep["dash_bwd_main"]["spill_stores"] == 108
    assert rep["dash_bwd_main"]["registers"] == 168
    assert "wgmma_serialized" not in rep["dash_bwd_postprocess"]


def test_serialisation_for_register_pressure_too():
    # C7512 says "for the function", C7520 "in the function".
    note = ("ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async "
            "instructions are serialized due to insufficient register resources "
            "for the function 'dash_bwd_main'\n")
    rep = aot.parse_ptxas(note + REPORT.split("\n", 1)[1])
    assert rep["dash_bwd_main"]["wgmma_serialized"] == (
        "C7512: insufficient register resources")


def test_the_ordinary_notes_are_not_serialisation():
    # C7517/C7519: ptxas inserted a wait or an arrive; the pipeline stands.
    notes = ("ptxas info    : (C7519) warpgroup.arrive is injected in around line 2205 "
             "by compiler to allow use of registers in GMMA in function 'dash_bwd_main'\n"
             "ptxas info    : (C7517) warpgroup.wait is injected in around line 2205 by "
             "compiler to allow use of registers defined by GMMA in function "
             "'dash_bwd_main'\n")
    rep = aot.parse_ptxas(notes + REPORT.split("\n", 1)[1])
    assert "wgmma_serialized" not in rep["dash_bwd_main"]


KERNELS = os.environ.get("DASH_KERNEL_DIR", os.path.join(ROOT, "build", "kernels"))


@pytest.mark.skipif(not glob.glob(os.path.join(KERNELS, "*.json")),
                    reason="no AOT kernels (scripts/aot)")
def test_no_shipped_kernel_has_serialised_wgmmas():
    for path in glob.glob(os.path.join(KERNELS, "*.json")):
        m = json.load(open(path))
        for kern, rep in m.get("ptxas", {}).items():
            assert "wgmma_serialized" not in rep, (path, kern, rep)
