//===- Pipelines.h - DASH pass pipelines ------------------------*- C++ -*-===//

#ifndef DASH_PIPELINES_PIPELINES_H
#define DASH_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace dash {

/// Options shared by the pipelines: the decisions of dash-tile and
/// dash-schedule.
struct ScheduleOptions {
  std::string policy = "auto";
  int64_t numUnits = 132;
  int64_t blockM = 0, blockN = 0;
};

/// dash.attention_bwd (memrefs) -> tile -> schedule -> materialise -> loops
/// -> LLVM dialect, ready for the ExecutionEngine / mlir-runner.
void buildDashToCPUPipeline(mlir::OpPassManager &pm,
                            const ScheduleOptions &schedule,
                            bool exactIntermediates);

/// Registers `dash-lower-to-cpu`.
void registerDashPipelines();

} // namespace dash

#endif // DASH_PIPELINES_PIPELINES_H
