//===- WgmmaProducer.cpp - The WGMMA kernel's TMA producer ----------------===//
//
// TMA kernels, warp 10 (warpgroup 2's registers): per item, once the MMA
// threads are done with the previous
// K and V (EMPTY_KV), K and V (FULL_KV; q-before-kv=1: after the item's
// first step's copies); per step n of the unit (stage
// n % 2), once the stage is free (EMPTY_Q), the step's Q tile index and
// rank into the stage and Q, dO, lse_log2 and dPsum by TMA (FULL_Q: one
// expect-tx arrival; rows past S_q arrive as zeros). The MMA warps wait on
// the walk every step and share sub-partition 2 with it, so it is kept
// short. warp-producer=1: the whole warp runs it converged, every value
// warp-uniform, and one elected lane issues each copy and arrival as a
// predicated instruction (WgmmaBuilder::issuePred); ptxas keeps the walk in
// uniform registers and issues each copy once (d = 64 symmetric-shift: 139
// -> 99 SASS instructions a step, no spill). Lane 0 alone (a divergent
// branch, warp-producer=0) makes each copy a loop that moves its operands
// into uniform registers, and the walk spills on warpgroup 2's 24
// registers (bench/NOTES.md section 36).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

void WgmmaMain::emitProducer() {
  auto walk = [&] {
    // The runtime rewrites the maps at the same workspace address before
    // every call: make this call's bytes the ones the TMA unit reads (the
    // loads' maps; the dQ reduce-adds use none).
    for (int i = 0; i < kTensorMapCount; ++i) // (dkdv-bulk: 7, 8 are stores)
      if (i != kTensorMapDqAcc)
        NVVM::FenceProxyAcquireOp::create(b, loc, NVVM::MemScopeKind::GPU,
                                          w.tensorMap(i), w.c32(128));
    if (traced)
      trace(kTraceItems, k.numItems(op, map, unit));
    // pdl: the first item's K and V (inputs, not the preprocess's) head for
    // L2 while the preprocess finishes; then the wait for its results.
    if (config.pdl && !config.statsInMain) {
      g.when(g.lt(g.idx(0), k.numItems(op, map, unit)), [&] {
        Kernel::WorkItem first = k.workItem(op, map, unit, g.idx(0));
        prefetchKV(first.bb, kvRow0(first.kv), kvHead(first.h));
      });
      NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
    }
    forItems([&](const Item &it, Value first) {
      // stats-in-main: the head's dPsum / lse_log2 rows are all written.
      if (config.statsInMain)
        waitForStats(it.bb, it.h);
      // Step `step` of the item: its Q tile index (and rank) into stage
      // (first + step) % 2 once that is free, then its tiles by TMA.
      auto issueStep = [&](Value step) {
        Value n = g.add(first, step);
        Value stage = g.rem(n, g.idx(2));
        Value parity = g.rem(g.div(n, g.idx(2)), g.idx(2));
        // The step's Q tile before the wait: once the stage is free only
        // the copies remain (the MMA warps wait on them).
        Value qt = visit(it, step);
        Value rank = config.countedAdds ? rankOf(it, qt) : Value();
        Value q0 = g.mul(qt, g.idx(bm));
        Value full = w.mbar(kFullQ, stage);
        w.mbarWait(w.mbar(kEmptyQ, stage), g.sub(g.idx(1), parity),
                   g.add(g.idx(kEmptyQ), stage), {unit, it.bb, it.h, n});
        // The step's Q tile (and rank) for the MMA threads and, through
        // them, the reducers; released by the arrival.
        if (w.issuePred) {
          // The elected lane's store, no branch (racecheck flags a word
          // written by a warp's 32; a branch would split the uniform walk).
          if (config.countedAdds)
            w.ptx("st.shared.v2.b32 [$0], {$1, $2};",
                  {w.stepTileSlot(stage), w.i32of(qt), w.i32of(rank)},
                  w.issuePred);
          else
            w.ptx("st.shared.b32 [$0], $1;",
                  {w.stepTileSlot(stage), w.i32of(qt)}, w.issuePred);
        } else {
          LLVM::StoreOp::create(b, loc, w.i32of(qt), w.stepTileSlot(stage), 4);
          if (config.countedAdds)
            LLVM::StoreOp::create(b, loc, w.i32of(rank),
                                  w.stepTileSlot(stage, 1), 4);
        }
        w.mbarExpect(full, 2 * L.qBytes() + 2 * bm * 4);
        Value qOff = g.mul(stage, g.idx(L.qBytes()));
        w.tmaTile(0, g.add(at(L.q(0)), qOff), it.bb, q0, it.h, bm, full);
        w.tmaTile(3, g.add(at(L.dO(0)), qOff), it.bb, q0, it.h, bm, full);
        Value vOff = g.mul(stage, g.idx(bm * 4));
        w.tmaRowVector(kTensorMapLse2, g.add(at(L.lse(0)), vOff), it.bb, q0,
                       it.h, full);
        // dps-fold: the hi / lo rows as one [2][bm] box, unswizzled, as it
        // comes.
        if (config.dpsFold)
          w.tmaLoad(w.tensorMap(kTensorMapDPsum), dpsStage(stage),
                    {w.i32of(q0), w.c32(0), w.i32of(it.h), w.i32of(it.bb)},
                    full);
        else
          w.tmaRowVector(kTensorMapDPsum, g.add(at(L.dps(0)), vOff), it.bb,
                         q0, it.h, full);
        // The item's first step's copies are out.
        traceAtStep(step, 0, kTraceStep0Issue, it.index);
      };
      // q-before-kv: the first step's stage was freed by the step before
      // last, so its copies go out while the MMA warps still walk the
      // previous item (and write its dK/dV); only K/V wait for its end.
      auto issueFirstStep = [&] {
        if (config.qBeforeKV)
          g.when(g.lt(g.idx(0), it.len), [&] { issueStep(g.idx(0)); });
      };
      if (config.kvViaDs) {
        Value hkv = kvHead(it.h), kv0 = kvRow0(it.kv);
        Value itemParity = g.rem(it.index, g.idx(2));
        Value notParity = g.sub(g.idx(1), itemParity);
        Value fullKV = w.mbar(kFullKV);
        // K and V into the dS^T buffer of the unit's step `first` (the
        // item's step 0, which writes it only after FULL_KV), free once
        // the previous item's last step passed its dS^T barrier, i.e.
        // about half a step and the epilogue before the walk ends; then,
        // once that item's last dQ has read K (EMPTY_KV) and they have
        // landed, one bulk copy into the K/V tiles completes FULL_KV. Both
        // regions are 1024-aligned: the bytes keep their swizzle.
        Value ds = g.add(at(L.dsT(0)),
                         g.mul(g.rem(first, g.idx(2)), g.idx(L.dsBytes())));
        Value fullDs = w.mbar(kFullDs);
        w.mbarWait(w.mbar(kEmptyDs), notParity, g.idx(kEmptyDs),
                   {unit, it.bb, it.h, first});
        if (traced)
          trace(kTraceKVIssue, clock(), it.index);
        w.mbarExpect(fullDs, 2 * L.kvBytes());
        w.tmaTile(1, ds, it.bb, kv0, hkv, kBn, fullDs);
        w.tmaTile(2, g.add(ds, g.idx(L.kvBytes())), it.bb, kv0, hkv, kBn,
                  fullDs);
        issueFirstStep();
        w.mbarWait(w.mbar(kEmptyKV), notParity, g.idx(kEmptyKV),
                   {unit, it.bb, it.h, first});
        w.mbarWait(fullDs, itemParity, g.idx(kFullDs),
                   {unit, it.bb, it.h, first});
        w.mbarExpect(fullKV, 2 * L.kvBytes());
        // 32-bit shared::cta addresses for all three operands (the CTA's
        // own window is part of the cluster's: the kernel is a cluster of
        // one, MainWgmma.cpp, without which this copy is illegal).
        byIssuer([&] {
          w.ptx("cp.async.bulk.shared::cluster.shared::cta.mbarrier::"
                "complete_tx::bytes [$0], [$1], $2, [$3];",
                {w.i32of(at(L.k())), w.i32of(ds), w.c32(2 * L.kvBytes()),
                 w.i32of(at(L.bar(kFullKV)))});
        });
      } else {
        issueFirstStep();
        Value hkv = kvHead(it.h), kv0 = kvRow0(it.kv);
        Value itemParity = g.rem(it.index, g.idx(2));
        w.mbarWait(w.mbar(kEmptyKV), g.sub(g.idx(1), itemParity),
                   g.idx(kEmptyKV), {unit, it.bb, it.h, first});
        if (traced)
          trace(kTraceKVIssue, clock(), it.index);
        Value fullKV = w.mbar(kFullKV);
        w.mbarExpect(fullKV, 2 * L.kvBytes());
        w.tmaTile(1, at(L.k()), it.bb, kv0, hkv, kBn, fullKV);
        w.tmaTile(2, at(L.v()), it.bb, kv0, hkv, kBn, fullKV);
      }
      // The next item's K and V into L2 while this item runs: its load
      // above then waits on L2, not HBM (all units switch items at about
      // the same time under a full mask, so those loads come in a burst).
      Value nextItem = g.add(it.index, g.idx(1));
      const int64_t ahead = config.kvPrefetchAhead;
      if (ahead == 0) {
        g.when(g.lt(nextItem, k.numItems(op, map, unit)),
               [&] {
                 Kernel::WorkItem nx = k.workItem(op, map, unit, nextItem);
                 prefetchKV(nx.bb, kvRow0(nx.kv), kvHead(nx.h));
               });
        g.loop(g.idx(config.qBeforeKV ? 1 : 0), it.len, issueStep);
        return;
      }
      // kv-prefetch-ahead=P: with the copies of step max(len - P, 0), so
      // the lines are recent in L2 when the walk ends (a whole walk of
      // Q/dO and dQ traffic may evict them otherwise); an empty walk
      // prefetches here. With q-before-kv step 0 went out above. The next
      // item's coordinates are evaluated here, outside the step loop (in it
      // the schedule arithmetic spilled on the producer's registers and
      // pushed 8 local ops into the MMA side at D = 64); past the unit's
      // last item they are unused.
      Value hasNext = g.lt(nextItem, k.numItems(op, map, unit));
      Kernel::WorkItem nx = k.workItem(op, map, unit, nextItem);
      Value nxBb = nx.bb, nxRow = kvRow0(nx.kv), nxHead = kvHead(nx.h);
      auto prefetchAt = [&](Value cond) {
        g.when(g.andI(cond, hasNext), [&] { prefetchKV(nxBb, nxRow, nxHead); });
      };
      Value at = g.sub(it.len, g.idx(ahead));
      Value first0 = g.idx(config.qBeforeKV ? 1 : 0);
      Value late = g.lt(first0, at); // else: now, before the loop
      prefetchAt(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                       first0, at));
      g.loop(first0, it.len, [&](Value step) {
        issueStep(step);
        prefetchAt(g.andI(late, arith::CmpIOp::create(
                                    b, loc, arith::CmpIPredicate::eq, step,
                                    at)));
      });
    });
  };
  if (config.warpProducer) {
    // Elected while the warp is converged (all 32 lanes enter here).
    w.issuePred = NVVM::ElectSyncOp::create(b, loc, b.getI1Type(), Value());
    walk();
    w.issuePred = Value();
    return;
  }
  Value lane = g.sub(tid, g.idx(32 * kProducerWarp));
  g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                               g.idx(0)),
         walk);
}

void WgmmaMain::byIssuer(function_ref<void()> issue) {
  if (w.issuePred)
    g.when(w.issuePred, issue);
  else
    issue();
}

void WgmmaMain::prefetchKV(Value bb, Value row0, Value head) {
  byIssuer([&] { // (the prefetch op has no predicate operand)
    for (int tensor : {1, 2}) // K, V
      w.tmaPrefetchTile(tensor, bb, row0, head);
  });
}
