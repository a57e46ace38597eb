//===- WgmmaMma.cpp - The WGMMA kernel's MMA warpgroups -------------------===//
//
// Warpgroups 0 and 1: per item, the walk over its Q tiles (steps; each
// step's S^T, dP^T, P, dS, dV, dK and dQ hand-off in WgmmaMmaStep.cpp),
// then the item's dK/dV epilogue; after the last item the final waits and
// (dq-in-main) the dQ conversion (MainWgmma.cpp has the overview,
// docs/GPU.md the details).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

WgmmaMain::MmaThread WgmmaMain::mmaThread(Value t) {
  MmaThread m;
  // uniform-wg: the role branch's lane-0 broadcast, through an opaque move
  // per use like the thread id (WgmmaMma's walk), so ptxas keeps everything
  // built from it (descriptors) in uniform registers.
  m.wg = config.uniformWg ? w.opaque(wgUniform) : g.div(t, g.idx(128)); // 0|1
  m.wi = g.rem(g.div(t, g.idx(32)), g.idx(4)); // warp in group
  m.lane = g.rem(t, g.idx(32));
  m.fragRow = g.add(g.mul(m.wi, g.idx(16)), g.div(m.lane, g.idx(4)));
  m.fragCol = g.mul(g.rem(m.lane, g.idx(4)), g.idx(2));
  m.wgRows = g.mul(m.wg, g.idx(64)); // this warpgroup's KV rows
  return m;
}

Value WgmmaMain::rowOf(const MmaThread &t, int64_t r) {
  return g.add(t.fragRow, g.idx(8 * ((r / 2) % 2)));
}

Value WgmmaMain::colOf(const MmaThread &t, int64_t r) {
  return g.add(t.fragCol, g.idx(8 * (r / 4) + r % 2));
}

void WgmmaMain::traceThread(function_ref<void()> body) {
  if (traced)
    g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                 g.idx(0)),
           body);
}

Value WgmmaMain::issueSIf(const MmaThread &t, Value sbuf, Value on32) {
  WgmmaBuilder::Desc kd = wgRowsDesc(t, L.k()), qdd = qDesc(kQ, sbuf);
  Value acc = w.freshAcc(bm);
  for (int64_t kk = 0; kk < D / 16; ++kk)
    acc = w.wgmmaIf(acc, w.descAt(kd, kStep(kk, kBn)),
                    w.descAt(qdd, kStep(kk, bm)), bm, false, false, on32,
                    kk == 0);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

Value WgmmaMain::turnBarrier(Value wgOf) {
  return arith::AddIOp::create(b, loc, w.c32(kBarTurn), w.i32of(wgOf));
}

void WgmmaMain::turnWait(Value wgOf, bool top) {
  Value isW0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     wgOf, g.idx(0));
  auto pick = [&](int64_t x, int64_t y) {
    return arith::SelectOp::create(b, loc, isW0, w.c32(x), w.c32(y))
        .getResult();
  };
  Value id = top ? pick(kBarDsWg, kBarTurn + 1) : pick(kBarTurn, kBarDsWg + 1);
  Value n = top ? pick(128, kMmaThreads) : pick(kMmaThreads, 128);
  w.ptx("barrier.sync $0, $1;", {id, n});
}

void WgmmaMain::loadStep(const Item &it, Value qt, Value buf) {
  Value q0 = g.mul(qt, g.idx(bm));
  Value qOff = g.mul(buf, g.idx(L.qBytes()));
  w.loadTile(kQ, g.add(at(L.q(0)), qOff), it.bb, q0, it.h, Sq, bm, tid);
  w.loadTile(kDO, g.add(at(L.dO(0)), qOff), it.bb, q0, it.h, Sq, bm, tid);
  Value vOff = g.mul(buf, g.idx(bm * 4));
  g.when(g.lt(tid, g.idx(bm)), [&] {
    w.loadRowVector(kLse2, g.add(at(L.lse(0)), vOff), it.bb, it.h, q0, Sq,
                    tid);
  });
  g.when(g.andI(g.lt(g.idx(bm - 1), tid), g.lt(tid, g.idx(2 * bm))), [&] {
    w.loadRowVector(kDPsum, g.add(at(L.dps(0)), vOff), it.bb, it.h, q0, Sq,
                    g.sub(tid, g.idx(bm)));
  });
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

void WgmmaMain::waitFullQ(const Item &it, Value n, Value sb) {
  w.mbarWait(w.mbar(kFullQ, sb), g.rem(g.div(n, g.idx(2)), g.idx(2)),
             g.add(g.idx(kFullQ), sb), {unit, it.bb, it.h, n});
}

void WgmmaMain::freeKV() { w.mbarArrive(w.mbar(kEmptyKV)); }

void WgmmaMain::emitMma() {
  b.setInsertionPointToStart(&roles.getThenRegion().front());
  NVVM::SetMaxRegisterOp::create(
      b, loc, b.getI32IntegerAttr(config.mmaRegs),
      NVVM::SetMaxRegisterActionAttr::get(
          ctx, NVVM::SetMaxRegisterAction::increase));
  traceThread([&] {
    trace(kTraceStartNs, nanoseconds());
    trace(kTraceStartClock, clock());
  });
  // Per-thread values (fragment coordinates, swizzled addresses,
  // descriptors) are rebuilt inside every step from an opaque copy of the
  // thread id and of the window address: otherwise LLVM hoists the dozens of
  // 64-bit addresses out of the walk and the accumulators spill.
  MmaThread th;
  auto threadValues = [&](Value t) { th = mmaThread(t); };
  const bool earlySt = config.earlySt;
  Value tidMma = tid;
  // stats-in-acc=2: S^T's accumulator starts at lse_log2 times -1 / c.
  Value negInvScaleLog2 =
      lseAcc ? arith::DivFOp::create(b, loc, g.f32(-1.0), scaleLog2).getResult()
             : Value();

  Value unitSteps = forItems([&](const Item &it, Value first) {
    Value hkv = kvHead(it.h), kv0 = kvRow0(it.kv);
    if (tma) { // the producer's K and V for this item
      w.mbarWait(w.mbar(kFullKV), g.rem(it.index, g.idx(2)), g.idx(kFullKV),
                 {unit, it.bb, it.h, first});
      traceThread([&] {
        trace(kTraceWalkStart, clock(), it.index);
        trace(kTraceLen, it.len, it.index);
      });
    } else {
      // Copies of an empty walk are still in flight; the previous item's
      // products are done with K, V and the Q/dO buffers.
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
      w.barSync(kBarMma, kMmaThreads);
      w.loadTile(kK, at(L.k()), it.bb, kv0, hkv, Sk, kBn, tid);
      w.loadTile(kV, at(L.v()), it.bb, kv0, hkv, Sk, kBn, tid);
      g.when(g.lt(g.idx(0), it.len),
             [&] { loadStep(it, visit(it, g.idx(0)), g.idx(0)); });
    }
    Value zD = w.zeroAcc(D);
    SmallVector<Value> walkInit{zD, zD};
    // early-st: the walk's first S^T goes out here, once its stage is in;
    // each step issues the next one's before its dQ hand-off and carries it
    // across the back edge complete.
    if (earlySt) {
      threadValues(w.opaque(tidMma));
      Value nonEmpty = g.lt(g.idx(0), it.len);
      Value buf0 = g.rem(first, g.idx(2));
      g.when(nonEmpty, [&] { waitFullQ(it, first, buf0); });
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      walkInit.push_back(issueSIf(
          th, buf0, arith::ExtUIOp::create(b, loc, w.i32, nonEmpty)));
      // Complete before the walk: an accumulator in flight into the loop
      // and read there by the exp2 pass makes ptxas serialise every wgmma
      // of the kernel (C7514).
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    }
    const MmaWalk walkOf{it, first, kv0, tidMma, negInvScaleLog2, th};
    auto walk = scf::ForOp::create(
        b, loc, g.idx(0), it.len, g.idx(1), walkInit,
        [&](OpBuilder &nb, Location, Value step, ValueRange acc) {
          OpBuilder::InsertionGuard ig(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          emitMmaStep(walkOf, step, acc);
        });
    traceThread([&] { trace(kTraceWalkEnd, clock(), it.index); });
    // Done with K and V: the producer may load the next item's (early
    // release: the walk's last step did, unless it was empty).
    if (tma && earlyKV)
      g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, it.len,
                                   g.idx(0)),
             [&] {
               freeKV();
               // (kv-via-ds: an empty walk frees the dS^T buffer here.)
               if (config.kvViaDs)
                 w.mbarArrive(w.mbar(kEmptyDs));
             });
    else if (tma)
      freeKV();
    // The epilogue's fragment coordinates. Deterministic kernels, and
    // non-deterministic ones with the producer on its warp (the TMA ones),
    // rebuild them from an opaque thread id: else LLVM hoists the quad
    // transpose's lane values out of the item loop and ptxas spills in the
    // walk (D = 128 det: 19 -> 2 MMA-side local ops, +2..6%; the
    // non-deterministic step form: 12-18 -> 0 at D = 64, 4 -> 0 at D = 128,
    // where it is +3..+4%). The other non-deterministic kernels measured
    // 4-7% faster at D = 128 causal without it (ptxas schedules the walk
    // differently; bench/NOTES.md sections 18, 38).
    threadValues(det || config.warpProducer ? w.opaque(tidMma) : tidMma);

    emitDkdvEpilogue(it, first, kv0, th, walk.getResult(0), walk.getResult(1));
    traceThread([&] { trace(kTraceEpilogueEnd, clock(), it.index); });
  });
  // Matches the reducer's last EMPTY arrives (it also orders our exit after
  // the last hand-offs).
  // dq-kv-split: warpgroup 0 alone waits for the buffers.
  auto finalWaits = [&] {
    for (int64_t j = 0; j < dqBufs; ++j)
      w.barSync(bufBarrier(kBarEmpty, g.idx(j), g.div(tidMma, g.idx(128))),
                kHandOffThreads);
  };
  if (split)
    g.when(g.lt(tidMma, g.idx(128)), finalWaits);
  else
    finalWaits();
  if (config.dqInMain)
    emitDqConvert(tidMma);
  traceThread([&] {
    trace(kTraceEndNs, nanoseconds());
    trace(kTraceEndClock, clock());
    trace(kTraceSteps, unitSteps);
    trace(kTraceLevel, g.idx(phases ? 2 : 1));
  });
  (void)ctx;

}
