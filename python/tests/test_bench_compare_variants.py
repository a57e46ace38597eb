"""bench/compare_variants.py: the same-call A/B table of a --variant sweep."""
import json

import bench_scripts

cv = bench_scripts.load("compare_variants")


def row(impl, tflops, det=True, d=128, mask="full", s=2048):
    return dict(d=d, mask=mask, s=s, impl=impl, tflops=tflops, bitwise_deterministic=det)


def test_changes_are_against_the_default_set_and_bitwise_covers_every_set():
    results = [row("sdpa-cudnn", 400.0, det=False), row("dash-auto-det", 200.0),
               row("dash-auto-nondet", 250.0), row("dash-auto-det@new", 220.0),
               row("dash-auto-nondet@new", 225.0, det=False)]
    lines = cv.table(results, ["new"])
    assert lines[0].startswith("| d | mask | s | cuDNN | det (default) | det@new |")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells == ["128", "full", "2048", "400.0", "200.0", "220.0 (+10.0%)",
                     "250.0", "225.0 (-10.0%)", "True"]
    # A variant whose deterministic rows differ between runs fails the column.
    results[3]["bitwise_deterministic"] = False
    assert cv.table(results, ["new"])[2].rstrip().endswith("| False |")


def test_a_set_without_the_cells_kernel_does_not_fail_the_bitwise_column():
    # A partial variant directory: its row has an error and no timing.
    missing = dict(row("dash-auto-det@part", None), bitwise_deterministic=None,
                   error="no kernel for configuration")
    results = [row("sdpa-cudnn", 400.0, det=False), row("dash-auto-det", 200.0), missing]
    cells = [c.strip() for c in cv.table(results, ["part"])[2].strip("|").split("|")]
    assert cells[5] == "-" and cells[-1] == "True"
    # ... but a set that ran and was not bitwise equal still fails it.
    results.append(row("dash-auto-det@bad", 210.0, det=False))
    assert cv.table(results, ["part", "bad"])[2].rstrip().endswith("| False |")
    # No deterministic row ran at all: nothing to say.
    only = [row("sdpa-cudnn", 400.0, det=False), missing]
    assert cv.table(only, ["part"])[2].rstrip().endswith("| - |")


def test_variants_are_found_and_a_file_without_any_is_refused(tmp_path, capsys):
    results = [row("dash-auto-det", 1.0), row("dash-auto-det@a", 1.0),
               row("dash-spt-det@b", 1.0)]
    assert cv.variants_in(results) == ["a", "b"]
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps({"results": [row("dash-auto-det", 1.0)]}))
    assert cv.main([str(p)]) == 2
    assert "no @NAME rows" in capsys.readouterr().err
