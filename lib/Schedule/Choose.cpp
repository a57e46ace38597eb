//===- Choose.cpp - Pick the schedule with the smallest makespan ----------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Schedules.h"

#include <cmath>
#include <limits>

namespace dash::sched {

Choice choose(const Problem &p) {
  Choice best{Policy::Ascending, {}};
  best.model.makespan = best.model.criticalPath =
      std::numeric_limits<double>::infinity();
  std::string err = validate(p);
  if (!err.empty()) {
    best.model.note = err;
    return best;
  }
  bool have = false;
  for (Policy policy : kConcretePolicies) {
    if (!checkLegal(p, policy).legal)
      continue;
    ModelResult r = simulate(p, policy);
    if (r.deadlock || !std::isfinite(r.makespan))
      continue;
    if (!have) {
      best = {policy, r};
      have = true;
      continue;
    }
    double tol = 1e-9 * std::max(std::fabs(best.model.makespan), std::fabs(r.makespan));
    bool tie = std::fabs(r.makespan - best.model.makespan) <= tol;
    // On a tie keep the earlier policy unless it depends on G and this one
    // does not: a G-independent order gives the same bits on every GPU.
    if ((!tie && r.makespan < best.model.makespan) ||
        (tie && orderDependsOnG(best.policy) && !orderDependsOnG(policy)))
      best = {policy, r};
  }
  return best;
}

} // namespace dash::sched
