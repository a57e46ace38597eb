//===- CheckSchedule.cpp - Materialised regions vs lib/Schedule -----------===//
//
// Test pass: the IR regions and lib/Schedule are two spellings of the same
// formulas (the runtime and dash-sched use the library, the kernels the IR).
// This pass proves they agree on a given problem, task by task.
//
//===----------------------------------------------------------------------===//

#include "dash/Dialect/Dash/IR/ScheduleEval.h"
#include "dash/Dialect/Dash/IR/ScheduleProblem.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"

namespace mlir::dash {
#define GEN_PASS_DEF_DASHCHECKSCHEDULE
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;
namespace sched = ::dash::sched;

namespace {
struct DashCheckSchedulePass
    : mlir::dash::impl::DashCheckScheduleBase<DashCheckSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](ScheduledAttentionBwdOp op) {
      return succeeded(check(op)) ? WalkResult::advance()
                                  : WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult check(ScheduledAttentionBwdOp op) {
    ScheduleAttr schedule = op.getSchedule();
    std::optional<sched::Problem> problem = getScheduleProblem(
        cast<ShapedType>(op.getQ().getType()),
        cast<ShapedType>(op.getK().getType()), op.getMask(),
        op.getEffectiveAlign(), op.getTiling(), schedule.getNumUnits(), 1.0,
        0.0);
    if (!problem)
      return op.emitError() << "dash-check-schedule needs static shapes";
    const sched::Problem &p = *problem;
    sched::Policy policy = toSchedPolicy(schedule.getPolicy());
    std::string err;
    SmallVector<int64_t, 4> out;
    int64_t tasks = 0;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.headsQ; ++h)
        for (int64_t kv = 0; kv < p.numKVTiles(); ++kv)
          for (int64_t step = 0; step < sched::walkLength(p, kv); ++step) {
            if (!evaluateScheduleRegion(op.getVisit(), {b, h, kv, step}, out,
                                        err))
              return op.emitError() << err;
            int64_t q = out[0];
            int64_t want = sched::visitQTile(p, policy, b, h, kv, step);
            if (q != want)
              return op.emitError()
                     << "visit(b=" << b << ", h=" << h << ", kv=" << kv
                     << ", step=" << step << "): IR says " << q
                     << ", lib/Schedule says " << want;
            if (!evaluateScheduleRegion(op.getRank(), {b, h, kv, q}, out, err))
              return op.emitError() << err;
            int64_t wantRank = sched::rankOf(p, policy, b, h, kv, q);
            if (out[0] != wantRank)
              return op.emitError()
                     << "rank(b=" << b << ", h=" << h << ", kv=" << kv
                     << ", q=" << q << "): IR says " << out[0]
                     << ", lib/Schedule says " << wantRank;
            ++tasks;
          }
    if (printOrder && failed(printUnits(op)))
      return failure();
    op.emitRemark() << "schedule '" << stringifyPolicy(schedule.getPolicy())
                    << "' matches lib/Schedule on " << tasks << " tasks";
    return success();
  }

  /// One remark per unit: "unit 0: (b0 h0 kv3) q3:r0 q0:r1 ..." in the
  /// order the unit executes them, evaluated from the IR alone.
  LogicalResult printUnits(ScheduledAttentionBwdOp op) {
    std::string err;
    SmallVector<int64_t, 4> out;
    auto eval = [&](Region &r, ArrayRef<int64_t> args) {
      return evaluateScheduleRegion(r, args, out, err);
    };
    for (int64_t unit = 0; unit < op.getSchedule().getNumUnits(); ++unit) {
      if (!eval(op.getItems(), {unit}))
        return op.emitError() << err;
      std::string line = "unit " + std::to_string(unit) + ":";
      for (int64_t item = 0, e = out[0]; item < e; ++item) {
        if (!eval(op.getWork(), {unit, item}))
          return op.emitError() << err;
        int64_t b = out[0], h = out[1], kv = out[2], len = out[3];
        line += " (b" + std::to_string(b) + " h" + std::to_string(h) + " kv" +
                std::to_string(kv) + ")";
        for (int64_t step = 0; step < len; ++step) {
          if (!eval(op.getVisit(), {b, h, kv, step}))
            return op.emitError() << err;
          int64_t q = out[0];
          if (!eval(op.getRank(), {b, h, kv, q}))
            return op.emitError() << err;
          line += " q" + std::to_string(q) + ":r" + std::to_string(out[0]);
        }
      }
      op.emitRemark() << line;
    }
    return success();
  }
};
} // namespace
