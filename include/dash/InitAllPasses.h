//===- InitAllPasses.h - Register DASH passes -------------------*- C++ -*-===//

#ifndef DASH_INITALLPASSES_H
#define DASH_INITALLPASSES_H

#include "dash/Conversion/Passes.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"
#include "dash/Pipelines/Pipelines.h"

namespace dash {
/// Registers every DASH pass and pipeline with the global registry.
inline void registerAllPasses() {
  mlir::dash::registerDashPasses();
  mlir::dash::registerDashConversionPasses();
  registerDashPipelines();
}
} // namespace dash

#endif // DASH_INITALLPASSES_H
