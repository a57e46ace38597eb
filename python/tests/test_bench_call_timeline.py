"""bench/call_timeline.py's reading of a profile (torch-free): activities are
split into calls at the flush markers, offsets are from each call's first
activity, and the summary's medians, span and time between activities."""
import pytest

import bench_scripts

ct = bench_scripts.load("call_timeline")

FLUSH = "void at::native::vectorized_elementwise_kernel<4, bitwise_not_kernel_cuda>"


def call(t0, pre=52.0, main=1379.0):
    """One DASH call's activities from t0: the flush, the tensor-map copy,
    the preprocess and the main kernel with small gaps."""
    return [(t0, t0 + 80.0, FLUSH),
            (t0 + 81.0, t0 + 82.2, "Memcpy HtoD (Pageable -> Device)"),
            (t0 + 84.2, t0 + 84.2 + pre, "dash_bwd_preprocess"),
            (t0 + 85.4 + pre, t0 + 85.4 + pre + main, "dash_bwd_main")]


def test_calls_are_split_at_the_flush_markers_in_time_order():
    acts = call(1000.0) + call(3000.0, main=1400.0)
    acts.reverse()  # the profiler's order is not trusted
    calls = ct.split_calls(acts + [(10.0, 20.0, "before any flush")])
    assert len(calls) == 2
    assert [n for n, _, _ in calls[0]] == [
        "Memcpy HtoD (Pageable -> Device)", "dash_bwd_preprocess", "dash_bwd_main"]
    name, off, dur = calls[1][2]
    assert name == "dash_bwd_main"
    assert off == pytest.approx(85.4 + 52.0 - 81.0)
    assert dur == pytest.approx(1400.0)


def test_a_flush_with_nothing_after_it_is_not_a_call():
    assert ct.split_calls(call(0.0)[:1] + call(5000.0)) == ct.split_calls(call(5000.0))


def test_summary_takes_medians_and_the_time_between_activities(capsys):
    calls = ct.split_calls(call(0.0, pre=50.0) + call(4000.0, pre=52.0)
                           + call(8000.0, pre=60.0))
    r = ct.summarise("cell", calls)
    pre = [row for row in r["rows"] if row["name"] == "dash_bwd_preprocess"][0]
    assert pre["dur_us"] == pytest.approx(52.0)
    assert r["calls"] == 3
    # span = last end - first start; between = span - the activities
    assert r["span_us"] == pytest.approx(85.4 + 52.0 + 1379.0 - 81.0)
    assert r["between_us"] == pytest.approx(r["span_us"] - r["busy_us"])
    assert r["between_us"] == pytest.approx(2.0 + 1.2)
    assert "dash_bwd_main" in capsys.readouterr().out


def test_calls_with_another_activity_sequence_are_left_out_of_the_medians():
    odd = call(8000.0)
    odd.insert(2, (8083.0, 8083.5, "Memset (Device)"))
    calls = ct.split_calls(call(0.0) + call(4000.0) + odd)
    r = ct.summarise("cell", calls)
    assert r["calls"] == 2
    assert "Memset (Device)" not in [row["name"] for row in r["rows"]]
