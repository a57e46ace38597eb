//===- DashAttrs.td - DASH enums and attributes ------------*- tablegen -*-===//
//
// Masks, causal alignment, schedule policies, and the attributes that record
// the tiling and schedule decisions.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_IR_DASHATTRS_TD
#define DASH_DIALECT_DASH_IR_DASHATTRS_TD

include "dash/Dialect/Dash/IR/DashDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Dash_Mask : I32EnumAttr<"Mask", "attention mask", [
    I32EnumAttrCase<"Full", 0, "full">,
    I32EnumAttrCase<"Causal", 1, "causal">
  ]> {
  let cppNamespace = "::mlir::dash";
  let genSpecializedAttr = 0;
}
def Dash_MaskAttr : EnumAttr<Dash_Dialect, Dash_Mask, "mask">;

def Dash_CausalAlign : I32EnumAttr<"CausalAlign",
    "which corner the causal diagonal is anchored to when s_q != s_k", [
    // Query i sees key j iff j <= i + (s_k - s_q): FlashAttention's convention.
    I32EnumAttrCase<"BottomRight", 0, "bottom_right">,
    // Query i sees key j iff j <= i: PyTorch SDPA's `is_causal`.
    I32EnumAttrCase<"TopLeft", 1, "top_left">
  ]> {
  let cppNamespace = "::mlir::dash";
  let genSpecializedAttr = 0;
}
def Dash_CausalAlignAttr : EnumAttr<Dash_Dialect, Dash_CausalAlign, "align">;

def Dash_Policy : I32EnumAttr<"Policy", "tile schedule policy", [
    I32EnumAttrCase<"Ascending", 0, "ascending">,
    I32EnumAttrCase<"Spt", 1, "spt">,
    I32EnumAttrCase<"Descending", 2, "descending">,
    I32EnumAttrCase<"Shift", 3, "shift">,
    I32EnumAttrCase<"SymmetricShift", 4, "symmetric_shift">,
    I32EnumAttrCase<"Auto", 5, "auto">
  ]> {
  let cppNamespace = "::mlir::dash";
  let genSpecializedAttr = 0;
}
def Dash_PolicyAttr : EnumAttr<Dash_Dialect, Dash_Policy, "policy">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Dash_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dash_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dash_TilingAttr : Dash_Attr<"Tiling", "tiling"> {
  let summary = "Tile shape of the attention backward kernels.";
  let description = [{
    `block_m` rows of Q per Q tile, `block_n` rows of K/V per KV tile (one KV
    tile is one work unit), and `stages` of the Q/dO load pipeline.

    ```mlir
    #dash.tiling<block_m = 64, block_n = 128, stages = 2>
    ```
  }];
  let parameters = (ins "int64_t":$block_m, "int64_t":$block_n,
                        "int64_t":$stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dash_ScheduleAttr : Dash_Attr<"Schedule", "schedule"> {
  let summary = "The chosen tile schedule and the model's verdict.";
  let description = [{
    `policy` is the schedule the kernels run; `requested` is what the user
    asked for (`auto` resolves to a concrete policy when the shapes are
    static, and stays `auto` with dynamic shapes so the runtime resolves it
    with the same model). `num_units` is the persistent grid size G that the
    rank formulas use; `c` and `r` are the modelled compute and reduce costs
    per task. `makespan` and `critical_path` are the model's figures in units
    of `c` (0 when unresolved).

    ```mlir
    #dash.schedule<policy = descending, requested = auto, num_units = 132,
                   c = 1.0, r = 0.25, makespan = 24.25, critical_path = 24.25>
    ```
  }];
  let parameters = (ins "::mlir::dash::Policy":$policy,
                        "::mlir::dash::Policy":$requested,
                        "int64_t":$num_units,
                        APFloatParameter<"compute cost c">:$c,
                        APFloatParameter<"reduce cost r">:$r,
                        APFloatParameter<"modelled makespan">:$makespan,
                        APFloatParameter<"modelled critical path">:$critical_path);
  let builders = [
    AttrBuilder<(ins "::mlir::dash::Policy":$policy,
                     "::mlir::dash::Policy":$requested, "int64_t":$numUnits,
                     "double":$c, "double":$r, "double":$makespan,
                     "double":$criticalPath), [{
      return $_get($_ctxt, policy, requested, numUnits, ::llvm::APFloat(c),
                   ::llvm::APFloat(r), ::llvm::APFloat(makespan),
                   ::llvm::APFloat(criticalPath));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // DASH_DIALECT_DASH_IR_DASHATTRS_TD
