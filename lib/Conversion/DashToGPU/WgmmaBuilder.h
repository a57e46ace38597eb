//===- WgmmaBuilder.h - Pieces of the WGMMA main kernel ---------*- C++ -*-===//
//
// Internal to lib/Conversion/DashToGPU: the WGMMA kernel's constants (tiles,
// register split, named barriers, mbarriers), its shared-memory layout, and
// WgmmaBuilder, the IR helpers it is built from (wgmma descriptors and ops,
// swizzled addresses, cp.async and TMA copies, mbarrier waits). The kernel
// itself (roles, walk, protocol) is MainWgmma.cpp and its role files.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_CONVERSION_DASHTOGPU_WGMMABUILDER_H
#define DASH_LIB_CONVERSION_DASHTOGPU_WGMMABUILDER_H

#include "KernelBuilder.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::dash::detail::wgmma {
constexpr int64_t kBn = 128; // KV tile rows (two warpgroups x 64)
// dkdv-bulk (D = 64): one tensor's staged rows, 128 x 128 B; dK's then dV's
// fill a dS^T buffer of a 128-row Q tile.
constexpr int64_t kDkdvTileBytes = kBn * 64 * 2;
// dkdv-bulk: warp 11, idle otherwise, writes the staged dK/dV rows.
constexpr int64_t kStorerWarp = 11;
constexpr int64_t kMmaThreads = 256;
// One MMA warpgroup + one reducer warp: the hand-off barriers.
constexpr int64_t kHandOffThreads = 128 + 32;
constexpr int64_t kProducerWarp = 10; // loads=tma: after the two reducers
static_assert(32 * kProducerWarp == kMmaThreads + 32 * 2,
              "the producer is the warp after the two dQ reducer warps");
// Registers per thread of warpgroup 2 (reducers, producer) when the MMA
// warpgroups take `mmaRegs` (see kRegisterPool).
constexpr int64_t otherRegsFor(int64_t mmaRegs) {
  return (kRegisterPool - mmaRegs * kMmaThreads) / 128 / 8 * 8;
}
static_assert(otherRegsFor(240) == 24 && otherRegsFor(232) == 40,
              "the setmaxnreg splits the docs describe");
constexpr int64_t kAlign = 1024; // swizzle atom: 8 rows x 128 B

// Named barriers (0 is __syncthreads).
constexpr int kBarMma = 1;   // the 256 MMA threads
// dQ staging buffer j, warpgroup w's part of it: EMPTY (reducer -> MMA:
// free) and FULL (MMA -> reducer: holds the part) are barriers
// 2 + 6j + 2w and 3 + 6j + 2w. Per warpgroup, so a warpgroup hands its part
// over without waiting for the other (they meet once per step, at dS^T).
constexpr int kBarEmpty = 2;
constexpr int kBarFull = 3;
constexpr int kBarWgStride = 2;
constexpr int kBarBufStride = 6;
// dq-kv-split: warpgroup 0 hands its dQ partial to warpgroup 1 on
// barrier 4 + 6j (256 threads; the EMPTY id of warpgroup 1's part, which
// that form does not use: only warpgroup 0 waits for the buffer, only
// warpgroup 1 fills it), and each warpgroup syncs its own dS^T stores
// before its dQ reads them on 12 + w (128 threads).
constexpr int kBarXchg = kBarEmpty + kBarWgStride;
constexpr int kBarDsWg = 12;
// wg-turns: warpgroup w waits on 14 + w (256 threads) for its turn to issue
// a step's S^T and dP^T; the other warpgroup arrives there once it has
// issued its own.
constexpr int kBarTurn = 14;
// dkdv-bulk: a step's dS^T barrier ahead of dQ is 12 with 288 threads, the
// storer warp taking part, so a step passes it only once the previous
// item's dK/dV stores have read their dS^T buffer (no wait in the step).
constexpr int kBarDsStep = kBarDsWg;
constexpr int64_t kDsStepThreadsDkdvBulk = kMmaThreads + 32;
static_assert(kBarFull + kBarBufStride + kBarWgStride < kBarDsWg &&
                  kBarDsWg + 1 < kBarTurn && kBarTurn + 1 < 16,
              "16 named barriers");

// dq-in-main: consecutive dQ tiles per ticket (WgmmaDqConvert.cpp): their
// loads in flight together (4 x 8 16-byte loads per MMA thread).
constexpr int64_t kDqTilesPerTicket = 4;

// mbarriers of the TMA kernels (loads=tma), index into SmemLayout::bar:
// FULL_Q / EMPTY_Q of the two Q/dO/lse/dPsum stages, FULL_KV / EMPTY_KV;
// kv-via-ds kernels also EMPTY_DS (every MMA thread, once the walk's last
// step has passed its dS^T barrier: the other dS^T buffer is free) and
// FULL_DS (the next item's K/V landed in that buffer; the producer alone
// waits on it).
// dkdv-bulk kernels also EPI_FULL (every MMA thread, once its dK/dV rows
// are staged in the last step's dS^T buffer) and EPI_EMPTY (the storer's
// TMA stores have read them).
constexpr int kFullQ = 0, kEmptyQ = 2, kFullKV = 4, kEmptyKV = 5,
              kNumMbarriers = 6, kEmptyDs = 6, kFullDs = 7,
              kNumMbarriersKvViaDs = 8, kEpiFull = 8, kEpiEmpty = 9,
              kNumMbarriersDkdvBulk = 10;

/// Byte offsets of the shared buffers from the 1024-aligned base.
struct SmemLayout {
  int64_t d;
  int64_t bm; // Q tile rows: 64, or 128 at D = 64
  bool tma = false;
  /// dS^T buffers: 1, or 2 (alternating by step: no barrier protects step
  /// n's dS^T stores from step n - 1's dQ reads; ds-buffers=2).
  int64_t dsBufs = 1;
  /// f32 dQ staging buffers (WgmmaConfig::dqBufs).
  int64_t dqBufs = 2;
  /// kv-via-ds: two more mbarriers (EMPTY_DS, FULL_DS).
  bool kvViaDs = false;
  /// dkdv-bulk: two more after those (EPI_FULL, EPI_EMPTY).
  bool dkdvBulk = false;
  /// dps-fold, the B of dP^T's extra k-step (N-major, K = 16): the hi row
  /// then the lo row of the stage's bm Q rows as the TMA copies them, then
  /// 128 bytes of zeros, read as unswizzled 8 x 16-byte core matrices: Q
  /// block n (8 rows) at 16 n (SBO 16), k-rows 0-7 at 16 B steps (block
  /// n + r's hi: finite), k-rows 8-15 one LBO = 2 bm bytes on (the lo row).
  /// A (onesA): -1 in K columns 0 and 8, zero against every other k-row;
  /// two unswizzled K-major core matrices (K columns 0-7, 8-15) that every
  /// 8-row group of the 64 KV rows reads (SBO 0). (A swizzled form, one
  /// 1024-byte atom per 64 Q rows read with SBO 0, failed on the H100 with
  /// CUDA_ERROR_LAUNCH_FAILED, bench/NOTES.md section 45, and was removed.)
  bool dpsFold = false;
  int64_t mbarriers() const {
    return dkdvBulk  ? kNumMbarriersDkdvBulk
           : kvViaDs ? kNumMbarriersKvViaDs
                     : kNumMbarriers;
  }
  int64_t panels() const { return d / 64; }
  int64_t kvBytes() const { return kBn * d * 2; }
  int64_t qBytes() const { return bm * d * 2; }
  int64_t k() const { return 0; }
  int64_t v() const { return k() + kvBytes(); }
  int64_t q(int64_t buf) const { return v() + kvBytes() + buf * qBytes(); }
  int64_t dO(int64_t buf) const { return q(2) + buf * qBytes(); }
  int64_t dsBytes() const { return kBn * bm * 2; }
  int64_t dsT(int64_t buf = 0) const { return dO(2) + buf * dsBytes(); }
  /// dps-fold's A (onesA) and its two dPsum stages sit between the dS^T and
  /// the dQ staging buffers: compute-sanitizer checks each wgmma operand as
  /// a dense tile from its start (m64 x k16 bf16: 2048 bytes for A, bm x 16
  /// for B) although the descriptors read 256 and 4 bm + 128 of them, and
  /// dQ's 32+ KiB keep those tiles inside the allocation.
  int64_t foldBytes() const {
    return dpsFold ? kOnesABytes + 2 * dpsStageBytes() : 0;
  }
  int64_t dQ(int64_t buf = 0) const {
    return dsT(dsBufs) + foldBytes() + buf * dQBytes();
  }
  /// The f32 dQ staging tile. TMA kernels: two parts, one per MMA
  /// warpgroup (its 64 rows x dQ columns of the tile: D/2 columns when the
  /// warpgroups split dQ by columns, all D when they split it by rows, at
  /// 128-row Q tiles), each dqN/8 unswizzled panels of [64][8] (32-B rows): a
  /// warp's 8-byte fragment stores of one accumulator pair cover 8
  /// consecutive rows of one panel, 256 contiguous bytes, so every half-warp
  /// hits 32 different banks. The workspace's dq_accum holds every Q tile in
  /// this same byte order (the "tiles" layout, docs/Runtime.md), so a part
  /// goes to global memory as one contiguous 1-D bulk reduce-add.
  /// cp.async kernels: rows padded by 32 B (4 rows x 32 B per half-warp, 32
  /// banks), one bulk reduce-add per row.
  int64_t dQRow() const { return d * 4 + 32; }
  int64_t dQPanel() const { return DqAccumLayout{bm, d}.panelFloats() * 4; }
  int64_t dQPartBytes() const { return DqAccumLayout{bm, d}.partFloats() * 4; }
  int64_t dQBytes() const { return tma ? 2 * dQPartBytes() : bm * dQRow(); }
  /// The swizzle (TMA's and wgmma's) is relative to 1024-byte atoms: every
  /// swizzled buffer must start on one.
  bool swizzleAligned() const {
    bool ok = k() % 1024 == 0 && v() % 1024 == 0 && q(1) % 1024 == 0 &&
              dO(0) % 1024 == 0 && dO(1) % 1024 == 0 && dsT(0) % 1024 == 0 &&
              dsT(dsBufs - 1) % 1024 == 0;
    if (tma) // the TMA's 128-byte alignment of an unswizzled box
      ok = ok && dQ(0) % 128 == 0 && dQ(dqBufs - 1) % 128 == 0 &&
           lse(0) % 128 == 0 && lse(1) % 128 == 0 && dps(0) % 128 == 0 &&
           dps(1) % 128 == 0;
    if (dpsFold)
      ok = ok && onesA() % 128 == 0 && dps(0) % 128 == 0;
    return ok;
  }
  /// dps-fold's k-step operands, seen as compute-sanitizer sees them (a
  /// dense m64 x k16 bf16 A from onesA, a dense bm x k16 bf16 B from each
  /// stage), end inside the layout (see dQ()).
  bool foldTilesInside() const {
    return !dpsFold || (onesA() + 64 * 16 * 2 <= end() &&
                        dps(1) + bm * 16 * 2 <= end());
  }
  /// A stage of dPsum: bm f32, or (dps-fold, after onesA) the two bf16
  /// rows and 128 bytes of zeros (what the last Q block's k-rows 9-15 read).
  int64_t dpsStageBytes() const { return dpsFold ? bm * 4 + 128 : bm * 4; }
  int64_t lse(int64_t buf) const { return dQ(dqBufs) + buf * bm * 4; }
  int64_t dps(int64_t buf) const {
    return dpsFold ? onesA() + kOnesABytes + buf * dpsStageBytes()
                   : lse(2) + buf * bm * 4;
  }
  static constexpr int64_t kOnesABytes = 256;
  int64_t onesA() const { return dsT(dsBufs); }
  int64_t statsEnd() const { return dpsFold ? lse(2) : dps(2); }
  int64_t bar(int i) const { return (statsEnd() + 7) / 8 * 8 + 8 * i; }
  /// TMA kernels: the step in stage `buf` as two i32 (its Q tile index and,
  /// deterministic kernels, its rank), written by the producer before its
  /// FULL_Q arrival: the MMA threads read the schedule's walk instead of
  /// evaluating it.
  int64_t stepTile(int64_t buf) const { return bar(mbarriers()) + 8 * buf; }
  /// TMA kernels: the same pair for the hand-off in dQ staging buffer `buf`,
  /// copied from the stage by MMA thread 0 before its FULL arrival: the
  /// reducers evaluate no schedule either (their registers are few).
  int64_t handOff(int64_t buf) const { return stepTile(2) + 8 * buf; }
  int64_t end() const { return tma ? handOff(dqBufs) : statsEnd(); }
};

/// The layout of a kernel with `config` (its buffers' counts and forms).
inline SmemLayout smemLayoutOf(int64_t d, int64_t bm,
                               const WgmmaConfig &config) {
  return SmemLayout{d,
                    bm,
                    config.tma,
                    config.dsBufs,
                    config.dqBufs,
                    config.kvViaDs,
                    config.dkdvBulk,
                    config.dpsFold};
}

/// Builds the kernel body; one instance per kernel.
struct WgmmaBuilder {
  Kernel &k;
  OpBuilder &b;
  Location loc;
  LoopGen &g;
  MLIRContext *ctx;
  ScheduledAttentionBwdOp op;
  int64_t D;
  SmemLayout L;
  Type f32, i32, i64, bf16;
  Value base; // index: 1024-aligned shared address of the buffers
  /// Set while a whole warp runs code of which one lane must issue the
  /// copies and arrivals (the producer): the loads and expect-tx arrivals
  /// take it as their predicate, other copies branch on it.
  Value issuePred;

  WgmmaBuilder(Kernel &k, ScheduledAttentionBwdOp op, int64_t d, int64_t bm,
               const WgmmaConfig &config)
      : k(k), b(k.b), loc(k.loc), g(k.g), ctx(k.b.getContext()), op(op),
        D(d), L(smemLayoutOf(d, bm, config)) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
    i64 = b.getI64Type();
    bf16 = b.getBF16Type();
  }

  Value c32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  Value c64(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 64); }
  Value toI64(Value idx) {
    return arith::IndexCastOp::create(b, loc, i64, idx);
  }
  Value i32of(Value idx) {
    return arith::IndexCastOp::create(b, loc, i32, idx);
  }
  /// Shared pointer at byte address `addr` (index).
  Value sh(Value addr) {
    return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 3),
                                    toI64(addr));
  }
  /// Global pointer to element `indices` of a memref argument.
  Value global(Arg a, ValueRange indices) {
    return LLVM::AddrSpaceCastOp::create(b, loc,
                                         LLVM::LLVMPointerType::get(ctx, 1),
                                         k.elementPtr(k.arg(a), indices));
  }
  /// `code` (one instruction where `pred`, an i1, predicates it).
  void ptx(StringRef code, ValueRange args = {}, Value pred = {}) {
    NVVM::InlinePtxOp::create(b, loc, TypeRange{}, args, ValueRange{}, code,
                              pred);
  }
  void barSync(int id, int64_t n) { barSync(c32(id), n); }
  void barArrive(int id, int64_t n) { barArrive(c32(id), n); }
  void barSync(Value id32, int64_t n) {
    ptx("barrier.sync $0, $1;", {id32, c32(n)});
  }
  void barArrive(Value id32, int64_t n) {
    ptx("barrier.arrive $0, $1;", {id32, c32(n)});
  }
  void syncWarp() {
    NVVM::SyncWarpOp::create(b, loc, c32(-1));
  }
  void fenceAsyncShared() {
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }

  /// wgmma shared-memory descriptor of a 128B-swizzled operand at byte
  /// address `addr`: LBO (leading byte offset: distance between 64-element
  /// panels along M/N for MN-major operands; unused for K-major), SBO =
  /// 1024 B (distance between 8-row groups), layout 1 = 128B swizzle.
  /// Only the low word (start address >> 4, LBO >> 4) varies: it is built
  /// and offset in 32 bits and joined to the constant high word at each use,
  /// so a descriptor costs one register and no 64-bit carry chains.
  struct Desc {
    Value lo; // i32
  };
  Desc desc(Value addr, int64_t lboBytes) {
    Value a = i32of(addr);
    a = arith::ShRUIOp::create(
        b, loc, arith::AndIOp::create(b, loc, a, c32(0x3FFFF)), c32(4));
    return {arith::OrIOp::create(b, loc, a, c32((lboBytes >> 4) << 16))};
  }
  /// The 64-bit descriptor `bytes` (a multiple of 16) into the same tile:
  /// shared addresses stay below 2^18, so the low word never carries. SBO:
  /// the stride between 8-row groups (K-major: along M/N; N-major: along
  /// K), 1024 in every tile of 128-byte rows. swizzle128 = false: the
  /// unswizzled layout of 8-row x 16-byte core matrices (K-major: LBO the
  /// stride along K, SBO along M/N).
  Value descAt(Desc d, int64_t bytes, int64_t sboBytes = 1024,
               bool swizzle128 = true) {
    const int64_t kHigh =
        (int64_t(swizzle128) << 62) | ((sboBytes >> 4) << 32);
    Value lo = bytes ? arith::AddIOp::create(b, loc, d.lo, c32(bytes >> 4))
                           .getResult()
                     : d.lo;
    return arith::OrIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, lo), c64(kHigh));
  }

  LLVM::LLVMStructType accType(int64_t n) {
    return LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(n / 2, f32));
  }
  Value zeroAcc(int64_t n) { return LLVM::ZeroOp::create(b, loc, accType(n)); }
  /// An accumulator whose value the next wgmma ignores (scale-d = 0).
  Value freshAcc(int64_t n) {
    return LLVM::PoisonOp::create(b, loc, accType(n));
  }
  /// acc += A B on one m64nNk16 (bf16 -> f32); `first`: acc = A B (scale-d
  /// 0, acc's registers are not read). transA: A is M-major (else K-major);
  /// transB: B is N-major (else K-major).
  /// negA: acc -= A B.
  Value wgmma(Value acc, Value dA, Value dB, int64_t n, bool transA,
              bool transB, bool first = false, bool negA = false) {
    return NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accType(n), acc, dA, dB,
        NVVM::MMAShapeAttr::get(ctx, 64, n, 16), NVVM::WGMMATypes::bf16,
        NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32,
        first ? NVVM::WGMMAScaleOut::zero : NVVM::WGMMAScaleOut::one,
        negA ? NVVM::WGMMAScaleIn::neg : NVVM::WGMMAScaleIn::one,
        NVVM::WGMMAScaleIn::one,
        transA ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        transB ? NVVM::MMALayout::row : NVVM::MMALayout::col,
        NVVM::MMAIntOverflowAttr());
  }
  /// i32 `v` of lane 0, in every lane of the (converged) warp: ptxas then
  /// treats the result as warp-uniform (branches on it do not diverge).
  Value fromLane0(Value v) {
    return NVVM::ShflOp::create(
        b, loc, i32, c32(-1), v, c32(0), c32(0x1f),
        NVVM::ShflKindAttr::get(ctx, NVVM::ShflKind::idx), UnitAttr());
  }
  /// `v` through a side-effecting register move: LLVM cannot hoist what is
  /// computed from it out of the enclosing loop.
  Value opaque(Value v) {
    Value x = i32of(v);
    x = LLVM::InlineAsmOp::create(
            b, loc, i32, ValueRange{x}, "mov.b32 $0, $1;", "=r,r",
            /*has_side_effects=*/true, /*is_align_stack=*/false,
            LLVM::TailCallKind::None, /*asm_dialect=*/LLVM::AsmDialectAttr(),
            /*operand_attrs=*/ArrayAttr())
            .getResult(0);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
  }
  /// `c` again, computed from `p` (c + min(p, 0): equal to c for any p >= 0,
  /// NaN and +inf included, min.f32 returning the non-NaN operand) in inline
  /// PTX that neither LLVM nor ptxas folds: whatever reads the result waits
  /// for `p`. Orders the exp2 pass's chunks (exp2-chunks).
  Value after(Value c, Value p) {
    return LLVM::InlineAsmOp::create(
               b, loc, f32, ValueRange{c, p},
               "{\n.reg .f32 t;\nmin.f32 t, $2, 0f00000000;\nadd.f32 $0, "
               "$1, t;\n}",
               "=f,f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
               LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }
  /// One inline-PTX wgmma on an m64nN f32 accumulator, the operand pattern
  /// of the NVVM wgmma lowering: the accumulator registers are operands
  /// 0 .. n/2 - 1 as outputs and again, tied, as inputs; the `extra` values
  /// follow (constraints `extraCons`). `ptx(x)` writes the statement, given
  /// x(i), the operand reference of extra value i and x(-1), the
  /// accumulator list.
  Value wgmmaAsm(Value acc, int64_t n, ValueRange extra, StringRef extraCons,
                 function_ref<std::string(function_ref<std::string(int)>)>
                     ptx) {
    int64_t regs = n / 2;
    auto x = [&](int i) {
      if (i >= 0)
        return "$" + std::to_string(2 * regs + i);
      std::string list = "{";
      for (int64_t r = 0; r < regs; ++r)
        list += (r ? ", $" : "$") + std::to_string(r);
      return list + "}";
    };
    std::string cons;
    for (int64_t i = 0; i < regs; ++i)
      cons += "=f,";
    for (int64_t i = 0; i < regs; ++i)
      cons += std::to_string(i) + ",";
    cons += extraCons;
    SmallVector<Value> operands;
    for (int64_t i = 0; i < regs; ++i)
      operands.push_back(elem(acc, i));
    operands.append(extra.begin(), extra.end());
    return LLVM::InlineAsmOp::create(
               b, loc, accType(n), operands, ptx(x), cons,
               /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::TailCallKind::None,
               LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
               ArrayAttr())
        .getResult(0);
  }
  /// acc += A B on one m64nNk16 with A (64 x 16 bf16) in registers: four
  /// b32 words per thread in the accumulator fragment layout; B is N-major.
  /// No NVVM op has the register-A form.
  Value wgmmaRS(Value acc, ArrayRef<Value> a, Value dB, int64_t n) {
    SmallVector<Value> extra(a.begin(), a.end());
    extra.append({dB, c32(1)}); // scale-d: accumulate
    return wgmmaAsm(acc, n, extra, "r,r,r,r,l,n", [&](auto x) {
      return "{\n.reg .pred p;\nsetp.ne.b32 p, " + x(5) +
             ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
             "k16.f32.bf16.bf16 " + x(-1) + ", {" + x(0) + ", " + x(1) + ", " +
             x(2) + ", " + x(3) + "}, " + x(4) + ", p, 1, 1, 1;\n}\n";
    });
  }
  /// acc += A B (`first`: acc = A B) on one m64nNk16 with both operands in
  /// shared memory, issued only where `on32` (i32, warpgroup-uniform) is
  /// non-zero: otherwise no instruction goes out (the enclosing commit makes
  /// an empty group) and the result is `acc`. (The NVVM op has no guard.)
  Value wgmmaIf(Value acc, Value dA, Value dB, int64_t n, bool transA,
                bool transB, Value on32, bool first) {
    return wgmmaAsm(
        acc, n, {dA, dB, on32, c32(first ? 0 : 1)}, "l,l,r,n", [&](auto x) {
          return "{\n.reg .pred p, g;\nsetp.ne.b32 p, " + x(3) +
                 ", 0;\nsetp.ne.b32 g, " + x(2) +
                 ", 0;\n@g wgmma.mma_async.sync.aligned.m64n" +
                 std::to_string(n) + "k16.f32.bf16.bf16 " + x(-1) + ", " +
                 x(0) + ", " + x(1) + ", p, 1, 1, " + (transA ? "1" : "0") +
                 ", " + (transB ? "1" : "0") + ";\n}\n";
        });
  }
  /// Two f32 as one b32 word of bf16 (x in the low half).
  Value packBf16(Value x, Value y) {
    Value v = vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, bf16),
        ValueRange{arith::TruncFOp::create(b, loc, bf16, x),
                   arith::TruncFOp::create(b, loc, bf16, y)});
    return LLVM::BitcastOp::create(b, loc, i32, v);
  }
  Value elem(Value acc, int64_t r) {
    return LLVM::ExtractValueOp::create(b, loc, acc, r);
  }

  /// Byte offset of element (row, col) in a swizzled [rows][D] tile whose
  /// panels are `rows` x 128 B (col a multiple of 8: a 16-byte chunk).
  Value swz(Value row, Value col, int64_t rows) {
    Value panel = g.div(col, g.idx(64));
    Value chunk = g.rem(g.div(col, g.idx(8)), g.idx(8));
    Value sw = arith::XOrIOp::create(b, loc, chunk, g.rem(row, g.idx(8)));
    return g.add(g.add(g.mul(panel, g.idx(rows * 128)),
                       g.mul(row, g.idx(128))),
                 g.mul(sw, g.idx(16)));
  }

  /// cp.async of rows [row0, row0 + rowsTile) of head `head` of BSHD tensor
  /// `a` into the swizzled tile at `dst`; rows at or past `seqLen` are
  /// zero-filled (their source address is clamped to a valid row).
  void loadTile(Arg a, Value dst, Value bb, Value row0, Value head,
                Value seqLen, int64_t rowsTile, Value tid) {
    int64_t chunksPerRow = D / 8, total = rowsTile * chunksPerRow;
    Value last = g.sub(seqLen, g.idx(1));
    for (int64_t i = 0; i < total / kMmaThreads; ++i) {
      Value e = g.add(tid, g.idx(i * kMmaThreads));
      Value r = g.div(e, g.idx(chunksPerRow));
      Value col = g.mul(g.rem(e, g.idx(chunksPerRow)), g.idx(8));
      Value row = g.add(row0, r);
      Value inside = g.lt(row, seqLen);
      Value src = global(a, {bb, g.minIdx(row, last), head, col});
      Value bytes = arith::SelectOp::create(b, loc, inside, c32(16), c32(0));
      NVVM::CpAsyncOp::create(b, loc, sh(g.add(dst, swz(r, col, rowsTile))),
                              src, 16, NVVM::LoadCacheModifierKind::CG, bytes);
    }
  }
  // --- TMA kernels: mbarriers and tensor copies.
  /// mbarrier `first + idx` (idx an index value: a stage) in shared memory.
  Value mbar(int first, Value idx) {
    return sh(g.add(g.add(base, g.idx(L.bar(first))), g.mul(idx, g.idx(8))));
  }
  Value mbar(int i) { return sh(g.add(base, g.idx(L.bar(i)))); }
  /// Spins until the phase of `bar` with parity `parity` (index 0/1) has
  /// completed (a fresh barrier: parity 1 counts as completed). Debug
  /// kernels give up after spinLimit polls and report barrier `which`
  /// (index) as rank -1 - which, `where` = {unit, b, h, hand-off}.
  void mbarWait(Value bar, Value parity, Value which, ArrayRef<Value> where) {
    Value par32 = i32of(parity);
    if (k.spinLimit <= 0) {
      NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, par32, c32(0x989680));
      return;
    }
    auto once = [&](OpBuilder &nb, Location l) { // one try, no loop
      return LLVM::InlineAsmOp::create(
                 nb, l, i32, ValueRange{bar, par32},
                 "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, "
                 "[$1], $2;\nselp.b32 $0, 1, 0, p;\n}",
                 "=r,l,r", /*has_side_effects=*/true, false,
                 LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
          .getResult(0);
    };
    auto loop = scf::WhileOp::create(
        b, loc, TypeRange{i32, i64}, ValueRange{c32(0), c64(0)},
        [&](OpBuilder &nb, Location l, ValueRange iter) {
          Value done = once(nb, l);
          Value wait = arith::AndIOp::create(
              nb, l,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, done,
                                    arith::ConstantIntOp::create(nb, l, 0, 32)),
              arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::slt, iter[1],
                  arith::ConstantIntOp::create(nb, l, k.spinLimit, 64)));
          scf::ConditionOp::create(nb, l, wait, ValueRange{done, iter[1]});
        },
        [&](OpBuilder &nb, Location l, ValueRange iter) {
          Value next = arith::AddIOp::create(
              nb, l, iter[1], arith::ConstantIntOp::create(nb, l, 1, 64));
          scf::YieldOp::create(nb, l, ValueRange{iter[0], next});
        });
    Value stuck = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        loop.getResult(0), c32(0));
    g.when(stuck, [&] {
      k.reportStuck(where, g.sub(g.idx(-1), which), parity,
                    loop.getResult(1));
    });
  }
  void mbarArrive(Value bar) {
    NVVM::MBarrierArriveOp::create(b, loc, Type(), bar, Value());
  }
  /// One arrival that also expects `bytes` more transaction bytes (TMA).
  void mbarExpect(Value bar, int64_t bytes) {
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), bar, c32(bytes),
                                           NVVM::MemScopeKind::CTA, false,
                                           issuePred);
  }
  /// Generic pointer to tensor map `i` (q, k, v, dO, dq_accum, lse_log2,
  /// dPsum: KernelBuilder.h) in the workspace.
  Value tensorMap(int i) {
    Value addr = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, k.arg(kTensorMaps));
    return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx),
                                    toI64(g.add(addr, g.idx(128 * i))));
  }
  /// TMA of rows [row0, row0 + box rows) of head `head`, batch `bb` of map
  /// `i` into the swizzled tile at `dst`: one 64-column panel per copy;
  /// rows past S arrive as zeros. Completes on `bar`.
  void tmaTile(int i, Value dst, Value bb, Value row0, Value head,
               int64_t rowsTile, Value bar) {
    Value map = tensorMap(i);
    for (int64_t p = 0; p < L.panels(); ++p)
      tmaLoad(map, g.add(dst, g.idx(p * rowsTile * 128)),
              {c32(64 * p), i32of(row0), i32of(head), i32of(bb)}, bar);
  }
  /// The same tile as tmaTile, fetched into L2 only (no shared memory, no
  /// completion): the next item's K/V while this one runs.
  void tmaPrefetchTile(int i, Value bb, Value row0, Value head) {
    Value map = tensorMap(i);
    for (int64_t p = 0; p < L.panels(); ++p)
      NVVM::CpAsyncBulkTensorPrefetchOp::create(
          b, loc, map,
          ValueRange{c32(64 * p), i32of(row0), i32of(head), i32of(bb)},
          ValueRange{},
          NVVM::TMALoadModeAttr::get(ctx, NVVM::TMALoadMode::TILE), Value());
  }
  /// One TMA tile load through `map` at i32 `coords` into shared byte
  /// address `dst`, completing on mbarrier `bar`.
  void tmaLoad(Value map, Value dst, ValueRange coords, Value bar) {
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc,
        LLVM::AddrSpaceCastOp::create(b, loc,
                                      LLVM::LLVMPointerType::get(ctx, 7),
                                      sh(dst)),
        map, coords, bar, ValueRange{}, Value(), Value(),
        NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
        NVVM::CTAGroupKindAttr(), issuePred);
  }

  /// The shared address (index) of the kernel's shared window: a zero-size
  /// shared global of the kernel's gpu.module declared 1024-byte aligned
  /// (the 128B swizzle atom), so the base of every buffer is a link-time
  /// constant, not a value computed at entry. A computed base stayed live
  /// across the roles and ptxas spilled it, and a dozen values with it, on
  /// the MMA side of most deterministic D = 128 kernels (bench/NOTES.md
  /// section 14). The window symbol is the start of the dynamic shared
  /// memory (the kernels declare no other shared variable).
  Value alignedSharedWindow() {
    auto module = k.func->getParentOfType<gpu::GPUModuleOp>();
    StringRef name = "__dash_shared_window";
    auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
    if (!global) {
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(module.getBody());
      global = LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
          /*isConstant=*/false, LLVM::Linkage::Internal, name, Attribute(),
          /*alignment=*/kAlign, /*addrSpace=*/3);
    }
    // To i64 directly: an extension of a 32-bit address would be a computed
    // value to ptxas, kept live instead of rematerialised.
    Value ptr = LLVM::AddressOfOp::create(b, loc, global);
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        LLVM::PtrToIntOp::create(b, loc, i64, ptr).getResult());
  }
  /// Pointer (address space `as`) to byte `index * bytes` of a contiguous
  /// workspace memref: i32 index, one wide multiply-add (the reducers'
  /// dq_accum tiles and semaphores; their 40 registers spilled around the
  /// descriptors' 64-bit stride arithmetic).
  Value linearPtr(Arg a, Value index32, int64_t bytes, unsigned as = 0) {
    Value base = toI64(memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, k.arg(a)));
    Value off = arith::MulIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i64, index32),
        arith::ConstantIntOp::create(b, loc, bytes, 64));
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, as),
        arith::AddIOp::create(b, loc, base, off).getResult());
  }
  /// One bulk reduce-add (f32, in L2) of `bytes` contiguous bytes of shared
  /// memory at `src` into global memory at `dst` (16-byte aligned, a
  /// multiple of 16 bytes); completes in the issuing thread's bulk group.
  void bulkReduceAdd(Value dst, Value src, Value bytes) {
    ptx("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
        "[$0], [$1], $2;",
        {dst, sh(src), bytes});
  }
  /// One TMA tile store through 4-D `map` at i32 `coords` from the
  /// swizzled tile at shared byte address `src`; completes in the issuing
  /// thread's bulk group (rows past the tensor are not written).
  void tmaStore(Value map, Value src, ArrayRef<Value> coords) {
    ptx("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
        "[$0, {$1, $2, $3, $4}], [$5];",
        {map, coords[0], coords[1], coords[2], coords[3], sh(src)});
  }
  /// bulkReduceAdd, or a plain bulk copy when `rank32` is 0: a Q tile's
  /// first hand-off in the deterministic order overwrites its dq_accum
  /// tile, so the preprocess need not zero it (predicated, no branch).
  void bulkStoreOrAdd(Value dst, Value src, Value bytes, Value rank32) {
    ptx("{\n.reg .pred p;\nsetp.eq.b32 p, $3, 0;\n"
        "@p cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\n"
        "@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
        "[$0], [$1], $2;\n}",
        {dst, sh(src), bytes, rank32});
  }
  /// TMA of the Q tile's bm f32 values of a [B, H, S_q] workspace vector
  /// (map `i`: lse_log2 or dPsum) into `dst`; rows past S_q arrive as
  /// zeros. Completes on `bar`.
  void tmaRowVector(int i, Value dst, Value bb, Value row0, Value head,
                    Value bar) {
    tmaLoad(tensorMap(i), dst, {i32of(row0), i32of(head), i32of(bb)}, bar);
  }
  /// Field `field` (0: Q tile index, 1: rank; i32) of stage `stage`'s step.
  Value stepTileSlot(Value stage, int64_t field = 0) {
    return sh(g.add(g.add(base, g.idx(L.stepTile(0) + 4 * field)),
                    g.mul(stage, g.idx(8))));
  }
  /// The same field of the hand-off in dQ staging buffer `buf`.
  Value handOffSlot(Value buf, int64_t field) {
    return sh(g.add(g.add(base, g.idx(L.handOff(0) + 4 * field)),
                    g.mul(buf, g.idx(8))));
  }
  /// The hand-off fields cross from the MMA side to a reducer through the
  /// staging buffer's FULL/EMPTY named barriers, whose arrive orders prior
  /// accesses (PTX ISA, barrier) but which compute-sanitizer's racecheck does
  /// not model: relaxed CTA-scope atomics keep it from reporting them.
  void storeHandOff(Value v, Value slot) {
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::xchg, slot, v,
                              LLVM::AtomicOrdering::monotonic,
                              StringRef("block"));
  }
  Value loadHandOff(Value slot) {
    return LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, slot,
                                     c32(0), LLVM::AtomicOrdering::monotonic,
                                     StringRef("block"));
  }

  /// cp.async of one f32 (element q0 + t) of a [B, H, S] workspace row
  /// (4-byte copies: no alignment needed), zero past S_q.
  void loadRowVector(Arg a, Value dst, Value bb, Value h, Value q0, Value Sq,
                     Value t) {
    Value row = g.add(q0, t);
    Value inside = g.lt(row, Sq);
    Value src = global(a, {bb, h, g.minIdx(row, g.sub(Sq, g.idx(1)))});
    Value bytes = arith::SelectOp::create(b, loc, inside, c32(4), c32(0));
    NVVM::CpAsyncOp::create(b, loc, sh(g.add(dst, g.mul(t, g.idx(4)))), src,
                            4, NVVM::LoadCacheModifierKind::CA, bytes);
  }
};

} // namespace mlir::dash::detail::wgmma

#endif // DASH_LIB_CONVERSION_DASHTOGPU_WGMMABUILDER_H
