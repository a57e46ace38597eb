//===- Passes.td - DASH transformation passes --------------*- tablegen -*-===//
//
// Decisions: tiling and scheduling, each recorded as an attribute.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_DIALECT_DASH_TRANSFORMS_PASSES_TD
#define DASH_DIALECT_DASH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DashTile : Pass<"dash-tile"> {
  let summary = "Attach #dash.tiling to every dash.attention_bwd.";
  let description = [{
    Picks the tile shape per head dim and mask. `kernels=fa3` (default)
    follows FlashAttention-3 on Hopper: D = 64 -> 128x128 (block_m x
    block_n); D = 128 -> 64x128 for a causal mask and 80x128 for a full one.
    `kernels=wgmma` takes the tiles DASH's WGMMA kernels are written for
    (D = 64 -> 128x128, D = 128 -> 64x128), `kernels=sync` the mma.sync
    kernels' 64x64. 2 pipeline stages. block-m / block-n override the
    defaults for every op. Ops that already carry a tiling keep it unless an
    option is given.

    ```mlir
    dash.attention_bwd ... {tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>}
    ```
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "Q tile rows (0: per head dim and mask)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "KV tile rows (0: per head dim and mask)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Q/dO pipeline stages (0: 2)">,
    Option<"kernels", "kernels", "std::string", /*default=*/"\"fa3\"",
           "whose default tiles: fa3, wgmma or sync">,
  ];
  let dependentDialects = ["::mlir::dash::DashDialect"];
}

def DashSchedule : Pass<"dash-schedule"> {
  let summary = "Choose the tile schedule and attach #dash.schedule.";
  let description = [{
    Runs the DAG critical-path model of `lib/Schedule` on each tiled
    dash.attention_bwd and records the decision. `policy` is one of
    `ascending` (FA3 baseline), `spt` (FA3's causal deterministic schedule:
    shortest tile first, diagonal adds first), `descending`, `shift` (full
    mask, persistent grid), `symmetric-shift` (causal, persistent grid) or
    `auto` (smallest modelled makespan; ties go to a schedule whose reduction
    order does not depend on G). With static shapes `auto` resolves here; with
    dynamic shapes the attribute keeps `policy = auto` and the runtime
    resolves it with the same model. An illegal choice (shift on a causal
    mask, symmetric-shift with an odd number of KV tiles, a shift wave that
    is not co-resident in G units, ...) is an error that says why.

    Requires `#dash.tiling` (run `dash-tile` first).
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"auto\"",
           "ascending|spt|descending|shift|symmetric-shift|auto">,
    Option<"numUnits", "num-units", "int64_t", /*default=*/"132",
           "co-resident units G of the persistent grid (H200: 132 SMs)">,
    Option<"computeCost", "c", "double", /*default=*/"1.0",
           "modelled compute cost per (KV tile, Q tile) task">,
    Option<"reduceCost", "r", "double", /*default=*/"0.25",
           "modelled cost of one ordered dQ reduction">,
    Option<"launch", "launch", "std::string", /*default=*/"\"fa3\"",
           "how the model runs ascending/spt/descending: fa3 (one CTA per KV "
           "tile, first free SM) or persistent (the grid of G units DASH's "
           "kernels run every schedule as)">,
  ];
  let dependentDialects = ["::mlir::dash::DashDialect"];
}

def DashMaterializeSchedule : Pass<"dash-materialize-schedule"> {
  let summary = "Turn #dash.schedule into explicit index code.";
  let description = [{
    Rewrites a tiled, scheduled dash.attention_bwd on memrefs into
    dash.scheduled_attention_bwd, whose `items`, `work`, `visit` and `rank`
    regions compute, in `arith` on `index`, which work items each persistent
    unit runs, which Q tile a KV tile visits at each step, and the rank of
    each dQ reduction. The formulas are those of lib/Schedule
    (docs/Scheduling.md); lit tests CHECK them per policy, and the verifier
    of the materialised op evaluates them to prove the ranks a permutation.
    Sizes come from `memref.dim` of the operands (constants when static) and
    the unit count G from `dash.num_units` (the constant of `#dash.schedule`
    when the whole problem is static), so one kernel serves every shape.
    Needs a concrete policy (run dash-schedule).
  }];
  let dependentDialects = ["::mlir::dash::DashDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def DashCheckSchedule : Pass<"dash-check-schedule"> {
  let summary = "Test pass: compare materialised regions with lib/Schedule.";
  let description = [{
    Evaluates the regions of every dash.scheduled_attention_bwd and compares
    each visit and rank with lib/Schedule's visitQTile / rankOf (the code the
    runtime and dash-sched use). Emits a remark with the number of tasks that
    matched, or an error at the first difference. With `print-order` it also
    remarks, per unit, the work items it runs and the Q tiles each visits
    (with their ranks) in execution order: the loop order, readable.
  }];
  let options = [
    Option<"printOrder", "print-order", "bool", /*default=*/"false",
           "remark the evaluated visit order and ranks per unit">,
  ];
}

#endif // DASH_DIALECT_DASH_TRANSFORMS_PASSES_TD
