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

def ConvertDashToGPU : Pass<"convert-dash-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower dash.scheduled_attention_bwd to a gpu.module of three kernels.";
  let description = [{
    Emits `gpu.module @dash_kernels` with the kernels the runtime launches:
    `dash_bwd_preprocess` (dPsum = rowsum(dO * O), lse * log2(e), zeroed
    fp32 accumulators and semaphores), `dash_bwd_main` (one persistent CTA
    per unit, G = gridDim.x: for each work item K and V are staged in shared
    memory and the Q tiles are walked in schedule order) and
    `dash_bwd_postprocess` (dQ = dQaccum * scale, dK/dV summed over the
    query heads of a GQA group). The schedule regions are cloned into the
    main kernel with the kernel's arguments for the op's operands and
    `gridDim.x` for `dash.num_units`, so the kernel and the CPU loops run the
    same formulas.

    Deterministic mode, per (Q tile, b, h) int32 semaphore: thread 0 spins
    with `ld.acquire.gpu` until it equals the task's rank, the CTA adds its
    dQ partial with fp32 reductions, every thread fences (release, gpu scope)
    so its adds are performed before the CTA barrier, then thread 0 releases
    and increments. Non-deterministic mode adds without waiting.

    The tile products run on the tensor cores with warp-level
    `mma.sync.m16n8k16` (bf16 in, f32 accumulate; 8 warps, each owning a
    16-row slice; dK/dV accumulate in registers for the whole walk), or with
    `mma=simt` on the CUDA cores (the first-light reference path); the
    default `mma=wgmma` is the warp-specialised WGMMA kernel (docs/GPU.md),
    whose Q/dO/K/V tiles come by cp.async from the MMA threads or, with
    `loads=tma`, by TMA from a producer warp through mbarriers. The kernel
    ABI (argument order, memref descriptors, scale as an argument) is in
    docs/Runtime.md; the host function keeps only its `return`: the
    runtime, not MLIR, launches the kernels.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "threads per CTA of every kernel; 0: the mma mode's own count "
           "(wgmma 384, sync and simt 256)">,
    Option<"mma", "mma", "std::string", /*default=*/"\"wgmma\"",
           "tile products: wgmma (warp-specialised warpgroup MMA from swizzled "
           "shared tiles, dQ-reducer warps; 64x128 tiles, bf16), sync "
           "(mma.sync m16n8k16; 64x64 tiles, 256 threads) or simt "
           "(CUDA-core FMA, any tile)">,
    Option<"loads", "loads", "std::string", /*default=*/"\"\"",
           "how Q, dO, K, V reach shared memory: cp-async (issued by the "
           "MMA threads, one step ahead) or tma (mma=wgmma only: a producer "
           "warp, tensor maps from the runtime, full/empty mbarriers); "
           "unset: tma for wgmma, cp-async for sync and simt">,
    Option<"dsBuffers", "ds-buffers", "int64_t", /*default=*/"0",
           "mma=wgmma with loads=tma: dS^T shared buffers, 1 or 2 (2: they "
           "alternate by step, so the warpgroups meet at one named barrier "
           "per step instead of two; fits at D = 128 and D = 64); 0: 2 at "
           "D = 128 and D = 64 on 128-row Q tiles where they fit, else 1">,
    Option<"dqBuffers", "dq-buffers", "int64_t", /*default=*/"0",
           "mma=wgmma with loads=tma: f32 dQ staging buffers, each with its "
           "reducer warp: 2 (two rows' ordered adds in flight) or 1 (32 KiB "
           "back at D = 64); 0: 2, or 1 at D = 64 on 128-row Q tiles if two "
           "would leave no room for two dS^T buffers">,
    Option<"mmaRegs", "mma-regs", "int64_t", /*default=*/"0",
           "mma=wgmma: registers per MMA thread after setmaxnreg, 240 "
           "(warpgroup 2 keeps 24) or 232 (it keeps 40); 0: 232 in TMA "
           "kernels that are deterministic at D = 128 (their dQ reducers "
           "wait on the ordered adds), run the fused dS pass at D = 128 "
           "(causal) or are causal at D = 64; 240 in the others, early-st "
           "and cp.async kernels included">,
    Option<"earlyKv", "early-kv", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 frees K/V after the item's last dQ "
           "(the next item's K/V load overlaps the last hand-off and the "
           "dK/dV epilogue); 0 frees them after the walk; -1: the default (1 "
           "for causal masks without early-st, 0 for full masks: "
           "bench/NOTES.md section 32)">,
    Option<"qBeforeKv", "q-before-kv", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 makes the producer issue an item's "
           "first Q/dO/lse_log2/dPsum copies before it waits for the "
           "previous item's K/V to be free (they land during that item's "
           "last step and epilogue); 0 issues them after the item's K/V; "
           "-1: the default (1 with loads=tma)">,
    Option<"kvPrefetchAhead", "kv-prefetch-ahead", "int64_t",
           /*default=*/"-1",
           "mma=wgmma with loads=tma: P >= 1 makes the producer prefetch the "
           "next item's K/V into L2 as it issues the step P steps before the "
           "walk's end (step max(len - P, 0)), so they are recent in L2 when "
           "the walk ends; 0 right after the item's own K/V, a whole walk "
           "earlier; -1: the default (0)">,
    Option<"kvViaDs", "kv-via-ds", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma, 128-row Q tiles at D = 64 and two "
           "dS^T buffers: 1 makes the producer load the next item's K/V "
           "into the dS^T buffer the walk's last step leaves free (from "
           "that step's dS^T barrier on) and move them into the K/V tiles "
           "by one shared-to-shared bulk copy once the last dQ has read K "
           "(implies early-kv=1; the copy needs a cluster, so the main kernel "
           "becomes a compile-time cluster of one); 0 loads them into the K/V "
           "tiles after the walk; -1: the default (0: measured 1-4% slower "
           "at D = 64, bench/NOTES.md section 32)">,
    Option<"dkdvBulk", "dkdv-bulk", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma, 128-row Q tiles at D = 64 and two "
           "dS^T buffers: 1 makes the dK/dV epilogue (without GQA) stage the "
           "item's bf16 rows in the dS^T buffer of the walk's last step, from "
           "where warp 11 stores them by TMA (two more tensor maps, dk and "
           "dv) once the next item's K/V have landed, so the MMA warps start "
           "the next walk meanwhile; 0 writes them from registers; -1: the "
           "default (1 where it fits for full-mask kernels, else 0: "
           "bench/NOTES.md sections 33, 38)">,
    Option<"pdl", "pdl", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 makes the main kernel a programmatic "
           "dependent of the preprocess (the manifest says \"pdl\": true and "
           "the runtime launches it with programmatic stream "
           "serialization): the preprocess lets it launch at once "
           "(griddepcontrol.launch_dependents), and its threads wait for the "
           "preprocess's results (griddepcontrol.wait) after the mbarriers' "
           "set-up, the producer only after prefetching its first item's K/V "
           "into L2; 0: a plain launch after the preprocess; -1: the default, "
           "0">,
    Option<"warpProducer", "warp-producer", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 runs the TMA producer on the whole of "
           "warp 10, converged, one elected lane issuing each copy and "
           "expect-tx arrival as a predicated instruction (ptxas keeps the "
           "walk in uniform registers: no per-copy loop, no spills); 0 on "
           "lane 0 alone; -1: the default (1 but for deterministic D = 64 "
           "full-mask kernels: bench/NOTES.md sections 36, 38)">,
    Option<"statsInMain", "stats-in-main", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 makes the main kernel compute dPsum "
           "and lse_log2 itself: all its threads first compute the rows of "
           "the heads the first two rounds of items start on, then warp 11 "
           "computes the other heads' rows in head order (a ticket) while "
           "the MMA warps walk, and the producer waits for a head's count "
           "of finished rows before its first statistics load; the "
           "preprocess then only zeroes (not with dkdv-bulk, whose storer is "
           "warp 11, nor trace-timeline, which writes over O); 0: the "
           "preprocess computes them; -1: the default, 0 (the main kernel "
           "grew by what the preprocess took, bench/NOTES.md section 34)">,
    Option<"dsStmatrix", "ds-stmatrix", "int64_t", /*default=*/"-1",
           "mma=wgmma: 1 stores each step's dS^T tile with stmatrix (four "
           "8x8 bf16 matrices per instruction), 0 as 4-byte pairs; -1: the "
           "default (1)">,
    Option<"earlyDv", "early-dv", "int64_t", /*default=*/"-1",
           "mma=wgmma: 1 issues dV += P^T dO as soon as P is packed, before "
           "the dS pass (on 128-row Q tiles, D = 64, the dS pass then reads P "
           "back from its bf16 pairs: P's f32 values, its bf16 pairs and dP^T "
           "would not fit together); 0 issues dV after the dS pass and its "
           "proxy fence; -1: the default, 0 (bench/NOTES.md sections 19 and "
           "24)">,
    Option<"earlySt", "early-st", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 issues the next step's S^T = K Q^T "
           "as soon as this step's dQ is complete, before its dQ hand-off "
           "(the next stage's FULL wait moves there too), so S^T runs on the "
           "tensor cores under the hand-off and dK instead of after them; "
           "the walk's first S^T goes out before the walk. 0 issues each "
           "S^T at its step's top; -1: the default">,
    Option<"exp2Chunks", "exp2-chunks", "int64_t", /*default=*/"-1",
           "mma=wgmma: N > 1 splits each step's exp2 pass into N chunks "
           "whose FFMAs read the scale through the previous chunk's last "
           "exp2 (c + min(p, 0) = c), so ptxas cannot hoist every FFMA of "
           "the pass ahead of its MUFU.EX2s; N must "
           "divide the thread's S^T values (64 at D = 64, 32 at D = 128); 1 "
           "is one pass; -1: the default (8 at 128-row Q tiles and in causal "
           "TMA kernels on 64-row tiles, else 1)">,
    Option<"dsInPass", "ds-in-pass", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: 1 computes dS = P (dP - dPsum) inside "
           "the exp2 pass: each masked / unmasked branch runs the pass, the "
           "wait for dP^T, the dS math and the dS^T stores as one block, so "
           "ptxas can schedule the dS math under the pass's exp2s; 0: the dS "
           "pass after the exp2 pass's join; -1: the default, 1 on 128-row "
           "Q tiles (D = 64) and in causal kernels on 64-row tiles (D = "
           "128), else 0">,
    Option<"dsWaitChunk", "ds-wait-chunk", "int64_t", /*default=*/"-1",
           "with ds-in-pass=1: the wait for dP^T after this many chunks of "
           "the exp2 pass (0 .. exp2-chunks; 0: before the pass); -1: the "
           "default, exp2-chunks / 2">,
    Option<"dqKvSplit", "dq-kv-split", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma on 128-row Q tiles (D = 64): 1 makes "
           "each MMA warpgroup compute dQ of the whole Q tile over its own 64 "
           "KV rows, warpgroup 1 adding its partial onto warpgroup 0's in the "
           "staging buffer (a fixed order), so the warpgroups never wait for "
           "each other's dS^T; 0 splits dQ's rows between them; -1: the "
           "default, 0 (2-8% slower once built without spills, bench/NOTES.md "
           "section 24)">,
    Option<"wgTurns", "wg-turns", "int64_t", /*default=*/"-1",
           "with dq-kv-split=1: 1 makes the MMA warpgroups take turns issuing "
           "each step's S^T and dP^T (named barriers), so one warpgroup's "
           "exp2 and dS math runs under the other's products instead of both "
           "at once, the turn passing once S^T is done; 2 passes it once the "
           "exp2 pass is done (the two passes never share the SFU); 0: no "
           "turns; -1: the default, 0 (bench/NOTES.md section 24: both "
           "slower than the default)">,
    Option<"statsInAcc", "stats-in-acc", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma: the row statistics as accumulator "
           "starts instead of operands of the elementwise passes: 1 starts "
           "each step's dP^T accumulator at dPsum and subtracts V dO^T on the "
           "tensor cores (wgmma scale-a -1), so dS = -P * acc; 2 also starts "
           "S^T's at -lse_log2 / (scale log2 e), so P = exp2(scale log2 e * "
           "acc); 0: neither; -1: the default, 1 on 128-row Q tiles (D = 64, "
           "where the statistics were read at use), else 0">,
    Option<"dqInMain", "dq-in-main", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma, adds counted (deterministic, or "
           "counted-adds): 1 makes the main kernel write dQ: once a unit's walk is done, its MMA "
           "warpgroups take finished dQ tiles from a ticket counter (a tile "
           "is finished when its semaphore reaches the number of KV tiles "
           "covering it), scale them and store them in the output type, so "
           "the units left idle by the last round do the postprocess's dQ "
           "pass, which then runs only for GQA's dK/dV; 0: the postprocess "
           "writes dQ; -1: the default, 1 where allowed">,
    Option<"countedAdds", "counted-adds", "int64_t", /*default=*/"-1",
           "non-deterministic kernels with mma=wgmma and loads=tma: 1 makes "
           "the dQ reducers count their adds as the deterministic ones do: "
           "a row's rank-0 hand-off stores its partial (dq_accum is not "
           "zeroed), every later one waits only until that store has landed "
           "(the row's semaphore >= 1, not its turn) and adds, and each "
           "releases the semaphore once its adds completed, so dq-in-main "
           "can convert finished tiles; 0: unordered adds into a zeroed "
           "dq_accum, counted by nothing; -1: the default, 1 (deterministic "
           "kernels always count)">,
    Option<"uniformWg", "uniform-wg", "int64_t", /*default=*/"-1",
           "mma=wgmma: 1 takes the MMA threads' warpgroup index from the "
           "lane-0 broadcast (shfl) the role branch uses, so ptxas sees it "
           "warp-uniform and builds the wgmma descriptors of this "
           "warpgroup's K/V rows and dQ operands in uniform registers (no "
           "R2UR per wgmma); 0: from the thread id, in vector registers; "
           "-1: the default, 0">,
    Option<"dsTrans", "ds-trans", "int64_t", /*default=*/"-1",
           "mma=wgmma with ds-stmatrix, not dq-kv-split: 1 stores "
           "each warpgroup's dS^T fragment transposed (stmatrix .trans) so "
           "shared memory holds dS, Q rows by KV columns, and dQ = dS K "
           "reads it as a K-major A (FlashAttention-3's operand order); 0: "
           "dS^T as stored, read as an M-major A; -1: the default, 1 at D = 128 "
           "where legal, else 0">,
    Option<"dvBeforeFence", "dv-before-fence", "int64_t", /*default=*/"-1",
           "mma=wgmma with early-dv=0: 1 issues dV right after the dS^T "
           "stores, ahead of their proxy fence and the dS^T barrier "
           "(FlashAttention-3's order); 0: after the fence; -1: the "
           "default, 1 at D = 128, else 0">,
    Option<"dpsAhead", "dps-ahead", "int64_t", /*default=*/"-1",
           "with ds-in-pass on 64-row Q tiles: N > 0 reads the thread's "
           "dPsum values N chunks of the exp2 pass ahead of the wait for "
           "dP^T (ds-wait-chunk + 1: with lse_log2, before the products "
           "go out), so the dS math after the wait does not stall on their "
           "shared-memory loads; 0: right before the wait; -1: the "
           "default, 0">,
    Option<"statsShfl", "stats-shfl", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma, stats-in-acc=0: 1 holds each row "
           "statistic (lse_log2, dPsum) as bm / 32 values per lane, read "
           "once per step, and hands each thread the value of its column by "
           "a warp shuffle where it is used (FlashAttention-3's ShuffleLSE / "
           "ShuffledPsum), so dP^T starts at zero and neither pass waits on "
           "a shared-memory load; 0: read ahead (64-row tiles) or at use; "
           "-1: the default, 0">,
    Option<"dpsFold", "dps-fold", "int64_t", /*default=*/"-1",
           "mma=wgmma with loads=tma, stats-in-acc=0 (its default then), "
           "no stats-shfl, stats-in-main or dps-ahead: 1 folds dPsum into "
           "dP^T as one more k-step (A: -1 in two K columns, a 256-byte block "
           "of shared memory; B: dPsum as a hi / lo pair of bf16 rows, which "
           "the preprocess writes in dPsum's bytes and the producer loads as "
           "they are, read as an unswizzled B, 4 bm + 128 bytes a stage), so "
           "dP^T's accumulator holds dP - dPsum and the dS math reads no "
           "dPsum; 0: dPsum read from shared memory or as dP^T's start; -1: "
           "the default, 1 at D = 64 where those options allow it, else 0">,
    Option<"ablateExp2", "ablate-exp2", "int64_t", /*default=*/"0",
           "diagnostic kernels with WRONG gradients (mma=wgmma): 1 drops the "
           "exp2 of each step's P (P = the FFMA's argument, no MUFU.EX2), to "
           "measure what the SFU work costs the step; 0: off">,
    Option<"ablateRankWait", "ablate-rank-wait", "int64_t", /*default=*/"0",
           "diagnostic kernels with WRONG gradients (mma=wgmma with "
           "loads=tma): 1 drops the deterministic dQ reducers' wait for each "
           "row's rank (the adds and releases stay), to measure what the "
           "ordered chain costs; no effect on non-deterministic kernels; 0: "
           "off">,
    Option<"traceTimeline", "trace-timeline", "int64_t", /*default=*/"0",
           "diagnostic kernels (mma=wgmma with loads=tma): 1 makes the main "
           "kernel write a per-CTA timeline (clock64 at each item's walk "
           "start, step 0's FULL_Q pass, the ends of steps 0 and 1, the walk's "
           "and the epilogue's end, and the producer's K/V and step-0 issues; "
           "globaltimer at the CTA's start and end) into O's buffer, which it "
           "never reads: the gradients stay right, O is overwritten "
           "(bench/item_trace.py reads it); 2 also stamps the phases of one "
           "step per item (products issued and complete, the exp2 and dS "
           "passes, the barriers, the dQ hand-off and its reducer)">,
    Option<"debugSpinLimit", "debug-spin-limit", "int64_t", /*default=*/"0",
           "debug kernels: give up a semaphore wait after this many polls, "
           "record (unit, b, h, q, rank, seen, polls) in the extra `debug` "
           "argument and trap; 0: the release kernels' plain spin">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // DASH_CONVERSION_PASSES_TD
