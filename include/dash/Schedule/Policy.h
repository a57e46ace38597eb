//===- Policy.h - Names of the tile-order schedules -------------*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_POLICY_H
#define DASH_SCHEDULE_POLICY_H

#include <optional>
#include <string_view>

namespace dash::sched {

enum class Policy { Ascending, Spt, Descending, Shift, SymmetricShift, Auto };

/// Every concrete policy, in tie-break preference order.
inline constexpr Policy kConcretePolicies[] = {
    Policy::Ascending, Policy::Spt, Policy::Descending, Policy::Shift,
    Policy::SymmetricShift};

/// "ascending", "spt", "descending", "shift", "symmetric-shift", "auto".
const char *policyName(Policy);
std::optional<Policy> parsePolicy(std::string_view);

/// True when the reduction order into dQ changes with G (shift and
/// symmetric-shift), so results are reproducible only on the same grid size.
/// Auto answers true: it may resolve to a G-dependent schedule.
bool orderDependsOnG(Policy);

/// Persistent-grid schedules (G units, each walking tiles t = u, u+G, ...);
/// the others are launched like FA3: one CTA per KV tile.
bool isPersistent(Policy);
struct Problem;
/// isPersistent(policy), or every policy under Problem::persistentLaunch.
bool runsPersistent(const Problem &, Policy);

} // namespace dash::sched

#endif // DASH_SCHEDULE_POLICY_H
