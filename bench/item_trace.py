#!/usr/bin/env python3
"""Where a main kernel's time goes between and around its work items, from
the timeline that trace-timeline kernels write into O's buffer
(`scripts/aot --out build/kernels-trace --trace-timeline 64=1
--trace-timeline 128=1`; convert-dash-to-gpu `TraceWord`).

  DASH_KERNEL_DIR=build/kernels-trace PYTHONPATH=python \\
      python3 bench/item_trace.py --cells 64:causal:2048,64:full:2048 [--det 1] [--out F.json]

Per cell: one warm-up call, then one traced call. Per CTA (SM) the record
holds clock64 when the MMA warps pass FULL_KV (walk start), finish the walk,
finish the dK/dV epilogue, and when the producer passes EMPTY_KV; globaltimer
at the CTA's start and end. Printed, summed over all CTAs as a share of
(CTAs x kernel span): the walks' step time (a least-squares fit of walk
cycles = a + t * steps over all items: t a step, a the per-walk fixed part),
the epilogues, the gaps between an epilogue and the next walk (K/V and the
first Q/dO in flight), the CTA's start before its first walk, and the tail
(the CTA done while others still run).

Kernels built with `--trace-timeline D=2` also stamp the phases of one step
per item (the walk's step PHASE_STEP: each MMA warpgroup's thread 0 and the
reducer lane of its hand-off); printed as the median cycle at which each
phase is reached, from warpgroup 0's step top, and the median length of each
phase (`--phases` is implied when the kernels wrote them).
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# convert-dash-to-gpu's TraceWord (lib/Conversion/DashToGPU/KernelBuilder.h)
WORDS, ITEM0, ITEM_WORDS = 2048, 8, 9
START_NS, START_CLK, END_NS, END_CLK, ITEMS, STEPS, LEVEL = range(7)
(WALK_START, WALK_END, EPI_END, LEN, KV_ISSUE, STEP0_READY, STEP0_END, STEP1_END,
 STEP0_ISSUE) = range(9)
MAX_ITEMS = (1024 - ITEM0) // ITEM_WORDS
# trace-timeline=2 (TracePhase): per item three slots of PHASE_SLOT words
PHASE0, PHASE_STEP, PHASE_SLOT, PHASE_ITEM = 1024, 2, 16, 48
PHASE_ITEMS = (WORDS - PHASE0) // PHASE_ITEM
MMA_PHASES = ["top", "full_q", "issued", "s_done", "p_done", "dp_done", "ds_stored",
              "dv_issued", "ds_barrier", "dq_dk_issued", "dq_done", "staging_free",
              "handed_off", "end"]
RED_PHASES = ["wait", "full", "rank", "full1", "read", "done"]


def timeline_ctas(words):
    """How many CTAs (from 0) wrote a timeline: a start within a second of
    CTA 0's and an end after it (the words past the grid are O's values)."""
    ctas, t0 = 0, words[START_NS] if words else 0
    while (ctas + 1) * WORDS <= len(words):
        w = words[ctas * WORDS:(ctas + 1) * WORDS]
        if not (t0 > 0 and abs(w[START_NS] - t0) < 10 ** 9
                and 0 < w[END_NS] - w[START_NS] < 10 ** 9):
            break
        ctas += 1
    return ctas


def parse(words, ctas):
    """Per CTA: dict(start_ns, end_ns, start_clk, end_clk, items=[...])."""
    out = []
    for u in range(ctas):
        w = words[u * WORDS:(u + 1) * WORDS]
        n = int(w[ITEMS])
        items = []
        for j in range(min(n, MAX_ITEMS)):
            r = w[ITEM0 + j * ITEM_WORDS:ITEM0 + (j + 1) * ITEM_WORDS]
            items.append(dict(start=int(r[WALK_START]), walk_end=int(r[WALK_END]),
                              epi_end=int(r[EPI_END]), len=int(r[LEN]),
                              kv_issue=int(r[KV_ISSUE]), step0_ready=int(r[STEP0_READY]),
                              step0_end=int(r[STEP0_END]), step1_end=int(r[STEP1_END]),
                              step0_issue=int(r[STEP0_ISSUE])))
        phases = []
        if w[LEVEL] == 2:
            for j in range(min(n, PHASE_ITEMS, len(items))):
                if items[j]["len"] <= PHASE_STEP:
                    continue
                r = w[PHASE0 + j * PHASE_ITEM:PHASE0 + (j + 1) * PHASE_ITEM]
                phases.append(dict(
                    wg=[[int(x) for x in r[s * PHASE_SLOT:s * PHASE_SLOT + len(MMA_PHASES)]]
                        for s in range(2)],
                    red=[int(x) for x in r[2 * PHASE_SLOT:2 * PHASE_SLOT + len(RED_PHASES)]]))
        out.append(dict(start_ns=int(w[START_NS]), end_ns=int(w[END_NS]),
                        start_clk=int(w[START_CLK]), end_clk=int(w[END_CLK]),
                        steps=int(w[STEPS]), items=items, n=n, phases=phases))
    return out


def analyse_phases(ctas, det):
    """Median cycle of each phase from warpgroup 0's step top (per slot), and
    the median length of each MMA phase (from the phase before it). Records
    with a zero stamp (not written) are skipped; the reducer's rank and done
    stamps only in deterministic kernels."""
    red_used = [p for p in RED_PHASES if det or p not in ("rank", "done")]
    at = {"wg0": {p: [] for p in MMA_PHASES}, "wg1": {p: [] for p in MMA_PHASES},
          "reducer": {p: [] for p in red_used}}
    length = {p: [] for p in MMA_PHASES[1:]}
    for c in ctas:
        for rec in c.get("phases", []):
            stamps = rec["wg"][0] + rec["wg"][1] + [rec["red"][RED_PHASES.index(p)]
                                                   for p in red_used]
            if min(stamps) <= 0:
                continue
            t0 = rec["wg"][0][0]
            if max(stamps) - t0 > 10 ** 6:  # not one step's record
                continue
            for s in range(2):
                wg = rec["wg"][s]
                for i, p in enumerate(MMA_PHASES):
                    at["wg%d" % s][p].append(wg[i] - t0)
                for i in range(1, len(MMA_PHASES)):
                    length[MMA_PHASES[i]].append(wg[i] - wg[i - 1])
            for p in red_used:
                at["reducer"][p].append(rec["red"][RED_PHASES.index(p)] - t0)
    med = lambda v: statistics.median(v) if v else None
    return dict(records=len(at["wg0"]["top"]),
                at={k: {p: med(v) for p, v in d.items()} for k, d in at.items()},
                length={p: med(v) for p, v in length.items()})


def analyse(ctas):
    """Shares of CTA time (cycles) by phase, and the per-step fit."""
    xs, ys = [], []
    for c in ctas:
        for it in c["items"]:
            if it["len"] > 0:
                xs.append(it["len"])
                ys.append(it["walk_end"] - it["start"])
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    t = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else my / mx
    a = my - t * mx
    t0 = min(c["start_ns"] for c in ctas)
    t1 = max(c["end_ns"] for c in ctas)
    span_ns = t1 - t0
    ghz = statistics.median((c["end_clk"] - c["start_clk"]) / max(1, c["end_ns"] - c["start_ns"])
                            for c in ctas)
    span = span_ns * ghz
    tot = dict(steps=0.0, walk_fixed=0.0, epilogue=0.0, gap=0.0, head=0.0,
               end=0.0, tail=0.0, late_start=0.0)
    gaps, epis, kv_lag = [], [], []
    for c in ctas:
        its = c["items"]
        tot["late_start"] += (c["start_ns"] - t0) * ghz
        tot["tail"] += (t1 - c["end_ns"]) * ghz
        if not its:
            tot["end"] += c["end_clk"] - c["start_clk"]
            continue
        tot["head"] += its[0]["start"] - c["start_clk"]
        for j, it in enumerate(its):
            walk = it["walk_end"] - it["start"]
            tot["steps"] += t * it["len"]
            tot["walk_fixed"] += walk - t * it["len"]
            e = it["epi_end"] - it["walk_end"]
            tot["epilogue"] += e
            epis.append(e)
            if j + 1 < len(its):
                gap = its[j + 1]["start"] - it["epi_end"]
                tot["gap"] += gap
                gaps.append(gap)
                kv_lag.append(its[j + 1]["kv_issue"] - it["walk_end"])
        tot["end"] += c["end_clk"] - its[-1]["epi_end"]
    # The walk's first two steps against its later ones (walks of >= 4 steps).
    first = dict(q_wait=[], producer=[], copies=[], step0=[], step1=[], later=[])
    for c in ctas:
        for it in c["items"]:
            if it["len"] >= 4:
                first["q_wait"].append(it["step0_ready"] - it["start"])
                # the producer: EMPTY_KV passed -> step 0's copies issued; the
                # copies: issued -> the MMA warps past FULL_Q
                first["producer"].append(it["step0_issue"] - it["kv_issue"])
                first["copies"].append(it["step0_ready"] - it["step0_issue"])
                first["step0"].append(it["step0_end"] - it["start"])
                first["step1"].append(it["step1_end"] - it["step0_end"])
                first["later"].append((it["walk_end"] - it["step1_end"]) / (it["len"] - 2))
    first = {k: statistics.median(v) if v else 0 for k, v in first.items()}
    total = span * len(ctas)
    shares = {k: v / total for k, v in tot.items()}
    items = sum(len(c["items"]) for c in ctas)
    return dict(ctas=len(ctas), items=items, span_us=span_ns / 1e3, ghz=ghz,
                step_cycles=t, walk_fixed_cycles=a,
                epilogue_cycles_median=statistics.median(epis) if epis else 0,
                gap_cycles_median=statistics.median(gaps) if gaps else 0,
                gap_cycles_p90=sorted(gaps)[int(0.9 * len(gaps))] if gaps else 0,
                kv_issue_lag_median=statistics.median(kv_lag) if kv_lag else 0,
                per_item_overhead_steps=(a + (statistics.fmean(epis) if epis else 0)
                                         + (statistics.fmean(gaps) if gaps else 0)) / t,
                end_skew_us=(t1 - min(c["end_ns"] for c in ctas)) / 1e3,
                first_steps=first,
                shares=shares)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="64:causal:2048")
    ap.add_argument("--det", type=int, default=1)
    ap.add_argument("--schedule", default="auto")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch
    import dash_attn
    from profile_cell import cell_inputs
    rows = []
    for spec in args.cells.split(","):
        d, mask, s = spec.split(":")
        d, s = int(d), int(s)
        cell = cell_inputs(d, mask, s)
        o_ref = cell["o"].clone()
        o = cell["o"].contiguous()
        cell["o"] = o
        for _ in range(2):  # warm-up, then the traced call
            o.copy_(o_ref)
            dash_attn.attention_backward(**cell, deterministic=bool(args.det),
                                         schedule=args.schedule)
            torch.cuda.synchronize()
        words = o.view(-1).view(torch.int64)[:132 * 8 * WORDS].cpu().tolist()
        ctas = timeline_ctas(words)
        if ctas == 0:
            sys.exit("item_trace: no timeline in O: are these trace-timeline kernels "
                     "(DASH_KERNEL_DIR)?")
        parsed = parse(words, ctas)
        r = analyse(parsed)
        r.update(d=d, mask=mask, s=s, det=args.det, schedule=args.schedule)
        if any(c["phases"] for c in parsed):
            r["phases"] = analyse_phases(parsed, args.det)
        rows.append(r)
        sh = r["shares"]
        print("d=%d %s s=%d det=%d: %d CTAs, %d items, span %.0f us at %.2f GHz; step %.0f cyc, "
              "per walk +%.0f, epilogue %.0f, gap %.0f (p90 %.0f), KV issue lag %.0f; "
              "overhead/item %.2f steps; CTA end skew %.1f us"
              % (d, mask, s, args.det, r["ctas"], r["items"], r["span_us"], r["ghz"],
                 r["step_cycles"], r["walk_fixed_cycles"], r["epilogue_cycles_median"],
                 r["gap_cycles_median"], r["gap_cycles_p90"], r["kv_issue_lag_median"],
                 r["per_item_overhead_steps"], r["end_skew_us"]))
        print("   shares: " + ", ".join("%s %.1f%%" % (k, 100 * v) for k, v in sh.items()))
        fs = r["first_steps"]
        print("   walks of >= 4 steps (median cycles): step 0's FULL_Q wait %.0f (producer "
              "EMPTY_KV -> step 0 issued %.0f, issued -> FULL_Q passed %.0f), step 0 %.0f, "
              "step 1 %.0f, later steps %.0f each"
              % (fs["q_wait"], fs["producer"], fs["copies"], fs["step0"], fs["step1"],
                 fs["later"]))
        if "phases" in r:
            ph = r["phases"]
            fmt = lambda v: "-" if v is None else "%.0f" % v
            print("   step %d's phases (%d records; median cycle from warpgroup 0's top, "
                  "median length):" % (PHASE_STEP, ph["records"]))
            for p in MMA_PHASES:
                print("     %-13s wg0 %6s  wg1 %6s  len %6s"
                      % (p, fmt(ph["at"]["wg0"][p]), fmt(ph["at"]["wg1"][p]),
                         fmt(ph["length"].get(p))))
            print("     reducer: " + ", ".join("%s %s" % (p, fmt(v))
                                              for p, v in ph["at"]["reducer"].items()))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
