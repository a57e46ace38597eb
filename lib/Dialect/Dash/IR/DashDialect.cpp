//===- DashDialect.cpp - DASH dialect registration ------------------------===//

#include "dash/Dialect/Dash/IR/Dash.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dash;

#include "dash/Dialect/Dash/IR/DashOpsDialect.cpp.inc"

void DashDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dash/Dialect/Dash/IR/DashOps.cpp.inc"
      >();
}
