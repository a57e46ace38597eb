//===- WgmmaMmaStep.cpp - One step of an MMA warpgroup's walk -------------===//
//
// A step of the walk over an item's Q tiles (WgmmaMma.cpp has the walk),
// built phase by phase: wait for the stage; the statistics; S^T and dP^T;
// the exp2 pass with dS fused into it; dS^T to shared memory and dV; then,
// once both warpgroups' dS^T are in, dQ and dK; the dQ partial's hand-off
// and the stage's release.
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

namespace {

/// One step of an MMA warpgroup's walk: what its phases share (the
/// walk's values, then the step's, in the order the phases set them) and
/// the helpers they call; each phase builds its ops in the order the
/// single function it came from did.
struct MmaStep {
  MmaStep(WgmmaMain &mw, const WgmmaMain::MmaWalk &walk, Value step,
          ValueRange acc)
      : mw(mw), b(mw.b), loc(mw.loc), w(mw.w), g(mw.g), config(mw.config),
        L(mw.L), bm(mw.bm), D(mw.D), it(walk.it), first(walk.first),
        kv0(walk.kv0), tidMma(walk.tidMma),
        negInvScaleLog2(walk.negInvScaleLog2), th(walk.th), step(step),
        acc(acc), dqN(mw.dqParts().partCols()), earlySt(mw.config.earlySt),
        statsAhead(bm == 64), shfl(config.statsShfl),
        fold(config.dpsFold), blk(bm / 64),
        perChunk(bm / 2 / config.exp2Chunks), dsWaitAfter(config.dsInPassWait),
        dsFused(dsWaitAfter >= 0),
        dpsAt(dsFused && config.dpsAhead > 0 && config.dpsAhead <= dsWaitAfter
                  ? dsWaitAfter - config.dpsAhead
                  : -1),
        earlyDv(config.earlyDv), pFromBf16(earlyDv && bm == 128),
        v2(VectorType::get({2}, w.bf16)) {}

  /// The step, phase by phase, in the order the ops are built.
  void emit() {
    top();
    readStats();
    issueProducts();
    exp2Pass();
    dsAndDv();
    dqAndDk();
    end();
  }
  /// Wait for the stage (TMA) or the copies (cp.async); the Q tile.
  void top();
  /// This thread's lse_log2 and dPsum registers, where read ahead.
  void readStats();
  /// S^T and dP^T issued; S^T waited for.
  void issueProducts();
  /// P = exp2(...) and (ds-in-pass) dS, in the mask branch.
  void exp2Pass();
  /// dS^T to shared memory; dV issued.
  void dsAndDv();
  /// dQ and dK issued (both warpgroups' dS^T in); dQ waited for.
  void dqAndDk();
  /// The dQ hand-off, dK waited for, the stage released; the yield.
  void end();

  /// trace-timeline=2: phase `p` of the walk's step kTracePhaseStep,
  /// stamped by thread 0 of each warpgroup.
  void phase(int64_t p);
  /// The walk's last step (built where used: a value made here would
  /// live through the step on the 240-register side).
  Value isLastStep();
  /// The thread's pair of columns 8 j + fragCol, j = block.
  void loadPair(SmallVectorImpl<Value> &v, Value base, Value block);
  /// Pairs [from, to) of the thread's bm / 8 (all by default).
  SmallVector<Value> loadStats(Value base, int64_t from = 0, int64_t to = -1);
  /// Column colOf(r) of the accumulator is stats[2 (r / 4) + r % 2].
  Value statOf(ArrayRef<Value> v, Value base, int64_t r);
  /// One committed group of A_w B^T over K = D (K-major A and B:
  /// k-step kk is 32 B into panel kk / 4).
  /// init: the accumulator's start, or none; negate: subtract the
  /// products.
  /// last: one more k-step of the group (dps-fold).
  Value rowsTimesQT(WgmmaBuilder::Desc aDesc, WgmmaBuilder::Desc bDesc,
                    Value init, bool negate,
                    function_ref<Value(Value)> last = nullptr);
  /// stats-in-acc: the accumulators start at this thread's values
  /// (its Q columns, read in pairs: register r holds column
  /// colOf(r)). S^T's (level 2) before the fence. dP^T's (level 1)
  /// after S^T is issued, so its loads run under S^T; ptxas then
  /// waits for S^T to complete before issuing dP^T (the writes of an
  /// accumulator inside the wgmma sequence), which measured better
  /// than writing it before the fence too: the loads there delay S^T
  /// (bench/NOTES.md section 15).
  Value accStart(Value base, Value times);
  /// dps-fold: dP^T's extra k-step, in its group, subtracts dPsum:
  /// A (onesA) is -1 where B holds dPsum's hi and lo for the stage's
  /// Q rows, and zero against every other k-row (SmemLayout: the rows as
  /// copied, unswizzled, SBO 16 along Q, the lo row one LBO on). (With A
  /// in registers ptxas ends the group before it and waits for all of
  /// dP^T at once.)
  Value foldDps(Value acc);
  /// wg-turns: the turn to the other warpgroup.
  void passTurn();
  /// ds-stmatrix=0: dS^T as bf16 pairs in shared memory (swizzled rows: row
  /// % 8 of every fragment row is lane / 4); by default the same bytes go
  /// by stmatrix (storeDsStmatrix).
  void storePair(Value tile, int64_t r, Value x, Value y);
  /// dS of accumulator pair (r, r + 1) from P's f32 values, stored as
  /// a bf16 pair (unless by stmatrix) and returned packed, the A of
  /// dK. stats-in-acc: the accumulator is dPsum - dP^T; dps-fold: dP^T -
  /// dPsum.
  Value dsPair(int64_t r, Value p0, Value p1);
  /// dPsum (read ahead at 64-row tiles, in the dS pass's own block:
  /// earlier it would outlive the registers; dps-ahead=N: N chunks
  /// of the pass before the wait) and the wait for S^T and dP^T.
  void waitDp(int64_t pending);
  /// The pass in one branch of the mask (`masked`: the per-element mask),
  /// yielding P's values or (ds-in-pass) the bf16 pairs of P and of dS.
  void pPass(bool masked);
  /// dV += P^T dO, one committed group (A: P's bf16 pairs; B: dO).
  void issueDv();
  /// P of register r: its f32 value, or (pFromBf16) the bf16 half of
  /// its packed pair widened back (a shift or a mask: bf16 is the top
  /// half of an f32).
  Value pOf(int64_t r);

  WgmmaMain &mw;
  // WgmmaMain's builder and configuration, under its names.
  OpBuilder &b;
  Location loc;
  WgmmaBuilder &w;
  LoopGen &g;
  const WgmmaConfig &config;
  const SmemLayout &L;
  const int64_t bm, D;
  // The walk's.
  const WgmmaMain::Item &it;
  const Value first, kv0, tidMma, negInvScaleLog2;
  WgmmaMain::MmaThread &th;
  const Value step;
  const ValueRange acc;
  // This warpgroup's part of a dQ tile (dqParts) has dqN columns.
  const int64_t dqN;
  const bool earlySt;
  // The kernel's choices the phases read (from its configuration).
  // With 128-row Q tiles (D = 64) the 32 statistics values per vector
  // would spill: those are read where they are used.
  const bool statsAhead;
  const bool shfl; // stats-shfl (readStats)
  const bool fold; // dps-fold, at dP^T
  const int64_t blk;
  // exp2-chunks: each chunk's FFMAs read the scale through the previous
  // chunk's last exp2, so ptxas cannot hoist them all ahead of the pass's
  // MUFU.EX2s (it still bunches the MUFUs: the SASS of the unmasked D = 64
  // pass ends in ~40 back to back either way). Measured, not derived: 8
  // chunks +1.2..+2.4% at D = 64 (bench/NOTES.md section 22).
  const int64_t perChunk;
  // ds-in-pass=C: the wait for dP^T after chunk C of the pass, then each
  // pair's dS as soon as its P is known, in the branch's block; dps-ahead:
  // the chunk whose start reads dPsum.
  const int64_t dsWaitAfter;
  const bool dsFused;
  const int64_t dpsAt;
  // early-dv (dsAndDv has the why); pFromBf16: P read back from its bf16
  // pairs.
  const bool earlyDv, pFromBf16;
  const VectorType v2;
  // The step's, in the order the phases set them.
  Value accV, accK, sNext, phaseWho, qt, buf, q0;
  Value lseBase, dpsBase;
  SmallVector<Value> lseV, dpsV, dpsTop;
  WgmmaBuilder::Desc qd, od, kRowsDesc, vRowsDesc;
  Value S, dP, sw8;
  /// The tile's first Q and KV rows, S_q, S_k and the diagonal's offset,
  /// as i32 (the mask's positions are below S < 2^31).
  struct {
    Value q0, kv0, sq, sk, off;
  } pos;
  scf::IfOp ifMask;
  SmallVector<Value> pA, dsA, dqs;
};

void MmaStep::top() {
  accV = acc[0];
  accK = acc[1];
  mw.tid = w.opaque(tidMma);
  w.base = w.opaque(mw.window);
  th = mw.mmaThread(mw.tid);
  // trace-timeline=2: thread 0 of each warpgroup stamps the phases
  // of the walk's step kTracePhaseStep.
  phaseWho = mw.phases
                 ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         g.rem(mw.tid, g.idx(128)), g.idx(0))
                       .getResult()
                 : Value();
  phase(kPhTop);
  if (mw.tma) {
    // Stage n % 2 of the unit's step n holds this step's tiles and
    // Q tile index once its FULL phase n / 2 completes. No barrier
    // here: S^T and dP^T may go to the tensor cores while the other
    // warpgroup still finishes the previous step (see the dS^T
    // stores).
    Value n = g.add(first, step);
    buf = g.rem(n, g.idx(2));
    // (early-st: the previous step, or the walk's start, waited.)
    if (!earlySt)
      mw.waitFullQ(it, n, buf);
    mw.traceThread(
        [&] { mw.traceAtStep(step, 0, kTraceStep0Ready, it.index); });
    phase(kPhFull);
    qt = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        LLVM::LoadOp::create(b, loc, w.i32, w.stepTileSlot(buf), 4));
  } else {
    qt = mw.visit(it, step);
    buf = g.rem(step, g.idx(2));
    // This step's tiles have landed (every thread's copies), and
    // everyone is done with the previous step's buffers.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    w.fenceAsyncShared();
    w.barSync(kBarMma, kMmaThreads);
    Value next = g.add(step, g.idx(1));
    g.when(g.lt(next, it.len),
           [&] { mw.loadStep(it, mw.visit(it, next), g.sub(g.idx(1), buf)); });
  }

  q0 = g.mul(qt, g.idx(bm));
}

void MmaStep::readStats() {
  // This thread's lse_log2 and dPsum values (its bm/4 Q columns, in
  // pairs), read ahead of their use: lse_log2 before the products go
  // out, so its shared-memory latency hides under the wgmmas instead
  // of stalling the first FFMA of the exp2 pass (ncu: short-scoreboard
  // stalls there).
  lseBase = g.add(mw.at(L.lse(0)), g.mul(buf, g.idx(bm * 4)));
  dpsBase = g.add(mw.at(L.dps(0)), g.mul(buf, g.idx(bm * 4)));
  if (statsAhead && !mw.lseAcc && !shfl)
    lseV = loadStats(lseBase);
  // dps-ahead past the wait's chunk: the first half of dPsum (the
  // pairs the dS math reads first, as soon as dP^T is in) with
  // lse_log2, before the products go out: the wgmma waits pin it
  // there (inside the pass ptxas sinks the loads back to the wait,
  // seen in SASS); all of it there spills 18-24 MMA-side values.
  if (statsAhead && !mw.dpsAcc && config.dsInPassWait >= 0 &&
      config.dpsAhead > config.dsInPassWait)
    dpsTop = loadStats(dpsBase, 0, bm / 16);
  // stats-shfl: lane s holds the column pairs 8 j + fragCol(s) of
  // the blk = bm / 64 column blocks j = blk (s / 4) + i, i < blk
  // (one 8-byte load each); a thread's column 8 j + fragCol + u is
  // then register 2 (j % blk) + u of lane lane % 4 + 4 (j / blk),
  // the same register in every lane of one shuffle.
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
}

void MmaStep::issueProducts() {
  // S^T and dP^T (K = D), two groups: P = exp2(...) of S^T runs while
  // dP^T is on the tensor cores.
  qd = mw.qDesc(kQ, buf);
  od = mw.qDesc(kDO, buf);
  kRowsDesc = mw.wgRowsDesc(th, L.k());
  vRowsDesc = mw.wgRowsDesc(th, L.v());
  // wg-turns: wait for this warpgroup's turn, issue, pass the turn:
  // the tensor cores run one warpgroup's S^T/dP^T after the
  // other's, so each one's exp2 pass overlaps the other's products.
  if (mw.turns)
    mw.turnWait(th.wg, /*top=*/true);
  Value lseInit = mw.lseAcc ? accStart(lseBase, negInvScaleLog2) : Value();
  // (Level 2 implies level 1.)
  Value dpsInit = mw.lseAcc ? accStart(dpsBase, Value()) : Value();
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  S = earlySt ? acc[2] : rowsTimesQT(kRowsDesc, qd, lseInit, false);
  if (mw.dpsAcc && !dpsInit)
    dpsInit = accStart(dpsBase, Value());
  auto foldK = [&](Value a) { return foldDps(a); };
  dP = rowsTimesQT(vRowsDesc, od, dpsInit, mw.dpsAcc,
                   fold ? function_ref<Value(Value)>(foldK) : nullptr);
  phase(kPhIssued);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
  phase(kPhSDone);
  if (mw.turns == 1)
    passTurn();
}

void MmaStep::exp2Pass() {
  sw8 = g.div(th.lane, g.idx(4));
  pos = {w.i32of(q0), w.i32of(g.add(kv0, th.wgRows)), w.i32of(mw.Sq),
         w.i32of(mw.Sk), w.i32of(mw.off)};
  // Only tiles that cross the diagonal or the sequence ends pay for
  // the per-element mask.
  Value needMask = g.orI(g.lt(mw.Sq, g.add(q0, g.idx(bm))),
                         g.lt(mw.Sk, g.add(kv0, g.idx(kBn))));
  if (mw.causal) // some KV row of the tile lies past some query's end
    needMask =
        g.orI(needMask, g.lt(g.add(q0, mw.off), g.add(kv0, g.idx(kBn - 1))));
  ifMask = scf::IfOp::create(b, loc,
                             SmallVector<Type>(bm / 2, dsFused ? w.i32 : w.f32),
                             needMask, true);
  {
    OpBuilder::InsertionGuard mg(b);
    b.setInsertionPointToStart(&ifMask.getThenRegion().front());
    pPass(true);
    b.setInsertionPointToStart(&ifMask.getElseRegion().front());
    pPass(false);
  }
}

void MmaStep::dsAndDv() {
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
  for (int64_t r = 0; r < bm / 2; r += 2)
    pA.push_back(
        dsFused ? ifMask.getResult(r / 2)
                : w.packBf16(ifMask.getResult(r), ifMask.getResult(r + 1)));
  if (dsFused)
    for (int64_t r = 0; r < bm / 2; r += 2)
      dsA.push_back(ifMask.getResult(bm / 4 + r / 2));
  if (earlyDv)
    issueDv();
  phase(kPhPDone);
  // wg-turns=2: the other warpgroup's S^T/dP^T wait for this exp2
  // pass, so the two passes never share the SFU.
  if (mw.turns == 2)
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
  if (mw.tma && mw.dsBufs == 1 && !mw.split)
    w.barSync(kBarMma, kMmaThreads);
  // dS^T goes to shared memory for dQ and stays in registers as the
  // A of dK += dS^T Q.
  if (!dsFused) {
    for (int64_t r = 0; r < bm / 2; r += 2)
      dsA.push_back(dsPair(r, pOf(r), pOf(r + 1)));
    if (config.dsStmatrix)
      mw.storeDsStmatrix(th, buf, dsA);
  }
  // dv-before-fence: dV ahead of the fence, FlashAttention-3's order.
  if (!earlyDv && config.dvBeforeFence)
    issueDv();
  w.fenceAsyncShared();
  phase(kPhDsStored);
  if (!earlyDv && !config.dvBeforeFence)
    issueDv();
  phase(kPhDvIssued);
}

void MmaStep::dqAndDk() {
  // dQ = dS K (K = 128) once both warpgroups' dS^T rows are in
  // shared memory, then dK += dS^T Q (K = 64 Q rows; A in registers,
  // B N-major). Tensor-core order: dV, dQ, dK. dQ is waited for
  // alone (wait_group 1), so its hand-off to the reducer (staging
  // store, barriers) runs while dK is still on the tensor cores.
  // dq-kv-split: only this warpgroup's own dS^T rows, synced among
  // its 128 threads.
  if (mw.split)
    w.barSync(arith::AddIOp::create(b, loc, w.c32(kBarDsWg), w.i32of(th.wg)),
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
  qd = mw.qDesc(kQ, buf);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // The dQ accumulators: this warpgroup's rows or columns of the
  // tile over all 128 KV rows, or (dq-kv-split) both 64-row Q halves
  // of the tile over its own 64 KV rows (M-major A: panel i of
  // dS^T from this warpgroup's rows; B: its K rows, N-major). The
  // same eight wgmmas either way.
  if (mw.split) {
    WgmmaBuilder::Desc kB =
        w.desc(g.add(mw.at(L.k()), g.mul(th.wgRows, g.idx(128))), kBn * 128);
    for (int64_t half = 0; half < 2; ++half) {
      WgmmaBuilder::Desc dsM =
          w.desc(g.add(mw.dsTile(buf), g.add(g.idx(half * kBn * 128),
                                             g.mul(th.wgRows, g.idx(128)))),
                 kBn * 128);
      Value acc = w.freshAcc(D);
      for (int64_t kk = 0; kk < 64 / 16; ++kk)
        acc = w.wgmma(acc, w.descAt(dsM, kk * 16 * 128),
                      w.descAt(kB, kk * 16 * 128), D, true, true, kk == 0);
      dqs.push_back(acc);
    }
  } else {
    Value dq = w.freshAcc(dqN);
    WgmmaBuilder::Desc dsMDesc = mw.dqADesc(th, buf), kB = mw.dqBDesc(th);
    // ds-trans: dS K-major, k-step kk 32 B into panel kk / 4.
    for (int64_t kk = 0; kk < kBn / 16; ++kk)
      dq = w.wgmma(
          dq,
          w.descAt(dsMDesc, config.dsTrans ? mw.kStep(kk, bm) : kk * 16 * 128),
          w.descAt(kB, kk * 16 * 128), dqN, !config.dsTrans, true, kk == 0);
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
    g.when(hasNext, [&] { mw.waitFullQ(it, g.add(first, next), nbuf); });
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    sNext = mw.issueSIf(th, nbuf, w.c32(1));
  }
  // Early K/V release: dQ was the item's last read of K and V (dK
  // reads Q and registers), so the producer may load the next item's
  // while this one hands over its last dQ and writes dK/dV.
  if (mw.earlyKV)
    g.when(isLastStep(), [&] { mw.freeKV(); });
}

void MmaStep::end() {
  mw.emitDqHandOff(th, first, step, qt, buf, dqs, [&](int64_t p) { phase(p); });

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
  if (mw.tma) // this thread is done with the stage
    w.mbarArrive(w.mbar(kEmptyQ, buf));
  if (mw.turns)
    mw.turnWait(th.wg, /*top=*/false);
  phase(kPhEnd);
  for (int64_t s0 = 0; s0 < 2; ++s0)
    mw.traceThread(
        [&] { mw.traceAtStep(step, s0, kTraceStep0End + s0, it.index); });
  SmallVector<Value> carried{accV, accK};
  if (earlySt)
    carried.push_back(sNext);
  scf::YieldOp::create(b, loc, carried);
  mw.tid = tidMma;
  w.base = mw.window;
}

void MmaStep::phase(int64_t p) {
  mw.tracePhase(step, it.index, th.wg, phaseWho, p);
}

Value MmaStep::isLastStep() {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               g.add(step, g.idx(1)), it.len)
      .getResult();
}

void MmaStep::loadPair(SmallVectorImpl<Value> &v, Value base, Value block) {
  Value c = g.add(th.fragCol, g.mul(block, g.idx(8)));
  Value pair = LLVM::LoadOp::create(b, loc, VectorType::get({2}, w.f32),
                                    w.sh(g.add(base, g.mul(c, g.idx(4)))), 8);
  for (int64_t u = 0; u < 2; ++u)
    v.push_back(vector::ExtractOp::create(b, loc, pair, u));
}

SmallVector<Value> MmaStep::loadStats(Value base, int64_t from, int64_t to) {
  SmallVector<Value> v;
  for (int64_t j = from; j < (to < 0 ? bm / 8 : to); ++j)
    loadPair(v, base, g.idx(j));
  return v;
}

Value MmaStep::statOf(ArrayRef<Value> v, Value base, int64_t r) {
  if (shfl) {
    int64_t j = r / 4;
    Value src = w.i32of(g.add(g.rem(th.lane, g.idx(4)), g.idx(4 * (j / blk))));
    return gpu::ShuffleOp::create(b, loc, v[2 * (j % blk) + r % 2], src,
                                  w.c32(32), gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }
  if (!v.empty())
    return v[2 * (r / 4) + r % 2];
  return LLVM::LoadOp::create(
             b, loc, w.f32, w.sh(g.add(base, g.mul(mw.colOf(th, r), g.idx(4)))))
      .getResult();
}

Value MmaStep::rowsTimesQT(WgmmaBuilder::Desc aDesc, WgmmaBuilder::Desc bDesc,
                           Value init, bool negate,
                           function_ref<Value(Value)> last) {
  Value acc = init ? init : w.freshAcc(bm);
  for (int64_t kk = 0; kk < D / 16; ++kk) {
    acc = w.wgmma(acc, w.descAt(aDesc, mw.kStep(kk, kBn)),
                  w.descAt(bDesc, mw.kStep(kk, bm)), bm, false, false,
                  kk == 0 && !init, negate);
  }
  if (last)
    acc = last(acc);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return acc;
}

Value MmaStep::accStart(Value base, Value times) {
  SmallVector<Value> v = loadStats(base);
  Value acc = LLVM::PoisonOp::create(b, loc, w.accType(bm));
  for (int64_t r = 0; r < bm / 2; ++r) {
    Value x = v[2 * (r / 4) + r % 2];
    acc = LLVM::InsertValueOp::create(b, loc, acc, times ? g.mul(x, times) : x,
                                      r);
  }
  return acc;
}

Value MmaStep::foldDps(Value acc) {
  Value stage = mw.dpsStage(buf);
  Value ones = mw.at(L.onesA());
  Value bDesc = w.descAt(w.desc(stage, /*LBO: the lo row*/ 2 * bm), 0,
                         /*sboBytes=*/16, /*swizzle128=*/false);
  return w.wgmma(acc,
                 w.descAt(w.desc(ones, /*LBO: K core matrices*/ 128), 0,
                          /*sboBytes=*/0, /*swizzle128=*/false),
                 bDesc, bm, /*transA=*/false, /*transB=*/true);
}

void MmaStep::passTurn() {
  w.barArrive(mw.turnBarrier(g.sub(g.idx(1), th.wg)), kMmaThreads);
}

void MmaStep::storePair(Value tile, int64_t r, Value x, Value y) {
  // Column (Q row) 8(r/4) + ..: panel r/32, chunk (r/4) % 8.
  Value kvL = g.add(th.wgRows, mw.rowOf(th, r));
  Value chunk = arith::XOrIOp::create(b, loc, g.idx((r / 4) % 8), sw8);
  Value byteOff =
      g.add(g.add(g.idx((r / 32) * kBn * 128), g.mul(kvL, g.idx(128))),
            g.add(g.mul(chunk, g.idx(16)),
                  g.mul(g.rem(th.lane, g.idx(4)), g.idx(4))));
  Value pair = vector::FromElementsOp::create(
      b, loc, v2,
      ValueRange{arith::TruncFOp::create(b, loc, w.bf16, x),
                 arith::TruncFOp::create(b, loc, w.bf16, y)});
  LLVM::StoreOp::create(b, loc, pair, w.sh(g.add(tile, byteOff)), 4);
}

Value MmaStep::dsPair(int64_t r, Value p0, Value p1) {
  Value ds[2];
  Value p[2] = {p0, p1};
  for (int64_t u = 0; u < 2; ++u)
    ds[u] = mw.dpsAcc
                ? g.mul(p[u], arith::NegFOp::create(b, loc, w.elem(dP, r + u)))
            : fold ? g.mul(p[u], w.elem(dP, r + u))
                   : g.mul(p[u], g.sub(w.elem(dP, r + u),
                                       statOf(dpsV, dpsBase, r + u)));
  if (!config.dsStmatrix)
    storePair(mw.dsTile(buf), r, ds[0], ds[1]);
  return w.packBf16(ds[0], ds[1]);
}

void MmaStep::waitDp(int64_t pending) {
  if (statsAhead && !mw.dpsAcc && !shfl && !fold &&
      dpsV.size() < size_t(bm / 4))
    dpsV.append(loadStats(dpsBase, dpsV.size() / 2));
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
}

void MmaStep::pPass(bool masked) {
  SmallVector<Value> P, fusedP, fusedDs;
  dpsV = dpsTop; // else each branch's block reads its own
  if (dpsAt == 0)
    dpsV = loadStats(dpsBase);
  bool waited = dsWaitAfter == 0;
  if (waited)
    waitDp(0);
  int64_t nextPair = 0;
  Value c = mw.scaleLog2;
  for (int64_t r = 0; r < bm / 2; ++r) {
    Value qc = mw.colOf(th, r);
    if (r && r % perChunk == 0)
      c = w.after(mw.scaleLog2, P.back());
    if (r && dpsAt > 0 && r == dpsAt * perChunk)
      dpsV = loadStats(dpsBase);
    // One FFMA: S * scale * log2(e) - lse_log2 (stats-in-acc=2:
    // the accumulator is S - lse_log2 / c, one FMUL).
    Value x = mw.lseAcc
                  ? g.mul(w.elem(S, r), c)
                  : LLVM::FMAOp::create(
                        b, loc, w.elem(S, r), c,
                        arith::NegFOp::create(b, loc, statOf(lseV, lseBase, r)))
                        .getResult();
    Value p = config.ablateExp2 ? x : mw.k.exp2(x);
    if (masked) { // 32-bit: positions are below S < 2^31
      Value gq = g.add(pos.q0, w.i32of(qc));
      Value gkv = g.add(pos.kv0, w.i32of(mw.rowOf(th, r)));
      Value valid = g.andI(g.lt(gq, pos.sq), g.lt(gkv, pos.sk));
      if (mw.causal)
        valid = g.andI(valid, g.causalVisible(gkv, gq, pos.off));
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
      fusedDs.push_back(dsPair(nextPair, P[nextPair], P[nextPair + 1]));
    }
  }
  if (!dsFused) {
    scf::YieldOp::create(b, loc, P);
    return;
  }
  if (config.dsStmatrix)
    mw.storeDsStmatrix(th, buf, fusedDs);
  fusedP.append(fusedDs);
  scf::YieldOp::create(b, loc, fusedP);
}

void MmaStep::issueDv() {
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  od = mw.qDesc(kDO, buf);
  for (int64_t kk = 0; kk < bm / 16; ++kk) {
    ArrayRef<Value> aP(pA.data() + 4 * kk, 4);
    accV = w.wgmmaRS(accV, aP, w.descAt(od, kk * 16 * 128), D);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
}

Value MmaStep::pOf(int64_t r) {
  if (!pFromBf16)
    return ifMask.getResult(r);
  Value pair = pA[r / 2];
  Value bits = r % 2 == 0
                   ? arith::ShLIOp::create(b, loc, pair, w.c32(16)).getResult()
                   : arith::AndIOp::create(b, loc, pair,
                                           arith::ConstantIntOp::create(
                                               b, loc, w.i32, 0xFFFF0000LL))
                         .getResult();
  return arith::BitcastOp::create(b, loc, w.f32, bits);
}

} // namespace

void WgmmaMain::emitMmaStep(const MmaWalk &walk, Value step, ValueRange acc) {
  MmaStep(*this, walk, step, acc).emit();
}
