"""schedule_report() through libdash_schedule_c.so (no torch, no GPU)."""

import json
import os
import subprocess

import pytest

import dash_attn

pytestmark = pytest.mark.usefixtures("native_libs")


def _dash_sched():
    from dash_attn import _paths
    libdir = os.path.dirname(_paths.find_library("dash_schedule_c"))
    exe = os.path.join(os.path.dirname(libdir), "bin", "dash-sched")
    return exe if os.path.isfile(exe) else None


CASES = [
    dict(),
    dict(seqlen=8192, heads=16, causal=True),
    dict(seqlen=1000, seqlen_k=3000, heads=8, heads_kv=2, hdim=64, causal=True,
         causal_align="top_left"),
    dict(seqlen=512, batch=2, heads=2, sms=8, detail=True),
    dict(seqlen=2048, causal=True, sms=132, resident_sms=100, policy="descending"),
    dict(seqlen=4096, c=1.0, r=0.5, block_m=128, block_n=64),
    # the runtime's model for the WGMMA kernels: persistent grid, staged
    dict(seqlen=8192, batch=2, heads=16, hdim=128, block_m=64, block_n=128, r=1.0,
         persistent=True, staging=2),
    dict(seqlen=2048, causal=True, hdim=64, block_m=128, block_n=128, r=1.0,
         persistent=True, staging=1, read_fraction=0.25),
]


def _flags(kw):
    m = {"seqlen": "--seqlen", "seqlen_k": "--seqlen-k", "heads": "--heads",
         "heads_kv": "--heads-kv", "batch": "--batch", "hdim": "--hdim", "sms": "--sms",
         "resident_sms": "--resident-sms", "policy": "--policy", "c": "--c", "r": "--r",
         "block_m": "--block-m", "block_n": "--block-n", "staging": "--staging",
         "read_fraction": "--read-fraction"}
    out = ["--json"]
    for k, v in kw.items():
        if k == "persistent":
            out.append("--launch=" + ("persistent" if v else "fa3"))
        elif k == "causal":
            out.append("--mask=" + ("causal" if v else "full"))
        elif k == "causal_align":
            out.append("--align=" + v.replace("_", "-"))
        elif k == "detail":
            out.append("--detail")
        else:
            out.append("%s=%s" % (m[k], v))
    return out


@pytest.mark.parametrize("kw", CASES)
def test_same_json_as_dash_sched(kw):
    exe = _dash_sched()
    if exe is None:
        pytest.skip("dash-sched is not built next to the library")
    want = json.loads(subprocess.run([exe] + _flags(kw), check=True, capture_output=True,
                                     text=True).stdout)
    got = dash_attn.schedule_report(**kw).data
    assert got == want


def test_auto_is_the_best_legal_schedule():
    r = dash_attn.schedule_report(seqlen=8192, heads=16, causal=True)
    legal = [row for row in r.schedules if row["legal"]]
    assert r.auto in [row["name"] for row in legal]
    assert r[r.auto]["makespan"] == min(row["makespan"] for row in legal)
    assert not r["shift"]["legal"] and "full mask" in r["shift"]["reason"]
    assert r.problem["align"] == "bottom-right" and r.problem["mask"] == "causal"


def test_table_matches_dash_sched_text():
    exe = _dash_sched()
    if exe is None:
        pytest.skip("dash-sched is not built next to the library")
    want = subprocess.run([exe, "--seqlen=8192", "--mask=causal"], check=True,
                          capture_output=True, text=True).stdout
    got = str(dash_attn.schedule_report(seqlen=8192, causal=True))
    assert got.strip() == want.strip()


def test_table_marks_auto():
    text = dash_attn.schedule_report(seqlen=2048).table()
    assert "schedule" in text and "\nauto: " in text
    assert sum(line.startswith("*") for line in text.splitlines()) == 1


def test_svg(tmp_path):
    r = dash_attn.schedule_report(seqlen=1024, heads=2, causal=True, svg=True)
    assert r.svg.lstrip().startswith("<") and "<svg" in r.svg and r.svg.rstrip().endswith("</svg>")
    path = tmp_path / "g.svg"
    r.save_svg(str(path))
    assert path.read_text() == r.svg
    assert dash_attn.schedule_report(seqlen=1024).svg is None


def test_detail_ranks_are_permutations_of_the_covering_set():
    r = dash_attn.schedule_report(seqlen=512, heads=2, causal=True, detail=True,
                                  policy="symmetric-shift", sms=4)
    (row,) = r.schedules
    assert row["name"] == "symmetric-shift" and row["units"]
    for rank in row["ranks"]:
        order = rank["kv_order"]
        assert sorted(order) == list(range(len(order)))


@pytest.mark.parametrize("kw, msg", [
    (dict(hdim=96), "hdim 96 is not supported"),
    (dict(heads=16, heads_kv=3), "heads"),
    (dict(seqlen=0), "seqlen must be a positive integer"),
    (dict(seqlen=-4), "seqlen must be a positive integer"),
    (dict(policy="fastest"), "unknown policy 'fastest'"),
    (dict(c=0), "c must be positive"),
    (dict(r=-1), "r must be non-negative"),
    (dict(causal=True, causal_align="middle"), "causal_align must be"),
    (dict(seqlen=1.5), "seqlen must be an integer"),
    (dict(staging=9), "staging must be an integer in \\[0, 8\\]"),
    (dict(staging=2, read_fraction=1.5), "read_fraction must be in"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        dash_attn.schedule_report(**kw)


def test_staged_model_changes_the_full_mask_pick():
    # bench/NOTES.md section 11: d = 128 full s = 8192 on the H200's grid.
    kw = dict(seqlen=8192, batch=2, heads=16, hdim=128, block_m=64, block_n=128, r=1.0,
              persistent=True)
    serial = dash_attn.schedule_report(**kw)
    staged = dash_attn.schedule_report(staging=2, **kw)
    assert staged.problem["staging_buffers"] == 2
    assert staged["shift"]["makespan"] < staged["ascending"]["makespan"]
    assert serial["ascending"]["makespan"] > staged["ascending"]["makespan"]


def test_policy_underscore_spelling():
    r = dash_attn.schedule_report(seqlen=1024, causal=True, policy="symmetric_shift")
    assert [row["name"] for row in r.schedules] == ["symmetric-shift"]
