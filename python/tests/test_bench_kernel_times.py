"""bench/kernel_times.py's reading of ncu's duration unit (torch-free)."""
import pytest

import bench_scripts

kt = bench_scripts.load("kernel_times")


def test_both_spellings_of_each_unit_convert_to_microseconds():
    for short, long_, factor in (("ns", "nsecond", 1e-3), ("us", "usecond", 1.0),
                                 ("ms", "msecond", 1e3)):
        assert kt.duration_us(short) == factor
        assert kt.duration_us(long_) == factor


def test_an_unknown_unit_is_an_error_not_a_guess():
    # Read as microseconds, a duration in nanoseconds made the main kernel
    # look 1000x slower (H200 run of 2026-12-02).
    with pytest.raises(ValueError, match="furlong"):
        kt.duration_us("furlong")
    with pytest.raises(ValueError):
        kt.duration_us("")


def test_extra_metrics_reach_ncu_with_and_without_the_bank_metrics(monkeypatch):
    seen = []

    def fake_run(d, mask, s, det, metrics, fa3_lib=None):
        seen.append(list(metrics))
        if len(seen) == 1:  # this ncu lacks the bank metrics
            raise RuntimeError("ncu failed (1):\nunknown metric")
        return {"main": {m: 1.0 for m in metrics}}
    monkeypatch.setattr(kt, "ncu_run", fake_run)
    out = kt.ncu_kernels(64, "causal", 8192, 1, ["lts__t_sector_hit_rate.pct"])
    assert seen[0] == kt.METRICS + kt.BANK_METRICS + ["lts__t_sector_hit_rate.pct"]
    assert seen[1] == kt.METRICS + ["lts__t_sector_hit_rate.pct"]
    assert "lts__t_sector_hit_rate.pct" in out["main"]


def test_a_failing_extra_metric_is_named(monkeypatch):
    def fake_run(d, mask, s, det, metrics, fa3_lib=None):
        raise RuntimeError("ncu failed (1):\nunknown metric")
    monkeypatch.setattr(kt, "ncu_run", fake_run)
    with pytest.raises(RuntimeError, match="lts__bogus"):
        kt.ncu_kernels(64, "causal", 8192, 1, ["lts__bogus"])
    with pytest.raises(RuntimeError, match="unknown metric"):  # no extras: ncu's own
        kt.ncu_kernels(64, "causal", 8192, 1)


def test_kernels_of_either_implementation_map_to_the_same_columns():
    fa3 = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::"
    assert kt.role_of("dash_bwd_main(Params)") == "main"
    assert kt.role_of(fa3 + "CollectiveMainloopBwdSm90<2, 2>>>>(T1::Params)") == "main"
    assert kt.role_of("dash_bwd_preprocess") == "preprocess"
    assert kt.role_of("void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<>>") == "preprocess"
    assert kt.role_of("cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<>>") == \
        "postprocess"
    assert kt.role_of("other_kernel(int)") == "other_kernel"
