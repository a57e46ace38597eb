//===- Pipelines.cpp - DASH pass pipelines --------------------------------===//

#include "dash/Pipelines/Pipelines.h"

#include "dash/Conversion/Passes.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ::dash::buildDashToCPUPipeline(OpPassManager &pm,
                                  const ::dash::ScheduleOptions &schedule,
                                  bool exactIntermediates) {
  mlir::dash::DashTileOptions tile;
  tile.blockM = schedule.blockM;
  tile.blockN = schedule.blockN;
  pm.addPass(mlir::dash::createDashTile(tile));
  mlir::dash::DashScheduleOptions sched;
  sched.policy = schedule.policy;
  sched.numUnits = schedule.numUnits;
  pm.addPass(mlir::dash::createDashSchedule(sched));
  pm.addPass(mlir::dash::createDashMaterializeSchedule());
  mlir::dash::ConvertDashToLoopsOptions loops;
  loops.exactIntermediates = exactIntermediates;
  pm.addPass(mlir::dash::createConvertDashToLoops(loops));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // bf16 <-> f32 as integer code: no soft-float library calls in the JIT.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
struct CPUPipelineOptions
    : public PassPipelineOptions<CPUPipelineOptions> {
  Option<std::string> policy{*this, "policy",
                             llvm::cl::desc("schedule policy (dash-schedule)"),
                             llvm::cl::init("auto")};
  Option<int64_t> numUnits{*this, "num-units",
                           llvm::cl::desc("persistent units G"),
                           llvm::cl::init(132)};
  Option<int64_t> blockM{*this, "block-m", llvm::cl::desc("Q tile rows"),
                         llvm::cl::init(0)};
  Option<int64_t> blockN{*this, "block-n", llvm::cl::desc("KV tile rows"),
                         llvm::cl::init(0)};
  Option<bool> exact{*this, "exact-intermediates",
                     llvm::cl::desc("keep P and dS in f32"),
                     llvm::cl::init(false)};
};
} // namespace

void ::dash::registerDashPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "dash-lower-to-cpu",
      "dash.attention_bwd on memrefs -> tile, schedule, materialise, loops "
      "-> LLVM dialect (for mlir-runner / the ExecutionEngine)",
      [](OpPassManager &pm, const CPUPipelineOptions &o) {
        ::dash::ScheduleOptions s;
        s.policy = o.policy;
        s.numUnits = o.numUnits;
        s.blockM = o.blockM;
        s.blockN = o.blockN;
        buildDashToCPUPipeline(pm, s, o.exact);
      });
}
