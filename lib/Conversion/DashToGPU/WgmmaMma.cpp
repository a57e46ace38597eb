//===- WgmmaMma.cpp - The WGMMA kernel's MMA warpgroups -------------------===//
//
// Warpgroups 0 and 1: per item, the walk over its Q tiles (steps); per step
// S^T, dP^T, P, dS, dV, dK and the dQ partial's hand-off to its reducer
// (MainWgmma.cpp has the overview, docs/GPU.md the details).
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

void WgmmaMain::emitMma() {
  b.setInsertionPointToStart(&roles.getThenRegion().front());
  NVVM::SetMaxRegisterOp::create(
      b, loc, b.getI32IntegerAttr(config.mmaRegs),
      NVVM::SetMaxRegisterActionAttr::get(
          ctx, NVVM::SetMaxRegisterAction::increase));
  auto traceThread = [&](function_ref<void()> body) {
    if (traced)
      g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                   g.idx(0)),
             body);
  };
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
  // This warpgroup's part of a dQ tile (dqParts) has dqN columns.
  const int64_t dqN = dqParts().partCols();
  // early-st: S^T = K_w Q^T of the step in stage `sbuf` as one committed
  // group, issued only where `on32` (i32) is non-zero.
  const bool earlySt = config.earlySt;
  auto issueSIf = [&](Value sbuf, Value on32) {
    WgmmaBuilder::Desc kd = wgRowsDesc(th, L.k()), qdd = qDesc(kQ, sbuf);
    Value acc = w.freshAcc(bm);
    for (int64_t kk = 0; kk < D / 16; ++kk)
      acc = w.wgmmaIf(acc, w.descAt(kd, kStep(kk, kBn)),
                      w.descAt(qdd, kStep(kk, bm)), bm, false, false, on32,
                      kk == 0);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    return acc;
  };
  Value tidMma = tid;
  // stats-in-acc=2: S^T's accumulator starts at lse_log2 times -1 / c.
  Value negInvScaleLog2 =
      lseAcc ? arith::DivFOp::create(b, loc, g.f32(-1.0), scaleLog2).getResult()
             : Value();
  // wg-turns: warpgroup w passes the turn on barrier kBarTurn + (1 - w)
  // once its S^T is done and dP^T issued (1), or once its exp2 pass is done
  // (2).
  auto turnBarrier = [&](Value wgOf) {
    return arith::AddIOp::create(b, loc, w.c32(kBarTurn), w.i32of(wgOf));
  };
  // A turn: warpgroup 1 waits at a step's top for warpgroup 0's issue of
  // that step (turn barrier 1), warpgroup 0 at the step's end for warpgroup
  // 1's (turn barrier 0), so every arrival is consumed in its own step and
  // no warpgroup needs a first or last turn of its own. Both execute both
  // waits: the other warpgroup's is a sync of its own 128 threads (its
  // dq-kv-split barrier). No predicate or branch: a predicated barrier puts
  // every later wgmma on ptxas's divergent path and it serialises them all
  // (C7520), which is what sections 15 and 23 of bench/NOTES.md measured.
  auto turnWait = [&](Value wgOf, bool top) {
    Value isW0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       wgOf, g.idx(0));
    auto pick = [&](int64_t x, int64_t y) {
      return arith::SelectOp::create(b, loc, isW0, w.c32(x), w.c32(y))
          .getResult();
    };
    Value id = top ? pick(kBarDsWg, kBarTurn + 1) : pick(kBarTurn, kBarDsWg + 1);
    Value n = top ? pick(128, kMmaThreads) : pick(kMmaThreads, 128);
    w.ptx("barrier.sync $0, $1;", {id, n});
  };

  auto loadStep = [&](const Item &it, Value qt, Value buf) {
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
  };

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

    auto freeKV = [&] { w.mbarArrive(w.mbar(kEmptyKV)); };
    // The unit's step n's stage sb (= n % 2) has its tiles: FULL_Q phase
    // n / 2.
    auto waitFullQ = [&](Value n, Value sb) {
      w.mbarWait(w.mbar(kFullQ, sb), g.rem(g.div(n, g.idx(2)), g.idx(2)),
                 g.add(g.idx(kFullQ), sb), {unit, it.bb, it.h, n});
    };
    Value zD = w.zeroAcc(D);
    SmallVector<Value> walkInit{zD, zD};
    // early-st: the walk's first S^T goes out here, once its stage is in;
    // each step issues the next one's before its dQ hand-off and carries it
    // across the back edge complete.
    if (earlySt) {
      threadValues(w.opaque(tidMma));
      Value nonEmpty = g.lt(g.idx(0), it.len);
      Value buf0 = g.rem(first, g.idx(2));
      g.when(nonEmpty, [&] { waitFullQ(first, buf0); });
      NVVM::WgmmaFenceAlignedOp::create(b, loc);
      walkInit.push_back(
          issueSIf(buf0, arith::ExtUIOp::create(b, loc, w.i32, nonEmpty)));
      // Complete before the walk: an accumulator in flight into the loop
      // and read there by the exp2 pass makes ptxas serialise every wgmma
      // of the kernel (C7514).
      NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    }
    auto walk = scf::ForOp::create(
        b, loc, g.idx(0), it.len, g.idx(1), walkInit,
        [&](OpBuilder &nb, Location, Value step, ValueRange acc) {
          OpBuilder::InsertionGuard ig(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value accV = acc[0], accK = acc[1];
          Value sNext;
          tid = w.opaque(tidMma);
          w.base = w.opaque(window);
          threadValues(tid);
          // trace-timeline=2: thread 0 of each warpgroup stamps the phases
          // of the walk's step kTracePhaseStep.
          Value phaseWho =
              phases ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             g.rem(tid, g.idx(128)), g.idx(0))
                           .getResult()
                     : Value();
          auto phase = [&](int64_t p) {
            tracePhase(step, it.index, th.wg, phaseWho, p);
          };
          phase(kPhTop);
          // The walk's last step (built where used: a value made here would
          // live through the step on the 240-register side).
          auto isLastStep = [&] {
            return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         g.add(step, g.idx(1)), it.len)
                .getResult();
          };
          Value qt, buf;
          if (tma) {
            // Stage n % 2 of the unit's step n holds this step's tiles and
            // Q tile index once its FULL phase n / 2 completes. No barrier
            // here: S^T and dP^T may go to the tensor cores while the other
            // warpgroup still finishes the previous step (see the dS^T
            // stores).
            Value n = g.add(first, step);
            buf = g.rem(n, g.idx(2));
            // (early-st: the previous step, or the walk's start, waited.)
            if (!earlySt)
              waitFullQ(n, buf);
            traceThread(
                [&] { traceAtStep(step, 0, kTraceStep0Ready, it.index); });
            phase(kPhFull);
            qt = arith::IndexCastOp::create(
                b, loc, b.getIndexType(),
                LLVM::LoadOp::create(b, loc, w.i32, w.stepTileSlot(buf), 4));
          } else {
            qt = visit(it, step);
            buf = g.rem(step, g.idx(2));
            // This step's tiles have landed (every thread's copies), and
            // everyone is done with the previous step's buffers.
            NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
            w.fenceAsyncShared();
            w.barSync(kBarMma, kMmaThreads);
            Value next = g.add(step, g.idx(1));
            g.when(g.lt(next, it.len), [&] {
              loadStep(it, visit(it, next), g.sub(g.idx(1), buf));
            });
          }

          Value q0 = g.mul(qt, g.idx(bm));

          // This thread's lse_log2 and dPsum values (its bm/4 Q columns, in
          // pairs), read ahead of their use: lse_log2 before the products go
          // out, so its shared-memory latency hides under the wgmmas instead
          // of stalling the first FFMA of the exp2 pass (ncu: short-scoreboard
          // stalls there).
          Value lseBase = g.add(at(L.lse(0)), g.mul(buf, g.idx(bm * 4)));
          Value dpsBase = g.add(at(L.dps(0)), g.mul(buf, g.idx(bm * 4)));
          // The thread's pair of columns 8 j + fragCol, j = block.
          auto loadPair = [&](SmallVectorImpl<Value> &v, Value base,
                              Value block) {
            Value c = g.add(th.fragCol, g.mul(block, g.idx(8)));
            Value pair = LLVM::LoadOp::create(
                b, loc, VectorType::get({2}, w.f32),
                w.sh(g.add(base, g.mul(c, g.idx(4)))), 8);
            for (int64_t u = 0; u < 2; ++u)
              v.push_back(vector::ExtractOp::create(b, loc, pair, u));
          };
          // Pairs [from, to) of the thread's bm / 8 (all by default).
          auto loadStats = [&](Value base, int64_t from = 0, int64_t to = -1) {
            SmallVector<Value> v;
            for (int64_t j = from; j < (to < 0 ? bm / 8 : to); ++j)
              loadPair(v, base, g.idx(j));
            return v;
          };
          // With 128-row Q tiles (D = 64) the 32 values per vector would
          // spill: those are read where they are used.
          const bool statsAhead = bm == 64;
          const bool shfl = config.statsShfl; // stats-shfl, below
          const bool fold = config.dpsFold != DpsFold::Off; // at dP^T
          SmallVector<Value> lseV, dpsV, dpsTop;
          if (statsAhead && !lseAcc && !shfl)
            lseV = loadStats(lseBase);
          // dps-ahead past the wait's chunk: the first half of dPsum (the
          // pairs the dS math reads first, as soon as dP^T is in) with
          // lse_log2, before the products go out: the wgmma waits pin it
          // there (inside the pass ptxas sinks the loads back to the wait,
          // seen in SASS); all of it there spills 18-24 MMA-side values.
          if (statsAhead && !dpsAcc && config.dsInPassWait >= 0 &&
              config.dpsAhead > config.dsInPassWait)
            dpsTop = loadStats(dpsBase, 0, bm / 16);
          // stats-shfl: lane s holds the column pairs 8 j + fragCol(s) of
          // the blk = bm / 64 column blocks j = blk (s / 4) + i, i < blk
          // (one 8-byte load each); a thread's column 8 j + fragCol + u is
          // then register 2 (j % blk) + u of lane lane % 4 + 4 (j / blk),
          // the same register in every lane of one shuffle.
          const int64_t blk = bm / 64;
          if (shfl) {
            Value grp = g.div(th.lane, g.idx(4));
            auto held = [&](Value base) {
              SmallVector<Value> v;
              for (int64_t i = 0; i < blk; ++i)
                loadPair(v, base, g.add(g.mul(grp, g.idx(blk)), g.idx(i)));
              return v;
            };
            lseV = held(lseBase);
            dpsTop = held(dpsBase);
          }
          // Column colOf(r) of the accumulator is stats[2 (r / 4) + r % 2].
          auto statOf = [&](ArrayRef<Value> v, Value base, int64_t r) {
            if (shfl) {
              int64_t j = r / 4;
              Value src = w.i32of(g.add(g.rem(th.lane, g.idx(4)),
                                        g.idx(4 * (j / blk))));
              return gpu::ShuffleOp::create(b, loc, v[2 * (j % blk) + r % 2],
                                            src, w.c32(32),
                                            gpu::ShuffleMode::IDX)
                  .getShuffleResult();
            }
            if (!v.empty())
              return v[2 * (r / 4) + r % 2];
            return LLVM::LoadOp::create(
                       b, loc, w.f32,
                       w.sh(g.add(base, g.mul(colOf(th, r), g.idx(4)))))
                .getResult();
          };

          // S^T and dP^T (K = D).
          WgmmaBuilder::Desc qd = qDesc(kQ, buf), od = qDesc(kDO, buf);
          WgmmaBuilder::Desc kRowsDesc = wgRowsDesc(th, L.k()),
                             vRowsDesc = wgRowsDesc(th, L.v());
          // Two groups: P = exp2(...) of S^T runs while dP^T is on the
          // tensor cores.
          // One committed group of A_w B^T over K = D (K-major A and B:
          // k-step kk is 32 B into panel kk / 4).
          // init: the accumulator's start, or none; negate: subtract the
          // products.
          // last: one more k-step of the group (dps-fold).
          auto rowsTimesQT = [&](WgmmaBuilder::Desc aDesc,
                                 WgmmaBuilder::Desc bDesc, Value init,
                                 bool negate,
                                 function_ref<Value(Value)> last = nullptr) {
            Value acc = init ? init : w.freshAcc(bm);
            for (int64_t kk = 0; kk < D / 16; ++kk) {
              acc = w.wgmma(acc, w.descAt(aDesc, kStep(kk, kBn)),
                            w.descAt(bDesc, kStep(kk, bm)), bm,
                            false, false, kk == 0 && !init, negate);
            }
            if (last)
              acc = last(acc);
            NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
            return acc;
          };
          // wg-turns: wait for this warpgroup's turn, issue, pass the turn:
          // the tensor cores run one warpgroup's S^T/dP^T after the
          // other's, so each one's exp2 pass overlaps the other's products.
          if (turns)
            turnWait(th.wg, /*top=*/true);
          // stats-in-acc: the accumulators start at this thread's values
          // (its Q columns, read in pairs: register r holds column
          // colOf(r)). S^T's (level 2) before the fence. dP^T's (level 1)
          // after S^T is issued, so its loads run under S^T; ptxas then
          // waits for S^T to complete before issuing dP^T (the writes of an
          // accumulator inside the wgmma sequence), which measured better
          // than writing it before the fence too: the loads there delay S^T
          // (bench/NOTES.md section 15).
          auto accStart = [&](Value base, Value times) -> Value {
            SmallVector<Value> v = loadStats(base);
            Value acc = LLVM::PoisonOp::create(b, loc, w.accType(bm));
            for (int64_t r = 0; r < bm / 2; ++r) {
              Value x = v[2 * (r / 4) + r % 2];
              acc = LLVM::InsertValueOp::create(
                  b, loc, acc, times ? g.mul(x, times) : x, r);
            }
            return acc;
          };
          Value lseInit = lseAcc ? accStart(lseBase, negInvScaleLog2) : Value();
          // (Level 2 implies level 1.)
          Value dpsInit = lseAcc ? accStart(dpsBase, Value()) : Value();
          NVVM::WgmmaFenceAlignedOp::create(b, loc);
          Value S = earlySt ? acc[2] : rowsTimesQT(kRowsDesc, qd, lseInit, false);
          if (dpsAcc && !dpsInit)
            dpsInit = accStart(dpsBase, Value());
          // dps-fold: dP^T's extra k-step, in its group, subtracts dPsum:
          // A (onesA) is -1 where B holds dPsum's hi and lo for the stage's
          // Q rows, and zero against every other k-row (SmemLayout has both
          // forms: 1, atoms one LBO apart, SBO 0; 2, the rows as copied,
          // unswizzled, SBO 16 along Q, the lo row one LBO on). (With A in
          // registers ptxas ends the group before it and waits for all of
          // dP^T at once.)
          auto foldDps = [&](Value acc) {
            Value stage = dpsStage(buf);
            Value ones = at(L.onesA());
            Value bDesc =
                config.dpsFold == DpsFold::Rows
                    ? w.descAt(w.desc(stage, /*LBO: the lo row*/ 2 * bm), 0,
                               /*sboBytes=*/16, /*swizzle128=*/false)
                    : w.descAt(w.desc(stage, L.kDpsAtomBytes), 0,
                               /*sboBytes=*/0);
            return w.wgmma(
                acc, w.descAt(w.desc(ones, /*LBO: K core matrices*/ 128), 0,
                              /*sboBytes=*/0, /*swizzle128=*/false),
                bDesc, bm, /*transA=*/false, /*transB=*/true);
          };
          Value dP = rowsTimesQT(vRowsDesc, od, dpsInit, dpsAcc,
                                 fold ? function_ref<Value(Value)>(foldDps)
                                      : nullptr);
          phase(kPhIssued);
          NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
          phase(kPhSDone);
          auto passTurn = [&] {
            w.barArrive(turnBarrier(g.sub(g.idx(1), th.wg)), kMmaThreads);
          };
          if (turns == 1)
            passTurn();

          // ds-stmatrix=0: dS^T as bf16 pairs in shared memory (swizzled
          // rows: row % 8 of every fragment row is lane / 4); by default
          // the same bytes go by stmatrix (storeDsStmatrix).
          Value sw8 = g.div(th.lane, g.idx(4));
          auto v2 = VectorType::get({2}, w.bf16);
          auto storePair = [&](Value tile, int64_t r, Value x, Value y) {
            // Column (Q row) 8(r/4) + ..: panel r/32, chunk (r/4) % 8.
            Value kvL = g.add(th.wgRows, rowOf(th, r));
            Value chunk =
                arith::XOrIOp::create(b, loc, g.idx((r / 4) % 8), sw8);
            Value byteOff = g.add(
                g.add(g.idx((r / 32) * kBn * 128), g.mul(kvL, g.idx(128))),
                g.add(g.mul(chunk, g.idx(16)),
                      g.mul(g.rem(th.lane, g.idx(4)), g.idx(4))));
            Value pair = vector::FromElementsOp::create(
                b, loc, v2,
                ValueRange{arith::TruncFOp::create(b, loc, w.bf16, x),
                           arith::TruncFOp::create(b, loc, w.bf16, y)});
            LLVM::StoreOp::create(b, loc, pair, w.sh(g.add(tile, byteOff)),
                                  4);
          };
          struct {
            Value q0, kv0, sq, sk, off;
          } m{w.i32of(q0), w.i32of(g.add(kv0, th.wgRows)), w.i32of(Sq),
              w.i32of(Sk), w.i32of(off)};
          // exp2-chunks: each chunk's FFMAs read the scale through the
          // previous chunk's last exp2, so ptxas cannot hoist them all ahead
          // of the pass's MUFU.EX2s (it still bunches the MUFUs: the SASS of
          // the unmasked D = 64 pass ends in ~40 back to back either way).
          // Measured, not derived: 8 chunks +1.2..+2.4% at D = 64
          // (bench/NOTES.md section 22).
          const int64_t perChunk = bm / 2 / config.exp2Chunks;
          // dS of accumulator pair (r, r + 1) from P's f32 values, stored as
          // a bf16 pair (unless by stmatrix) and returned packed, the A of
          // dK. stats-in-acc: the accumulator is dPsum - dP^T; dps-fold: dP^T -
          // dPsum.
          auto dsPair = [&](int64_t r, Value p0, Value p1) {
            Value ds[2];
            Value p[2] = {p0, p1};
            for (int64_t u = 0; u < 2; ++u)
              ds[u] = dpsAcc ? g.mul(p[u], arith::NegFOp::create(
                                               b, loc, w.elem(dP, r + u)))
                       : fold ? g.mul(p[u], w.elem(dP, r + u))
                             : g.mul(p[u], g.sub(w.elem(dP, r + u),
                                                 statOf(dpsV, dpsBase, r + u)));
            if (!config.dsStmatrix)
              storePair(dsTile(buf), r, ds[0], ds[1]);
            return w.packBf16(ds[0], ds[1]);
          };
          // dPsum (read ahead at 64-row tiles, in the dS pass's own block:
          // earlier it would outlive the registers; dps-ahead=N: N chunks
          // of the pass before the wait) and the wait for S^T and dP^T.
          auto waitDp = [&](int64_t pending) {
            if (statsAhead && !dpsAcc && !shfl && !fold &&
                dpsV.size() < size_t(bm / 4))
              dpsV.append(loadStats(dpsBase, dpsV.size() / 2));
            NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
          };
          // ds-in-pass=C: the wait for dP^T after chunk C of the pass, then
          // each pair's dS as soon as its P is known, in the branch's block.
          const int64_t dsWaitAfter = config.dsInPassWait;
          const bool dsFused = dsWaitAfter >= 0;
          const int64_t dpsAt = dsFused && config.dpsAhead > 0 &&
                                        config.dpsAhead <= dsWaitAfter
                                    ? dsWaitAfter - config.dpsAhead
                                    : -1;
          auto pPass = [&](bool masked) {
            SmallVector<Value> P, fusedP, fusedDs;
            dpsV = dpsTop; // else each branch's block reads its own
            if (dpsAt == 0)
              dpsV = loadStats(dpsBase);
            bool waited = dsWaitAfter == 0;
            if (waited)
              waitDp(0);
            int64_t nextPair = 0;
            Value c = scaleLog2;
            for (int64_t r = 0; r < bm / 2; ++r) {
              Value qc = colOf(th, r);
              if (r && r % perChunk == 0)
                c = w.after(scaleLog2, P.back());
              if (r && dpsAt > 0 && r == dpsAt * perChunk)
                dpsV = loadStats(dpsBase);
              // One FFMA: S * scale * log2(e) - lse_log2 (stats-in-acc=2:
              // the accumulator is S - lse_log2 / c, one FMUL).
              Value x = lseAcc ? g.mul(w.elem(S, r), c)
                               : LLVM::FMAOp::create(
                                     b, loc, w.elem(S, r), c,
                                     arith::NegFOp::create(
                                         b, loc, statOf(lseV, lseBase, r)))
                                     .getResult();
              Value p = config.ablateExp2 ? x : k.exp2(x);
              if (masked) { // 32-bit: positions are below S < 2^31
                Value gq = g.add(m.q0, w.i32of(qc));
                Value gkv = g.add(m.kv0, w.i32of(rowOf(th, r)));
                Value valid = g.andI(g.lt(gq, m.sq), g.lt(gkv, m.sk));
                if (causal)
                  valid = g.andI(valid, g.causalVisible(gkv, gq, m.off));
                p = arith::SelectOp::create(b, loc, valid, p, g.f32(0.0));
              }
              P.push_back(p);
              if (!dsFused)
                continue;
              if (!waited && (r + 1) == dsWaitAfter * perChunk) {
                waitDp(0);
                waited = true;
              }
              for (; waited && nextPair + 1 <= r; nextPair += 2) {
                fusedP.push_back(w.packBf16(P[nextPair], P[nextPair + 1]));
                fusedDs.push_back(
                    dsPair(nextPair, P[nextPair], P[nextPair + 1]));
              }
            }
            if (!dsFused) {
              scf::YieldOp::create(b, loc, P);
              return;
            }
            if (config.dsStmatrix)
              storeDsStmatrix(th, buf, fusedDs);
            fusedP.append(fusedDs);
            scf::YieldOp::create(b, loc, fusedP);
          };
          // Only tiles that cross the diagonal or the sequence ends pay for
          // the per-element mask.
          Value needMask = g.orI(g.lt(Sq, g.add(q0, g.idx(bm))),
                                 g.lt(Sk, g.add(kv0, g.idx(kBn))));
          if (causal) // some KV row of the tile lies past some query's end
            needMask = g.orI(needMask, g.lt(g.add(q0, off),
                                            g.add(kv0, g.idx(kBn - 1))));
          auto ifMask = scf::IfOp::create(
              b, loc,
              SmallVector<Type>(bm / 2, dsFused ? w.i32 : w.f32),
              needMask, true);
          {
            OpBuilder::InsertionGuard mg(b);
            b.setInsertionPointToStart(&ifMask.getThenRegion().front());
            pPass(true);
            b.setInsertionPointToStart(&ifMask.getElseRegion().front());
            pPass(false);
          }
          // dV += P^T dO (A in registers: the S^T accumulator fragment is
          // the A fragment, k-slice kk being registers 8kk .. 8kk + 7; B =
          // dO, N-major). By default it follows the dS^T stores and their
          // proxy fence (with 128-row tiles, D = 64, P^T, its bf16 copy and
          // dP^T would not fit in the registers together; with 64-row tiles,
          // where it went out inside the exp2 pass, this measured +1..1.5%:
          // bench/NOTES.md section 24). early-dv=1: as soon as P^T is known,
          // behind dP^T; at 128-row tiles the dS pass then reads P back from
          // its bf16 pairs (the registers dV reads), so P's f32 values die at
          // the packing: 32 + 64 + 64 live values instead of 64 + 32 + 64 +
          // 64.
          const bool earlyDv = config.earlyDv;
          const bool pFromBf16 = earlyDv && bm == 128;
          SmallVector<Value> pA, dsA;
          auto issueDv = [&] {
            NVVM::WgmmaFenceAlignedOp::create(b, loc);
            od = qDesc(kDO, buf);
            for (int64_t kk = 0; kk < bm / 16; ++kk) {
              ArrayRef<Value> aP(pA.data() + 4 * kk, 4);
              accV = w.wgmmaRS(accV, aP, w.descAt(od, kk * 16 * 128), D);
            }
            NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
          };
          for (int64_t r = 0; r < bm / 2; r += 2)
            pA.push_back(dsFused ? ifMask.getResult(r / 2)
                                 : w.packBf16(ifMask.getResult(r),
                                              ifMask.getResult(r + 1)));
          if (dsFused)
            for (int64_t r = 0; r < bm / 2; r += 2)
              dsA.push_back(ifMask.getResult(bm / 4 + r / 2));
          if (earlyDv)
            issueDv();
          phase(kPhPDone);
          // wg-turns=2: the other warpgroup's S^T/dP^T wait for this exp2
          // pass, so the two passes never share the SFU.
          if (turns == 2)
            passTurn();
          // S^T, dP^T done (dV may still run).
          if (!dsFused)
            waitDp(earlyDv ? 1 : 0);
          phase(kPhDpDone);
          // TMA kernels: the other warpgroup's dQ of the previous step reads
          // all of dS^T; it has completed once that warpgroup reaches this
          // barrier (cp.async kernels pass the same point at the step top).
          // With two dS^T buffers this step's was last read by step n - 2's
          // dQ, which both warpgroups finished before step n - 1's barrier
          // ahead of dQ: no barrier here.
          if (tma && dsBufs == 1 && !split)
            w.barSync(kBarMma, kMmaThreads);
          // dS^T goes to shared memory for dQ and stays in registers as the
          // A of dK += dS^T Q.
          // P of register r: its f32 value, or (pFromBf16) the bf16 half of
          // its packed pair widened back (a shift or a mask: bf16 is the top
          // half of an f32).
          auto pOf = [&](int64_t r) -> Value {
            if (!pFromBf16)
              return ifMask.getResult(r);
            Value pair = pA[r / 2];
            Value bits =
                r % 2 == 0
                    ? arith::ShLIOp::create(b, loc, pair, w.c32(16)).getResult()
                    : arith::AndIOp::create(
                          b, loc, pair,
                          arith::ConstantIntOp::create(b, loc, w.i32,
                                                       0xFFFF0000LL))
                          .getResult();
            return arith::BitcastOp::create(b, loc, w.f32, bits);
          };
          if (!dsFused) {
            for (int64_t r = 0; r < bm / 2; r += 2)
              dsA.push_back(dsPair(r, pOf(r), pOf(r + 1)));
            if (config.dsStmatrix)
              storeDsStmatrix(th, buf, dsA);
          }
          // dv-before-fence: dV ahead of the fence, FlashAttention-3's order.
          if (!earlyDv && config.dvBeforeFence)
            issueDv();
          w.fenceAsyncShared();
          phase(kPhDsStored);
          if (!earlyDv && !config.dvBeforeFence)
            issueDv();
          phase(kPhDvIssued);

          // dQ = dS K (K = 128) once both warpgroups' dS^T rows are in
          // shared memory, then dK += dS^T Q (K = 64 Q rows; A in registers,
          // B N-major). Tensor-core order: dV, dQ, dK. dQ is waited for
          // alone (wait_group 1), so its hand-off to the reducer (staging
          // store, barriers) runs while dK is still on the tensor cores.
          // dq-kv-split: only this warpgroup's own dS^T rows, synced among
          // its 128 threads.
          if (split)
            w.barSync(arith::AddIOp::create(b, loc, w.c32(kBarDsWg),
                                            w.i32of(th.wg)),
                      128);
          else if (config.dkdvBulk) // with the storer warp (kBarDsStep)
            w.barSync(kBarDsStep, kDsStepThreadsDkdvBulk);
          else
            w.barSync(kBarMma, kMmaThreads);
          phase(kPhDsBarrier);
          // kv-via-ds: past this barrier both warpgroups' dQ of the step
          // before, the last reader of the other dS^T buffer, are complete:
          // at the walk's last step the producer may load the next item's
          // K/V there.
          if (config.kvViaDs)
            g.when(isLastStep(), [&] { w.mbarArrive(w.mbar(kEmptyDs)); });
          qd = qDesc(kQ, buf);
          NVVM::WgmmaFenceAlignedOp::create(b, loc);
          // The dQ accumulators: this warpgroup's rows or columns of the
          // tile over all 128 KV rows, or (dq-kv-split) both 64-row Q halves
          // of the tile over its own 64 KV rows (M-major A: panel i of
          // dS^T from this warpgroup's rows; B: its K rows, N-major). The
          // same eight wgmmas either way.
          SmallVector<Value> dqs;
          if (split) {
            WgmmaBuilder::Desc kB = w.desc(
                g.add(at(L.k()), g.mul(th.wgRows, g.idx(128))), kBn * 128);
            for (int64_t half = 0; half < 2; ++half) {
              WgmmaBuilder::Desc dsM = w.desc(
                  g.add(dsTile(buf), g.add(g.idx(half * kBn * 128),
                                           g.mul(th.wgRows, g.idx(128)))),
                  kBn * 128);
              Value acc = w.freshAcc(D);
              for (int64_t kk = 0; kk < 64 / 16; ++kk)
                acc = w.wgmma(acc, w.descAt(dsM, kk * 16 * 128),
                              w.descAt(kB, kk * 16 * 128), D, true, true,
                              kk == 0);
              dqs.push_back(acc);
            }
          } else {
            Value dq = w.freshAcc(dqN);
            WgmmaBuilder::Desc dsMDesc = dqADesc(th, buf), kB = dqBDesc(th);
            // ds-trans: dS K-major, k-step kk 32 B into panel kk / 4.
            for (int64_t kk = 0; kk < kBn / 16; ++kk)
              dq = w.wgmma(dq,
                           w.descAt(dsMDesc, config.dsTrans
                                                 ? kStep(kk, bm)
                                                 : kk * 16 * 128),
                           w.descAt(kB, kk * 16 * 128), dqN, !config.dsTrans,
                           true, kk == 0);
            dqs.push_back(dq);
          }
          NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
          for (int64_t kk = 0; kk < bm / 16; ++kk) {
            ArrayRef<Value> aS(dsA.data() + 4 * kk, 4);
            accK = w.wgmmaRS(accK, aS, w.descAt(qd, kk * 16 * 128), D);
          }
          NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
          phase(kPhDqDkIssued);
          NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
          phase(kPhDqDone);
          // early-st: the next step's S^T, behind this step's dK, once its
          // stage is in; it runs under the hand-off below. At the walk's last
          // step it goes out all the same, on whatever stage (n + 1) % 2
          // holds, and is never read: issued under a predicate, ptxas spilled
          // ~120 MMA-side values and serialised the wgmmas (C7512).
          if (earlySt) {
            Value next = g.add(step, g.idx(1));
            Value hasNext = g.lt(next, it.len);
            Value nbuf = g.sub(g.idx(1), buf);
            g.when(hasNext, [&] { waitFullQ(g.add(first, next), nbuf); });
            NVVM::WgmmaFenceAlignedOp::create(b, loc);
            sNext = issueSIf(nbuf, w.c32(1));
          }
          // Early K/V release: dQ was the item's last read of K and V (dK
          // reads Q and registers), so the producer may load the next item's
          // while this one hands over its last dQ and writes dK/dV.
          if (earlyKV)
            g.when(isLastStep(), freeKV);

          emitDqHandOff(th, first, step, qt, buf, dqs, phase);

          // dK done before the step ends: its B is this step's Q buffer,
          // which the producer refills once every MMA thread has arrived on
          // the stage's EMPTY mbarrier below (cp.async kernels: the next
          // step's prefetch after the barrier at its top), and the next
          // step's wait_group 1 assumes no older group is pending. Keep this
          // wait at the end of the step (measured: leaving dK in flight
          // under the next step's S^T/dP^T releases the stage later and
          // costs 6-17%, bench/NOTES.md section 12).
          // (early-st: the next step's S^T too, so it crosses the back edge
          // complete: in flight there, ptxas serialises every wgmma, C7514.)
          NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
          if (tma) // this thread is done with the stage
            w.mbarArrive(w.mbar(kEmptyQ, buf));
          if (turns)
            turnWait(th.wg, /*top=*/false);
          phase(kPhEnd);
          for (int64_t s0 = 0; s0 < 2; ++s0)
            traceThread([&] {
              traceAtStep(step, s0, kTraceStep0End + s0, it.index);
            });
          SmallVector<Value> carried{accV, accK};
          if (earlySt)
            carried.push_back(sNext);
          scf::YieldOp::create(b, loc, carried);
          tid = tidMma;
          w.base = window;
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
