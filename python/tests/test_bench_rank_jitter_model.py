"""bench/rank_jitter_model.py: the ordered dQ chain under jitter (checked on
small schedules from dash-sched, no GPU)."""
import os
import types

import pytest

import bench_scripts

rjm = bench_scripts.load("rank_jitter_model")
DASH_SCHED = os.path.join(bench_scripts.ROOT, os.environ.get("BUILD_DIR", "build"), "bin", "dash-sched")


def args(**kw):
    a = dict(seqlen=1024, hdim=128, mask="causal", policy="symmetric-shift", tokens=2048,
             width=512, sms=8, dash_sched=DASH_SCHED)
    a.update(kw)
    return types.SimpleNamespace(**a)


def run(units, ordered, sigma=0.0, r=0.75, seed=0):
    return rjm.simulate(units, sigma, r, 0.5, 2, 0.8, ordered, seed)


def test_symmetric_shift_waits_for_nothing_without_jitter():
    # The DAG lemma: its ranks follow (wave, step), so with fixed costs the
    # ordered adds cost nothing.
    units = rjm.load(args())
    # B*H = 8 heads of N/2 = 4 pairs, each s*(N+1) = 18 tasks (s = 2)
    assert sum(len(u) for u in units) == 8 * 4 * 18
    assert run(units, True) == pytest.approx(run(units, False))


def test_ascending_chain_waits_and_jitter_costs_the_ordered_adds():
    units = rjm.load(args(policy="ascending"))
    assert run(units, True, r=1.0) > run(units, False, r=1.0) * 1.05
    sym = rjm.load(args())
    det = [run(sym, True, sigma=0.2, r=1.0, seed=s) for s in range(3)]
    assert det == [run(sym, True, sigma=0.2, r=1.0, seed=s) for s in range(3)]  # seeded
    assert max(det) > run(sym, True)  # the jitter shows


def test_an_add_waits_for_the_earlier_rank():
    row = (0, 0, 0)
    # unit 0 holds rank 1, unit 1 rank 0 but computes twice as long (a first
    # step with boundary 1.0): unit 0's add starts when unit 1's lands.
    units = [[(row, 1, False)], [(row, 0, True)]]
    t = rjm.simulate(units, 0.0, 0.5, 0.5, 2, 1.0, True, 0)
    assert t == pytest.approx(2.0 + 0.5 + 0.5)
    assert rjm.simulate(units, 0.0, 0.5, 0.5, 2, 1.0, False, 0) == pytest.approx(2.5)


def test_an_illegal_schedule_is_refused():
    with pytest.raises(SystemExit, match="illegal here"):
        rjm.load(args(mask="full"))
