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


def with_phases(words, lens, wg_phase_len=100, wg1_lag=7, red_at=(50, 1400, 1500, 1600, 1700, 2500)):
    """Level-2 words: each item's step-PHASE_STEP record, warpgroup 0's phases
    wg_phase_len apart from its top at the item's walk start, warpgroup 1
    wg1_lag later, the reducer's stamps at red_at from that top; items with
    too short a walk get no record (their words hold O's garbage)."""
    w = list(words)
    w[it.LEVEL] = 2
    for j, n in enumerate(lens):
        base = it.PHASE0 + j * it.PHASE_ITEM
        top = w[it.ITEM0 + j * it.ITEM_WORDS + it.WALK_START] + 3000
        if n <= it.PHASE_STEP:
            for k in range(it.PHASE_ITEM):
                w[base + k] = 987654321987
            continue
        for s in range(2):
            for i in range(len(it.MMA_PHASES)):
                w[base + s * it.PHASE_SLOT + i] = top + i * wg_phase_len + s * wg1_lag
        for i, t in enumerate(red_at):
            w[base + 2 * it.PHASE_SLOT + i] = top + t
    return w


def test_phases_come_back_as_written_and_skip_short_walks():
    lens = [3, 2, 8, 5]
    words = with_phases(timeline(lens), lens)
    ctas = it.parse(words, it.timeline_ctas(words))
    assert len(ctas[0]["phases"]) == 3  # the 2-step walk has no step 2
    ph = it.analyse_phases(ctas, det=1)
    assert ph["records"] == 3
    assert ph["at"]["wg0"]["end"] == 100 * (len(it.MMA_PHASES) - 1)
    assert ph["at"]["wg1"]["top"] == 7 and ph["at"]["wg1"]["s_done"] == 307
    assert all(v == 100 for v in ph["length"].values())
    assert ph["at"]["reducer"] == dict(zip(it.RED_PHASES, (50, 1400, 1500, 1600, 1700, 2500)))
    # non-deterministic kernels stamp no rank wait and no release
    assert "rank" not in it.analyse_phases(ctas, det=0)["at"]["reducer"]


def test_level_one_words_have_no_phases():
    words = timeline([3, 8])
    ctas = it.parse(words, it.timeline_ctas(words))
    assert ctas[0]["phases"] == [] and it.analyse_phases(ctas, det=1)["records"] == 0
