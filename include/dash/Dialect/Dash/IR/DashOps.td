//===- DashOps.td - DASH operations ------------------------*- tablegen -*-===//
//
// dash.attention_bwd: the attention backward pass as one op.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_DASHOPS_TD
#define DASH_DIALECT_DASH_IR_DASHOPS_TD

include "dash/Dialect/Dash/IR/DashDialect.td"
include "dash/Dialect/Dash/IR/DashAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class Dash_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dash_Dialect, mnemonic, traits>;

def Dash_AnyTensorOrMemRef : AnyTypeOf<[AnyRankedTensor, AnyMemRef],
                                       "ranked tensor or memref">;

def Dash_AttentionBwdOp : Dash_Op<"attention_bwd",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Attention backward: (q, k, v, o, dO, lse) -> (dq, dk, dv).";
  let description = [{
    Computes the gradients of `O = softmax(scale * Q K^T + mask) V` with
    respect to Q, K and V, given the forward output `o`, its gradient `dO`
    and the forward log-sum-exp `lse` (natural log, of the scaled scores, as
    FlashAttention returns it).

    Shapes use the logical **BSHD** order:
    - `q`, `o`, `dO`: `[B, S_q, H_q, D]`; `k`, `v`: `[B, S_k, H_kv, D]`;
    - `lse`: `[B, H_q, S_q]`, f32;
    - q/k/v/o/dO share one element type, bf16 or f16; D is 64 or 128;
    - grouped-query attention: `H_q` must be a multiple of `H_kv`.

    On tensors the op returns dq, dk, dv (shapes of q, k, v; element type
    that of the inputs, or f32 for unrounded gradients). On memrefs
    it writes into the `outs` buffers and returns nothing; strided memrefs
    express physical layouts (BHSD is BSHD with permuted strides).

    `mask` is `full` or `causal`. For a causal mask, `align` says where the
    diagonal sits when `S_q != S_k`: `bottom_right` (FlashAttention; query i
    sees key j iff j <= i + S_k - S_q) or `top_left` (PyTorch SDPA
    `is_causal`; j <= i). The two agree only for `S_q == S_k`, so the
    verifier demands an explicit `align` whenever the sequence lengths may
    differ; when absent it means `bottom_right`.

    `deterministic = true` makes the dQ reduction order fixed (bitwise
    reproducible results); `false` allows arrival-order atomics.

    Example:
    ```mlir
    %dq, %dk, %dv = dash.attention_bwd %q, %k, %v, %o, %dO, %lse
        mask = causal scale = 0.125 deterministic = true
        : tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>,
          tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>,
          tensor<2x1024x16x128xbf16>, tensor<2x16x1024xf32>
        -> tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>,
           tensor<2x1024x16x128xbf16>
    ```
  }];

  let arguments = (ins Dash_AnyTensorOrMemRef:$q, Dash_AnyTensorOrMemRef:$k,
                       Dash_AnyTensorOrMemRef:$v, Dash_AnyTensorOrMemRef:$o,
                       Dash_AnyTensorOrMemRef:$dO, Dash_AnyTensorOrMemRef:$lse,
                       Variadic<AnyMemRef>:$outs,
                       Dash_MaskAttr:$mask,
                       OptionalAttr<Dash_CausalAlignAttr>:$align,
                       F32Attr:$scale,
                       BoolAttr:$deterministic,
                       OptionalAttr<Dash_TilingAttr>:$tiling,
                       OptionalAttr<Dash_ScheduleAttr>:$schedule);
  let results = (outs Variadic<AnyRankedTensor>:$results);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $dO `,` $lse
    (`outs` `(` $outs^ `:` type($outs) `)`)?
    custom<MaskClause>($mask, $align)
    `scale` `=` $scale `deterministic` `=` $deterministic
    attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($o) `,`
    type($dO) `,` type($lse) (`->` type($results)^)?
  }];

  let extraClassDeclaration = [{
    /// True when the op works on memrefs (destination style).
    bool hasBufferSemantics() { return !getOuts().empty(); }
    /// The alignment in effect (absent means bottom_right).
    ::mlir::dash::CausalAlign getEffectiveAlign() {
      return getAlign().value_or(::mlir::dash::CausalAlign::BottomRight);
    }
    ::mlir::ShapedType getQType() { return ::llvm::cast<::mlir::ShapedType>(getQ().getType()); }
    ::mlir::ShapedType getKType() { return ::llvm::cast<::mlir::ShapedType>(getK().getType()); }
    ::mlir::ShapedType getLseType() { return ::llvm::cast<::mlir::ShapedType>(getLse().getType()); }
    /// The gradient values/buffers (results on tensors, outs on memrefs).
    ::mlir::Value getDq() { return hasBufferSemantics() ? getOuts()[0] : getResult(0); }
    ::mlir::Value getDk() { return hasBufferSemantics() ? getOuts()[1] : getResult(1); }
    ::mlir::Value getDv() { return hasBufferSemantics() ? getOuts()[2] : getResult(2); }
  }];

  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Materialised schedule
//===----------------------------------------------------------------------===//

def Dash_YieldOp : Dash_Op<"yield", [Pure, Terminator,
    ParentOneOf<["ScheduledAttentionBwdOp"]>]> {
  let summary = "Yields index values out of a schedule region.";
  let arguments = (ins Variadic<Index>:$values);
  let assemblyFormat = "$values attr-dict";
}

def Dash_NumUnitsOp : Dash_Op<"num_units", [Pure]> {
  let summary = "The number of persistent units G the kernels run with.";
  let description = [{
    The grid size of the persistent main kernel, known only at launch when the
    runtime sizes the grid from the occupancy query. Schedule regions use it
    for the wave accounting of shift schedules, so the formulas and the grid
    can never disagree. The GPU lowering reads `gridDim.x`; the CPU lowering
    uses the `num_units` of the `#dash.schedule`.
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

def Dash_ScheduledAttentionBwdOp : Dash_Op<"scheduled_attention_bwd",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     RecursiveMemoryEffects]> {
  let summary = "Attention backward with its schedule as explicit index code.";
  let description = [{
    The materialised form of a tiled and scheduled `dash.attention_bwd` on
    memrefs. The schedule is four small regions of `arith` index code that
    every consumer (the CPU loops, the GPU producer, MMA warpgroups and dQ
    reducer) evaluates identically:

    - `items(%unit)`: how many work items persistent unit `%unit` runs
      (`0 <= %unit < num_units`);
    - `work(%unit, %item)`: the item's batch, Q head, KV tile and walk length
      (how many Q tiles it visits);
    - `visit(%b, %h, %kv, %step)`: the Q tile visited at `%step` of the walk;
    - `rank(%b, %h, %kv, %q)`: the position of KV tile `%kv` in the fixed
      reduction order of dQ row tile `%q`.

    With static shapes the verifier evaluates the regions over the whole
    problem and rejects a schedule in which a KV tile does not visit its
    covered Q tiles exactly once, or in which the ranks on a dQ row are not a
    permutation of `0..k-1` (a reducer would wait forever or two would add
    at once).
  }];
  let arguments = (ins AnyMemRef:$q, AnyMemRef:$k, AnyMemRef:$v, AnyMemRef:$o,
                       AnyMemRef:$dO, AnyMemRef:$lse,
                       AnyMemRef:$dq, AnyMemRef:$dk, AnyMemRef:$dv,
                       Dash_MaskAttr:$mask,
                       OptionalAttr<Dash_CausalAlignAttr>:$align,
                       F32Attr:$scale,
                       BoolAttr:$deterministic,
                       Dash_TilingAttr:$tiling,
                       Dash_ScheduleAttr:$schedule);
  let regions = (region SizedRegion<1>:$items, SizedRegion<1>:$work,
                        SizedRegion<1>:$visit, SizedRegion<1>:$rank);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $o `,` $dO `,` $lse
    `outs` `(` $dq `,` $dk `,` $dv `:` type($dq) `,` type($dk) `,` type($dv) `)`
    custom<MaskClause>($mask, $align)
    `scale` `=` $scale `deterministic` `=` $deterministic
    attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($o) `,`
    type($dO) `,` type($lse)
    `items` $items `work` $work `visit` $visit `rank` $rank
  }];
  let extraClassDeclaration = [{
    ::mlir::dash::CausalAlign getEffectiveAlign() {
      return getAlign().value_or(::mlir::dash::CausalAlign::BottomRight);
    }
  }];
  let hasRegionVerifier = 1;
}

#endif // DASH_DIALECT_DASH_IR_DASHOPS_TD
