//===- Pipelines.cpp - DASH pass pipelines --------------------------------===//

#include "dash/Pipelines/Pipelines.h"

#include "dash/Conversion/Passes.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

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
/// Writes the module to `<dir>/<stage>.mlir` (the pipeline's dump-dir).
struct DumpIRPass : PassWrapper<DumpIRPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DumpIRPass)
  DumpIRPass(std::string dir, std::string stage)
      : dir(std::move(dir)), stage(std::move(stage)) {}
  StringRef getArgument() const final { return "dash-dump-ir"; }
  void runOnOperation() override {
    if (llvm::sys::fs::create_directories(dir)) {
      getOperation()->emitError() << "dash-pipeline: cannot create dump-dir '"
                                  << dir << "'";
      return signalPassFailure();
    }
    std::string error;
    auto file = mlir::openOutputFile(dir + "/" + stage + ".mlir", &error);
    if (!file) {
      getOperation()->emitError() << "dash-pipeline: " << error;
      return signalPassFailure();
    }
    getOperation()->print(file->os());
    file->keep();
  }
  std::string dir, stage;
};
} // namespace

void ::dash::buildDashPipeline(OpPassManager &pm,
                               const ::dash::ScheduleOptions &schedule,
                               const ::dash::GPUPipelineOptions &gpu) {
  auto dump = [&](const char *stage) {
    if (!gpu.dumpDir.empty())
      pm.addPass(std::make_unique<DumpIRPass>(gpu.dumpDir, stage));
  };
  // Each kernel family has its tiles (dash-tile kernels=...): wgmma 64x128
  // (128x128 at D = 64), sync 64x64; simt takes FA3's.
  mlir::dash::DashTileOptions tile;
  tile.kernels = gpu.mma == "simt" ? "fa3" : gpu.mma;
  tile.blockM = schedule.blockM;
  tile.blockN = schedule.blockN;
  pm.addPass(mlir::dash::createDashTile(tile));
  mlir::dash::DashScheduleOptions sched;
  sched.policy = schedule.policy;
  sched.numUnits = schedule.numUnits;
  // The GPU kernels run every schedule as a persistent grid (as the
  // runtime's auto models it).
  sched.launch = "persistent";
  pm.addPass(mlir::dash::createDashSchedule(sched));
  dump("01-scheduled");
  pm.addPass(mlir::dash::createDashMaterializeSchedule());
  dump("02-materialized");
  mlir::dash::ConvertDashToGPUOptions toGPU;
  toGPU.threads = gpu.threads;
  toGPU.mma = gpu.mma;
  toGPU.loads = gpu.loads;
  pm.addPass(mlir::dash::createConvertDashToGPU(toGPU));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  dump("03-gpu");
  mlir::gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = gpu.arch;
  // TMA kernels fence the tensor maps (fence.proxy.tensormap, PTX ISA 8.3):
  // the default ISA is raised for them rather than failing in the backend.
  bool tma = gpu.loads == "tma" || (gpu.loads.empty() && gpu.mma == "wgmma");
  nvvm.cubinFeatures = tma && gpu.features == "+ptx80"
                           ? std::string("+ptx83")
                           : gpu.features;
  nvvm.optLevel = gpu.optLevel;
  nvvm.cubinFormat = gpu.format;
  nvvm.kernelUseBarePtrCallConv = false; // memref descriptors: see Runtime.md
  mlir::gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  dump("04-binary");
}

namespace {
/// The dash-tile / dash-schedule options both pipelines take.
template <typename Derived>
struct ScheduleCLOptions : public PassPipelineOptions<Derived> {
  using Base = PassPipelineOptions<Derived>;
  typename Base::template Option<std::string> policy{
      *this, "policy", llvm::cl::desc("schedule policy (dash-schedule)"),
      llvm::cl::init("auto")};
  typename Base::template Option<int64_t> numUnits{
      *this, "num-units", llvm::cl::desc("persistent units G (for the model)"),
      llvm::cl::init(132)};
  typename Base::template Option<int64_t> blockM{
      *this, "block-m", llvm::cl::desc("Q tile rows"), llvm::cl::init(0)};
  typename Base::template Option<int64_t> blockN{
      *this, "block-n", llvm::cl::desc("KV tile rows"), llvm::cl::init(0)};

  ::dash::ScheduleOptions schedule() const {
    ::dash::ScheduleOptions s;
    s.policy = policy;
    s.numUnits = numUnits;
    s.blockM = blockM;
    s.blockN = blockN;
    return s;
  }
};

struct CPUPipelineOptions : public ScheduleCLOptions<CPUPipelineOptions> {
  Option<bool> exact{*this, "exact-intermediates",
                     llvm::cl::desc("keep P and dS in f32"),
                     llvm::cl::init(false)};
};

struct GPUPipelineCLOptions : public ScheduleCLOptions<GPUPipelineCLOptions> {
  Option<std::string> arch{*this, "arch", llvm::cl::desc("GPU arch (sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (+ptx80 or newer; loads=tma: +ptx83)"),
                               llvm::cl::init("+ptx80")};
  Option<int64_t> opt{*this, "opt-level", llvm::cl::desc("LLVM opt level"),
                      llvm::cl::init(3)};
  Option<std::string> format{*this, "format",
                             llvm::cl::desc("isa (PTX) | bin (cubin) | fatbin"),
                             llvm::cl::init("bin")};
  Option<std::string> dumpDir{*this, "dump-dir",
                              llvm::cl::desc("write the IR after each stage"),
                              llvm::cl::init("")};
  Option<int64_t> threads{*this, "threads",
                          llvm::cl::desc("threads per CTA (0: the mma mode's)"),
                          llvm::cl::init(0)};
  Option<std::string> mma{*this, "mma",
                          llvm::cl::desc("kernel family: wgmma | sync | simt"),
                          llvm::cl::init("wgmma")};
  Option<std::string> loads{
      *this, "loads",
      llvm::cl::desc("Q/dO/K/V by cp-async (MMA threads) | tma (wgmma "
                     "only: producer warp, runtime tensor maps); unset: tma "
                     "for wgmma, cp-async otherwise"),
      llvm::cl::init("")};
};
} // namespace

void ::dash::registerDashPipelines() {
  PassPipelineRegistration<GPUPipelineCLOptions>(
      "dash-pipeline",
      "dash.attention_bwd on memrefs -> tile, schedule, materialise, "
      "gpu.module -> NVVM -> PTX -> cubin (gpu.binary)",
      [](OpPassManager &pm, const GPUPipelineCLOptions &o) {
        ::dash::GPUPipelineOptions g;
        g.arch = o.arch;
        g.features = o.features;
        g.optLevel = o.opt;
        g.format = o.format;
        g.dumpDir = o.dumpDir;
        g.threads = o.threads;
        g.mma = o.mma;
        g.loads = o.loads;
        buildDashPipeline(pm, o.schedule(), g);
      });
  PassPipelineRegistration<CPUPipelineOptions>(
      "dash-lower-to-cpu",
      "dash.attention_bwd on memrefs -> tile, schedule, materialise, loops "
      "-> LLVM dialect (for mlir-runner / the ExecutionEngine)",
      [](OpPassManager &pm, const CPUPipelineOptions &o) {
        buildDashToCPUPipeline(pm, o.schedule(), o.exact);
      });
}
