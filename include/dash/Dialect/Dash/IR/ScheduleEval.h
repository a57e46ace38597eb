//===- ScheduleEval.h - Evaluate materialised schedule regions --*- C++ -*-===//
//
// A tiny interpreter for the `arith` index code in the regions of
// dash.scheduled_attention_bwd. The verifier uses it to prove a static
// schedule well formed, and tests use it to compare the IR with lib/Schedule.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_SCHEDULEEVAL_H
#define DASH_DIALECT_DASH_IR_SCHEDULEEVAL_H

#include "mlir/IR/Region.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::dash {

/// Evaluates `region` (one block, index arguments, `dash.yield` terminator)
/// on `args`. Values defined above the region must be `arith.constant`.
/// Returns false and sets `error` on an unsupported op, a division by zero
/// or a non-constant capture.
bool evaluateScheduleRegion(Region &region, llvm::ArrayRef<int64_t> args,
                            llvm::SmallVectorImpl<int64_t> &results,
                            std::string &error);

} // namespace mlir::dash

#endif // DASH_DIALECT_DASH_IR_SCHEDULEEVAL_H
