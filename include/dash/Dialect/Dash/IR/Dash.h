//===- Dash.h - DASH dialect public header ----------------------*- C++ -*-===//
//
// Everything a user of the dash dialect includes: dialect, enums,
// attributes and ops.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_DASH_H
#define DASH_DIALECT_DASH_IR_DASH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dash/Dialect/Dash/IR/DashOpsDialect.h.inc"

#include "dash/Dialect/Dash/IR/DashEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dash/Dialect/Dash/IR/DashAttrs.h.inc"

#define GET_OP_CLASSES
#include "dash/Dialect/Dash/IR/DashOps.h.inc"

#endif // DASH_DIALECT_DASH_IR_DASH_H
