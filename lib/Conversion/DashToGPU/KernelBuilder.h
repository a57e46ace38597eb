//===- KernelBuilder.h - Shared pieces of the DASH GPU kernels -*- C++ -*-===//
//
// Internal to lib/Conversion/DashToGPU: the kernel ABI (argument order,
// names, types), the debug record, and `Kernel`, the per-kernel builder
// context (thread coordinates, CTA loops, semaphores, shared memory) that
// every main-kernel variant (simt, mma.sync, wgmma) builds on.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_CONVERSION_DASHTOGPU_KERNELBUILDER_H
#define DASH_LIB_CONVERSION_DASHTOGPU_KERNELBUILDER_H

#include "../LoopGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dash::detail {
constexpr double kLog2e = 1.4426950408889634;
/// Row padding of the mma kernel's shared tiles, in elements.
constexpr int64_t kPad = 8;
/// Shared memory of the mma main kernel (64x64 tiles, bf16): K, V, Q, dO
/// as [64][D + pad], P^T, dS^T, dS as [64][64 + pad], and the f32 dQ
/// partial [64][D] (unpadded: one bulk reduce reads it as one block).
inline int64_t mmaSharedBytes(int64_t d) {
  return 4 * 64 * (d + kPad) * 2 + 3 * 64 * (64 + kPad) * 2 + 64 * d * 4;
}

/// Kernel arguments, in ABI order (docs/Runtime.md).
enum Arg : unsigned {
  kQ, kK, kV, kO, kDO, kLse, kDq, kDk, kDv, // user tensors (strided)
  kDqAcc, kDkAcc, kDvAcc, kDPsum, kLse2, kSem, // workspace
  kScale,
  kDebug,      // only in debug kernels (debug-spin-limit > 0)
  kTensorMaps, // only in TMA kernels (loads=tma); always the last argument
  kNumArgs
};
inline const char *const kArgNames[kNumArgs] = {
    "q",        "k",        "v",        "o",        "dO",
    "lse",      "dq",       "dk",       "dv",       "dq_accum",
    "dk_accum", "dv_accum", "dpsum",    "lse_log2", "semaphores",
    "scale",    "debug",    "tensor_maps"};
/// The CUtensorMaps of q, k, v, dO (loads), dq_accum (slot 4: unused since
/// the TMA kernels add dQ tiles with 1-D bulk reduce-adds into the "tiles"
/// layout; the runtime still encodes it for manifests built before) and
/// lse_log2, dPsum (loads), 128 B each, as i64 words; dkdv-bulk kernels
/// also dk and dv (their epilogue's TMA stores).
constexpr int64_t kTensorMapCount = 7, kTensorMapDqAcc = 4,
                  kTensorMapLse2 = 5, kTensorMapDPsum = 6, kTensorMapDk = 7,
                  kTensorMapDv = 8, kTensorMapCountDkdvBulk = 9;

/// The record a debug kernel leaves in its `debug` buffer (i64 words) before
/// it traps on a semaphore that never reaches the expected rank.
enum DebugWord : int64_t {
  kDbgMagic, kDbgUnit, kDbgB, kDbgH, kDbgQ, kDbgRank, kDbgSeen, kDbgSpins,
  kDbgWords
};
constexpr int64_t kDebugMagic = 0xDA5400DE;

/// The tensor-map argument's type: static, so it cannot be mistaken for the
/// (dynamic) debug record of the same element type.
inline MemRefType tensorMapsType(MLIRContext *ctx,
                                 int64_t maps = kTensorMapCount) {
  return MemRefType::get({maps * 16}, IntegerType::get(ctx, 64));
}
inline bool isTensorMapsType(Type t) {
  return t == tensorMapsType(t.getContext()) ||
         t == tensorMapsType(t.getContext(), kTensorMapCountDkdvBulk);
}

/// `maps`: the tensor maps of a TMA kernel (kTensorMapCount, or
/// kTensorMapCountDkdvBulk).
inline SmallVector<Type> kernelArgTypes(MLIRContext *ctx, Type elt, int64_t d,
                                        bool debug, bool tma = false,
                                        int64_t maps = kTensorMapCount) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = Float32Type::get(ctx), i32 = IntegerType::get(ctx, 32);
  // BSHD with any strides but a unit stride on D (what TMA will need too).
  auto act = MemRefType::get(
      {dyn, dyn, dyn, d}, elt,
      StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, dyn, 1}));
  auto lse = MemRefType::get({dyn, dyn, dyn}, f32,
                             StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, dyn}));
  auto acc4 = MemRefType::get({dyn, dyn, dyn, d}, f32);
  auto acc3 = MemRefType::get({dyn, dyn, dyn}, f32);
  auto sem = MemRefType::get({dyn, dyn, dyn}, i32);
  SmallVector<Type> types = {act,  act,  act,  act,  act,  lse, act, act,
                             act,  acc4, acc4, acc4, acc3, acc3, sem, f32};
  if (debug) // host-mapped i64 words (DebugWord), written before a trap
    types.push_back(MemRefType::get({dyn}, IntegerType::get(ctx, 64)));
  if (tma) // filled by the runtime before the launches (docs/Runtime.md)
    types.push_back(tensorMapsType(ctx, maps));
  return types;
}

inline gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                                   ArrayRef<Type> argTypes, int64_t threads);

/// Per-kernel context: the builder, thread coordinates, arguments.
struct Kernel {
  OpBuilder &b;
  Location loc;
  LoopGen g;
  gpu::GPUFuncOp func;
  Block::BlockArgListType args;
  int64_t threads;
  Value tid, T;

  /// > 0: a bounded spin that reports and traps instead of hanging.
  int64_t spinLimit = 0;

  /// Creates kernel `name` (createKernel) and builds into its body from
  /// here on; the caller holds an InsertionGuard.
  Kernel(OpBuilder &b, Location loc, StringRef name, ArrayRef<Type> argTypes,
         int64_t threads, int64_t spinLimit = 0)
      : Kernel(b, loc, enter(b, loc, name, argTypes, threads), threads,
               spinLimit) {}
  Kernel(OpBuilder &b, Location loc, gpu::GPUFuncOp func, int64_t threads,
         int64_t spinLimit = 0)
      : b(b), loc(loc), g{b, loc}, func(func), args(func.getArguments()),
        threads(threads), spinLimit(spinLimit) {
    tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    T = g.idx(threads);
  }
  static gpu::GPUFuncOp enter(OpBuilder &b, Location loc, StringRef name,
                              ArrayRef<Type> argTypes, int64_t threads) {
    auto f = createKernel(b, loc, name, argTypes, threads);
    b.setInsertionPointToStart(&f.getBody().front());
    return f;
  }
  Value arg(Arg a) {
    if (a == kTensorMaps) {
      assert(isTensorMapsType(args.back().getType()) &&
             "not a TMA kernel");
      return args.back();
    }
    return args[a];
  }
  Value dim(Arg a, int64_t i) {
    return b.createOrFold<memref::DimOp>(loc, arg(a), i);
  }
  /// Grid-stride loop over [0, n): every thread of every CTA.
  void gridLoop(Value n, function_ref<void(Value)> body) {
    Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value nb = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    g.loop(g.add(g.mul(bid, T), tid), n, g.mul(nb, T), body);
  }
  /// CTA-stride loop over [0, n): the threads of this CTA.
  void ctaLoop(Value n, function_ref<void(Value)> body) {
    g.loop(tid, n, T, body);
  }
  /// Row-major decomposition of a flat index over `dims`.
  SmallVector<Value> unflatten(Value e, ArrayRef<Value> dims) {
    SmallVector<Value> out(dims.size());
    for (int i = dims.size() - 1; i >= 0; --i) {
      out[i] = i ? g.rem(e, dims[i]) : e;
      if (i)
        e = g.div(e, dims[i]);
    }
    return out;
  }
  Value product(ArrayRef<Value> dims) {
    Value p = g.idx(1);
    for (Value d : dims)
      p = g.mul(p, d);
    return p;
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  /// Pointer (address space `as`; 0: generic) to memref element `indices`
  /// (for atomics that memref does not spell: acquire loads, release
  /// increments; for the row kernels' loads). With `lastDim` >= 0 that
  /// index's term is added last, so accesses that differ only in it share
  /// the rest of the sum (CSE keeps one): the row kernels' groups of a chunk.
  Value elementPtr(Value memref, ValueRange indices, int64_t lastDim = -1,
                   unsigned as = 0) {
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value linear = meta.getOffset();
    for (auto [i, idx] : llvm::enumerate(indices))
      if (int64_t(i) != lastDim)
        linear = g.add(linear, g.mul(idx, meta.getStrides()[i]));
    if (lastDim >= 0)
      linear = g.add(linear, g.mul(indices[lastDim], meta.getStrides()[lastDim]));
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    unsigned bytes =
        cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
    Value addr = g.add(base, g.mul(linear, g.idx(bytes)));
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), as), i64);
  }
  Value isThread0() {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                 g.idx(0));
  }
  /// Spins (the calling thread) with acquire loads until *semPtr == rank
  /// (atLeast: >= rank). `where` = {unit, b, h, q} identifies the wait in a
  /// debug report.
  void spinUntil(Value semPtr, Value rank, ArrayRef<Value> where,
                 bool atLeast = false) {
    const auto unmet =
        atLeast ? arith::CmpIPredicate::slt : arith::CmpIPredicate::ne;
    Value rank32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), rank);
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
    Value seenInit = arith::ConstantIntOp::create(b, loc, -1, 32);
    auto loopOp = scf::WhileOp::create(
        b, loc, TypeRange{i32, i64}, ValueRange{seenInit, zero64},
        [&](OpBuilder &nb, Location l, ValueRange iter) {
          Value seen = LLVM::LoadOp::create(
              nb, l, i32, semPtr, /*alignment=*/4, false, false, false, false,
              LLVM::AtomicOrdering::acquire, "device");
          Value wait = arith::CmpIOp::create(nb, l, unmet, seen, rank32);
          if (spinLimit > 0) { // give up after spinLimit polls
            Value under = arith::CmpIOp::create(
                nb, l, arith::CmpIPredicate::slt, iter[1],
                arith::ConstantIntOp::create(nb, l, spinLimit, 64));
            wait = arith::AndIOp::create(nb, l, wait, under);
          }
          scf::ConditionOp::create(nb, l, wait, ValueRange{seen, iter[1]});
        },
        [&](OpBuilder &nb, Location l, ValueRange iter) {
          Value next = arith::AddIOp::create(
              nb, l, iter[1], arith::ConstantIntOp::create(nb, l, 1, 64));
          scf::YieldOp::create(nb, l, ValueRange{iter[0], next});
        });
    if (spinLimit <= 0)
      return;
    Value seen = loopOp.getResult(0), spins = loopOp.getResult(1);
    Value stuck = arith::CmpIOp::create(b, loc, unmet, seen, rank32);
    g.when(stuck, [&] { reportStuck(where, rank, seen, spins); });
  }
  /// Debug kernels, a wait that gave up: claim the record (first CTA wins),
  /// write who waited for what (`where` = {unit, b, h, q}; `what`, `seen`,
  /// `spins`: DebugWord kDbgRank, kDbgSeen, kDbgSpins), make it visible to
  /// the host (system-scope fence), trap.
  void reportStuck(ArrayRef<Value> where, Value what, Value seen, Value spins) {
    Type i64 = b.getI64Type();
    Value dbg = arg(kDebug);
    Value magic = arith::ConstantIntOp::create(b, loc, kDebugMagic, 64);
    Value old = LLVM::AtomicRMWOp::create(
        b, loc, LLVM::AtomicBinOp::xchg, elementPtr(dbg, {g.idx(kDbgMagic)}),
        magic, LLVM::AtomicOrdering::monotonic, "");
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, old,
                                        magic);
    g.when(first, [&] {
      auto put = [&](DebugWord w, Value v) {
        if (!v.getType().isInteger(64))
          v = v.getType().isIndex()
                  ? arith::IndexCastOp::create(b, loc, i64, v).getResult()
                  : arith::ExtSIOp::create(b, loc, i64, v).getResult();
        memref::StoreOp::create(b, loc, v, dbg, ValueRange{g.idx(w)});
      };
      put(kDbgUnit, where[0]);
      put(kDbgB, where[1]);
      put(kDbgH, where[2]);
      put(kDbgQ, where[3]);
      put(kDbgRank, what);
      put(kDbgSeen, seen);
      put(kDbgSpins, spins);
    });
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::seq_cst, "");
    LLVM::Trap::create(b, loc);
  }
  /// Release increment by the calling thread: fence + relaxed add (LLVM
  /// 22.1 lowers a `release` atomicrmw to a relaxed atom, HOPPER.md P15).
  void releaseBy(Value semPtr) {
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, "device");
    Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, semPtr, one,
                              LLVM::AtomicOrdering::monotonic, "device");
  }
  /// Shared-window pointer (!llvm.ptr<3>) to the start of a shared memref.
  Value sharedPtr(Value memref) {
    Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
        arith::IndexCastOp::create(b, loc, b.getI64Type(), addr).getResult());
  }
  /// Deterministic mode, before the dQ adds: thread 0 spins with acquire
  /// loads until the row's semaphore equals `rank`; the barrier holds the
  /// CTA until then.
  void waitForRank(Value semPtr, Value rank, ArrayRef<Value> where) {
    g.when(isThread0(), [&] { spinUntil(semPtr, rank, where); });
    barrier();
  }
  /// After the dQ adds: every thread's adds are performed (fence) before
  /// the barrier; then thread 0 hands the row to the next rank.
  void releaseRank(Value semPtr) {
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, "device");
    barrier();
    g.when(isThread0(), [&] { releaseBy(semPtr); });
  }
  /// Copies rows [row0, row0 + rows) of head `head` of a BSHD tensor into a
  /// [tileRows, D] shared tile; rows past the end (or past `rows`) are 0.
  void stageRows(Value src, Value dst, Value bb, Value row0, Value rows,
                 Value head, Value seqLen, int64_t tileRows, int64_t d) {
    Type elt = cast<MemRefType>(dst.getType()).getElementType();
    Value cD = g.idx(d), last = g.sub(seqLen, g.idx(1));
    ctaLoop(g.mul(g.idx(tileRows), cD), [&](Value e) {
      Value r = g.div(e, cD), c = g.rem(e, cD);
      Value row = g.minIdx(g.add(row0, r), last);
      Value x = memref::LoadOp::create(b, loc, src,
                                       ValueRange{bb, row, head, c});
      Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
      x = arith::SelectOp::create(b, loc, g.lt(r, rows), x, zero);
      memref::StoreOp::create(b, loc, x, dst, ValueRange{r, c});
    });
  }
  /// stageRows with 16-byte vector accesses (8 bf16): the runtime guarantees
  /// 16-byte aligned bases and row strides, the shared rows are padded to
  /// multiples of 16 B.
  void stageRowsVec(Value src, Value dst, Value bb, Value row0, Value rows,
                    Value head, Value seqLen, int64_t tileRows, int64_t d) {
    Type elt = cast<MemRefType>(dst.getType()).getElementType();
    auto vecTy = VectorType::get({8}, elt);
    Value chunks = g.idx(d / 8), last = g.sub(seqLen, g.idx(1));
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecTy, b.getZeroAttr(elt)));
    ctaLoop(g.mul(g.idx(tileRows), chunks), [&](Value e) {
      Value r = g.div(e, chunks), c = g.mul(g.rem(e, chunks), g.idx(8));
      Value row = g.minIdx(g.add(row0, r), last);
      Value x = vector::LoadOp::create(b, loc, vecTy, src,
                                       ValueRange{bb, row, head, c},
                                       /*nontemporal=*/false, llvm::Align(16));
      x = arith::SelectOp::create(b, loc, g.lt(r, rows), x, zero);
      vector::StoreOp::create(b, loc, x, dst, ValueRange{r, c},
                              /*nontemporal=*/false, llvm::Align(16));
    });
  }
  /// How the materialised schedule regions see this kernel: the op's
  /// operands are the kernel's arguments, G is the grid size.
  RegionMapping scheduleMapping(ScheduledAttentionBwdOp op) {
    RegionMapping map;
    Arg opArgs[] = {kQ, kK, kV, kO, kDO, kLse, kDq, kDk, kDv};
    for (auto [i, a] : llvm::enumerate(opArgs))
      map.operands.map(op->getOperand(i), arg(a));
    map.numUnits = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    // 32-bit walk arithmetic (the runtime bounds it: checkWalkFitsInt32).
    map.narrow = b.getI32Type();
    return map;
  }
  /// The unit's walk as the schedule regions say it: how many items, and
  /// item `item` = (b, h, KV tile, number of Q-tile steps).
  struct WorkItem {
    Value bb, h, kv, len;
  };
  Value numItems(ScheduledAttentionBwdOp op, RegionMapping &map, Value unit) {
    return inlineScheduleRegion(b, op.getItems(), {unit}, map)[0];
  }
  WorkItem workItem(ScheduledAttentionBwdOp op, RegionMapping &map,
                    Value unit, Value item) {
    SmallVector<Value> w =
        inlineScheduleRegion(b, op.getWork(), {unit, item}, map);
    return {w[0], w[1], w[2], w[3]};
  }
  /// A `shape` x `elt` view of the dynamic shared window, placed after the
  /// views taken before it (sharedUsed bytes so far).
  Value sharedView(ArrayRef<int64_t> shape, Type elt) {
    if (!sharedWindow)
      sharedWindow = dynamicShared();
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    Value v = memref::ViewOp::create(
        b, loc, MemRefType::get(shape, elt, nullptr, wg), sharedWindow,
        g.idx(sharedUsed), ValueRange{});
    int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
    for (int64_t n : shape)
      bytes *= n;
    sharedUsed += bytes;
    return v;
  }
  Value sharedWindow;
  int64_t sharedUsed = 0;
  /// The dynamic shared-memory window as i8 bytes.
  Value dynamicShared() {
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                         gpu::AddressSpace::Workgroup);
    return gpu::DynamicSharedMemoryOp::create(
        b, loc,
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr, wg));
  }
  /// 2^x with ex2.approx.ftz (no libdevice, as FA3).
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"), ValueRange{x})
        .getResult(0);
  }
};

inline gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                            ArrayRef<Type> argTypes, int64_t threads) {
  auto func = gpu::GPUFuncOp::create(
      b, loc, name, FunctionType::get(b.getContext(), argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr("nvvm.maxntid",
                b.getDenseI32ArrayAttr({(int32_t)threads, 1, 1}));
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    bool maps = isTensorMapsType(argTypes[i]);
    func.setArgAttr(i, "dash.name",
                    b.getStringAttr(kArgNames[maps ? unsigned(kTensorMaps) : i]));
  }
  return func;
}


/// How dq_accum ([B, H, rows, D] f32, contiguous) holds dQ. Row-major
/// (tileRows = 0): element (b, h, s, c) is dQ's. "tiles" (the TMA WGMMA
/// kernels, tileRows = their Q tile rows bm; rows = S_q rounded up to bm):
/// the bm * D floats from row t * bm hold Q tile t in the main kernel's dQ
/// staging order, so one warpgroup's part of a tile is one contiguous bulk
/// reduce-add: two parts of 64 rows (the tile's row halves at bm = 128, its
/// column halves at bm = 64), each [part columns / 8][64][8].
struct DqAccumLayout {
  static constexpr int64_t kPartRows = 64, kPanelCols = 8;
  int64_t tileRows = 0;
  int64_t d = 0;
  bool tiles() const { return tileRows != 0; }
  bool partsByRows() const { return tileRows == 2 * kPartRows; }
  int64_t partCols() const { return partsByRows() ? d : d / 2; }
  int64_t partFloats() const { return kPartRows * partCols(); }
  int64_t panelFloats() const { return kPartRows * kPanelCols; }
};

/// The float offset of dQ tile element (r, col) in its tile of the "tiles"
/// layout (`col` a multiple of kPanelCols: 8 contiguous floats follow), as
/// the main kernel's staging buffers hold it (PrePost.cpp).
Value dqTileFloat(Kernel &k, const DqAccumLayout &l, Value r, Value col);

/// Which dq_accum rows the preprocess zeroes: all of them (rows padded to
/// whole tiles included), unless every Q tile's first hand-off in the
/// deterministic order stores rather than adds (the deterministic TMA WGMMA
/// kernels, rankZeroStores). Then only the rows no key is visible to: their
/// tiles may have no hand-off at all (S_k = 0, or a bottom-right causal mask
/// with S_q > S_k), and in a visited tile they get zeros anyway.
struct DqAccumInit {
  bool rankZeroStores = false;
  bool causalBottomRight = false;
  /// dq-in-main kernels: the preprocess also zeroes the dQ tile ticket, the
  /// word after the semaphores (dqTicketPtr).
  bool dqTicket = false;
  /// stats-in-main kernels: the preprocess computes no statistics; it
  /// zeroes the statistics ticket and the per-head row counts instead.
  bool statsInMain = false;
  /// pdl kernels: the preprocess lets the main kernel launch at its start.
  bool launchDependents = false;
  /// dps-fold kernels: each head's dPsum row of S f32 holds two bf16 rows
  /// of S instead, hi = bf16(dPsum) then lo = bf16(dPsum - hi).
  bool dpsumHiLo = false;
};

/// Word `word` (index) after the B * H * M semaphores (the runtime's slack,
/// docs/Runtime.md): 0 the dQ tile ticket of dq-in-main kernels; in
/// stats-in-main kernels 1 the statistics ticket and 2 + (b H + h) head (b,
/// h)'s count of rows with their statistics written.
inline Value semTailPtr(Kernel &k, Value word) {
  LoopGen &g = k.g;
  Value n = g.mul(g.mul(k.dim(kSem, 0), k.dim(kSem, 1)), k.dim(kSem, 2));
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(k.b, k.loc, k.arg(kSem));
  Value at = g.add(base, g.mul(g.add(n, word), g.idx(4)));
  return LLVM::IntToPtrOp::create(
      k.b, k.loc, LLVM::LLVMPointerType::get(k.b.getContext()),
      arith::IndexCastOp::create(k.b, k.loc, k.b.getI64Type(), at)
          .getResult());
}
inline Value dqTicketPtr(Kernel &k) { return semTailPtr(k, k.g.idx(0)); }
constexpr int64_t kSemStatsTicket = 1, kSemStatsReady0 = 2;

/// One query row's statistics from a lane's 8 elements of dO and O (raw
/// vectors, `lanes` lanes a row) and the row's lse: dPsum, the order-fixed
/// sum of the products over the row's lanes (every lane holds it), and
/// lse_log2 (0 for a fully masked row, lse = -inf). The preprocess's and
/// stats-in-main's rows (bitwise the same either way).
std::pair<Value, Value> rowStatistics(Kernel &k, Value dO8, Value o8,
                                      Value lse, int64_t lanes);
/// dps-fold kernels' form of row s's dPsum `dps`: bf16 hi = dps and lo = dps
/// - hi at elements s and S + s of the head's dPsum row (`headRow`: its
/// element 0), S the row's f32 length.
void storeDpsumHiLo(Kernel &k, Value headRow, Value s, Value dps);

/// The elementwise kernels around the main one (PrePost.cpp): dPsum,
/// lse_log2 and zeroed workspace; dQ (and, from the workspace, dK/dV) in
/// the output type. dkdvDirect: the main kernel writes dk/dv when
/// H == H_kv, so the postprocess leaves them alone then.
void buildPreprocess(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                     int64_t d, int64_t threads, DqAccumLayout dqLayout,
                     DqAccumInit dqInit);
/// dqInMain: the main kernel writes dQ; the postprocess then only sums
/// GQA's dK/dV.
void buildPostprocess(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                      int64_t d, int64_t threads, bool dkdvDirect,
                      DqAccumLayout dqLayout, bool dqInMain);

/// The CUDA-core main kernel (MainSimt.cpp): any tile, `threads` threads.
void buildMainSimt(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                   ScheduledAttentionBwdOp op, int64_t d, int64_t bm,
                   int64_t bn, int64_t threads,
                   int64_t spinLimit);
/// The mma.sync main kernel (MainMmaSync.cpp): 64x64 tiles, 256 threads.
void buildMainMmaSync(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                      ScheduledAttentionBwdOp op, int64_t d, int64_t threads,
                      int64_t spinLimit);

/// The warp-specialised WGMMA main kernel (MainWgmma.cpp): KV tiles of 128
/// rows, Q tiles of 64 (or 128 at d = 64), two MMA warpgroups and a third
/// warpgroup whose first warp reduces dQ.
constexpr int64_t kWgmmaThreads = 384;
/// Dynamic shared memory an sm_90 CTA may use.
constexpr int64_t kMaxShared = 227 * 1024;
/// setmaxnreg only moves registers within the CTA's launch allocation (384
/// threads at one CTA per SM: 168 each); an increase the pool cannot cover
/// spins forever. The MMA warpgroups take mmaRegs, warpgroup 2 the rest.
constexpr int64_t kRegisterPool = 168 * kWgmmaThreads;
/// The kernel's shape choices beyond the tiling.
struct WgmmaConfig {
  /// A producer warp (warp 10) loads Q, dO, K, V with TMA from the runtime's
  /// tensor maps through full/empty mbarriers; else the MMA threads issue
  /// cp.async one step ahead.
  bool tma = true;
  /// dS^T buffers: 1, or 2 with tma (one cross-warpgroup barrier per step
  /// instead of two).
  int64_t dsBufs = 1;
  /// Registers per MMA thread after setmaxnreg (240: 24 for warpgroup 2;
  /// 232: 40, which keeps the reducers' rank-wait loop out of local memory).
  int64_t mmaRegs = 240;
  /// f32 dQ staging buffers, each with its reducer warp: 2 (hand-offs
  /// alternate, two rows' ordered adds in flight), or 1 (32 KiB back at
  /// D = 64, where two dS^T buffers then fit; one reducer warp).
  int64_t dqBufs = 2;
  /// TMA kernels: the item's last dQ frees K and V (the next item's K/V
  /// load overlaps the last hand-off and the dK/dV epilogue).
  bool earlyKV = false;
  /// 128-row Q tiles: each MMA warpgroup computes dQ of the whole tile over
  /// its own 64 KV rows (reading only its own dS^T rows), and warpgroup 1
  /// adds its partial onto warpgroup 0's in the staging buffer, so the
  /// warpgroups never meet at a dS^T barrier (dq-kv-split=1).
  bool dqKvSplit = false;
  /// With dqKvSplit: the warpgroups take turns issuing each step's S^T and
  /// dP^T, so their exp2/dS math alternates with the other's products; the
  /// turn passes once S^T is done (1) or once the exp2 pass is (2).
  int64_t wgTurns = 0;
  /// Row statistics as accumulator starts (stats-in-acc): 1, dP^T's starts
  /// at dPsum and accumulates -V dO^T (the dS pass reads no dPsum); 2, also
  /// S^T's at -lse_log2 / (scale log2 e) (the exp2 pass reads no lse_log2).
  int64_t statsInAcc = 0;
  /// Diagnostic kernels: the main kernel writes a per-CTA timeline into O's
  /// buffer, which it never reads (TraceWord; bench/item_trace.py).
  bool traceTimeline = false;
  /// TMA kernels: the producer issues an item's first Q/dO copies before it
  /// waits for the previous item's K/V to be free (q-before-kv=1).
  bool qBeforeKV = false;
  /// dS^T goes to shared memory by stmatrix (ds-stmatrix=1).
  bool dsStmatrix = false;
  /// dV issued as soon as P is packed, before the dS pass (early-dv=1;
  /// at 128-row Q tiles the dS pass then reads P back from its bf16 pairs),
  /// else after the dS pass and its proxy fence.
  bool earlyDv = false;
  /// trace-timeline=2: also clock64 at each phase of one step per item
  /// (TracePhase) from each MMA warpgroup and the step's reducer.
  bool tracePhases = false;
  /// The next step's S^T issued once this step's dQ is complete, before its
  /// hand-off (early-st=1).
  bool earlySt = false;
  /// The exp2 pass in this many chunks, each chunk's FFMAs depending on the
  /// previous chunk's exp2 results (exp2-chunks; 1: one pass).
  int64_t exp2Chunks = 1;
  /// Diagnostic, wrong gradients: P without its exp2 (ablate-exp2=1).
  bool ablateExp2 = false;
  /// Deterministic TMA kernels: the MMA warpgroups convert finished dQ
  /// tiles after their walk (dq-in-main=1; WgmmaDqConvert.cpp).
  bool dqInMain = false;
  /// Diagnostic, wrong gradients: the reducers add and release without
  /// waiting for the row's rank (ablate-rank-wait=1).
  bool ablateRankWait = false;
  /// ds-in-pass: the wait for dP^T and the dS math inside the exp2 pass,
  /// the wait after this many chunks (-1: the dS pass after the join).
  int64_t dsInPassWait = -1;
  /// TMA kernels: the producer prefetches the next item's K/V into L2 as it
  /// issues step max(len - P, 0) of the walk (kv-prefetch-ahead=P), or
  /// right after the item's own K/V (0).
  int64_t kvPrefetchAhead = 0;
  /// TMA kernels, D = 64 on 128-row Q tiles: the next item's K/V land in
  /// the dS^T buffer the walk's last step leaves free and reach the K/V
  /// tiles by a shared-to-shared bulk copy (kv-via-ds=1).
  bool kvViaDs = false;
  /// TMA kernels, D = 64 on 128-row Q tiles: the direct dK/dV epilogue
  /// stages bf16 rows in the last step's dS^T buffer, from where warp 11
  /// stores them by TMA (dkdv-bulk=1).
  bool dkdvBulk = false;
  /// TMA kernels: dPsum and lse_log2 computed by the main kernel, the first
  /// round's heads by every thread before the roles split, the rest by warp
  /// 11 (stats-in-main=1; WgmmaStats.cpp).
  bool statsInMain = false;
  /// The main kernel is a programmatic dependent launch (pdl=1): it waits
  /// for the preprocess with griddepcontrol.wait.
  bool pdl = false;
  /// TMA kernels: the whole of warp 10 runs the producer, one elected lane
  /// issuing (warp-producer=1; WgmmaProducer.cpp), else lane 0 alone.
  bool warpProducer = false;
  /// The reducers carry each hand-off's rank, rank 0 stores, and every
  /// hand-off releases the row's semaphore once its adds completed: always
  /// in deterministic TMA kernels, and in non-deterministic ones with
  /// counted-adds=1, whose later ranks wait only for rank 0's store.
  bool countedAdds = false;
  /// The MMA threads' warpgroup index from the lane-0 broadcast, so their
  /// wgmma descriptors live in uniform registers (uniform-wg=1).
  bool uniformWg = false;
  /// dS stored transposed, Q rows by KV columns, as dQ's K-major A
  /// (ds-trans=1).
  bool dsTrans = false;
  /// With earlyDv off: dV issued after the dS^T stores but ahead of their
  /// proxy fence (dv-before-fence=1).
  bool dvBeforeFence = false;
  /// ds-in-pass on 64-row tiles: dPsum read this many exp2 chunks ahead of
  /// the wait for dP^T (dps-ahead=N; 0: right before the wait).
  int64_t dpsAhead = 0;
  /// lse_log2 and dPsum held as bm / 32 values per lane and handed to each
  /// thread by a warp shuffle at use (stats-shfl=1).
  bool statsShfl = false;
  /// TMA kernels: dPsum folded into dP^T as one more k-step, -1 (shared
  /// memory) times its hi / lo bf16 rows as the TMA copies them, read as an
  /// unswizzled N-major B (WgmmaBuilder.h's SmemLayout).
  bool dpsFold = false;
};
/// The per-CTA timeline of trace-timeline kernels: kTraceWords i64 words per
/// CTA (blockIdx.x) from O's aligned base. Header words, then for each of the
/// CTA's first kTraceItems items kTraceItemWords words from kTraceItem0;
/// trace-timeline=2 kernels also write, for each of the first
/// kTracePhaseItems items, the phases of its walk's step kTracePhaseStep
/// (TracePhase) from kTracePhase0. Clocks are the SM's clock64 (comparable
/// within a CTA), times globaltimer ns (comparable across CTAs).
enum TraceWord : int64_t {
  kTraceStartNs, kTraceStartClock, kTraceEndNs, kTraceEndClock,
  kTraceItems, kTraceSteps, kTraceLevel,
  kTraceItem0 = 8,
  // per item: MMA warps past FULL_KV, walk done, epilogue done, the item's
  // step count, the producer past EMPTY_KV, step 0 past FULL_Q, steps 0 and
  // 1 done, the producer's step-0 copies issued
  kTraceWalkStart = 0, kTraceWalkEnd, kTraceEpilogueEnd, kTraceLen,
  kTraceKVIssue, kTraceStep0Ready, kTraceStep0End, kTraceStep1End,
  kTraceStep0Issue, kTraceItemWords,
};
/// trace-timeline=2: clock64 at the phases of one step, per item three
/// slots of kTracePhaseSlotWords words: MMA warpgroups 0 and 1 (thread 0 of
/// each), then the reducer lane that takes the step's dQ hand-off.
enum TracePhase : int64_t {
  // MMA warpgroup
  kPhTop = 0,       // the step's top, before the FULL_Q wait
  kPhFull,          // FULL_Q passed
  kPhIssued,        // S^T and dP^T issued
  kPhSDone,         // S^T complete (wait_group 1)
  kPhPDone,         // P and its bf16 pairs (dV issued, 64-row tiles)
  kPhDpDone,        // dP^T complete
  kPhDsStored,      // dS^T in shared memory, fenced
  kPhDvIssued,      // dV issued (128-row tiles; else as kPhDsStored)
  kPhDsBarrier,     // both warpgroups' dS^T (the barrier before dQ)
  kPhDqDkIssued,    // dQ and dK issued
  kPhDqDone,        // dQ complete (wait_group 1)
  kPhStagingFree,   // the staging buffer's EMPTY barrier passed
  kPhHandedOff,     // the dQ part stored, fenced, FULL arrived
  kPhEnd,           // dK complete, the stage released
  // reducer
  kPhRedWait = 0,   // before the hand-off's FULL barrier
  kPhRedFull,       // part 0 in (FULL passed)
  kPhRedRank,       // the row's semaphore reached the rank (deterministic)
  kPhRedFull1,      // part 1 in
  kPhRedRead,       // both adds issued and read: the buffer is free
  kPhRedDone,       // the adds complete, the row released (deterministic)
};
constexpr int64_t kTraceWords = 2048,
                  kTraceMaxItems = (1024 - kTraceItem0) / kTraceItemWords,
                  kTracePhase0 = 1024, kTracePhaseStep = 2,
                  kTracePhaseSlotWords = 16, kTracePhaseItemWords = 48,
                  kTracePhaseItems =
                      (kTraceWords - kTracePhase0) / kTracePhaseItemWords;
/// Shared memory of the main kernel.
int64_t wgmmaSharedBytes(int64_t d, int64_t bm, const WgmmaConfig &config);
void buildMainWgmma(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                    ScheduledAttentionBwdOp op, int64_t d, int64_t spinLimit,
                    const WgmmaConfig &config);

} // namespace mlir::dash::detail

#endif // DASH_LIB_CONVERSION_DASHTOGPU_KERNELBUILDER_H
