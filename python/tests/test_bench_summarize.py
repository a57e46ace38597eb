"""bench/summarize.py: the issue-6 table and target counts from a results
JSON (no torch, no GPU)."""

import json
import subprocess
import sys

import bench_scripts

SCRIPT = bench_scripts.path("summarize")


def _load():
    return bench_scripts.load("summarize")


def _cell(d, mask, s, rows):
    out = []
    for impl, tflops, extra in rows:
        r = dict(d=d, mask=mask, s=s, impl=impl, tflops=tflops, bitwise_deterministic=True)
        r.update(extra)
        out.append(r)
    return out


def _results():
    b, h = 16384 // 4096, 2048 // 128
    fa3_mem = 4 * b * h * 4096 * 128 + 12 * b * h * 4096
    return (
        # Meets everything: det >= FA3-det/cuDNN (anchor 1.0), det/nondet 0.96,
        # auto is the best schedule, workspace == FA3-class.
        _cell(128, "causal", 4096, [
            ("sdpa-cudnn", 400.0, {}),
            ("dash-auto-det", 480.0, {"workspace_bytes": fa3_mem, "resolved_policy": "descending"}),
            ("dash-auto-nondet", 500.0, {}), ("dash-descending-det", 470.0, {}),
            ("dash-spt-det", 300.0, {})])
        # Misses: slower than FA3-det, det/nondet 0.5, auto 10% below the best
        # schedule, workspace above FA3-class; auto resolved to ascending,
        # whose own row is 10% below shift.
        + _cell(128, "full", 4096, [
            ("sdpa-cudnn", 500.0, {}),
            ("dash-auto-det", 200.0, {"workspace_bytes": 3 * fa3_mem,
                                      "resolved_policy": "ascending"}),
            ("dash-auto-nondet", 400.0, {}), ("dash-shift-det", 222.3, {}),
            ("dash-ascending-det", 200.0, {})]))


ANCHORS = {(128, "causal", 4096): {"fa3_det": 400.0, "cudnn": 400.0},
           (128, "full", 4096): {"fa3_det": 500.0, "cudnn": 500.0}}


def test_targets_are_counted_per_cell():
    text = _load().summarize(_results(), ANCHORS)
    assert "| 128 | causal | 4096 | 400.0 | - | 480.0 | 500.0 | 470.0 (descending) | 1.20 | 1.00 | 0.96 | yes |" in text
    assert "| 128 | full | 4096 | 500.0 | - | 200.0 | 400.0 | 222.3 (shift) | 0.40 | 1.00 | 0.50 | no |" in text
    assert "s >= 2048: 1 / 2" in text
    assert "det / nondet >= 0.95 at s >= 4096: 1 / 2" in text
    assert "(target: >= 90%): 1 / 2" in text
    assert "workspace <= FA3-class extra memory: 1 / 2" in text
    assert "deterministic runs bitwise equal: 6 / 6" in text
    assert "timed in its own row, within 3% of the best: 1 / 2" in text


def test_unreadable_results_exit_2(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"no_results": []}))
    p = subprocess.run([sys.executable, SCRIPT, str(bad)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "cannot read" in p.stderr
    assert p.stdout == ""


def test_clock_is_named(tmp_path):
    # A run without the timing field predates the queued clock: flagged.
    for meta, want in [({}, "synchronize after every call"),
                       ({"timing": "sync"}, "synchronize after every call"),
                       ({"timing": "queued"}, "Williams rounds"),
                       ({"timing": "queued", "round_order": "random"}, "random rounds"),
                       ({"timing": "window"}, "windows of its own calls")]:
        f = tmp_path / "r.json"
        f.write_text(json.dumps({"meta": meta, "results": _results()}))
        out = subprocess.run([sys.executable, SCRIPT, str(f), "--anchors", ""],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[0].startswith("clock: ")
        assert want in out.stdout.splitlines()[0]


def test_missing_anchors_are_named(tmp_path):
    # Without anchors the FA3 targets count no cell: the output says so, and
    # an anchors path given explicitly must exist.
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"meta": {}, "results": _results()}))
    out = subprocess.run([sys.executable, SCRIPT, str(f), "--anchors", ""],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert any(l.startswith("anchors: none") for l in out.stdout.splitlines())
    assert "s >= 2048: 0 / 0" in out.stdout
    bad = subprocess.run([sys.executable, SCRIPT, str(f), "--anchors", str(tmp_path / "no.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "no anchors file" in bad.stderr
    assert bad.stdout == ""
    anchors = tmp_path / "a.json"
    anchors.write_text(json.dumps([{"d": 128, "causal": 1, "s": 4096, "fa3_det": 400.0,
                                    "cudnn": 400.0}]))
    ok = subprocess.run([sys.executable, SCRIPT, str(f), "--anchors", str(anchors)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "anchors: none" not in ok.stdout
    assert "s >= 2048: 1 / 1" in ok.stdout


def test_same_run_fa3_table_only_with_fa3_rows():
    mod = _load()
    assert "same run" not in mod.summarize(_results(), ANCHORS)
    rows = _results() + _cell(128, "causal", 8192, [
        ("sdpa-cudnn", 500.0, {}), ("dash-auto-det", 600.0, {}),
        ("fa3-det", 500.0, {"rel_diff_vs_dash": 2e-3}),
        ("fa3-nondet", 625.0, {"rel_diff_vs_dash": 3e-3, "bitwise_deterministic": False})])
    text = mod.summarize(rows, ANCHORS)
    # 600 / 500 = 1.20 >= 1.1x; against the non-deterministic FA3 0.96;
    # FA3-det / cuDNN of the run 1.00, no anchor for the cell (so no drift).
    assert ("| 128 | causal | 8192 | 500.0 | 625.0 | 600.0 | 1.20 | 0.96 | 1.00 | - | - | - "
            "| yes | 3.0e-03 |") in text
    assert "(same run) ours det (auto) >= FA3-det, s >= 2048: 1 / 1" in text
    assert "(same run) >= 1.1x FA3-det at d=128 causal s >= 8192: 1 / 1" in text
    # A cell whose FA3-det row is not bitwise repeatable says so.
    bad = [dict(r, bitwise_deterministic=False) if r["impl"] == "fa3-det" else r for r in rows]
    assert "| NO | 3.0e-03 |" in mod.summarize(bad, ANCHORS)


def test_same_run_fa3_drift_says_which_yardstick_moved():
    mod = _load()
    # The anchor run: FA3-det 500, cuDNN 400 (ratio 1.25). This run: FA3-det
    # as in the anchor run, cuDNN 10% faster.
    anchors = {(128, "causal", 16384): {"fa3_det": 500.0, "cudnn": 400.0}}
    rows = _cell(128, "causal", 16384, [
        ("sdpa-cudnn", 440.0, {}), ("dash-auto-det", 560.0, {}),
        ("fa3-det", 505.0, {"rel_diff_vs_dash": 1e-4}),
        ("fa3-nondet", 600.0, {"rel_diff_vs_dash": 1e-4})])
    text = mod.summarize(rows, anchors)
    # FA3-det / cuDNN 505 / 440 = 1.15 against 1.25; FA3-det at 1.01 of its
    # anchor figure, cuDNN at 1.10 of its own.
    assert "| 1.15 | 1.25 | 1.01 | 1.10 | yes |" in text
