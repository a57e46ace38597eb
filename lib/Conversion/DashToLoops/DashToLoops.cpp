//===- DashToLoops.cpp - dash.scheduled_attention_bwd -> scf loops --------===//
//
// The CPU execution of the tiled, scheduled algorithm. It mirrors the GPU
// kernels step for step (same schedule regions, same per-task math, same
// fp32 accumulators and rank-ordered dQ reduction), so CI can check the
// algorithm end to end against a float64 reference without a GPU.
//
//===----------------------------------------------------------------------===//

#include "dash/Conversion/Passes.h"

#include "../LoopGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>
#include <limits>

namespace mlir::dash {
#define GEN_PASS_DEF_CONVERTDASHTOLOOPS
#include "dash/Conversion/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

namespace {
struct ConvertDashToLoopsPass
    : mlir::dash::impl::ConvertDashToLoopsBase<ConvertDashToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<ScheduledAttentionBwdOp> ops;
    getOperation()->walk([&](ScheduledAttentionBwdOp op) { ops.push_back(op); });
    for (ScheduledAttentionBwdOp op : ops)
      if (failed(lower(op)))
        return signalPassFailure();
    // An unmaterialised op has no loop form: say which pass is missing.
    WalkResult left = getOperation()->walk([](AttentionBwdOp op) {
      op.emitOpError() << "has no schedule regions; run --dash-tile "
                          "--dash-schedule --dash-materialize-schedule first";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult lower(ScheduledAttentionBwdOp op) {
    auto qT = cast<MemRefType>(op.getQ().getType());
    auto kT = cast<MemRefType>(op.getK().getType());
    if (!qT.hasStaticShape() || !kT.hasStaticShape())
      return op.emitOpError() << "convert-dash-to-loops needs static shapes";
    OpBuilder b(op);
    LoopGen g{b, op.getLoc()};
    Type inElt = qT.getElementType();
    Type f32 = b.getF32Type();

    const int64_t B = qT.getDimSize(0), Sq = qT.getDimSize(1),
                  H = qT.getDimSize(2), D = qT.getDimSize(3),
                  Sk = kT.getDimSize(1), Hkv = kT.getDimSize(2);
    const int64_t bm = op.getTiling().getBlockM(),
                  bn = op.getTiling().getBlockN();
    const int64_t M = (Sq + bm - 1) / bm, N = (Sk + bn - 1) / bn;
    const int64_t G = op.getSchedule().getNumUnits();
    const bool causal = op.getMask() == Mask::Causal;
    const int64_t off =
        op.getEffectiveAlign() == CausalAlign::BottomRight ? Sk - Sq : 0;
    const double scale = op.getScale().convertToDouble();
    const bool det = op.getDeterministic();
    constexpr double kLog2e = 1.4426950408889634;

    Value q = op.getQ(), k = op.getK(), v = op.getV(), o = op.getO(),
          dO = op.getDO(), lse = op.getLse();

    // Workspace, as on the GPU: fp32 dQ/dK/dV accumulators, dPsum, lse_log2;
    // in deterministic mode one dQ partial slot per (row tile, rank).
    Value dPsum = g.alloc({B, H, Sq}, f32);
    Value lse2 = g.alloc({B, H, Sq}, f32);
    Value dQacc = g.alloc({B, H, Sq, D}, f32);
    Value dKacc = g.alloc({B, Sk, Hkv, D}, f32);
    Value dVacc = g.alloc({B, Sk, Hkv, D}, f32);
    Value partials = det ? g.alloc({B, H, M, N, bm, D}, f32) : Value();
    Value P = g.alloc({bm, bn}, f32), dS = g.alloc({bm, bn}, f32);
    Value dKloc = g.alloc({bn, D}, f32), dVloc = g.alloc({bn, D}, f32);
    for (Value acc : {dQacc, dKacc, dVacc})
      g.zero(acc);
    if (det) // empty slots (ranks a short row never receives) add +0
      g.zero(partials);

    Value cB = g.idx(B), cH = g.idx(H), cSq = g.idx(Sq), cD = g.idx(D);

    // Preprocess: dPsum = rowsum(dO * O); lse_log2 = lse * log2(e), 0 for a
    // row that sees no key (lse = -inf) so exp2 never sees inf - inf.
    g.nest({cB, cH, cSq}, [&](ArrayRef<Value> iv) {
      Value bb = iv[0], h = iv[1], i = iv[2];
      Value sum = g.sum(cD, [&](Value d) {
        return g.mul(g.load(dO, {bb, i, h, d}), g.load(o, {bb, i, h, d}));
      });
      memref::StoreOp::create(b, g.loc, sum, dPsum, ValueRange{bb, h, i});
      Value l = g.load(lse, {bb, h, i});
      Value isInf = arith::CmpFOp::create(
          b, g.loc, arith::CmpFPredicate::OEQ, l,
          g.f32(-std::numeric_limits<double>::infinity()));
      Value l2 = arith::SelectOp::create(b, g.loc, isInf, g.f32(0.0),
                                         g.mul(l, g.f32(kLog2e)));
      memref::StoreOp::create(b, g.loc, l2, lse2, ValueRange{bb, h, i});
    });

    // Main: every unit, every work item, every step in schedule order. The
    // regions see the operands as they are and G as the schedule's constant.
    Value scaleLog2 = g.f32(scale * kLog2e);
    RegionMapping map;
    map.numUnits = g.idx(G);
    g.loop(g.idx(G), [&](Value unit) {
      Value numItems = inlineScheduleRegion(b, op.getItems(), {unit}, map)[0];
      g.loop(numItems, [&](Value item) {
        SmallVector<Value> w =
            inlineScheduleRegion(b, op.getWork(), {unit, item}, map);
        Value bb = w[0], h = w[1], kv = w[2], len = w[3];
        Value hkv = b.createOrFold<arith::DivUIOp>(g.loc, h, g.idx(H / Hkv));
        Value kv0 = g.mul(kv, g.idx(bn));
        Value kvRows = g.minIdx(g.idx(bn), g.sub(g.idx(Sk), kv0));
        g.zero(dKloc);
        g.zero(dVloc);
        g.loop(len, [&](Value step) {
          Value qt =
              inlineScheduleRegion(b, op.getVisit(), {bb, h, kv, step}, map)[0];
          Value rank =
              inlineScheduleRegion(b, op.getRank(), {bb, h, kv, qt}, map)[0];
          Value q0 = g.mul(qt, g.idx(bm));
          Value qRows = g.minIdx(g.idx(bm), g.sub(cSq, q0));
          emitTask(g, inElt, causal, off, scaleLog2, q, k, v, dO, dPsum, lse2,
                   P, dS, dKloc, dVloc, bb, h, hkv, q0, qRows, kv0, kvRows,
                   D);
          // dQ partial = dS K: into its rank slot, or straight into the
          // accumulator in arrival order.
          g.nest({qRows, cD}, [&](ArrayRef<Value> iv) {
            Value i = iv[0], d = iv[1];
            Value part = g.sum(kvRows, [&](Value j) {
              return g.mul(memref::LoadOp::create(b, g.loc, dS,
                                                  ValueRange{i, j}),
                           g.load(k, {bb, g.add(kv0, j), hkv, d}));
            });
            if (det)
              memref::StoreOp::create(b, g.loc, part, partials,
                                      ValueRange{bb, h, qt, rank, i, d});
            else
              g.accumulate(part, dQacc, {bb, h, g.add(q0, i), d});
          });
        });
        // End of the walk: this KV tile's dK/dV into the per-KV-head
        // accumulators (query heads of a GQA group add in unit order).
        g.nest({kvRows, cD}, [&](ArrayRef<Value> iv) {
          Value j = iv[0], d = iv[1], row = g.add(kv0, iv[0]);
          g.accumulate(memref::LoadOp::create(b, g.loc, dKloc, ValueRange{j, d}),
                       dKacc, {bb, row, hkv, d});
          g.accumulate(memref::LoadOp::create(b, g.loc, dVloc, ValueRange{j, d}),
                       dVacc, {bb, row, hkv, d});
        });
      });
    });

    // Ordered reduction: slot r of a row tile is added before slot r + 1.
    if (det) {
      g.nest({cB, cH, g.idx(M), g.idx(N)}, [&](ArrayRef<Value> iv) {
        Value bb = iv[0], h = iv[1], qt = iv[2], r = iv[3];
        Value q0 = g.mul(qt, g.idx(bm));
        Value qRows = g.minIdx(g.idx(bm), g.sub(cSq, q0));
        g.nest({qRows, cD}, [&](ArrayRef<Value> in) {
          Value part = memref::LoadOp::create(
              b, g.loc, partials, ValueRange{bb, h, qt, r, in[0], in[1]});
          g.accumulate(part, dQacc, {bb, h, g.add(q0, in[0]), in[1]});
        });
      });
    }

    // Postprocess: dQ = dQaccum * scale, dK = dKaccum * scale, dV.
    Value cScale = g.f32(scale);
    g.nest({cB, cSq, cH, cD}, [&](ArrayRef<Value> iv) {
      Value acc = memref::LoadOp::create(b, g.loc, dQacc,
                                         ValueRange{iv[0], iv[2], iv[1], iv[3]});
      g.store(g.mul(acc, cScale), op.getDq(), iv);
    });
    g.nest({cB, g.idx(Sk), g.idx(Hkv), cD}, [&](ArrayRef<Value> iv) {
      Value dk = memref::LoadOp::create(b, g.loc, dKacc, iv);
      g.store(g.mul(dk, cScale), op.getDk(), iv);
      g.store(memref::LoadOp::create(b, g.loc, dVacc, iv), op.getDv(), iv);
    });

    for (Value buf : {dPsum, lse2, dQacc, dKacc, dVacc, P, dS, dKloc, dVloc})
      memref::DeallocOp::create(b, g.loc, buf);
    if (det)
      memref::DeallocOp::create(b, g.loc, partials);
    op.erase();
    return success();
  }

  /// One (KV tile, Q tile) task: P and dS for the tile pair, then
  /// dV += P^T dO and dK += dS^T Q into the walk's local accumulators.
  void emitTask(LoopGen &g, Type inElt, bool causal, int64_t off,
                Value scaleLog2, Value q, Value k, Value v, Value dO,
                Value dPsum, Value lse2, Value P, Value dS, Value dKloc,
                Value dVloc, Value bb, Value h, Value hkv, Value q0,
                Value qRows, Value kv0, Value kvRows, int64_t D) {
    OpBuilder &b = g.b;
    Value cD = g.idx(D);
    Type operandElt = exactIntermediates ? b.getF32Type() : inElt;
    g.nest({qRows, kvRows}, [&](ArrayRef<Value> iv) {
      Value i = iv[0], j = iv[1];
      Value gi = g.add(q0, i), gj = g.add(kv0, j);
      Value s = g.sum(cD, [&](Value d) {
        return g.mul(g.load(q, {bb, gi, h, d}), g.load(k, {bb, gj, hkv, d}));
      });
      Value dp = g.sum(cD, [&](Value d) {
        return g.mul(g.load(dO, {bb, gi, h, d}), g.load(v, {bb, gj, hkv, d}));
      });
      Value logit = g.sub(g.mul(s, scaleLog2), g.load(lse2, {bb, h, gi}));
      Value p = math::Exp2Op::create(b, g.loc, logit);
      if (causal) {
        Value visible = g.causalVisible(gj, gi, g.idx(off));
        p = arith::SelectOp::create(b, g.loc, visible, p, g.f32(0.0));
      }
      Value ds = g.mul(p, g.sub(dp, g.load(dPsum, {bb, h, gi})));
      memref::StoreOp::create(b, g.loc, g.roundTo(operandElt, p), P,
                              ValueRange{i, j});
      memref::StoreOp::create(b, g.loc, g.roundTo(operandElt, ds), dS,
                              ValueRange{i, j});
    });
    g.nest({kvRows, cD}, [&](ArrayRef<Value> iv) {
      Value j = iv[0], d = iv[1];
      Value dv = g.sum(qRows, [&](Value i) {
        return g.mul(memref::LoadOp::create(b, g.loc, P, ValueRange{i, j}),
                     g.load(dO, {bb, g.add(q0, i), h, d}));
      });
      Value dk = g.sum(qRows, [&](Value i) {
        return g.mul(memref::LoadOp::create(b, g.loc, dS, ValueRange{i, j}),
                     g.load(q, {bb, g.add(q0, i), h, d}));
      });
      g.accumulate(dv, dVloc, {j, d});
      g.accumulate(dk, dKloc, {j, d});
    });
  }
};
} // namespace
