"""bench/clock_probe.py's reading of nvidia-smi and of its cells (torch-free)."""
import re

import pytest

import bench_scripts

cp = bench_scripts.load("clock_probe")


def test_a_sample_line_is_read_with_the_host_time():
    row = cp.parse_smi_line("1665, 692.31, 58, 0x0000000000000004\n", 10.5)
    assert row == (10.5, 1665.0, 692.31, 58.0, "0x0000000000000004")


def test_headers_missing_fields_and_short_lines_are_skipped():
    assert cp.parse_smi_line("clocks.current.sm [MHz], power.draw [W], temperature.gpu, "
                             "clocks_event_reasons.active", 0) is None
    assert cp.parse_smi_line("1665, [N/A], 58, 0x4", 0) is None
    assert cp.parse_smi_line("1665, 692", 0) is None
    assert cp.parse_smi_line("", 0) is None


def test_a_window_takes_the_medians_of_its_samples_only():
    rows = [(0.5, 1980.0, 300.0, 40.0, "0x0"),     # before the window (the ramp)
            (1.5, 1700.0, 690.0, 58.0, "0x4"),
            (2.0, 1680.0, 695.0, 60.0, "0x4"),
            (3.5, 1660.0, 700.0, 59.0, "0x4"),
            (5.0, 1500.0, 700.0, 70.0, "0x4")]     # after the window
    w = cp.window_stats(rows, 1.0, 4.0)
    assert w["samples"] == 3
    assert w["sm_mhz"] == 1680.0
    assert w["power_w"] == 695.0
    assert w["temp_c"] == 60.0
    assert w["reasons"] == ["0x4"]


def test_an_empty_window_reports_nothing_rather_than_a_guess():
    assert cp.window_stats([(9.0, 1700.0, 600.0, 50.0, "0x0")], 0.0, 1.0) == dict(
        samples=0, sm_mhz=None, power_w=None, temp_c=None, reasons=[])


def test_cells_parse_and_bad_ones_are_named():
    assert cp.parse_cells("128:causal:8192,64:full:16384") == [
        (128, "causal", 8192), (64, "full", 16384)]
    for bad in ("96:causal:8192", "128:sliding:8192", "128:causal", "128:causal:8k",
                "128:causal:0", "128:causal:3000", "64:full:32768"):
        with pytest.raises(ValueError, match=re.escape(bad)):
            cp.parse_cells(bad)


def test_a_bad_cell_exits_2_before_torch_is_needed(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["clock_probe.py", "--cells", "32:full:512"])
    assert cp.main() == 2
    assert "32:full:512" in capsys.readouterr().err
