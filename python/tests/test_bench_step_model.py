"""bench/step_model.py's cycle model of the two MMA warpgroups: each resource
behaves as documented (local work, the shared SFU, the in-order tensor pipe
with blocking issue, the barrier, the stage protocol), and the model ranks
the deferred-dK order below the shipped one and the exp2's SFU work as a
large d = 64 cost, as the H200 measured."""
import pytest

import bench_scripts

m = bench_scripts.load("step_model")


def run(p0, p1=None, steps=6, **kw):
    return m.Sim([p0, p1 or p0], steps, **kw).run()


def test_local_work_adds_up():
    assert run(lambda n: [("alu", 300), ("alu", 200)])["step"] == pytest.approx(500, abs=2)


def test_sfu_is_shared_at_half_rate():
    both = run(lambda n: [("sfu", 512)])["step"]
    one = run(lambda n: [("sfu", 512)], lambda n: [("alu", 512)])["step"]
    assert both == pytest.approx(1024, abs=4)
    assert one == pytest.approx(512, abs=4)


def test_tensor_pipe_serves_both_warpgroups_in_order():
    r = run(lambda n: [("issue", "X", [64] * 4), ("wait", 0)], steps=8)
    # both warpgroups' 8 steps of 4 x 64 cycles, one instruction at a time
    assert r["cycles"] >= 8 * 512
    assert r["tensor_share"] > 0.95
    # coupled by a barrier, each warpgroup's step takes both groups' time
    r = run(lambda n: [("issue", "X", [64] * 4), ("wait", 0), ("bar", "b")], steps=8)
    assert r["step"] == pytest.approx(512, abs=8)


def test_issue_blocks_while_the_pipe_is_full():
    # Deep queue: the local work after the issue overlaps the products; a
    # queue of one: the warpgroup waits at the issue first.
    prog = lambda n: [("issue", "X", [64] * 8), ("alu", 400), ("wait", 0)]
    deep = m.Sim([prog, lambda n: [("alu", 1)]], 6, depth=16).run()["step"]
    shallow = m.Sim([prog, lambda n: [("alu", 1)]], 6, depth=1).run()["step"]
    assert deep == pytest.approx(512, abs=16)
    assert shallow > deep + 300


def test_barrier_waits_for_the_later_warpgroup():
    r = run(lambda n: [("alu", 100), ("bar", "b")], lambda n: [("alu", 300), ("bar", "b")])
    assert r["step"] == pytest.approx(300, abs=4)


def test_stage_waits_for_the_producer():
    # A step's stage is full `load` cycles after both warpgroups released the
    # step two before it.
    prog = lambda n: [("full", n), ("alu", 100), ("release", n)]
    assert run(prog, load=1000, steps=8)["step"] == pytest.approx(550, abs=10)
    assert run(prog, load=0, steps=8)["step"] == pytest.approx(100, abs=4)


def test_await_waits_only_for_the_posted_step():
    # Warpgroup 1 waits for warpgroup 0's post of the same step (one way):
    # 300-cycle steps; warpgroup 0 never waits.
    r = run(lambda n: [("alu", 300), ("post", "x")],
            lambda n: [("alu", 100), ("await", "x")], steps=8)
    assert r["step"] == pytest.approx(300, abs=4)
    # Waiting for step n - 2's post lets warpgroup 0 run up to two steps ahead.
    r = m.Sim([lambda n: [("alu", 100), ("await", "y", 2)],
               lambda n: [("alu", 300), ("post", "y")]], 8).run()
    assert r["cycles"] >= 8 * 300


def test_dq_kv_split_is_modelled_even_with_the_shipped_step():
    # Measured even on the H200 (section 19); a starting stagger does not last.
    base = m.model(64, "shipped")["step"]
    for v in ("dq-kv-split", "dq-kv-split-staggered"):
        assert abs(m.model(64, v)["step"] / base - 1) < 0.05


def test_a_barrier_that_never_completes_is_an_error():
    with pytest.raises(RuntimeError):
        m.Sim([lambda n: [("bar", "b")], lambda n: [("alu", 5)]], 2).run()


@pytest.mark.parametrize("d", [64, 128])
def test_deferred_dk_ranks_below_shipped(d):
    # Measured on the H200 (bench/results/2026-12-02-h200-phases, call 2):
    # the shipped order was 10-18% faster.
    assert m.model(d, "deferred-dk")["step"] > 1.05 * m.model(d, "shipped")["step"]


def test_without_the_sfu_work_d64_gains():
    # Measured on the H200 (bench/results/2026-12-02-h200-exp2, calls 1-2):
    # ablate-exp2 kernels +11..+16% at d = 64 (the model: ~+18%). At d = 128
    # (measured ~+3%) the model's step is not monotone in the SFU cost (the
    # warpgroups' stagger locks in differently), so it is not asserted.
    assert m.without_exp2(64) > 0.08
    assert m.COST[64]["sfu"] == 512  # restored
