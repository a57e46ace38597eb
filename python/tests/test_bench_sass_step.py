"""bench/sass_step.py: the MMA side's step loop read from SASS (the smallest
loop with wgmmas after the setmaxnreg increase), its instruction mix, its
order, two cubins side by side, and clean refusals."""
import glob
import os

import pytest

import bench_scripts

ROOT = bench_scripts.ROOT
ss = bench_scripts.load("sass_step")

# A prologue loop with a wgmma before setmaxnreg (not the MMA side's), an
# outer item loop, the step loop inside it (a masked branch, two wgmma runs,
# waits, a fence) and a loop without wgmmas.
SASS = """
        Function : other
        /*0000*/                   HGMMA.64x64x16.F32.BF16 R8, gdesc[UR4], RZ ;
        /*0010*/                   BRA 0x0 ;
        Function : dash_bwd_main
        /*0000*/                   HGMMA.64x64x16.F32.BF16 R8, gdesc[UR4], RZ ;
        /*0010*/               @P0 BRA 0x0 ;
        /*0020*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8 ;
        /*0030*/                   IMAD.MOV.U32 R2, RZ, RZ, R3 ;
        /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR11], R2 ;
        /*0050*/                   UIADD3 UR20, UR4, 0x2, URZ ;
        /*0060*/                   WARPGROUP.ARRIVE ;
        /*0070*/                   HGMMA.64x64x16.F32.BF16 R184, gdesc[UR20], RZ, !UPT ;
        /*0080*/                   R2UR UR21, R9 ;
        /*0090*/                   HGMMA.64x64x16.F32.BF16 R184, gdesc[UR20], R184, gsb0 ;
        /*00a0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00b0*/               @P1 BRA P0, 0xf0 ;
        /*00c0*/                   FFMA R4, R184, UR8, -R6 ;
        /*00d0*/                   FSEL R4, R4, -INF, P2 ;
        /*00e0*/                   BRA 0x100 ;
        /*00f0*/                   FFMA R4, R184, UR8, -R6 ;
        /*0100*/                   MUFU.EX2 R4, R4 ;
        /*0110*/                   STSM.16.M88.4 [R19], R184 ;
        /*0120*/                   MEMBAR.ALL.CTA ;
        /*0130*/                   FENCE.VIEW.ASYNC.S ;
        /*0140*/                   HGMMA.64x128x16.F32.BF16 R88, R200, gdesc[UR24].tnspB, R88 ;
        /*0150*/                   BAR.SYNC.DEFER_BLOCKING 0x1, 0x100 ;
        /*0160*/                   STS.64 [R7+UR10+0x28000], R152 ;
        /*0170*/               @P0 BRA 0x40 ;
        /*0180*/                   LDL R4, [R1+0x8] ;
        /*0190*/               @P3 BRA 0x30 ;
        /*01a0*/                   LDS R2, [UR9] ;
        /*01b0*/               @P4 BRA 0x1a0 ;
        /*01c0*/                   EXIT ;
"""


def step(text=SASS, function="dash_bwd_main"):
    body, err = ss.step_of(text, function)
    assert err is None
    return body


def test_the_step_loop_is_the_smallest_loop_with_wgmmas_on_the_mma_side():
    body = step()
    assert (body[0][0], body[-1][0]) == (0x40, 0x170)
    # the prologue's loop (before setmaxnreg) and the item loop are not it
    assert len(body) == 20


def test_mix_counts_each_kind_and_the_total():
    m = ss.mix(step())
    assert m["wgmma"] == 3
    assert m["wgmma sync"] == 2
    assert m["exp2 (MUFU)"] == 1
    assert m["fp32 math"] == 3
    assert m["shared ld/st"] == 2
    assert m["to uniform (R2UR)"] == 1
    assert m["uniform int"] == 1
    assert m["barrier"] == 1 and m["mbarrier"] == 1 and m["fence"] == 2
    assert m["control"] == 3
    assert m["total"] == 20 == sum(v for k, v in m.items() if k != "total")


def test_outline_keeps_the_order_and_merges_wgmma_runs():
    lines = ss.outline(step())
    assert lines[0].startswith("SYNCS.PHASECHK")
    assert "HGMMA 64x64x16 x 2 (1 between)" in lines
    assert "HGMMA 64x128x16 x 1" in lines
    i = lines.index("HGMMA 64x64x16 x 2 (1 between)")
    assert lines[i + 1].startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0")
    assert any(l.startswith("STSM.16.M88.4") for l in lines)
    assert lines[-1].startswith("BRA 0x40")


def test_no_function_or_no_loop_is_an_error_not_a_count():
    assert ss.step_of(SASS, "missing")[0] is None
    no_loop = "\n".join(l for l in SASS.splitlines() if "BRA" not in l)
    body, err = ss.step_of(no_loop, "dash_bwd_main")
    assert body is None and "no loop" in err


def test_cli_compares_two_sass_files(tmp_path, capsys):
    a = tmp_path / "a.sass"
    a.write_text(SASS)
    b = tmp_path / "b.sass"
    b.write_text(SASS.replace("        /*0080*/                   R2UR UR21, R9 ;\n", ""))
    assert ss.main([str(a), "--compare", str(b), "--sass", "--outline"]) == 0
    out = capsys.readouterr().out
    assert "| to uniform (R2UR) | 1 | 0 | -1 |" in out
    assert "| total | 20 | 19 | -1 |" in out


def test_cli_refuses_missing_inputs(tmp_path, capsys):
    assert ss.main([str(tmp_path / "none.cubin")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.sass"
    bad.write_text("not sass")
    assert ss.main([str(bad), "--sass"]) == 2
    assert "no function dash_bwd_main" in capsys.readouterr().err


KERNELS = os.path.join(ROOT, "build", "kernels")


@pytest.mark.skipif(not glob.glob(os.path.join(KERNELS, "d128_causal_*_det.cubin"))
                    or not ss.sass_roles.find_cuobjdump(),
                    reason="needs scripts/aot's kernels and cuobjdump")
def test_a_built_kernel_has_the_five_products_in_its_step():
    cubin = sorted(glob.glob(os.path.join(KERNELS, "d128_causal_*_det.cubin")))[0]
    body, err = ss.step_of(ss.read_cubin(cubin, "dash_bwd_main"), "dash_bwd_main")
    assert err is None
    shapes = [ss.opcode(t).split(".")[1] for _, t in body
              if ss.opcode(t).startswith("HGMMA")]
    # D = 128, 64-row Q tiles: S^T, dP^T and dQ as 8 m64n64k16 each, dV and
    # dK as 4 register-A m64n128k16 each.
    assert shapes.count("64x64x16") == 24 and shapes.count("64x128x16") == 8
