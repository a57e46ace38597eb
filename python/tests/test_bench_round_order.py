"""bench/round_order.py: the benchmark's round orders vary every
implementation's predecessor (a fixed predecessor biased the auto rows)."""
import collections

import bench_scripts

ro = bench_scripts.load("round_order")


def adjacent(rows):
    return collections.Counter((r[i], r[i + 1]) for r in rows for i in range(len(r) - 1))


def test_rows_are_balanced_latin_squares():
    for n in range(2, 16):
        rows = ro.williams_rows(n)
        assert len(rows) == (n if n % 2 == 0 else 2 * n)
        assert all(sorted(r) == list(range(n)) for r in rows)
        # every position holds every implementation
        assert all({r[p] for r in rows} == set(range(n)) for p in range(n))
        # every ordered pair is adjacent equally often
        pairs = adjacent(rows)
        assert len(pairs) == n * (n - 1)
        assert len(set(pairs.values())) == 1


def test_a_rotated_fixed_order_would_fail_the_balance():
    # What the benchmark did before: round k = the order rotated by k.
    n = 6
    rotated = [[(x + k) % n for x in range(n)] for k in range(n)]
    assert len(adjacent(rotated)) < n * (n - 1)


def test_round_orders_cycle_and_handle_small_counts():
    assert ro.round_orders(0, 5) == []
    assert ro.round_orders(1, 3) == [[0], [0], [0]]
    rows = ro.williams_rows(4)
    assert ro.round_orders(4, 10) == [rows[r % 4] for r in range(10)]


def test_windows_mirror_and_split_the_runs():
    assert ro.window_order(3, 30) == [(0, 15), (1, 15), (2, 15), (2, 15), (1, 15), (0, 15)]
    # the odd run goes to the first window; every implementation gets all its runs
    w = ro.window_order(4, 31)
    assert [i for i, _ in w] == [0, 1, 2, 3, 3, 2, 1, 0]
    for i in range(4):
        assert sum(k for j, k in w if j == i) == 31
    # a mean position: each implementation's two windows sit symmetrically
    pos = {i: [p for p, (j, _) in enumerate(w) if j == i] for i in range(4)}
    assert len({sum(p) for p in pos.values()}) == 1


def test_windows_handle_small_counts():
    assert ro.window_order(0, 30) == []
    assert ro.window_order(2, 0) == []
    assert ro.window_order(2, 1) == [(0, 1), (1, 1)]
