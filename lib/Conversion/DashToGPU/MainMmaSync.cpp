//===- MainMmaSync.cpp - The mma.sync main kernel (mma=sync) --------------===//
//
// Warp-level tensor cores (mma.sync.m16n8k16, ldmatrix from padded shared
// tiles), 64x64 tiles, 256 threads, the dQ partial handed over one step
// late by thread 0 with a bulk reduce-add (docs/GPU.md).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

// The tensor-core main kernel: same schedule, staging and semaphore
// protocol as buildMain, with the five products on mma.sync.m16n8k16.
//
// Warp layout (8 warps, 64x64 tiles): warp w owns rows 16*(w%4) of every
// product and column half w/4 (32 of the 64 KV columns for S/dP, D/2 of
// the D columns for dV/dK/dQ). Fragment layout of m16n8k16 for lane l,
// g = l/4, t = l%4: A regs (row g | g+8, cols 2t..2t+1 | +8), B regs
// (k rows 2t..2t+1 | +8, col g), C regs c0,c1 = (g, 2t..2t+1),
// c2,c3 = (g+8, 2t..2t+1).
void mlir::dash::detail::buildMainMmaSync(OpBuilder &b, Location loc,
                                          ArrayRef<Type> argTypes,
                                          ScheduledAttentionBwdOp op,
                                          int64_t D, int64_t threads,
                                          int64_t debugSpinLimit) {
  constexpr int64_t bm = 64, bn = 64;
  OpBuilder::InsertionGuard guard(b);
  Kernel k(b, loc, "dash_bwd_main", argTypes, threads, debugSpinLimit);
  LoopGen &g = k.g;
  MLIRContext *ctx = b.getContext();
  Type elt = cast<MemRefType>(argTypes[kQ]).getElementType();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  bool causal = op.getMask() == Mask::Causal;
  bool det = op.getDeterministic();
  bool bottomRight = op.getEffectiveAlign() == CausalAlign::BottomRight;

  // Rows are padded by 8 elements (16 B) so the 8 row addresses of an
  // ldmatrix land in 8 different bank groups (no conflicts).
  auto view = [&](int64_t rows, int64_t cols) {
    return k.sharedView({rows, cols + kPad}, elt);
  };
  Value Kt = view(bn, D), Vt = view(bn, D), Qs = view(bm, D),
        dOs = view(bm, D), Pt = view(bn, bm), dSt = view(bn, bm),
        dSs = view(bm, bn);
  Value dQs = k.sharedView({bm, D}, f32);
  assert(k.sharedUsed == mmaSharedBytes(D) && "shared-memory size out of sync");

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

  g.loop(k.numItems(op, map, unit), [&](Value item) {
    Kernel::WorkItem w = k.workItem(op, map, unit, item);
    Value bb = w.bb, h = w.h, kv = w.kv, len = w.len;
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
