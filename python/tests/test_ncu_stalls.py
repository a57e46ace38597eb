"""bench/ncu_stalls.py: the summary of ncu's SASS source page (stall reasons,
hottest instructions, spill traffic) from a CSV, no ncu or GPU needed."""

import csv
import subprocess
import sys

import bench_scripts

SCRIPT = bench_scripts.path("ncu_stalls")


def _load():
    return bench_scripts.load("ncu_stalls")


COLS = ["Address", "Source", "Warp Stall Sampling (All Samples)",
        "Warp Stall Sampling (Not-issued Samples)", "Instructions Executed",
        "stall_barrier", "stall_wait", "stall_long_sb"]
ROWS = [
    # address, source, all, not-issued, executed, barrier, wait, long_sb
    ["0x10", "HGMMA.64x64x16.F32.BF16 R152, gdesc[UR12], RZ", "10", "8", "100", "0", "10", "0"],
    ["0x20", "WARPGROUP.DEPBAR.LE gsb0, 0x1", "50", "50", "100", "0", "50", "0"],
    ["0x30", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x100", "5", "5", "100", "5", "0", "0"],
    ["0x40", "STS.64 [R2+0x24000], R152", "25", "20", "100", "25", "0", "0"],
    ["0x50", "LDL R6, [R1+0x8c]", "10", "10", "40", "0", "0", "10"],
    ["0x60", "STL [R1+0x2c], R10", "0", "0", "2", "0", "0", "0"],
]


def _write(path, rows=ROWS, cols=COLS):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["Kernel Name", "dash_bwd_main"])  # ncu's first line
        w.writerow(cols)
        for r in rows:
            w.writerow(r)


def test_shares_reasons_and_spills(tmp_path):
    path = str(tmp_path / "source.csv")
    _write(path)
    lines = _load().summarise(path, top=3)
    text = "\n".join(lines)
    assert lines[0] == "samples: 100"
    # Reasons sorted by share of all samples.
    reasons = [l.split()[0] for l in lines if l.startswith("  stall_")]
    assert reasons == ["stall_wait", "stall_barrier", "stall_long_sb"]
    assert "stall_wait" in text and "60.0%" in text
    # The top three instructions, each with the one before it (where a
    # wait's samples land).
    top = [l for l in lines if "after:" in l]
    assert len(top) == 3
    assert top[0].strip().startswith("50.00%  WARPGROUP.DEPBAR.LE")
    assert top[0].endswith("after: HGMMA.64x64x16.F32.BF16 R152, gdesc[UR12], RZ")
    assert top[1].strip().startswith("25.00%  STS.64")
    assert "local-memory (spill) instructions: 2 static, 42 executed" in text


def test_missing_columns_are_reported(tmp_path):
    path = str(tmp_path / "source.csv")
    _write(path, rows=[r[:2] for r in ROWS], cols=COLS[:2])
    assert "no warp-stall sampling column" in _load().summarise(path)[0]
    with open(path, "w") as f:
        f.write("nothing useful\n")
    assert _load().summarise(path)[0].startswith("no 'Source' column")


def test_cli_summarise_only(tmp_path):
    path = str(tmp_path / "source.csv")
    _write(path)
    out = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path), "--label", "cell X",
                          "--summarise", path], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == "cell X"
    with open(tmp_path / "stalls.txt") as f:
        assert f.read().splitlines()[1] == "samples: 100"


def test_samples_per_warp_role(tmp_path):
    # A prologue branching to the two roles; the MMA role's loop branches
    # back (with a predicate operand before the target, as ptxas writes
    # `@P1 BRA P0, 0x...`), the reducers' role jumps over dead code.
    rows = [
        ["0x00", "S2R R0, SR_TID.X", "1", "1", "10", "0", "1", "0"],
        ["0x10", "@P0 BRA 0x50", "1", "1", "10", "0", "1", "0"],
        ["0x20", "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0", "2", "2", "10", "0", "2", "0"],
        ["0x30", "HGMMA.64x64x16.F32.BF16 R152, gdesc[UR12], RZ", "40", "30", "10", "0", "40", "0"],
        ["0x40", "@P1 BRA P0, 0x30", "20", "20", "10", "20", "0", "0"],
        ["0x48", "EXIT", "0", "0", "10", "0", "0", "0"],
        ["0x50", "USETMAXREG.DEALLOC.CTAPOOL 0x18", "1", "1", "10", "0", "1", "0"],
        ["0x60", "BRA 0x80", "5", "5", "10", "0", "0", "5"],
        ["0x70", "LDL R6, [R1+0x8c]", "0", "0", "0", "0", "0", "0"],
        ["0x80", "BAR.SYNC.DEFER_BLOCKING R3, 0x120", "30", "30", "10", "30", "0", "0"],
    ]
    path = str(tmp_path / "source.csv")
    _write(path, rows=rows)
    lines = _load().summarise(path, top=3)
    role = {l.split("  ")[1].strip(): l for l in lines if l.startswith("  MMA") or l.startswith("  reducers")}
    assert set(role) == {"MMA warpgroups", "reducers + producer"}
    # MMA: setmaxnreg + loop = 2 + 40 + 20 of 100 samples.
    assert " 62.0%" in role["MMA warpgroups"]
    assert "wait 42.0%" in role["MMA warpgroups"] and "barrier 20.0%" in role["MMA warpgroups"]
    # Reducers: 1 + 5 + 30 (the unreachable LDL is not counted either way).
    assert " 36.0%" in role["reducers + producer"]


def test_no_roles_without_setmaxnreg(tmp_path):
    path = str(tmp_path / "source.csv")
    _write(path)
    assert not any("per warp role" in l for l in _load().summarise(path))
