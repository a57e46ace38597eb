//===- Passes.td - DASH conversion passes ------------------*- tablegen -*-===//

#ifndef DASH_CONVERSION_PASSES_TD
#define DASH_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDashToLoops : Pass<"convert-dash-to-loops"> {
  let summary = "Lower dash.scheduled_attention_bwd to scf loops for the CPU.";
  let description = [{
    Runs exactly the tiled algorithm the GPU kernels run, one work unit after
    another: preprocess (dPsum = rowsum(dO * O), lse * log2(e), zeroed fp32
    accumulators), then for each unit, each of its work items and each step
    of the walk in schedule order the task S = Q K^T,
    P = exp2(S * scale * log2(e) - lse_log2) (masked), dP = dO V^T,
    dS = P * (dP - dPsum), dV += P^T dO, dK += dS^T Q and the dQ partial
    dS K, then postprocess (dQ = dQaccum * scale, dK *= scale).

    Deterministic mode keeps each dQ partial in a slot indexed by its rank
    and adds the slots into the fp32 accumulator in rank order, so the
    result is the one the semaphore protocol produces on the GPU whatever
    order the units ran in. Non-deterministic mode adds each partial as soon
    as it is computed (arrival order). Causal masks are applied per element
    on every tile, tails (S not a multiple of the tile) are bounded loops.

    By default P and dS are rounded to the input element type before the
    products that consume them, as the tensor cores see them;
    `exact-intermediates` keeps them in f32 (the reference path).
  }];
  let options = [
    Option<"exactIntermediates", "exact-intermediates", "bool",
           /*default=*/"false",
           "keep P and dS in f32 instead of rounding them like the GPU">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // DASH_CONVERSION_PASSES_TD
