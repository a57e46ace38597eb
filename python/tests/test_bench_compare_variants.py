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


def test_the_control_sets_the_noise_band_a_variant_must_leave(tmp_path, capsys):
    def cell(s, base, new, ctl):
        return [row("dash-auto-det", base, s=s), row("dash-auto-det@new", new, s=s),
                row("dash-auto-det@ctl", ctl, s=s)]
    # s=1024: +5% against a control at -1%; s=2048: +1% inside a control at +2%;
    # s=4096: -3% below a control at +0.5%.
    results = cell(1024, 100.0, 105.0, 99.0) + cell(2048, 100.0, 101.0, 102.0) + \
        cell(4096, 100.0, 97.0, 100.5)
    lines = cv.verdicts(results, ["ctl", "new"], "ctl")
    assert lines == ["new det: above the control's spread in 1 / 3 cells, below it in 1 "
                     "(change -3.0..+5.0%, control -1.0..+2.0%)"]
    # A cell the variant did not run (partial directory) is left out of the count.
    results.append(dict(row("dash-auto-det@new", None, s=8192), error="no kernel"))
    results += [row("dash-auto-det", 100.0, s=8192), row("dash-auto-det@ctl", 100.0, s=8192)]
    assert "in 1 / 3 cells" in cv.verdicts(results, ["ctl", "new"], "ctl")[0]
    # Through main: the verdict follows the table; an unknown control is refused.
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps({"results": results}))
    assert cv.main([str(p), "--control", "ctl"]) == 0
    out = capsys.readouterr().out
    assert out.index("| d | mask |") < out.index("new det: above the control's spread")
    assert cv.main([str(p), "--control", "nope"]) == 2
    assert "control 'nope' is not among the variants" in capsys.readouterr().err


def test_the_control_is_checked_to_have_timed_the_default_sets_cubins(tmp_path, capsys):
    def cell(s, base_sha, ctl_sha):
        return [dict(row("dash-auto-det", 100.0, s=s), cubin_sha256=base_sha),
                dict(row("dash-auto-det@ctl", 100.5, s=s), cubin_sha256=ctl_sha),
                row("dash-auto-det@new", 103.0, s=s)]
    same = cell(1024, "aa", "aa") + cell(2048, "bb", "bb")
    assert cv.control_identity(same, "ctl") == "control ctl: the default set's cubins in 2 / 2 rows"
    # A stale copy: one cell's control cubin is another binary.
    stale = cell(1024, "aa", "aa") + cell(2048, "bb", "old")
    line = cv.control_identity(stale, "ctl")
    assert line.startswith("WARNING: control ctl timed other cubins than the default set in 1 / 2 rows")
    assert "d=128 full s=2048 det" in line and "s=1024" not in line
    # Older sweeps carry no digest: said, not guessed; a row without one is not counted as checked.
    bare = [dict(r) for r in same]
    for r in bare:
        r.pop("cubin_sha256", None)
    assert "unchecked" in cv.control_identity(bare, "ctl")
    part = same[:3] + bare[3:]
    assert cv.control_identity(part, "ctl").endswith("in 1 / 2 rows (the rest carry no digest)")
    # Through main: the identity line comes before the verdicts.
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps({"results": stale}))
    assert cv.main([str(p), "--control", "ctl"]) == 0
    out = capsys.readouterr().out
    assert out.index("WARNING: control ctl") < out.index("new det: above the control's spread")
