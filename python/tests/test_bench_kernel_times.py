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
