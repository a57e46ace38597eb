"""bench/item_trace.py's reading of a trace-timeline kernel's words
(torch-free): synthetic timelines with known step, per-walk, epilogue and gap
cycles must come back as those numbers."""
import bench_scripts

it = bench_scripts.load("item_trace")


def timeline(lens, step=1000, fixed=500, epi=300, gap=200, start_ns=10 ** 12, head=50):
    """One CTA's words: clock = ns (1 GHz), items back to back."""
    w = [0] * it.WORDS
    w[it.START_NS], w[it.START_CLK] = start_ns, 0
    clk = head
    for j, n in enumerate(lens):
        base = it.ITEM0 + j * it.ITEM_WORDS
        w[base + it.WALK_START] = clk
        w[base + it.KV_ISSUE] = clk - 100
        w[base + it.STEP0_READY] = clk + 40  # the walk's fixed part in step 0
        w[base + it.STEP0_ISSUE] = clk - 70  # 30 after KV_ISSUE, 110 before FULL_Q
        w[base + it.STEP0_END] = clk + fixed + step
        w[base + it.STEP1_END] = clk + fixed + 2 * step
        clk += fixed + step * n
        w[base + it.WALK_END] = clk
        clk += epi
        w[base + it.EPI_END] = clk
        w[base + it.LEN] = n
        clk += gap
    end = clk - gap + 10
    w[it.END_CLK], w[it.END_NS] = end, start_ns + end
    w[it.ITEMS], w[it.STEPS] = len(lens), sum(lens)
    return w


def test_fit_recovers_step_and_per_walk_cost():
    words = timeline([3, 8, 5, 12]) + timeline([7, 2, 9, 4, 6])
    ctas = it.parse(words, it.timeline_ctas(words))
    r = it.analyse(ctas)
    assert r["ctas"] == 2 and r["items"] == 9
    assert abs(r["step_cycles"] - 1000) < 1e-6
    assert abs(r["walk_fixed_cycles"] - 500) < 1e-6
    assert r["epilogue_cycles_median"] == 300
    assert r["gap_cycles_median"] == 200
    assert abs(r["ghz"] - 1.0) < 1e-9
    # (fixed + epilogue + gap) / step
    assert abs(r["per_item_overhead_steps"] - 1.0) < 1e-6
    sh = r["shares"]
    assert abs(sum(sh.values()) - 1.0) < 1e-9  # every cycle of CTAs x span once
    assert sh["tail"] > 0  # the first CTA ends earlier than the second
    fs = r["first_steps"]  # walks of >= 4 steps: 8, 5, 12, 7, 9, 4, 6
    assert fs["q_wait"] == 40 and fs["step0"] == 1500
    assert fs["producer"] == 30 and fs["copies"] == 110
    assert fs["step1"] == 1000 and fs["later"] == 1000


def test_cta_count_stops_at_words_that_are_not_a_timeline():
    words = timeline([4]) + timeline([4]) + [12345] * it.WORDS + timeline([4])
    assert it.timeline_ctas(words) == 2
    assert it.timeline_ctas([0] * (2 * it.WORDS)) == 0
    assert it.timeline_ctas([]) == 0
