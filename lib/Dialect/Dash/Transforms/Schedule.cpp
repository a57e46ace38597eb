//===- Schedule.cpp - dash-schedule: choose the tile schedule -------------===//
//
// Asks the DAG critical-path model of lib/Schedule which tile order to run
// and records the answer (and the model's figures) as #dash.schedule.
//
//===----------------------------------------------------------------------===//

#include "dash/Dialect/Dash/Transforms/Passes.h"
#include "dash/Dialect/Dash/IR/ScheduleProblem.h"

#include <cmath>
#include <cstdio>

namespace mlir::dash {
#define GEN_PASS_DEF_DASHSCHEDULE
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;
namespace sched = ::dash::sched;

namespace {
struct DashSchedulePass
    : mlir::dash::impl::DashScheduleBase<DashSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<Policy> requested = parsePolicyOption(policy);
    if (!requested) {
      getOperation()->emitError()
          << "dash-schedule: unknown policy '" << policy
          << "'; expected ascending, spt, descending, shift, symmetric-shift "
             "or auto";
      return signalPassFailure();
    }
    if (launch != "fa3" && launch != "persistent") {
      getOperation()->emitError() << "dash-schedule: unknown launch '"
                                  << launch << "'; expected fa3 or persistent";
      return signalPassFailure();
    }
    if (numUnits < 1 || !(computeCost > 0) || !std::isfinite(computeCost) ||
        !(reduceCost >= 0) || !std::isfinite(reduceCost)) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), "%lld, %g, %g", (long long)numUnits,
                    (double)computeCost, (double)reduceCost);
      getOperation()->emitError()
          << "dash-schedule: need num-units >= 1, c > 0 and r >= 0 (got "
          << buf << ")";
      return signalPassFailure();
    }
    WalkResult result = getOperation()->walk([&](AttentionBwdOp op) {
      return succeeded(scheduleOne(op, *requested)) ? WalkResult::advance()
                                                   : WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult scheduleOne(AttentionBwdOp op, Policy requested) {
    if (!op.getTilingAttr())
      return op.emitOpError()
             << "needs a #dash.tiling before scheduling; run --dash-tile first";
    MLIRContext *ctx = op.getContext();
    std::optional<sched::Problem> problem =
        getScheduleProblem(op, numUnits, computeCost, reduceCost);
    if (problem)
      problem->persistentLaunch = launch == "persistent";

    // Dynamic shapes: record the request; the runtime resolves it with the
    // same model once the sizes are known.
    if (!problem) {
      if (requested == Policy::Shift && op.getMask() != Mask::Full)
        return op.emitOpError() << "schedule 'shift' needs a full mask";
      if (requested == Policy::SymmetricShift && op.getMask() != Mask::Causal)
        return op.emitOpError()
               << "schedule 'symmetric_shift' needs a causal mask";
      op.setScheduleAttr(ScheduleAttr::get(ctx, requested, requested,
                                           numUnits, computeCost, reduceCost,
                                           0.0, 0.0));
      return success();
    }

    if (std::string why = sched::validate(*problem); !why.empty())
      return op.emitOpError() << "cannot be scheduled: " << why;

    Policy chosen = requested;
    sched::ModelResult model;
    if (requested == Policy::Auto) {
      sched::Choice choice = sched::choose(*problem);
      chosen = fromSchedPolicy(choice.policy);
      model = choice.model;
    } else {
      sched::Legality legal =
          sched::checkLegal(*problem, toSchedPolicy(requested));
      if (!legal.legal)
        return op.emitOpError()
               << "schedule '" << stringifyPolicy(requested)
               << "' is illegal here: " << legal.reason;
      model = sched::simulate(*problem, toSchedPolicy(requested));
    }
    // simulate() already measured the critical path: no second run.
    op.setScheduleAttr(ScheduleAttr::get(ctx, chosen, requested, numUnits,
                                         computeCost, reduceCost,
                                         model.makespan, model.criticalPath));
    return success();
  }
};
} // namespace
