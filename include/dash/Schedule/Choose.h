//===- Choose.h - Pick the schedule with the smallest makespan --*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_CHOOSE_H
#define DASH_SCHEDULE_CHOOSE_H

#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Simulate.h"

#include <vector>

namespace dash::sched {

struct Choice {
  Policy policy;
  ModelResult model;
};

/// Smallest modelled makespan among the legal policies. For ordered
/// (deterministic) problems, makespans within p.tieTolerance (relative) tie
/// and a tie goes to a G-independent reduction order, then to the earlier
/// entry of kConcretePolicies; unordered problems take the smallest makespan
/// (pickBest). An invalid problem yields Ascending with the reason in
/// model.note and makespan +inf.
Choice choose(const Problem &);

/// The same rule over already evaluated candidates (all legal); for callers
/// that report every schedule anyway. Empty input gives Ascending, +inf.
/// The candidate with the smallest makespan. With `preferGIndependent`
/// (deterministic kernels), makespans within `relTie` of each other
/// (relative) tie and a tie goes to a policy whose reduction order does not
/// depend on G -- the same bits on every GPU -- then to the earlier
/// candidate. Without it (non-deterministic kernels, whose adds are
/// unordered: no order gives the same bits twice) the strictly smaller
/// makespan wins and only exact ties go to the earlier candidate.
/// Every caller states both (no defaults: a deterministic rule picked by
/// omission would be wrong for unordered kernels).
Choice pickBest(const std::vector<Choice> &candidates, double relTie,
                bool preferGIndependent);

} // namespace dash::sched

#endif // DASH_SCHEDULE_CHOOSE_H
