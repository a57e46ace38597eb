//===- dash-opt.cpp - The DASH optimizer driver ---------------------------===//
//
// mlir-opt with the dash dialect and passes, plus every upstream dialect,
// pass and LLVM IR translation the pipeline to cubin needs
// (gpu-module-to-binary translates gpu.module to LLVM IR, so translations
// must be registered, not just dialects).
//
//===----------------------------------------------------------------------===//

#include "dash/InitAllDialects.h"
#include "dash/InitAllPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  dash::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  dash::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "DASH optimizer driver: deterministic attention backward\n",
      registry));
}
