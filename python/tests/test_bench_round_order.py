"""bench/round_order.py: the benchmark's round orders vary every
implementation's neighbours (a fixed predecessor, then index-local second
neighbours, biased the auto rows)."""
import collections

import bench_scripts

ro = bench_scripts.load("round_order")


def adjacent(rows):
    return collections.Counter((r[i], r[i + 1]) for r in rows for i in range(len(r) - 1))


def test_rounds_are_seeded_permutations():
    rounds = ro.round_orders(13, 30, seed=7)
    assert len(rounds) == 30
    assert all(sorted(r) == list(range(13)) for r in rounds)
    assert rounds == ro.round_orders(13, 30, seed=7)
    assert rounds != ro.round_orders(13, 30, seed=8)


def test_every_predecessor_and_position_comes_up():
    rounds = ro.round_orders(6, 3000, seed=1)
    pairs = adjacent(rounds)
    assert len(pairs) == 6 * 5
    expected = 3000 * 5 / 30  # 5 adjacencies per round over 30 ordered pairs
    assert all(0.8 * expected < c < 1.2 * expected for c in pairs.values())
    for p in range(6):
        counts = collections.Counter(r[p] for r in rounds)
        assert all(400 < counts[i] < 600 for i in range(6))


def test_second_neighbours_are_not_those_of_nearby_index():
    # The Williams rows put every second neighbour at index distance 1 (mod
    # n): the auto rows (index 3) sat among SDPA's backends (1, 2) in every cell.
    n = 13
    rounds = ro.round_orders(n, 2000, seed=3)
    near = sum(1 for r in rounds for a, b in zip(r, r[2:]) if abs(a - b) <= 2)
    total = sum(len(r) - 2 for r in rounds)
    # uniform: P(|a - b| <= 2) for two distinct indices of 13 = 46 / 156
    assert abs(near / total - 46 / 156) < 0.02


def test_round_orders_handle_small_counts():
    assert ro.round_orders(0, 5) == []
    assert ro.round_orders(1, 3) == [[0], [0], [0]]
    assert ro.round_orders(4, 0) == []


def test_windows_mirror_and_split_the_runs():
    w = ro.window_order(3, 30, seed=5)
    base = [i for i, _ in w[:3]]
    assert sorted(base) == [0, 1, 2]
    assert w == [(i, 15) for i in base] + [(i, 15) for i in reversed(base)]
    # the odd run goes to the first window; every implementation gets all its runs
    w = ro.window_order(4, 31, seed=5)
    order = [i for i, _ in w]
    assert order[4:] == order[:4][::-1]
    for i in range(4):
        assert sum(k for j, k in w if j == i) == 31
    # a mean position: each implementation's two windows sit symmetrically
    pos = {i: [p for p, j in enumerate(order) if j == i] for i in range(4)}
    assert len({sum(p) for p in pos.values()}) == 1
    # seeded: the same order for a seed, the base order varies with it
    assert ro.window_order(6, 30, seed=5) == ro.window_order(6, 30, seed=5)
    assert len({tuple(i for i, _ in ro.window_order(6, 30, seed=k)[:6]) for k in range(20)}) > 1


def test_windows_handle_small_counts():
    assert ro.window_order(0, 30) == []
    assert ro.window_order(2, 0) == []
    assert sorted(ro.window_order(2, 1)) == [(0, 1), (1, 1)]
