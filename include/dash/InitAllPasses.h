//===- InitAllPasses.h - Register DASH passes -------------------*- C++ -*-===//

#ifndef DASH_INITALLPASSES_H
#define DASH_INITALLPASSES_H

#include "dash/Dialect/Dash/Transforms/Passes.h"

namespace dash {
/// Registers every DASH pass and pipeline with the global registry.
inline void registerAllPasses() { mlir::dash::registerDashPasses(); }
} // namespace dash

#endif // DASH_INITALLPASSES_H
