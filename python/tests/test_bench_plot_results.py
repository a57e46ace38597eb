"""bench/plot_results.py: FlashAttention-3's anchor figures drawn as this
run reads them (anchor / its cuDNN x this run's cuDNN), and the CLI's
refusals (no torch, no GPU, no matplotlib needed)."""

import json
import subprocess
import sys

import pytest

import bench_scripts

SCRIPT = bench_scripts.path("plot_results")


def _load():
    return bench_scripts.load("plot_results")


def _rows():
    return [dict(d=64, mask="causal", s=4096, impl="sdpa-cudnn", tflops=400.0),
            dict(d=64, mask="causal", s=4096, impl="dash-auto-det", tflops=520.0),
            dict(d=64, mask="causal", s=8192, impl="sdpa-cudnn", tflops=420.0),
            # no cuDNN figure in this cell: no anchor point
            dict(d=128, mask="full", s=4096, impl="dash-auto-det", tflops=600.0)]


def test_anchor_lines_scale_by_this_runs_cudnn():
    m = _load()
    anchors = {(64, "causal", 4096): dict(fa3_det=300.0, fa3_nondet=360.0, cudnn=250.0),
               (64, "causal", 8192): dict(fa3_det=330.0, fa3_nondet=None, cudnn=300.0),
               (128, "full", 4096): dict(fa3_det=500.0, fa3_nondet=600.0, cudnn=500.0)}
    lines = m.anchor_lines(_rows(), anchors)
    assert set(lines) == {(64, "causal")}
    det = [v for k, v in lines[(64, "causal")].items() if "FA3-det" in k]
    nondet = [v for k, v in lines[(64, "causal")].items() if "FA3-nondet" in k]
    assert det == [[(4096, pytest.approx(480.0)), (8192, pytest.approx(462.0))]]
    # the anchor without a non-deterministic figure adds no point
    assert nondet == [[(4096, pytest.approx(576.0))]]


def test_anchor_lines_empty_without_anchors():
    assert _load().anchor_lines(_rows(), {}) == {}


def test_cli_refuses_a_missing_anchors_file(tmp_path):
    src = tmp_path / "r.json"
    src.write_text(json.dumps({"results": _rows()}))
    out = tmp_path / "r.png"
    r = subprocess.run([sys.executable, SCRIPT, str(src), str(out), "--anchors",
                        str(tmp_path / "missing.json")], capture_output=True, text=True)
    assert r.returncode == 2
    assert "no anchors file" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("text", [None, "{not json", '{"meta": {}}'])
def test_cli_refuses_unreadable_results(tmp_path, text):
    src = tmp_path / "r.json"
    if text is not None:
        src.write_text(text)
    r = subprocess.run([sys.executable, SCRIPT, str(src)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "cannot read results" in r.stderr
    assert not (tmp_path / "r.png").exists()
