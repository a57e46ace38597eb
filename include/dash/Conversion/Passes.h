//===- Passes.h - DASH conversion passes ------------------------*- C++ -*-===//

#ifndef DASH_CONVERSION_PASSES_H
#define DASH_CONVERSION_PASSES_H

#include "dash/Dialect/Dash/IR/Dash.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dash {

#define GEN_PASS_DECL
#include "dash/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dash/Conversion/Passes.h.inc"

} // namespace mlir::dash

#endif // DASH_CONVERSION_PASSES_H
