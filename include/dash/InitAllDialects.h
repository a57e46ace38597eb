//===- InitAllDialects.h - Register DASH dialects ---------------*- C++ -*-===//

#ifndef DASH_INITALLDIALECTS_H
#define DASH_INITALLDIALECTS_H

#include "dash/Dialect/Dash/IR/Dash.h"
#include "mlir/IR/DialectRegistry.h"

namespace dash {
/// Adds the dash dialect to `registry` (upstream dialects are the caller's).
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::dash::DashDialect>();
}
} // namespace dash

#endif // DASH_INITALLDIALECTS_H
