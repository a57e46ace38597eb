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

/// Options of the GPU pipeline.
struct GPUPipelineOptions {
  std::string arch = "sm_90a";
  std::string features = "+ptx80";
  int64_t optLevel = 3;
  std::string format = "bin"; // isa (PTX text), bin (cubin), fatbin
  int64_t threads = 0;        // 0: the mma mode's own count
  std::string mma = "wgmma";  // wgmma | sync | simt (convert-dash-to-gpu)
  std::string loads; // cp-async | tma (wgmma only); empty: tma for wgmma
  std::string dumpDir;        // if set: the IR after each stage
};

/// dash.attention_bwd (memrefs) -> tile -> schedule -> materialise ->
/// gpu.module of three kernels -> NVVM -> PTX -> cubin (ptxas) in a
/// gpu.binary.
void buildDashPipeline(mlir::OpPassManager &pm,
                       const ScheduleOptions &schedule,
                       const GPUPipelineOptions &gpu);

/// Registers `dash-lower-to-cpu` and `dash-pipeline`.
void registerDashPipelines();

} // namespace dash

#endif // DASH_PIPELINES_PIPELINES_H
