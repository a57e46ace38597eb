"""scripts/sass_roles.py: the main kernel's local loads/stores split by warp
role at the setmaxnreg instructions (the AOT report's loud flag is for the
MMA side)."""
import glob
import os

import pytest

import bench_scripts

ROOT = bench_scripts.ROOT
sr = bench_scripts.load("sass_roles", "scripts")

SASS = """
        /*0250*/                   STL [R1+0xac], R3 ;
        /*02e0*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8 ;
        /*3fe0*/                   STL [R1+0x6c], R220 ;
        /*4140*/                   LDL.LU R220, [R1+0x6c] ;
        /*4150*/                   LDS R4, [R4+0x30840] ;
        /*c0a0*/                   USETMAXREG.DEALLOC.CTAPOOL 0x28 ;
        /*c1b0*/                   STL.64 [R1+0x50], R4 ;
        /*c240*/                   LDL R4, [R1+0xac] ;
        /*c250*/                   LDL.LU.64 R16, [R1+0x8] ;
"""


def test_counts_by_role():
    assert sr.classify(SASS) == {"prologue": 1, "mma": 2, "warpgroup2": 3,
                                 "mma_depth": [2, 0, 0]}


# The persistent kernel's shape: an item loop (0x0300..0x4200) around a step
# loop (0x1000..0x2000); a backward branch in warpgroup 2 is not the MMA side's.
LOOPS = """
        /*0250*/                   STL [R1+0x14], R3 ;
        /*0290*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0 ;
        /*02c0*/                   LDL R2, [R1+0x14] ;
        /*0300*/                   LDL R2, [R1+0x14] ;
        /*1000*/                   STL [R1+0x6c], R220 ;
        /*1800*/                   LDL.LU R220, [R1+0x6c] ;
        /*2000*/              @P0 BRA 0x1000 ;
        /*2100*/                   LDL R4, [R1+0x8] ;
        /*4200*/              @!P1 BRA 0x300 ;
        /*4300*/                   LDL R4, [R1+0x8] ;
        /*c0a0*/                   USETMAXREG.DEALLOC.CTAPOOL 0x18 ;
        /*c1b0*/                   STL.64 [R1+0x50], R4 ;
        /*c300*/              @P2 BRA 0x0100 ;
"""


def test_mma_side_local_ops_by_loop_depth():
    roles = sr.classify(LOOPS)
    # 0x02c0 and 0x4300 outside the loops, 0x0300 and 0x2100 in the item
    # loop only, the step loop's store and reload at depth 2.
    assert roles["mma"] == 6 and roles["mma_depth"] == [2, 2, 2]
    assert roles["prologue"] == 1 and roles["warpgroup2"] == 1
    # No loops at all: everything outside.
    flat = "\n".join(l for l in LOOPS.splitlines() if "BRA" not in l)
    assert sr.classify(flat)["mma_depth"] == [6, 0, 0]


def test_no_split_no_answer():
    # a kernel without setmaxnreg (cp.async sync/simt families): unknown
    assert sr.classify("        /*0250*/ STL [R1+0xac], R3 ;\n") is None


def test_missing_tool(tmp_path):
    assert sr.local_ops(str(tmp_path / "k.cubin"), cuobjdump=str(tmp_path / "none")) is None


KERNELS = os.environ.get("DASH_KERNEL_DIR", os.path.join(ROOT, "build", "kernels"))


@pytest.mark.skipif(not sr.find_cuobjdump() or not glob.glob(os.path.join(KERNELS, "*.cubin")),
                    reason="needs cuobjdump and scripts/aot's kernels")
def test_shipped_kernels_split():
    # Every WGMMA kernel has the setmaxnreg split, so the AOT report never
    # falls back to the per-kernel figure for them.
    cubins = sorted(glob.glob(os.path.join(KERNELS, "*.cubin")))
    for cubin in cubins[::11]:  # both head dims, masks, det and not
        roles = sr.local_ops(cubin)
        assert roles is not None, cubin
        assert set(roles) == {"prologue", "mma", "warpgroup2", "mma_depth"}
        assert sum(roles["mma_depth"]) == roles["mma"]
