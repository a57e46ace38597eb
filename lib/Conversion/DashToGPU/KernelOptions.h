//===- KernelOptions.h - convert-dash-to-gpu's options, resolved -*- C++ -*-===//
//
// One op's kernel configuration: the pass options checked (a clear error on
// the op for a combination the kernels do not support) with every default
// filled in.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_CONVERSION_DASHTOGPU_KERNELOPTIONS_H
#define DASH_LIB_CONVERSION_DASHTOGPU_KERNELOPTIONS_H

#include "dash/Conversion/Passes.h"

#include "KernelBuilder.h"

namespace mlir::dash::detail {

struct ResolvedKernel {
  Type elt;         // the inputs' and gradients' element type
  int64_t D = 0;    // head dim
  int64_t bm = 0;   // Q rows per tile
  int64_t bn = 0;   // KV rows per tile
  bool useWgmma = false, useSync = false; // else the CUDA-core form
  int64_t nthreads = 0;
  int64_t sharedBytes = 0; // the main kernel's
  WgmmaConfig wgmma; // the WGMMA form's choices (set for every form)
};

/// The op's kernels under `o`, or failure after an error on the op.
FailureOr<ResolvedKernel>
resolveKernelOptions(ScheduledAttentionBwdOp op,
                     const ConvertDashToGPUOptions &o);

} // namespace mlir::dash::detail

#endif // DASH_LIB_CONVERSION_DASHTOGPU_KERNELOPTIONS_H
