//===- DashToGPU.cpp - dash.scheduled_attention_bwd -> gpu.module ---------===//
//
// The pass: emits the three kernels of the attention backward (preprocess,
// main, postprocess) as gpu.func in a gpu.module. The main kernel comes in
// three families, one file each: MainWgmma.cpp (default), MainMmaSync.cpp,
// MainSimt.cpp; all run the materialised schedule regions, cloned in with
// the kernel's arguments, and the deterministic ordered dQ reduction with
// per-row semaphores. The kernel ABI (KernelBuilder.h) is documented in
// docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#include "dash/Conversion/Passes.h"

#include "KernelBuilder.h"

#include <cmath>
#include <limits>

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
  int64_t nthreads = 256; // the lowered op's thread count (see lower())

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
    auto qT = cast<MemRefType>(op.getQ().getType());
    Type elt = qT.getElementType();
    int64_t D = qT.getDimSize(3);
    if (cast<MemRefType>(op.getDq().getType()).getElementType() != elt)
      return op.emitOpError() << "the GPU kernels write gradients in the "
                                 "input element type; f32 gradients are a "
                                 "CPU-loops feature for now";
    int64_t bm = op.getTiling().getBlockM(), bn = op.getTiling().getBlockN();
    int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
    bool useSync = mma == "sync", useWgmma = mma == "wgmma";
    if (!useSync && !useWgmma && mma != "simt")
      return op.emitOpError() << "unknown mma mode '" << mma
                              << "'; expected wgmma, sync or simt";
    // threads = 0: the mode's own count (wgmma: 2 MMA warpgroups + the dQ
    // reducer's warpgroup; sync and simt: 256).
    nthreads = threads ? threads : (useWgmma ? kWgmmaThreads : 256);
    if (useWgmma) {
      if (nthreads != kWgmmaThreads)
        return op.emitOpError() << "mma=wgmma runs " << kWgmmaThreads
                                << " threads (2 MMA warpgroups + the dQ "
                                   "reducer's warpgroup); got threads="
                                << nthreads;
    } else if (nthreads < 128 || nthreads % 128 != 0 || nthreads > 1024) {
      return op.emitOpError() << "threads must be a multiple of 128 in "
                                 "[128, 1024]";
    }
    if (useWgmma && (!(bm == 64 || (bm == 128 && D == 64)) || bn != 128 ||
                     !elt.isBF16()))
      return op.emitOpError()
             << "mma=wgmma needs 128-row KV tiles, 64-row Q tiles (or 128 at "
                "D = 64) and bf16 (got "
             << bm << "x" << bn << " at D = " << D << ", " << elt
             << "); use dash-tile=\"block-m=64 block-n=128\"";
    if (useSync && (bm != 64 || bn != 64 || nthreads != 256 || !elt.isBF16()))
      return op.emitOpError()
             << "mma=sync needs 64x64 tiles, 256 threads and bf16 (got "
             << bm << "x" << bn << ", " << nthreads << " threads, " << elt
             << "); use mma=simt or dash-tile=\"block-m=64 block-n=64\"";
    // Shared memory of main. simt: K, V (input type), P, dS (f32).
    // sync: K, V, Q, dO (input type), P^T, dS^T, dS (input type).
    int64_t kvBytes = bn * D * eltBytes;
    int64_t pBytes = bm * bn * 4;
    int64_t sharedBytes = useWgmma  ? wgmmaSharedBytes(D, bm)
                          : useSync ? mmaSharedBytes(D)
                                    : 2 * kvBytes + 2 * pBytes;
    if (sharedBytes > 227 * 1024)
      return op.emitOpError() << "tile " << bm << "x" << bn << " with D = "
                              << D << " needs " << sharedBytes
                              << " B of shared memory (> 227 KiB)";

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
    config.append("block_m", b.getI64IntegerAttr(bm));
    config.append("block_n", b.getI64IntegerAttr(bn));
    config.append("threads", b.getI64IntegerAttr(nthreads));
    config.append("shared_bytes", b.getI64IntegerAttr(sharedBytes));
    config.append("mma", b.getStringAttr(mma));
    config.append("debug_spin_limit", b.getI64IntegerAttr(debugSpinLimit));
    gpuModule->setAttr("dash.config", config.getDictionary(ctx));

    if (debugSpinLimit < 0)
      return op.emitOpError() << "debug-spin-limit must be >= 0";
    SmallVector<Type> argTypes =
        kernelArgTypes(ctx, elt, D, /*debug=*/debugSpinLimit > 0);
    b.setInsertionPointToStart(gpuModule.getBody());
    buildPreprocess(b, loc, argTypes, D);
    if (useWgmma)
      buildMainWgmma(b, loc, argTypes, op, D, debugSpinLimit);
    else if (useSync)
      buildMainMmaSync(b, loc, argTypes, op, D, nthreads, debugSpinLimit);
    else
      buildMainSimt(b, loc, argTypes, op, D, bm, bn, eltBytes, nthreads,
                    debugSpinLimit);
    buildPostprocess(b, loc, argTypes, D);
    op.erase();
    return success();
  }

  // dPsum = rowsum(dO * O), lse_log2, and zeroed accumulators/semaphores.
  void buildPreprocess(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                       int64_t D) {
    OpBuilder::InsertionGuard guard(b);
    auto func = createKernel(b, loc, "dash_bwd_preprocess", argTypes, nthreads);
    b.setInsertionPointToStart(&func.getBody().front());
    Kernel k(b, loc, func, nthreads);
    LoopGen &g = k.g;
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2), cD = g.idx(D);
    k.gridLoop(g.mul(g.mul(B, H), Sq), [&](Value r) {
      SmallVector<Value> i = k.unflatten(r, {B, H, Sq}); // b, h, row
      Value sum = g.sum(cD, [&](Value d) {
        return g.mul(g.load(k.arg(kDO), {i[0], i[2], i[1], d}),
                     g.load(k.arg(kO), {i[0], i[2], i[1], d}));
      });
      memref::StoreOp::create(b, loc, sum, k.arg(kDPsum), i);
      Value l = g.load(k.arg(kLse), i);
      Value isInf = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OEQ, l,
          g.f32(-std::numeric_limits<double>::infinity()));
      Value l2 = arith::SelectOp::create(b, loc, isInf, g.f32(0.0),
                                         g.mul(l, g.f32(kLog2e)));
      memref::StoreOp::create(b, loc, l2, k.arg(kLse2), i);
    });
    // Workspace sizes come from the workspace descriptors themselves.
    for (Arg acc : {kDqAcc, kDkAcc, kDvAcc}) {
      SmallVector<Value> dims = {k.dim(acc, 0), k.dim(acc, 1), k.dim(acc, 2),
                                 cD};
      k.gridLoop(k.product(dims), [&](Value e) {
        memref::StoreOp::create(b, loc, g.f32(0.0), k.arg(acc),
                                k.unflatten(e, dims));
      });
    }
    SmallVector<Value> semDims = {k.dim(kSem, 0), k.dim(kSem, 1),
                                  k.dim(kSem, 2)};
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
    k.gridLoop(k.product(semDims), [&](Value e) {
      memref::StoreOp::create(b, loc, zero, k.arg(kSem),
                              k.unflatten(e, semDims));
    });
    gpu::ReturnOp::create(b, loc);
  }

  // dQ = dQaccum * scale; dK = scale * sum over the query heads of a group;
  // dV = that sum.
  void buildPostprocess(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                        int64_t D) {
    OpBuilder::InsertionGuard guard(b);
    auto func =
        createKernel(b, loc, "dash_bwd_postprocess", argTypes, nthreads);
    b.setInsertionPointToStart(&func.getBody().front());
    Kernel k(b, loc, func, nthreads);
    LoopGen &g = k.g;
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
          Sk = k.dim(kK, 1), Hkv = k.dim(kK, 2), cD = g.idx(D);
    Value scale = k.arg(kScale);
    k.gridLoop(k.product({B, Sq, H, cD}), [&](Value e) {
      SmallVector<Value> i = k.unflatten(e, {B, Sq, H, cD});
      Value acc = memref::LoadOp::create(b, loc, k.arg(kDqAcc),
                                         ValueRange{i[0], i[2], i[1], i[3]});
      g.store(g.mul(acc, scale), k.arg(kDq), i);
    });
    Value group = g.div(H, Hkv);
    k.gridLoop(k.product({B, Sk, Hkv, cD}), [&](Value e) {
      SmallVector<Value> i = k.unflatten(e, {B, Sk, Hkv, cD});
      // Fixed order over the group: deterministic GQA.
      auto groupSum = [&](Arg acc) {
        Value h0 = g.mul(i[2], group);
        return g.sum(group, [&](Value gi) {
          return memref::LoadOp::create(
              b, loc, k.arg(acc), ValueRange{i[0], g.add(h0, gi), i[1], i[3]});
        });
      };
      g.store(g.mul(groupSum(kDkAcc), scale), k.arg(kDk), i);
      g.store(groupSum(kDvAcc), k.arg(kDv), i);
    });
    gpu::ReturnOp::create(b, loc);
  }
};
} // namespace
