"""bench/units_ab.py: its argument parsing and bad input (no torch, no GPU)."""

import subprocess
import sys

import bench_scripts

SCRIPT = bench_scripts.path("units_ab")


def test_cells_and_units_parse():
    m = bench_scripts.load("units_ab")
    assert m.parse_cells("64:causal:16384,128:full:2048") == [(64, "causal", 16384),
                                                               (128, "full", 2048)]
    assert m.parse_units("0,128,66") == [0, 128, 66]


def test_bad_input_exits_2_before_any_gpu_work():
    for argv, msg in [(["--cells", "64:bad:1024"], "bad cell"),
                      (["--cells", "96:full:1024"], "bad cell"),
                      (["--cells", "64:full:3000"], "bad cell"),
                      (["--cells", "64:full:0"], "bad cell"),
                      (["--cells", "64:full:-1024"], "bad cell"),
                      (["--cells", "64:full:1024", "--units", "0,0"], "distinct"),
                      (["--cells", "64:full:1024", "--units", "-1"], "distinct")]:
        out = subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True)
        assert out.returncode == 2, (argv, out.stderr)
        assert msg in out.stderr, (argv, out.stderr)
        assert out.stdout == ""
