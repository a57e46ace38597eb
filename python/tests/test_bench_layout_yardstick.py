"""bench/layout_yardstick.py --compare: each backend and memory order against the anchors."""
import json

import bench_scripts

ly = bench_scripts.load("layout_yardstick")


def test_ratios_are_per_backend_and_layout_and_ours_is_over_the_same_layouts_cudnn(tmp_path):
    rows = []
    for lay, scale in (("bhsd", 1.10), ("bshd", 1.00)):
        for be, anchor in (("cudnn", 500.0), ("flash", 300.0), ("efficient", 100.0)):
            rows.append(dict(d=128, mask="causal", s=16384, impl=be, layout=lay,
                             tflops=anchor * scale))
        rows.append(dict(d=128, mask="causal", s=16384, impl="ours-det", layout=lay,
                         tflops=600.0))
    res = tmp_path / "run.json"
    res.write_text(json.dumps(dict(meta={}, results=rows)))
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps([dict(d=128, s=16384, causal=True, cudnn=500.0, flash=300.0,
                                      efficient=100.0)]))
    lines = ly.compare(str(res), str(peers)).splitlines()
    assert lines[0].startswith("| d | mask | s | cudnn bhsd / anchor | flash bhsd / anchor |")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells == ["128", "causal", "16384", "1.100", "1.100", "1.100",
                     "1.000", "1.000", "1.000", "1.091", "1.200"]


def test_a_cell_without_an_anchor_or_a_row_prints_dashes(tmp_path):
    rows = [dict(d=64, mask="full", s=512, impl="cudnn", layout="bhsd", tflops=300.0)]
    res = tmp_path / "run.json"
    res.write_text(json.dumps(dict(meta={}, results=rows)))
    peers = tmp_path / "peers.json"
    peers.write_text("[]")
    cells = [c.strip() for c in ly.compare(str(res), str(peers)).splitlines()[2]
             .strip("|").split("|")]
    assert cells[:3] == ["64", "full", "512"] and set(cells[3:]) == {"-"}
