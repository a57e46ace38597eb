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

#include "mlir/IR/Builders.h"

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
  Value min(Value x, Value y) { return b.createOrFold<arith::MinSIOp>(loc, x, y); }
  Value max(Value x, Value y) { return b.createOrFold<arith::MaxSIOp>(loc, x, y); }
  Value lt(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return b.createOrFold<arith::SelectOp>(loc, cond, x, y);
  }
};

/// One region builder per formula; `p` holds the static sizes.
class ScheduleEmitter {
public:
  ScheduleEmitter(const sched::Problem &p, Policy policy)
      : p(p), policy(policy), n(p.numKVTiles()), m(p.numQTiles()),
        g(p.numUnits) {}

  /// Work items per head: KV tiles, or (long, short) pairs for
  /// symmetric-shift, which run as two consecutive items of one unit.
  int64_t perHead() const {
    return policy == Policy::SymmetricShift ? n / 2 : n;
  }
  int64_t itemsPerSlot() const {
    return policy == Policy::SymmetricShift ? 2 : 1;
  }

  // items(unit) = ceil((T - unit) / G) launch slots, T = B*H*perHead.
  void items(IndexMath &x, Value unit) {
    int64_t total = p.numHeadSlots() * perHead();
    Value slots = x.floorDiv(x.sub(x.c(total + g - 1), unit), x.c(g));
    yield(x, {itemsPerSlot() == 1 ? slots : x.mul(slots, x.c(itemsPerSlot()))});
  }

  // work(unit, item) = (b, h, kv, walk length); launch slot t = unit + k*G.
  void work(IndexMath &x, Value unit, Value item) {
    Value slot = item, second;
    if (policy == Policy::SymmetricShift) {
      slot = x.floorDiv(item, x.c(2));
      second = x.mod(item, x.c(2)); // 0: long tile p, 1: short tile N-1-p
    }
    Value t = x.add(unit, x.mul(slot, x.c(g)));
    Value hb = x.floorDiv(t, x.c(perHead()));
    Value idx = x.mod(t, x.c(perHead()));
    Value b = x.floorDiv(hb, x.c(p.headsQ));
    Value h = x.mod(hb, x.c(p.headsQ));
    Value kv = idx;
    if (policy == Policy::Spt) // shortest walk first: j = N-1 down to 0
      kv = x.sub(x.c(n - 1), idx);
    if (policy == Policy::SymmetricShift)
      kv = x.select(x.lt(second, x.c(1)), idx, x.sub(x.c(n - 1), idx));
    Value len = x.sub(x.c(m), firstCovered(x, kv));
    yield(x, {b, h, kv, len});
  }

  // visit(b, h, kv, step) = Q tile.
  void visit(IndexMath &x, Value b, Value h, Value kv, Value step) {
    switch (policy) {
    case Policy::Ascending:
    case Policy::Spt:
      return yield(x, {x.add(firstCovered(x, kv), step)});
    case Policy::Descending:
      return yield(x, {x.sub(x.c(m - 1), step)});
    case Policy::Shift: {
      Wave w = wave(x, kv, b, h, n);
      return yield(x, {x.mod(x.add(x.sub(kv, w.F), step), x.c(m))});
    }
    case Policy::SymmetricShift: {
      int64_t s = p.blockN / p.blockM;
      Value isLong = x.lt(kv, x.c(n / 2));
      Value pair = x.select(isLong, kv, x.sub(x.c(n - 1), kv));
      Wave w = wave(x, pair, b, h, n / 2);
      Value i = x.sub(pair, w.F);
      Value rs = x.mul(x.c(s), x.sub(x.add(w.F, w.R), x.c(1)));
      Value rect = x.sub(x.c(m), rs);
      Value inRect = x.add(rs, x.mod(x.add(i, step), rect));
      Value inTri = x.add(x.mul(x.c(s), pair), x.sub(step, rect));
      Value longQ = x.select(x.lt(step, rect), inRect, inTri);
      Value shortQ = x.sub(x.c(m - 1), step);
      return yield(x, {x.select(isLong, longQ, shortQ)});
    }
    case Policy::Auto:
      break;
    }
    llvm_unreachable("auto is resolved before materialisation");
  }

  // rank(b, h, kv, q) = position of kv in dQ row q's reduction order.
  void rank(IndexMath &x, Value b, Value h, Value kv, Value q) {
    switch (policy) {
    case Policy::Ascending:
    case Policy::Descending:
      return yield(x, {kv});
    case Policy::Spt: // diagonal first: covering(q) - 1 - j
      return yield(x, {x.sub(lastCovering(x, q), kv)});
    case Policy::Shift: {
      Wave w = wave(x, kv, b, h, n);
      Value a = x.sub(kv, w.F);
      Value off = x.sub(x.min(q, x.sub(w.R, x.c(1))), a);
      return yield(x, {x.add(w.F, x.mod(off, w.R))});
    }
    case Policy::SymmetricShift: {
      int64_t s = p.blockN / p.blockM;
      Value isLong = x.lt(kv, x.c(n / 2));
      Value pair = x.select(isLong, kv, x.sub(x.c(n - 1), kv));
      Wave w = wave(x, pair, b, h, n / 2);
      Value i = x.sub(pair, w.F);
      // Adds from earlier waves: all F long tiles, plus the short tiles
      // N-1-p' (p' < F) that reach row q.
      Value fromShort = x.sub(w.F, x.floorDiv(x.sub(x.c(m - 1), q), x.c(s)));
      Value e = x.add(w.F, x.max(x.c(0), fromShort));
      Value shortRank = x.add(e, x.add(w.R, x.sub(x.sub(w.R, x.c(1)), i)));
      Value rs = x.mul(x.c(s), x.sub(x.add(w.F, w.R), x.c(1)));
      Value rectOff = x.sub(x.min(x.sub(q, rs), x.sub(w.R, x.c(1))), i);
      Value rectRank = x.add(e, x.mod(rectOff, w.R));
      Value triRank = x.add(e, x.sub(x.floorDiv(q, x.c(s)), pair));
      Value longRank = x.select(x.lt(q, rs), triRank, rectRank);
      return yield(x, {x.select(isLong, longRank, shortRank)});
    }
    case Policy::Auto:
      break;
    }
    llvm_unreachable("auto is resolved before materialisation");
  }

private:
  struct Wave {
    Value F, R; // this head's items in earlier waves / in this wave
  };

  /// Wave accounting of item `idx` of head slot (b, h) with `per` items per
  /// head in a persistent grid of G units (lib/Schedule wavePosition).
  Wave wave(IndexMath &x, Value idx, Value b, Value h, int64_t per) {
    Value hb = x.add(h, x.mul(x.c(p.headsQ), b));
    Value headStart = x.mul(x.c(per), hb);
    Value t = x.add(idx, headStart);
    Value waveStart = x.mul(x.floorDiv(t, x.c(g)), x.c(g));
    Value F = x.max(x.c(0), x.sub(waveStart, headStart));
    Value R = x.sub(x.min(x.add(headStart, x.c(per)), x.add(waveStart, x.c(g))),
                    x.max(headStart, waveStart));
    return {F, R};
  }

  /// First Q tile KV tile `kv` touches (M if none); causal query i sees key j
  /// iff j <= i + off.
  Value firstCovered(IndexMath &x, Value kv) {
    if (p.mask == sched::Mask::Full)
      return x.c(0);
    // First query that sees the tile's first key: i = kv*bn - off.
    Value row = x.sub(x.mul(kv, x.c(p.blockN)), x.c(p.maskOffset()));
    Value tile = x.max(x.c(0), x.floorDiv(row, x.c(p.blockM)));
    return x.select(x.lt(row, x.c(p.seqQ)), tile, x.c(m));
  }

  /// Last KV tile covering Q tile q (-1 if none); covering(q) = this + 1.
  Value lastCovering(IndexMath &x, Value q) {
    if (p.mask == sched::Mask::Full)
      return x.c(n - 1);
    Value lastQuery = x.sub(
        x.min(x.mul(x.add(q, x.c(1)), x.c(p.blockM)), x.c(p.seqQ)), x.c(1));
    Value lastKey = x.add(lastQuery, x.c(p.maskOffset()));
    Value tile = x.min(x.c(n - 1), x.floorDiv(lastKey, x.c(p.blockN)));
    return x.select(x.lt(lastKey, x.c(0)), x.c(-1), tile);
  }

  void yield(IndexMath &x, ArrayRef<Value> values) {
    YieldOp::create(x.b, x.loc, values);
  }

  const sched::Problem &p;
  Policy policy;
  int64_t n, m, g;
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
    std::optional<sched::Problem> problem =
        getScheduleProblem(op, schedule.getNumUnits(), 1.0, 0.0);
    if (!problem)
      return op.emitOpError() << "materialisation needs static B, S_q, S_k, "
                                 "H_q and H_kv; with dynamic shapes the "
                                 "runtime evaluates the schedule";
    if (schedule.getPolicy() == Policy::Auto)
      return op.emitOpError() << "schedule policy is still 'auto'";
    sched::Legality legal =
        sched::checkLegal(*problem, toSchedPolicy(schedule.getPolicy()));
    if (!legal.legal)
      return op.emitOpError() << "schedule '"
                              << stringifyPolicy(schedule.getPolicy())
                              << "' is illegal here: " << legal.reason;

    OpBuilder b(op);
    Location loc = op.getLoc();
    auto newOp = ScheduledAttentionBwdOp::create(
        b, loc, op.getQ(), op.getK(), op.getV(), op.getO(), op.getDO(),
        op.getLse(), op.getOuts()[0], op.getOuts()[1], op.getOuts()[2],
        op.getMaskAttr(), op.getAlignAttr(), op.getScaleAttr(),
        op.getDeterministicAttr(), op.getTilingAttr(), schedule);

    ScheduleEmitter emitter(*problem, schedule.getPolicy());
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
    return success();
  }
};
} // namespace
