//===- DashToGPU.cpp - dash.scheduled_attention_bwd -> gpu.module ---------===//
//
// The pass: emits the three kernels of the attention backward (preprocess,
// main, postprocess; the first and last in PrePost.cpp) as gpu.func in a
// gpu.module, configured as KernelOptions.cpp resolves the pass options.
// The main kernel comes in three families, one file each: MainWgmma.cpp
// (default), MainMmaSync.cpp, MainSimt.cpp; all run the materialised
// schedule regions, cloned in with the kernel's arguments, and the
// deterministic ordered dQ reduction with per-row semaphores. The kernel ABI (KernelBuilder.h) is documented in
// docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#include "dash/Conversion/Passes.h"

#include "KernelBuilder.h"
#include "KernelOptions.h"

namespace mlir::dash {
#define GEN_PASS_DEF_CONVERTDASHTOGPU
#include "dash/Conversion/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

namespace {
struct ConvertDashToGPUPass
    : mlir::dash::impl::ConvertDashToGPUBase<ConvertDashToGPUPass> {
  using Base::Base;

  ConvertDashToGPUOptions options() const {
    ConvertDashToGPUOptions o;
    o.threads = threads;
    o.mma = mma;
    o.loads = loads;
    o.dsBuffers = dsBuffers;
    o.dqBuffers = dqBuffers;
    o.mmaRegs = mmaRegs;
    o.earlyKv = earlyKv;
    o.qBeforeKv = qBeforeKv;
    o.kvPrefetchAhead = kvPrefetchAhead;
    o.kvViaDs = kvViaDs;
    o.dkdvBulk = dkdvBulk;
    o.pdl = pdl;
    o.warpProducer = warpProducer;
    o.statsInMain = statsInMain;
    o.dsStmatrix = dsStmatrix;
    o.earlyDv = earlyDv;
    o.earlySt = earlySt;
    o.exp2Chunks = exp2Chunks;
    o.dsInPass = dsInPass;
    o.dsWaitChunk = dsWaitChunk;
    o.dqKvSplit = dqKvSplit;
    o.wgTurns = wgTurns;
    o.statsInAcc = statsInAcc;
    o.dqInMain = dqInMain;
    o.countedAdds = countedAdds;
    o.uniformWg = uniformWg;
    o.dsTrans = dsTrans;
    o.dvBeforeFence = dvBeforeFence;
    o.dpsAhead = dpsAhead;
    o.statsShfl = statsShfl;
    o.dpsFold = dpsFold;
    o.ablateExp2 = ablateExp2;
    o.ablateRankWait = ablateRankWait;
    o.traceTimeline = traceTimeline;
    o.debugSpinLimit = debugSpinLimit;
    return o;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ScheduledAttentionBwdOp> ops;
    module.walk([&](ScheduledAttentionBwdOp op) { ops.push_back(op); });
    int counter = 0;
    for (ScheduledAttentionBwdOp op : ops)
      if (failed(lower(module, op, counter++)))
        return signalPassFailure();
    WalkResult left = module.walk([](AttentionBwdOp op) {
      op.emitOpError() << "has no schedule regions; run --dash-tile "
                          "--dash-schedule --dash-materialize-schedule first";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult lower(ModuleOp module, ScheduledAttentionBwdOp op, int n) {
    FailureOr<ResolvedKernel> resolved = resolveKernelOptions(op, options());
    if (failed(resolved))
      return failure();
    const ResolvedKernel &r = *resolved;
    const WgmmaConfig &w = r.wgmma;
    Type elt = r.elt;
    int64_t D = r.D;
    const bool tma = r.useWgmma && w.tma;

    MLIRContext *ctx = &getContext();
    Location loc = op.getLoc();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    std::string name = n ? "dash_kernels_" + std::to_string(n) : "dash_kernels";
    auto gpuModule = gpu::GPUModuleOp::create(b, loc, name);
    ScheduleAttr schedule = op.getSchedule();
    NamedAttrList config;
    config.append("head_dim", b.getI64IntegerAttr(D));
    config.append("element_type", b.getStringAttr(elt.isBF16() ? "bf16" : "f16"));
    config.append("mask", b.getStringAttr(stringifyMask(op.getMask())));
    if (op.getMask() == Mask::Causal)
      config.append("align",
                    b.getStringAttr(stringifyCausalAlign(op.getEffectiveAlign())));
    config.append("policy", b.getStringAttr(stringifyPolicy(schedule.getPolicy())));
    config.append("deterministic", b.getBoolAttr(op.getDeterministic()));
    config.append("block_m", b.getI64IntegerAttr(r.bm));
    config.append("block_n", b.getI64IntegerAttr(r.bn));
    config.append("threads", b.getI64IntegerAttr(r.nthreads));
    config.append("shared_bytes", b.getI64IntegerAttr(r.sharedBytes));
    config.append("mma", b.getStringAttr(mma.getValue()));
    config.append("loads", b.getStringAttr(tma ? "tma" : "cp-async"));
    if (r.useWgmma) {
      config.append("ds_buffers", b.getI64IntegerAttr(w.dsBufs));
      config.append("ds_stmatrix", b.getBoolAttr(w.dsStmatrix));
      config.append("early_dv", b.getBoolAttr(w.earlyDv));
      config.append("mma_regs", b.getI64IntegerAttr(w.mmaRegs));
      if (tma)
        config.append("early_st", b.getBoolAttr(w.earlySt));
      config.append("exp2_chunks", b.getI64IntegerAttr(w.exp2Chunks));
      if (w.ablateExp2) // diagnostic kernels say so in their manifest
        config.append("ablate_exp2", b.getBoolAttr(true));
      if (w.ablateRankWait)
        config.append("ablate_rank_wait", b.getBoolAttr(true));
      if (tma)
        config.append("ds_in_pass", b.getBoolAttr(w.dsInPassWait >= 0));
      if (w.dsInPassWait >= 0)
        config.append("ds_wait_chunk", b.getI64IntegerAttr(w.dsInPassWait));
      config.append("dq_buffers", b.getI64IntegerAttr(w.dqBufs));
      if (tma) {
        config.append("early_kv", b.getBoolAttr(w.earlyKV));
        config.append("q_before_kv", b.getBoolAttr(w.qBeforeKV));
        config.append("kv_prefetch_ahead", b.getI64IntegerAttr(w.kvPrefetchAhead));
        config.append("kv_via_ds", b.getBoolAttr(w.kvViaDs));
        config.append("dkdv_bulk", b.getBoolAttr(w.dkdvBulk));
        config.append("stats_in_main", b.getBoolAttr(w.statsInMain));
        config.append("pdl", b.getBoolAttr(w.pdl));
        config.append("warp_producer", b.getBoolAttr(w.warpProducer));
      }
      if (r.bm == 128 && tma)
        config.append("dq_kv_split", b.getBoolAttr(w.dqKvSplit));
      if (tma)
        config.append("stats_in_acc", b.getI64IntegerAttr(w.statsInAcc));
      if (w.dqKvSplit)
        config.append("wg_turns", b.getI64IntegerAttr(w.wgTurns));
      if (tma && !op.getDeterministic())
        config.append("counted_adds", b.getBoolAttr(w.countedAdds));
      if (w.countedAdds) // (only TMA kernels count their adds)
        config.append("dq_in_main", b.getBoolAttr(w.dqInMain));
      if (w.uniformWg) // only where set: other kernels' manifests unchanged
        config.append("uniform_wg", b.getBoolAttr(true));
      config.append("ds_trans", b.getBoolAttr(w.dsTrans));
      config.append("dv_before_fence", b.getBoolAttr(w.dvBeforeFence));
      if (w.dpsAhead > 0) // only where set, as uniform_wg
        config.append("dps_ahead", b.getI64IntegerAttr(w.dpsAhead));
      if (w.statsShfl) // likewise
        config.append("stats_shfl", b.getBoolAttr(true));
      // likewise; the runtime reads it: dPsum's bytes hold a hi / lo pair
      // of bf16 rows, loaded by a map of their own (docs/Runtime.md).
      if (w.dpsFold)
        config.append("dps_fold", b.getStringAttr("rows"));
      if (traceTimeline != 0)
        config.append("trace_timeline", b.getI64IntegerAttr(traceTimeline));
    }
    // TMA WGMMA kernels keep dq_accum in their staging order, whole tiles
    // (DqAccumLayout; the runtime pads its rows to block_m).
    DqAccumLayout dqLayout;
    if (tma) {
      dqLayout = {r.bm, D};
      config.append("dq_accum_map", b.getStringAttr("tiles"));
      if (w.countedAdds)
        config.append("dq_accum_init", b.getStringAttr("rank0-store"));
    }
    config.append("debug_spin_limit", b.getI64IntegerAttr(debugSpinLimit));
    // The WGMMA main kernel writes dk/dv itself when H_q == H_kv (its
    // dk_accum/dv_accum may then be empty); the runtime sizes the workspace
    // by this flag.
    config.append("dkdv_direct", b.getBoolAttr(r.useWgmma));
    gpuModule->setAttr("dash.config", config.getDictionary(ctx));

    SmallVector<Type> argTypes =
        kernelArgTypes(ctx, elt, D, /*debug=*/debugSpinLimit > 0, tma,
                       w.dkdvBulk ? kTensorMapCountDkdvBulk : kTensorMapCount);
    b.setInsertionPointToStart(gpuModule.getBody());
    DqAccumInit dqInit;
    if (w.countedAdds) {
      dqInit.rankZeroStores = true;
      dqInit.causalBottomRight =
          op.getMask() == Mask::Causal &&
          op.getEffectiveAlign() == CausalAlign::BottomRight;
      dqInit.dqTicket = w.dqInMain;
    }
    dqInit.statsInMain = w.statsInMain;
    dqInit.dpsumHiLo = w.dpsFold;
    dqInit.launchDependents = w.pdl;
    buildPreprocess(b, loc, argTypes, D, r.nthreads, dqLayout, dqInit);
    if (r.useWgmma)
      buildMainWgmma(b, loc, argTypes, op, D, debugSpinLimit, w);
    else if (r.useSync)
      buildMainMmaSync(b, loc, argTypes, op, D, r.nthreads, debugSpinLimit);
    else
      buildMainSimt(b, loc, argTypes, op, D, r.bm, r.bn, r.nthreads,
                    debugSpinLimit);
    buildPostprocess(b, loc, argTypes, D, r.nthreads,
                     /*dkdvDirect=*/r.useWgmma, dqLayout, w.dqInMain);
    op.erase();
    return success();
  }
};
} // namespace
