//===- Passes.h - DASH transformation passes --------------------*- C++ -*-===//

#ifndef DASH_DIALECT_DASH_TRANSFORMS_PASSES_H
#define DASH_DIALECT_DASH_TRANSFORMS_PASSES_H

#include "dash/Dialect/Dash/IR/Dash.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dash {

#define GEN_PASS_DECL
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"

} // namespace mlir::dash

#endif // DASH_DIALECT_DASH_TRANSFORMS_PASSES_H
