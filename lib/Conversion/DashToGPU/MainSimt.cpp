//===- MainSimt.cpp - The CUDA-core main kernel (mma=simt) ----------------===//
//
// The first-light reference kernel: the same schedule regions and dQ
// semaphore protocol as the tensor-core kernels, the products as
// dot-product loops over shared K, V and f32 P, dS; any tile that fits
// shared memory. Kept for debugging and as a second implementation.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

// One persistent CTA per unit; see the pass description.
void mlir::dash::detail::buildMainSimt(OpBuilder &b, Location loc,
                                       ArrayRef<Type> argTypes,
                                       ScheduledAttentionBwdOp op, int64_t D,
                                       int64_t bm, int64_t bn,
                                       int64_t threads,
                                       int64_t debugSpinLimit) {
  OpBuilder::InsertionGuard guard(b);
  Kernel k(b, loc, "dash_bwd_main", argTypes, threads, debugSpinLimit);
  LoopGen &g = k.g;
  Type elt = cast<MemRefType>(argTypes[kQ]).getElementType();
  Type f32 = b.getF32Type();
  bool causal = op.getMask() == Mask::Causal;
  bool det = op.getDeterministic();
  bool bottomRight = op.getEffectiveAlign() == CausalAlign::BottomRight;

  // Shared memory: K, V (input type) then P, dS (f32).
  Value Kt = k.sharedView({bn, D}, elt), Vt = k.sharedView({bn, D}, elt);
  Value P = k.sharedView({bm, bn}, f32), dS = k.sharedView({bm, bn}, f32);

  Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
        Sk = k.dim(kK, 1), Hkv = k.dim(kK, 2);
  (void)B;
  Value cD = g.idx(D), cBm = g.idx(bm), cBn = g.idx(bn);
  Value off = bottomRight ? g.sub(Sk, Sq) : g.idx(0);
  Value scaleLog2 = g.mul(k.arg(kScale), g.f32(kLog2e));
  Value unit = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);

  RegionMapping map = k.scheduleMapping(op);

  g.loop(k.numItems(op, map, unit), [&](Value item) {
    Kernel::WorkItem w = k.workItem(op, map, unit, item);
    Value bb = w.bb, h = w.h, kv = w.kv, len = w.len;
    Value hkv = g.div(h, g.div(H, Hkv));
    Value kv0 = g.mul(kv, cBn);
    Value kvRows = g.minIdx(cBn, g.sub(Sk, kv0));

    // Stage K and V; rows past S_k are zeros.
    k.stageRows(k.arg(kK), Kt, bb, kv0, kvRows, hkv, Sk, bn, D);
    k.stageRows(k.arg(kV), Vt, bb, kv0, kvRows, hkv, Sk, bn, D);
    k.barrier();

    g.loop(len, [&](Value step) {
      Value qt =
          inlineScheduleRegion(b, op.getVisit(), {bb, h, kv, step}, map)[0];
      Value rank =
          inlineScheduleRegion(b, op.getRank(), {bb, h, kv, qt}, map)[0];
      Value q0 = g.mul(qt, cBm);
      Value qRows = g.minIdx(cBm, g.sub(Sq, q0));
      Value lastQuery = g.sub(Sq, g.idx(1));

      // P and dS for the tile pair (masked entries are exact zeros).
      k.ctaLoop(g.mul(cBm, cBn), [&](Value e) {
        Value i = g.div(e, cBn), j = g.rem(e, cBn);
        Value gi = g.add(q0, i), gj = g.add(kv0, j);
        Value row = g.minIdx(gi, lastQuery);
        Value s = g.sum(cD, [&](Value d) {
          return g.mul(g.load(k.arg(kQ), {bb, row, h, d}),
                       g.load(Kt, {j, d}));
        });
        Value dp = g.sum(cD, [&](Value d) {
          return g.mul(g.load(k.arg(kDO), {bb, row, h, d}),
                       g.load(Vt, {j, d}));
        });
        Value p = k.exp2(g.sub(g.mul(s, scaleLog2),
                               g.load(k.arg(kLse2), {bb, h, row})));
        Value valid = g.andI(g.lt(i, qRows), g.lt(j, kvRows));
        if (causal)
          valid = g.andI(valid, g.causalVisible(gj, gi, off));
        p = arith::SelectOp::create(b, loc, valid, p, g.f32(0.0));
        Value ds = g.mul(p, g.sub(dp, g.load(k.arg(kDPsum), {bb, h, row})));
        memref::StoreOp::create(b, loc, g.roundTo(elt, p), P,
                                ValueRange{i, j});
        memref::StoreOp::create(b, loc, g.roundTo(elt, ds), dS,
                                ValueRange{i, j});
      });
      k.barrier();

      // dV += P^T dO, dK += dS^T Q: each thread owns its (j, d) entries
      // for the whole walk, so plain read-modify-writes are exclusive.
      k.ctaLoop(g.mul(cBn, cD), [&](Value e) {
        Value j = g.div(e, cD), d = g.rem(e, cD);
        g.when(g.lt(j, kvRows), [&] {
          Value dv = g.sum(qRows, [&](Value i) {
            return g.mul(memref::LoadOp::create(b, loc, P, ValueRange{i, j}),
                         g.load(k.arg(kDO), {bb, g.add(q0, i), h, d}));
          });
          Value dk = g.sum(qRows, [&](Value i) {
            return g.mul(memref::LoadOp::create(b, loc, dS, ValueRange{i, j}),
                         g.load(k.arg(kQ), {bb, g.add(q0, i), h, d}));
          });
          Value row = g.add(kv0, j);
          g.accumulate(dv, k.arg(kDvAcc), {bb, h, row, d});
          g.accumulate(dk, k.arg(kDkAcc), {bb, h, row, d});
        });
      });

      // The ordered dQ reduction.
      Value semPtr;
      if (det) {
        semPtr = k.elementPtr(k.arg(kSem), {bb, h, qt});
        k.waitForRank(semPtr, rank, {unit, bb, h, qt});
      }
      k.ctaLoop(g.mul(cBm, cD), [&](Value e) {
        Value i = g.div(e, cD), d = g.rem(e, cD);
        g.when(g.lt(i, qRows), [&] {
          Value part = g.sum(kvRows, [&](Value j) {
            return g.mul(memref::LoadOp::create(b, loc, dS, ValueRange{i, j}),
                         g.load(Kt, {j, d}));
          });
          memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf,
                                      part, k.arg(kDqAcc),
                                      ValueRange{bb, h, g.add(q0, i), d});
        });
      });
      if (det)
        k.releaseRank(semPtr);
      k.barrier(); // P, dS are rewritten by the next step
    });
    k.barrier(); // K, V are rewritten by the next item
  });
  gpu::ReturnOp::create(b, loc);
}
