//===- DashDialect.td - DASH dialect definition ------------*- tablegen -*-===//
//
// The `dash` dialect: deterministic attention backward for NVIDIA Hopper.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_DASHDIALECT_TD
#define DASH_DIALECT_DASH_IR_DASHDIALECT_TD

include "mlir/IR/OpBase.td"

def Dash_Dialect : Dialect {
  let name = "dash";
  let summary = "Deterministic attention backward with schedules visible in IR.";
  let description = [{
    The `dash` dialect models the attention backward pass (dQ, dK, dV from
    Q, K, V, O, dO and the forward log-sum-exp) as one op whose decisions
    (tile shape, the order in which KV tiles visit Q tiles, and the order in
    which dQ partials are reduced) are attributes a reader can see. Passes
    attach `#dash.tiling` and `#dash.schedule`, then materialise the schedule
    as explicit index code that both the GPU kernels and the CPU loops
    consume.

    Logical operand order is FlashAttention's **BSHD**: q, o, dO are
    `[B, S_q, H_q, D]`, k, v are `[B, S_k, H_kv, D]`, lse is `[B, H_q, S_q]`.
    A BHSD tensor is expressed as a strided memref in the same logical order.
  }];
  let cppNamespace = "::mlir::dash";
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

#endif // DASH_DIALECT_DASH_IR_DASHDIALECT_TD
