//===- DashToGPU.cpp - dash.scheduled_attention_bwd -> gpu.module ---------===//
//
// Emits the three kernels of the attention backward (preprocess, main,
// postprocess) as gpu.func in a gpu.module. The main kernel runs the
// materialised schedule regions, cloned in with the kernel's arguments, and
// implements the deterministic ordered dQ reduction with per-row semaphores.
// The kernel ABI is fixed here and documented in docs/Runtime.md.
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
      buildMainMma(b, loc, argTypes, op, D);
    else
      buildMain(b, loc, argTypes, op, D, bm, bn, eltBytes);
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

  // One persistent CTA per unit; see the pass description.
  void buildMain(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                 ScheduledAttentionBwdOp op, int64_t D, int64_t bm,
                 int64_t bn, int64_t eltBytes) {
    OpBuilder::InsertionGuard guard(b);
    auto func = createKernel(b, loc, "dash_bwd_main", argTypes, nthreads);
    b.setInsertionPointToStart(&func.getBody().front());
    Kernel k(b, loc, func, nthreads, debugSpinLimit);
    LoopGen &g = k.g;
    MLIRContext *ctx = b.getContext();
    Type elt = cast<MemRefType>(argTypes[kQ]).getElementType();
    Type f32 = b.getF32Type();
    bool causal = op.getMask() == Mask::Causal;
    bool det = op.getDeterministic();
    bool bottomRight = op.getEffectiveAlign() == CausalAlign::BottomRight;

    // Shared memory: K, V (input type) then P, dS (f32).
    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value base = k.dynamicShared();
    int64_t offset = 0;
    auto view = [&](ArrayRef<int64_t> shape, Type t, int64_t bytes) {
      Value v = memref::ViewOp::create(b, loc,
                                       MemRefType::get(shape, t, nullptr, wg),
                                       base, g.idx(offset), ValueRange{});
      offset += bytes;
      return v;
    };
    Value Kt = view({bn, D}, elt, bn * D * eltBytes);
    Value Vt = view({bn, D}, elt, bn * D * eltBytes);
    Value P = view({bm, bn}, f32, bm * bn * 4);
    Value dS = view({bm, bn}, f32, bm * bn * 4);

    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
          Sk = k.dim(kK, 1), Hkv = k.dim(kK, 2);
    (void)B;
    Value cD = g.idx(D), cBm = g.idx(bm), cBn = g.idx(bn);
    Value off = bottomRight ? g.sub(Sk, Sq) : g.idx(0);
    Value scaleLog2 = g.mul(k.arg(kScale), g.f32(kLog2e));
    Value unit = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);

    RegionMapping map = k.scheduleMapping(op);

    Value numItems = inlineScheduleRegion(b, op.getItems(), {unit}, map)[0];
    g.loop(numItems, [&](Value item) {
      SmallVector<Value> w =
          inlineScheduleRegion(b, op.getWork(), {unit, item}, map);
      Value bb = w[0], h = w[1], kv = w[2], len = w[3];
      Value hkv = g.div(h, g.div(H, Hkv));
      Value kv0 = g.mul(kv, cBn);
      Value kvRows = g.minIdx(cBn, g.sub(Sk, kv0));

      // Stage K and V; rows past S_k are zeros.
      k.stageRows(k.arg(kK), Kt, bb, kv0, kvRows, hkv, Sk, bn, D);
      k.stageRows(k.arg(kV), Vt, bb, kv0, kvRows, hkv, Sk, bn, D);
      k.barrier();

      g.loop(len, [&](Value step) {
        Value qt =
            inlineScheduleRegion(b, op.getVisit(), {bb, h, kv, step}, map)[0];
        Value rank =
            inlineScheduleRegion(b, op.getRank(), {bb, h, kv, qt}, map)[0];
        Value q0 = g.mul(qt, cBm);
        Value qRows = g.minIdx(cBm, g.sub(Sq, q0));
        Value lastQuery = g.sub(Sq, g.idx(1));

        // P and dS for the tile pair (masked entries are exact zeros).
        k.ctaLoop(g.mul(cBm, cBn), [&](Value e) {
          Value i = g.div(e, cBn), j = g.rem(e, cBn);
          Value gi = g.add(q0, i), gj = g.add(kv0, j);
          Value row = g.minIdx(gi, lastQuery);
          Value s = g.sum(cD, [&](Value d) {
            return g.mul(g.load(k.arg(kQ), {bb, row, h, d}),
                         g.load(Kt, {j, d}));
          });
          Value dp = g.sum(cD, [&](Value d) {
            return g.mul(g.load(k.arg(kDO), {bb, row, h, d}),
                         g.load(Vt, {j, d}));
          });
          Value p = k.exp2(g.sub(g.mul(s, scaleLog2),
                                 g.load(k.arg(kLse2), {bb, h, row})));
          Value valid = g.andI(g.lt(i, qRows), g.lt(j, kvRows));
          if (causal)
            valid = g.andI(valid, g.causalVisible(gj, gi, off));
          p = arith::SelectOp::create(b, loc, valid, p, g.f32(0.0));
          Value ds = g.mul(p, g.sub(dp, g.load(k.arg(kDPsum), {bb, h, row})));
          memref::StoreOp::create(b, loc, g.roundTo(elt, p), P,
                                  ValueRange{i, j});
          memref::StoreOp::create(b, loc, g.roundTo(elt, ds), dS,
                                  ValueRange{i, j});
        });
        k.barrier();

        // dV += P^T dO, dK += dS^T Q: each thread owns its (j, d) entries
        // for the whole walk, so plain read-modify-writes are exclusive.
        k.ctaLoop(g.mul(cBn, cD), [&](Value e) {
          Value j = g.div(e, cD), d = g.rem(e, cD);
          g.when(g.lt(j, kvRows), [&] {
            Value dv = g.sum(qRows, [&](Value i) {
              return g.mul(memref::LoadOp::create(b, loc, P, ValueRange{i, j}),
                           g.load(k.arg(kDO), {bb, g.add(q0, i), h, d}));
            });
            Value dk = g.sum(qRows, [&](Value i) {
              return g.mul(memref::LoadOp::create(b, loc, dS, ValueRange{i, j}),
                           g.load(k.arg(kQ), {bb, g.add(q0, i), h, d}));
            });
            Value row = g.add(kv0, j);
            g.accumulate(dv, k.arg(kDvAcc), {bb, h, row, d});
            g.accumulate(dk, k.arg(kDkAcc), {bb, h, row, d});
          });
        });

        // The ordered dQ reduction.
        Value semPtr;
        if (det) {
          semPtr = k.elementPtr(k.arg(kSem), {bb, h, qt});
          k.waitForRank(semPtr, rank, {unit, bb, h, qt});
        }
        k.ctaLoop(g.mul(cBm, cD), [&](Value e) {
          Value i = g.div(e, cD), d = g.rem(e, cD);
          g.when(g.lt(i, qRows), [&] {
            Value part = g.sum(kvRows, [&](Value j) {
              return g.mul(memref::LoadOp::create(b, loc, dS, ValueRange{i, j}),
                           g.load(Kt, {j, d}));
            });
            memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf,
                                        part, k.arg(kDqAcc),
                                        ValueRange{bb, h, g.add(q0, i), d});
          });
        });
        if (det)
          k.releaseRank(semPtr);
        k.barrier(); // P, dS are rewritten by the next step
      });
      k.barrier(); // K, V are rewritten by the next item
    });
    gpu::ReturnOp::create(b, loc);
  }

  // The tensor-core main kernel: same schedule, staging and semaphore
  // protocol as buildMain, with the five products on mma.sync.m16n8k16.
  //
  // Warp layout (8 warps, 64x64 tiles): warp w owns rows 16*(w%4) of every
  // product and column half w/4 (32 of the 64 KV columns for S/dP, D/2 of
  // the D columns for dV/dK/dQ). Fragment layout of m16n8k16 for lane l,
  // g = l/4, t = l%4: A regs (row g | g+8, cols 2t..2t+1 | +8), B regs
  // (k rows 2t..2t+1 | +8, col g), C regs c0,c1 = (g, 2t..2t+1),
  // c2,c3 = (g+8, 2t..2t+1).
  void buildMainMma(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                    ScheduledAttentionBwdOp op, int64_t D) {
    constexpr int64_t bm = 64, bn = 64;
    OpBuilder::InsertionGuard guard(b);
    auto func = createKernel(b, loc, "dash_bwd_main", argTypes, nthreads);
    b.setInsertionPointToStart(&func.getBody().front());
    Kernel k(b, loc, func, nthreads, debugSpinLimit);
    LoopGen &g = k.g;
    MLIRContext *ctx = b.getContext();
    Type elt = cast<MemRefType>(argTypes[kQ]).getElementType();
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    bool causal = op.getMask() == Mask::Causal;
    bool det = op.getDeterministic();
    bool bottomRight = op.getEffectiveAlign() == CausalAlign::BottomRight;

    auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value base = k.dynamicShared();
    // Rows are padded by 8 elements (16 B) so the 8 row addresses of an
    // ldmatrix land in 8 different bank groups (no conflicts).
    int64_t offset = 0;
    auto view = [&](int64_t rows, int64_t cols) {
      Value v = memref::ViewOp::create(
          b, loc,
          MemRefType::get({rows, cols + kPad}, elt, nullptr, wg), base,
          g.idx(offset), ValueRange{});
      offset += rows * (cols + kPad) * 2;
      return v;
    };
    Value Kt = view(bn, D), Vt = view(bn, D), Qs = view(bm, D),
          dOs = view(bm, D), Pt = view(bn, bm), dSt = view(bn, bm),
          dSs = view(bm, bn);
    Value dQs = memref::ViewOp::create(
        b, loc, MemRefType::get({bm, D}, f32, nullptr, wg), base,
        g.idx(offset), ValueRange{});
    offset += bm * D * 4;
    assert(offset == mmaSharedBytes(D) && "shared-memory size out of sync");

    Value Sq = k.dim(kQ, 1), H = k.dim(kQ, 2), Sk = k.dim(kK, 1),
          Hkv = k.dim(kK, 2);
    Value off = bottomRight ? g.sub(Sk, Sq) : g.idx(0);
    Value scaleLog2 = g.mul(k.arg(kScale), g.f32(kLog2e));
    Value unit = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value lane = g.rem(k.tid, g.idx(32)), warp = g.div(k.tid, g.idx(32));
    Value gq = g.div(lane, g.idx(4)), tq = g.rem(lane, g.idx(4));
    Value rowBase = g.mul(g.rem(warp, g.idx(4)), g.idx(16)); // 16-row slice
    Value half = g.div(warp, g.idx(4));                       // column half
    Value gq8 = g.add(gq, g.idx(8)), t2 = g.mul(tq, g.idx(2));

    auto structTy = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
    auto mmaOp = [&](ArrayRef<Value> a, ArrayRef<Value> bfrag,
                     ArrayRef<Value> c) {
      Value res = NVVM::MmaOp::create(
          b, loc, structTy, a, bfrag, c, {16, 8, 16}, std::nullopt,
          std::nullopt,
          std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                        NVVM::MMATypes::bf16},
          std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                         NVVM::MMALayout::col});
      SmallVector<Value, 4> out;
      for (int64_t i = 0; i < 4; ++i)
        out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
      return out;
    };
    // ldmatrix.x4: lane l addresses row (l % 8) of 8x8 matrix l / 8; the
    // caller maps (matrix, row) to a tile position. Results: one i32 (two
    // b16) per matrix, in the mma fragment layout (trans: column-major).
    auto ldsm = [&](Value m, function_ref<std::pair<Value, Value>(Value, Value)>
                                 pos,
                    bool trans) {
      Value mi = g.div(lane, g.idx(8)), r = g.rem(lane, g.idx(8));
      auto [row, col] = pos(mi, r);
      int64_t ld = cast<MemRefType>(m.getType()).getDimSize(1);
      Value addr = g.add(
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m),
          g.mul(g.add(g.mul(row, g.idx(ld)), col), g.idx(2)));
      Value ptr = LLVM::IntToPtrOp::create(
          b, loc, LLVM::LLVMPointerType::get(ctx, 3),
          arith::IndexCastOp::create(b, loc, b.getI64Type(), addr).getResult());
      auto structTy4 =
          LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32});
      Value res = NVVM::LdMatrixOp::create(
          b, loc, structTy4, ptr, 4,
          trans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
          NVVM::LdStMatrixEltType::B16);
      SmallVector<Value, 4> out;
      for (int64_t i = 0; i < 4; ++i)
        out.push_back(LLVM::ExtractValueOp::create(b, loc, res, i));
      return out;
    };
    // A fragment (16 x 16) of a row-major [rows, K] tile at (r0, k0):
    // matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15), rows first.
    auto fragA = [&](Value m, Value r0, int64_t k0) {
      return ldsm(m, [&](Value mi, Value r) {
        return std::pair{g.add(g.add(r0, r), g.mul(g.rem(mi, g.idx(2)), g.idx(8))),
                         g.add(g.idx(k0), g.mul(g.div(mi, g.idx(2)), g.idx(8)))};
      }, /*trans=*/false);
    };
    // B fragments of two 8-column n-tiles (n0, n0 + 8), K = 16 at k0, from a
    // tile stored [n][k]: returns {b0, b1} of n0 then {b0, b1} of n0 + 8.
    auto fragBT2 = [&](Value m, Value n0, int64_t k0) {
      return ldsm(m, [&](Value mi, Value r) {
        return std::pair{g.add(g.add(n0, r), g.mul(g.div(mi, g.idx(2)), g.idx(8))),
                         g.add(g.idx(k0), g.mul(g.rem(mi, g.idx(2)), g.idx(8)))};
      }, /*trans=*/false);
    };
    // The same from a tile stored [k][n] (ldmatrix.trans).
    auto fragB2 = [&](Value m, Value n0, int64_t k0) {
      return ldsm(m, [&](Value mi, Value r) {
        return std::pair{g.add(g.add(g.idx(k0), r), g.mul(g.rem(mi, g.idx(2)), g.idx(8))),
                         g.add(n0, g.mul(g.div(mi, g.idx(2)), g.idx(8)))};
      }, /*trans=*/true);
    };
    auto zeros = [&](int64_t n) {
      return SmallVector<Value>(n, g.f32(0.0));
    };

    RegionMapping map = k.scheduleMapping(op);

    const int64_t dTiles = D / 16;     // n-tiles of 8 per warp in D/2 columns
    const int64_t accSize = dTiles * 4; // f32 per thread per D-wide product
    Value colD = g.mul(half, g.idx(D / 2));

    // Hands the staged dQ partial of Q tile `qt` (rank `rank`) to global
    // memory: thread 0 waits for the row's turn, adds the whole tile with one
    // bulk reduce (TMA unit, fp32 add), waits for it to COMPLETE (not just
    // to have read shared memory), then releases the row. Deferred by one
    // step so the wait overlaps the next step's S/dP products.
    auto flush = [&](Value bb, Value h, Value qt, Value rank, Value pending) {
      Value doIt = g.andI(arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::ne,
                                                pending, g.idx(0)),
                          k.isThread0());
      g.when(doIt, [&] {
        Value semPtr;
        if (det) {
          semPtr = k.elementPtr(k.arg(kSem), {bb, h, qt});
          k.spinUntil(semPtr, rank,
                      {gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), bb, h,
                       qt});
          NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_global,
                                     nullptr);
        }
        Value q0 = g.mul(qt, g.idx(bm));
        Value qRows = g.minIdx(g.idx(bm), g.sub(Sq, q0));
        Value dst = LLVM::AddrSpaceCastOp::create(
            b, loc, LLVM::LLVMPointerType::get(ctx, 1),
            k.elementPtr(k.arg(kDqAcc), {bb, h, q0, g.idx(0)}));
        Value src = k.sharedPtr(dQs);
        Value bytes = arith::IndexCastOp::create(
            b, loc, i32, g.mul(qRows, g.idx(D * 4)));
        NVVM::InlinePtxOp::create(
            b, loc, TypeRange{}, ValueRange{dst, src, bytes}, ValueRange{},
            "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
            "[$0], [$1], $2;",
            Value());
        NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
        NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr());
        if (det) {
          NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_global,
                                     nullptr);
          k.releaseBy(semPtr);
        }
      });
    };

    Value numItems = inlineScheduleRegion(b, op.getItems(), {unit}, map)[0];
    g.loop(numItems, [&](Value item) {
      SmallVector<Value> w =
          inlineScheduleRegion(b, op.getWork(), {unit, item}, map);
      Value bb = w[0], h = w[1], kv = w[2], len = w[3];
      Value hkv = g.div(h, g.div(H, Hkv));
      Value kv0 = g.mul(kv, g.idx(bn));
      Value kvRows = g.minIdx(g.idx(bn), g.sub(Sk, kv0));
      k.stageRowsVec(k.arg(kK), Kt, bb, kv0, kvRows, hkv, Sk, bn, D);
      k.stageRowsVec(k.arg(kV), Vt, bb, kv0, kvRows, hkv, Sk, bn, D);

      // dV and dK live in registers for the whole walk; the last three
      // loop values are the pending dQ hand-off (Q tile, rank, pending?).
      SmallVector<Value> init = zeros(2 * accSize);
      init.append({g.idx(0), g.idx(0), g.idx(0)});
      auto walk = scf::ForOp::create(
          b, loc, g.idx(0), len, g.idx(1), init,
          [&](OpBuilder &nb, Location, Value step, ValueRange acc) {
            OpBuilder::InsertionGuard ig(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            SmallVector<Value> dV(acc.begin(), acc.begin() + accSize);
            SmallVector<Value> dK(acc.begin() + accSize,
                                  acc.begin() + 2 * accSize);
            Value prevQ = acc[2 * accSize], prevRank = acc[2 * accSize + 1],
                  pending = acc[2 * accSize + 2];
            Value qt = inlineScheduleRegion(b, op.getVisit(),
                                            {bb, h, kv, step}, map)[0];
            Value rank =
                inlineScheduleRegion(b, op.getRank(), {bb, h, kv, qt}, map)[0];
            Value q0 = g.mul(qt, g.idx(bm));
            Value qRows = g.minIdx(g.idx(bm), g.sub(Sq, q0));
            k.barrier(); // the previous step is done with Q, dO, P, dS
            k.stageRowsVec(k.arg(kQ), Qs, bb, q0, qRows, h, Sq, bm, D);
            k.stageRowsVec(k.arg(kDO), dOs, bb, q0, qRows, h, Sq, bm, D);
            k.barrier();

            // S = Q K^T and dP = dO V^T: 4 n-tiles of this warp's 32 cols.
            SmallVector<SmallVector<Value, 4>> S(4), dP(4);
            for (int64_t nt = 0; nt < 4; ++nt) {
              S[nt] = SmallVector<Value, 4>(4, g.f32(0.0));
              dP[nt] = S[nt];
            }
            Value colS = g.mul(half, g.idx(32));
            for (int64_t k0 = 0; k0 < D; k0 += 16) {
              SmallVector<Value, 4> aQ = fragA(Qs, rowBase, k0);
              SmallVector<Value, 4> aO = fragA(dOs, rowBase, k0);
              for (int64_t nt = 0; nt < 4; nt += 2) {
                Value n0 = g.add(colS, g.idx(nt * 8));
                SmallVector<Value, 4> bK = fragBT2(Kt, n0, k0);
                SmallVector<Value, 4> bV = fragBT2(Vt, n0, k0);
                for (int64_t u = 0; u < 2; ++u) {
                  S[nt + u] = mmaOp(aQ, {bK[2 * u], bK[2 * u + 1]}, S[nt + u]);
                  dP[nt + u] =
                      mmaOp(aO, {bV[2 * u], bV[2 * u + 1]}, dP[nt + u]);
                }
              }
            }
            // lse_log2 and dPsum of this thread's two rows.
            Value lastRow = g.sub(Sq, g.idx(1));
            Value rowA = g.minIdx(g.add(q0, g.add(rowBase, gq)), lastRow);
            Value rowB = g.minIdx(g.add(q0, g.add(rowBase, gq8)), lastRow);
            Value lseR[2] = {g.load(k.arg(kLse2), {bb, h, rowA}),
                             g.load(k.arg(kLse2), {bb, h, rowB})};
            Value dpsR[2] = {g.load(k.arg(kDPsum), {bb, h, rowA}),
                             g.load(k.arg(kDPsum), {bb, h, rowB})};
            // P and dS per accumulator element; stored as P^T, dS^T, dS.
            for (int64_t nt = 0; nt < 4; ++nt)
              for (int64_t r = 0; r < 4; ++r) {
                Value i = g.add(rowBase, r < 2 ? gq : gq8);
                Value j = g.add(g.add(colS, g.idx(nt * 8)),
                                g.add(t2, g.idx(r % 2)));
                Value gi = g.add(q0, i), gj = g.add(kv0, j);
                Value p = k.exp2(g.sub(g.mul(S[nt][r], scaleLog2), lseR[r / 2]));
                Value valid = g.andI(g.lt(i, qRows), g.lt(j, kvRows));
                if (causal)
                  valid = g.andI(valid, g.causalVisible(gj, gi, off));
                p = arith::SelectOp::create(b, loc, valid, p, g.f32(0.0));
                Value ds = g.mul(p, g.sub(dP[nt][r], dpsR[r / 2]));
                Value pb = arith::TruncFOp::create(b, loc, elt, p);
                Value dsb = arith::TruncFOp::create(b, loc, elt, ds);
                memref::StoreOp::create(b, loc, pb, Pt, ValueRange{j, i});
                memref::StoreOp::create(b, loc, dsb, dSt, ValueRange{j, i});
                memref::StoreOp::create(b, loc, dsb, dSs, ValueRange{i, j});
              }
            flush(bb, h, prevQ, prevRank, pending);
            k.barrier();

            // dV += P^T dO, dK += dS^T Q (rows j = this warp's slice).
            for (int64_t k0 = 0; k0 < bm; k0 += 16) {
              SmallVector<Value, 4> aP = fragA(Pt, rowBase, k0);
              SmallVector<Value, 4> aS = fragA(dSt, rowBase, k0);
              for (int64_t nt = 0; nt < dTiles; nt += 2) {
                Value n0 = g.add(colD, g.idx(nt * 8));
                SmallVector<Value, 4> bO = fragB2(dOs, n0, k0);
                SmallVector<Value, 4> bQ = fragB2(Qs, n0, k0);
                for (int64_t u = 0; u < 2; ++u) {
                  int64_t at = (nt + u) * 4;
                  ArrayRef<Value> cv(dV.data() + at, 4), ck(dK.data() + at, 4);
                  SmallVector<Value, 4> nv =
                      mmaOp(aP, {bO[2 * u], bO[2 * u + 1]}, cv);
                  SmallVector<Value, 4> nk =
                      mmaOp(aS, {bQ[2 * u], bQ[2 * u + 1]}, ck);
                  std::copy(nv.begin(), nv.end(), dV.begin() + at);
                  std::copy(nk.begin(), nk.end(), dK.begin() + at);
                }
              }
            }
            // dQ partial = dS K (rows i = this warp's slice).
            SmallVector<Value> dQ = zeros(accSize);
            for (int64_t k0 = 0; k0 < bn; k0 += 16) {
              SmallVector<Value, 4> aS = fragA(dSs, rowBase, k0);
              for (int64_t nt = 0; nt < dTiles; nt += 2) {
                Value n0 = g.add(colD, g.idx(nt * 8));
                SmallVector<Value, 4> bK = fragB2(Kt, n0, k0);
                for (int64_t u = 0; u < 2; ++u) {
                  int64_t at = (nt + u) * 4;
                  ArrayRef<Value> cq(dQ.data() + at, 4);
                  SmallVector<Value, 4> nq =
                      mmaOp(aS, {bK[2 * u], bK[2 * u + 1]}, cq);
                  std::copy(nq.begin(), nq.end(), dQ.begin() + at);
                }
              }
            }
            // Stage the dQ partial; the next step (or the end of the walk)
            // hands it over. Writers fence generic -> async proxy.
            for (int64_t nt = 0; nt < dTiles; ++nt)
              for (int64_t r = 0; r < 4; ++r) {
                Value i = g.add(rowBase, r < 2 ? gq : gq8);
                Value d = g.add(g.add(colD, g.idx(nt * 8)),
                                g.add(t2, g.idx(r % 2)));
                memref::StoreOp::create(b, loc, dQ[nt * 4 + r], dQs,
                                        ValueRange{i, d});
              }
            NVVM::FenceProxyOp::create(
                b, loc, NVVM::ProxyKind::async_shared,
                NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
            SmallVector<Value> next(dV);
            next.append(dK);
            next.append({qt, rank, g.idx(1)});
            scf::YieldOp::create(b, loc, next);
          });
      ValueRange acc = walk.getResults();
      k.barrier(); // every thread's last dQ partial is staged
      flush(bb, h, acc[2 * accSize], acc[2 * accSize + 1],
            acc[2 * accSize + 2]);
      // The walk's dK/dV: this item owns rows kv0.. of its query head.
      for (int64_t nt = 0; nt < dTiles; ++nt)
        for (int64_t r = 0; r < 4; ++r) {
          Value j = g.add(rowBase, r < 2 ? gq : gq8);
          Value d =
              g.add(g.add(colD, g.idx(nt * 8)), g.add(t2, g.idx(r % 2)));
          g.when(g.lt(j, kvRows), [&] {
            Value row = g.add(kv0, j);
            memref::StoreOp::create(b, loc, acc[nt * 4 + r], k.arg(kDvAcc),
                                    ValueRange{bb, h, row, d});
            memref::StoreOp::create(b, loc, acc[accSize + nt * 4 + r],
                                    k.arg(kDkAcc), ValueRange{bb, h, row, d});
          });
        }
      k.barrier(); // K, V are rewritten by the next item
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
