//===- MaterializeSchedule.cpp - #dash.schedule -> index code -------------===//
//
// Emits the schedule formulas of lib/Schedule (SCHEDULES.md §4) as arith
// index code in the regions of dash.scheduled_attention_bwd. Keep each
// formula next to its lib/Schedule twin: dash-check-schedule compares them
// task by task.
//
//===----------------------------------------------------------------------===//

#include "dash/Dialect/Dash/IR/ScheduleProblem.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dash {
#define GEN_PASS_DEF_DASHMATERIALIZESCHEDULE
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;
namespace sched = ::dash::sched;

namespace {
/// Index arithmetic that folds constants as it goes, so the regions read
/// like the formulas.
struct IndexMath {
  IndexMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  OpBuilder &b;
  Location loc;
  /// Constants go once each to the top of the region.
  llvm::DenseMap<int64_t, Value> constants;
  Value c(int64_t v) {
    Value &cst = constants[v];
    if (!cst) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(b.getInsertionBlock());
      cst = arith::ConstantIndexOp::create(b, loc, v);
    }
    return cst;
  }
  Value add(Value x, Value y) { return b.createOrFold<arith::AddIOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.createOrFold<arith::SubIOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.createOrFold<arith::MulIOp>(loc, x, y); }
  Value floorDiv(Value x, Value y) {
    return b.createOrFold<arith::FloorDivSIOp>(loc, x, y);
  }
  /// Non-negative remainder for y > 0.
  Value mod(Value x, Value y) {
    Value r = b.createOrFold<arith::RemSIOp>(loc, x, y);
    return b.createOrFold<arith::RemSIOp>(loc, add(r, y), y);
  }
  /// x mod y for x >= 0, y > 0: one unsigned remainder. The producer
  /// evaluates visit and rank every step on its few registers, where each
  /// division is ~18 instructions that the MMA warps beside it lose issue
  /// slots to (bench/NOTES.md section 35).
  Value modNonNeg(Value x, Value y) {
    return b.createOrFold<arith::RemUIOp>(loc, x, y);
  }
  /// x / y for x >= 0, y > 0: one unsigned division (a shift for powers
  /// of two).
  Value divNonNeg(Value x, Value y) {
    return b.createOrFold<arith::DivUIOp>(loc, x, y);
  }
  /// x mod y for -y < x < y, y > 0: no division at all.
  Value modNear(Value x, Value y) {
    return select(lt(x, c(0)), add(x, y), x);
  }
  Value min(Value x, Value y) { return b.createOrFold<arith::MinSIOp>(loc, x, y); }
  Value max(Value x, Value y) { return b.createOrFold<arith::MaxSIOp>(loc, x, y); }
  Value lt(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return b.createOrFold<arith::SelectOp>(loc, cond, x, y);
  }
};

/// Static facts of the problem; the sizes are Values (constants when the
/// shapes are static, `memref.dim` / `dash.num_units` when they are not).
struct ScheduleShape {
  Policy policy;
  int64_t blockM, blockN;
  Mask mask;
  CausalAlign align;
  int64_t staticUnits; // 0: G is a run-time value (dash.num_units)
};

/// One region builder per formula.
class ScheduleEmitter {
public:
  ScheduleEmitter(const ScheduleShape &shape, ScheduledAttentionBwdOp op)
      : shape(shape), policy(shape.policy), op(op) {}

  // items(unit) = ceil((T - unit) / G) launch slots, T = B*H*perHead.
  void items(IndexMath &x, Value unit) {
    Sizes z = sizes(x);
    Value total = x.mul(x.mul(z.B, z.H), perHead(x, z));
    Value slots = x.floorDiv(x.sub(x.add(total, x.sub(z.G, x.c(1))), unit), z.G);
    yield(x, {itemsPerSlot() == 1 ? slots : x.mul(slots, x.c(itemsPerSlot()))});
  }

  // work(unit, item) = (b, h, kv, walk length); launch slot t = unit + k*G.
  void work(IndexMath &x, Value unit, Value item) {
    Sizes z = sizes(x);
    Value slot = item, second;
    if (policy == Policy::SymmetricShift) {
      slot = x.floorDiv(item, x.c(2));
      second = x.mod(item, x.c(2)); // 0: long tile p, 1: short tile N-1-p
    }
    Value per = perHead(x, z);
    Value t = x.add(unit, x.mul(slot, z.G));
    Value hb = x.floorDiv(t, per);
    Value idx = x.mod(t, per);
    Value b = x.floorDiv(hb, z.H);
    Value h = x.mod(hb, z.H);
    Value kv = idx;
    Value last = x.sub(z.N, x.c(1));
    if (policy == Policy::Spt) // shortest walk first: j = N-1 down to 0
      kv = x.sub(last, idx);
    if (policy == Policy::SymmetricShift)
      kv = x.select(x.lt(second, x.c(1)), idx, x.sub(last, idx));
    Value len = x.sub(z.M, firstCovered(x, z, kv));
    yield(x, {b, h, kv, len});
  }

  // visit(b, h, kv, step) = Q tile.
  void visit(IndexMath &x, Value b, Value h, Value kv, Value step) {
    Sizes z = sizes(x);
    Value lastQ = x.sub(z.M, x.c(1));
    switch (policy) {
    case Policy::Ascending:
    case Policy::Spt:
      return yield(x, {x.add(firstCovered(x, z, kv), step)});
    case Policy::Descending:
      return yield(x, {x.sub(lastQ, step)});
    case Policy::Shift: {
      Wave w = wave(x, z, kv, b, h, z.N);
      // kv >= F (the wave's first item of the head), step >= 0.
      return yield(x, {x.modNonNeg(x.add(x.sub(kv, w.F), step), z.M)});
    }
    case Policy::SymmetricShift: {
      Value s = x.c(shape.blockN / shape.blockM);
      Value half = x.floorDiv(z.N, x.c(2));
      Value isLong = x.lt(kv, half);
      Value pair = x.select(isLong, kv, x.sub(x.sub(z.N, x.c(1)), kv));
      Wave w = wave(x, z, pair, b, h, half);
      Value i = x.sub(pair, w.F);
      Value rs = x.mul(s, x.sub(x.add(w.F, w.R), x.c(1)));
      Value rect = x.sub(z.M, rs);
      // s*i < rect: the long tiles start s rows apart (lib/Schedule).
      Value inRect = x.add(rs, x.modNonNeg(x.add(x.mul(s, i), step), rect));
      Value inTri = x.add(x.mul(s, pair), x.sub(step, rect));
      Value longQ = x.select(x.lt(step, rect), inRect, inTri);
      Value shortQ = x.sub(lastQ, step);
      return yield(x, {x.select(isLong, longQ, shortQ)});
    }
    case Policy::Auto:
      break;
    }
    llvm_unreachable("auto is resolved before materialisation");
  }

  // rank(b, h, kv, q) = position of kv in dQ row q's reduction order.
  void rank(IndexMath &x, Value b, Value h, Value kv, Value q) {
    Sizes z = sizes(x);
    switch (policy) {
    case Policy::Ascending:
    case Policy::Descending:
      return yield(x, {kv});
    case Policy::Spt: // diagonal first: covering(q) - 1 - j
      return yield(x, {x.sub(lastCovering(x, z, q), kv)});
    case Policy::Shift: {
      Wave w = wave(x, z, kv, b, h, z.N);
      Value a = x.sub(kv, w.F);
      Value off = x.sub(x.min(q, x.sub(w.R, x.c(1))), a);
      // 0 <= a < R and 0 <= min(q, R - 1) < R: -R < off < R.
      return yield(x, {x.add(w.F, x.modNear(off, w.R))});
    }
    case Policy::SymmetricShift: {
      Value s = x.c(shape.blockN / shape.blockM);
      Value half = x.floorDiv(z.N, x.c(2));
      Value isLong = x.lt(kv, half);
      Value pair = x.select(isLong, kv, x.sub(x.sub(z.N, x.c(1)), kv));
      Wave w = wave(x, z, pair, b, h, half);
      Value i = x.sub(pair, w.F);
      // Adds from earlier waves: all F long tiles, plus the short tiles
      // N-1-p' (p' < F) that reach row q.
      Value fromShort =
          x.sub(w.F, x.floorDiv(x.sub(x.sub(z.M, x.c(1)), q), s));
      Value e = x.add(w.F, x.max(x.c(0), fromShort));
      Value shortRank = x.add(e, x.add(w.R, x.sub(x.sub(w.R, x.c(1)), i)));
      Value rs = x.mul(s, x.sub(x.add(w.F, w.R), x.c(1)));
      // Where it is taken (q >= rs): q - rs >= 0 and -R < rectOff < R.
      Value rectOff =
          x.sub(x.min(x.divNonNeg(x.sub(q, rs), s), x.sub(w.R, x.c(1))), i);
      Value rectRank = x.add(e, x.modNear(rectOff, w.R));
      Value triRank = x.add(e, x.sub(x.floorDiv(q, s), pair));
      Value longRank = x.select(x.lt(q, rs), triRank, rectRank);
      return yield(x, {x.select(isLong, longRank, shortRank)});
    }
    case Policy::Auto:
      break;
    }
    llvm_unreachable("auto is resolved before materialisation");
  }

private:
  struct Sizes {
    Value B, H, Sq, Sk, G, N, M, off;
  };
  struct Wave {
    Value F, R; // this head's items in earlier waves / in this wave
  };

  int64_t itemsPerSlot() const {
    return policy == Policy::SymmetricShift ? 2 : 1;
  }
  /// Work items per head: KV tiles, or (long, short) pairs for
  /// symmetric-shift, which run as two consecutive items of one unit.
  Value perHead(IndexMath &x, const Sizes &z) {
    return policy == Policy::SymmetricShift ? x.floorDiv(z.N, x.c(2)) : z.N;
  }

  /// The problem sizes inside the region being built (folded to constants
  /// when static).
  Sizes sizes(IndexMath &x) {
    auto dim = [&](Value memref, int64_t i) {
      return x.b.createOrFold<memref::DimOp>(x.loc, memref, i);
    };
    Sizes z;
    z.B = dim(op.getQ(), 0);
    z.Sq = dim(op.getQ(), 1);
    z.H = dim(op.getQ(), 2);
    z.Sk = dim(op.getK(), 1);
    z.G = shape.staticUnits ? x.c(shape.staticUnits)
                            : NumUnitsOp::create(x.b, x.loc, x.b.getIndexType()).getResult();
    z.N = x.floorDiv(x.add(z.Sk, x.c(shape.blockN - 1)), x.c(shape.blockN));
    z.M = x.floorDiv(x.add(z.Sq, x.c(shape.blockM - 1)), x.c(shape.blockM));
    z.off = shape.align == CausalAlign::BottomRight ? x.sub(z.Sk, z.Sq)
                                                    : x.c(0);
    return z;
  }

  /// Wave accounting of item `idx` of head slot (b, h) with `per` items per
  /// head in a persistent grid of G units (lib/Schedule wavePosition).
  Wave wave(IndexMath &x, const Sizes &z, Value idx, Value b, Value h,
            Value per) {
    Value hb = x.add(h, x.mul(z.H, b));
    Value headStart = x.mul(per, hb);
    Value t = x.add(idx, headStart);
    Value waveStart = x.mul(x.floorDiv(t, z.G), z.G);
    Value F = x.max(x.c(0), x.sub(waveStart, headStart));
    Value R = x.sub(x.min(x.add(headStart, per), x.add(waveStart, z.G)),
                    x.max(headStart, waveStart));
    return {F, R};
  }

  /// First Q tile KV tile `kv` touches (M if none); causal query i sees key j
  /// iff j <= i + off.
  Value firstCovered(IndexMath &x, const Sizes &z, Value kv) {
    if (shape.mask == Mask::Full)
      return x.c(0);
    // First query that sees the tile's first key: i = kv*bn - off.
    Value row = x.sub(x.mul(kv, x.c(shape.blockN)), z.off);
    Value tile = x.max(x.c(0), x.floorDiv(row, x.c(shape.blockM)));
    return x.select(x.lt(row, z.Sq), tile, z.M);
  }

  /// Last KV tile covering Q tile q (-1 if none); covering(q) = this + 1.
  Value lastCovering(IndexMath &x, const Sizes &z, Value q) {
    Value lastKV = x.sub(z.N, x.c(1));
    if (shape.mask == Mask::Full)
      return lastKV;
    Value lastQuery =
        x.sub(x.min(x.mul(x.add(q, x.c(1)), x.c(shape.blockM)), z.Sq), x.c(1));
    Value lastKey = x.add(lastQuery, z.off);
    Value tile = x.min(lastKV, x.floorDiv(lastKey, x.c(shape.blockN)));
    return x.select(x.lt(lastKey, x.c(0)), x.c(-1), tile);
  }

  void yield(IndexMath &x, ArrayRef<Value> values) {
    YieldOp::create(x.b, x.loc, values);
  }

  ScheduleShape shape;
  Policy policy;
  ScheduledAttentionBwdOp op;
};

struct DashMaterializeSchedulePass
    : mlir::dash::impl::DashMaterializeScheduleBase<
          DashMaterializeSchedulePass> {
  void runOnOperation() override {
    SmallVector<AttentionBwdOp> ops;
    getOperation()->walk([&](AttentionBwdOp op) { ops.push_back(op); });
    for (AttentionBwdOp op : ops)
      if (failed(materialize(op)))
        return signalPassFailure();
  }

  LogicalResult materialize(AttentionBwdOp op) {
    if (!op.hasBufferSemantics())
      return op.emitOpError() << "materialisation needs the memref form "
                                 "(outs(...)); bufferize tensors first";
    ScheduleAttr schedule = op.getScheduleAttr();
    if (!op.getTilingAttr() || !schedule)
      return op.emitOpError() << "needs #dash.tiling and #dash.schedule; run "
                                 "--dash-tile --dash-schedule first";
    if (schedule.getPolicy() == Policy::Auto)
      return op.emitOpError()
             << "schedule policy is still 'auto' (dynamic shapes): pick a "
                "policy, or compile one kernel per policy and let the runtime "
                "choose";
    // Static shapes: prove the choice legal now. Dynamic: the runtime does
    // it at launch with the same library.
    std::optional<sched::Problem> problem =
        getScheduleProblem(op, schedule.getNumUnits(), 1.0, 0.0);
    if (problem) {
      sched::Legality legal =
          sched::checkLegal(*problem, toSchedPolicy(schedule.getPolicy()));
      if (!legal.legal)
        return op.emitOpError() << "schedule '"
                                << stringifyPolicy(schedule.getPolicy())
                                << "' is illegal here: " << legal.reason;
    }

    OpBuilder b(op);
    Location loc = op.getLoc();
    auto newOp = ScheduledAttentionBwdOp::create(
        b, loc, op.getQ(), op.getK(), op.getV(), op.getO(), op.getDO(),
        op.getLse(), op.getOuts()[0], op.getOuts()[1], op.getOuts()[2],
        op.getMaskAttr(), op.getAlignAttr(), op.getScaleAttr(),
        op.getDeterministicAttr(), op.getTilingAttr(), schedule);

    // G is a constant only when the whole problem is static (the CPU path,
    // and kernels compiled for one shape); otherwise the launch decides it.
    ScheduleShape shape{schedule.getPolicy(), op.getTilingAttr().getBlockM(),
                        op.getTilingAttr().getBlockN(), op.getMask(),
                        op.getEffectiveAlign(),
                        problem ? schedule.getNumUnits() : 0};
    ScheduleEmitter emitter(shape, newOp);
    Type idx = b.getIndexType();
    auto build = [&](Region &region, unsigned numArgs, auto body) {
      Block *block = b.createBlock(&region);
      SmallVector<Value> args;
      for (unsigned i = 0; i < numArgs; ++i)
        args.push_back(block->addArgument(idx, loc));
      b.setInsertionPointToStart(block);
      IndexMath x(b, loc);
      body(x, args);
    };
    build(newOp.getItems(), 1,
          [&](IndexMath &x, ArrayRef<Value> a) { emitter.items(x, a[0]); });
    build(newOp.getWork(), 2, [&](IndexMath &x, ArrayRef<Value> a) {
      emitter.work(x, a[0], a[1]);
    });
    build(newOp.getVisit(), 4, [&](IndexMath &x, ArrayRef<Value> a) {
      emitter.visit(x, a[0], a[1], a[2], a[3]);
    });
    build(newOp.getRank(), 4, [&](IndexMath &x, ArrayRef<Value> a) {
      emitter.rank(x, a[0], a[1], a[2], a[3]);
    });
    op.erase();
    // Fold and drop what a formula did not use, and keep one copy of each
    // constant at the top of its region: the regions should read like the
    // formulas.
    RewritePatternSet patterns(newOp.getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    // No constant CSE: it would hoist constants out of the regions, which
    // must stay self-contained (the GPU lowering clones them into kernels).
    GreedyRewriteConfig config;
    config.enableConstantCSE(false);
    for (Region &region : newOp->getRegions())
      (void)applyPatternsGreedily(region, frozen, config);
    return success();
  }
};
} // namespace
