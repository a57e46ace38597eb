//===- ScheduleProblem.h - dash op <-> lib/Schedule bridge ------*- C++ -*-===//
//
// Translates a tiled dash.attention_bwd into the plain-C++ scheduling
// problem of lib/Schedule, so every pass asks the model the same question.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_SCHEDULEPROBLEM_H
#define DASH_DIALECT_DASH_IR_SCHEDULEPROBLEM_H

#include "dash/Dialect/Dash/IR/Dash.h"
#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <optional>

namespace mlir::dash {

/// The lib/Schedule policy of a dialect policy, and back.
::dash::sched::Policy toSchedPolicy(Policy policy);
Policy fromSchedPolicy(::dash::sched::Policy policy);

/// Parses a pass-option spelling ("symmetric-shift" or "symmetric_shift").
std::optional<Policy> parsePolicyOption(llvm::StringRef text);

/// The scheduling problem of an attention backward with BSHD `q` and `k`,
/// or nullopt when a size it needs (B, S_q, S_k, H_q, H_kv) is dynamic.
std::optional<::dash::sched::Problem>
getScheduleProblem(ShapedType q, ShapedType k, Mask mask, CausalAlign align,
                   TilingAttr tiling, int64_t numUnits, double c, double r);

/// Same, for a tiled dash.attention_bwd (ordered as the op is deterministic).
std::optional<::dash::sched::Problem>
getScheduleProblem(AttentionBwdOp op, int64_t numUnits, double c, double r);

} // namespace mlir::dash

#endif // DASH_DIALECT_DASH_IR_SCHEDULEPROBLEM_H
