//===- FuzzParse.cpp - libFuzzer target: parse, verify, tile, schedule ----===//
//
// Part of the DASH project. Arbitrary text is parsed (and so verified) in a
// context with the dash dialect plus func/arith/memref/tensor; a module that
// parses goes through dash-tile and dash-schedule. Diagnostics are fine;
// crashes, sanitizer reports and hangs are not. The dash-schedule policy and
// unit count are picked from a hash of the input so every policy is reached
// from the same text seeds (test/**/*.mlir).
//
//===----------------------------------------------------------------------===//

#include "dash/InitAllDialects.h"
#include "dash/Dialect/Dash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    ::dash::registerAllDialects(*r);
    r->insert<func::FuncDialect, arith::ArithDialect, memref::MemRefDialect,
              tensor::TensorDialect>();
    return r;
  }();

  // MLIR's lexer reads the byte past the buffer (a NUL marks the end, as in
  // every MemoryBuffer mlir-opt reads): parse a NUL-terminated copy. Without
  // it the lexer reads past libFuzzer's buffer (fuzz/regressions/
  // dash-fuzz-parse/lexer-reads-past-unterminated-buffer).
  const std::string copy(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(copy.data(), copy.size());
  // A fresh context per input: nothing accumulates across runs.
  MLIRContext ctx(*registry, MLIRContext::Threading::DISABLED);
  ctx.allowUnregisteredDialects(false);
  // Diagnostics are expected for most inputs: swallow them.
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });

  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    return 0;
  if (failed(verify(*module)))
    return 0;

  uint32_t h = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 16777619u;
  static const char *const kPolicies[] = {"auto",       "ascending", "spt",
                                          "descending", "shift",
                                          "symmetric-shift"};
  static const int64_t kUnits[] = {132, 1, 7, 16};
  mlir::dash::DashScheduleOptions opts;
  opts.policy = kPolicies[h % 6];
  opts.numUnits = kUnits[(h / 6) % 4];

  PassManager pm(&ctx, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  pm.enableVerifier(true);
  pm.addPass(mlir::dash::createDashTile());
  pm.addPass(mlir::dash::createDashSchedule(opts));
  (void)pm.run(*module);
  return 0;
}
