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
