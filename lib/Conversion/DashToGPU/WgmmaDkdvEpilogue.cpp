//===- WgmmaDkdvEpilogue.cpp - An item's dK and dV out of the registers ---===//
//
// After an item's walk the MMA warpgroups hold its dV and dK rows (64 KV
// rows each, D columns, f32). Without GQA they are the final values: scaled
// (dK), rounded to bf16 and written to dk / dv, by 16-byte stores or
// (dkdv-bulk) staged for the storer warp's TMA stores
// (WgmmaDkdvStorer.cpp); with GQA they are f32 partials of one query head,
// which the postprocess sums over the group in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

void WgmmaMain::emitDkdvEpilogue(const Item &it, Value first, Value kv0,
                                 const MmaThread &t, Value accV, Value accK) {
  // dV, dK of this item: rows kv0 + wgRows + row of head h. Without GQA
  // (H == H_kv) the item owns those rows of dk/dv outright: scaled,
  // rounded and written here, no f32 workspace (the runtime sizes
  // dk_accum/dv_accum 0, the postprocess skips them). With GQA the query
  // heads of a group are summed in a fixed order by the postprocess.
  Value direct =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, H, Hkv);
  auto ifDirect = scf::IfOp::create(b, loc, direct, /*withElse=*/true);
  // Direct: each quad of lanes (one row, 16 B of every 8-column block
  // each) transposes its bf16 pairs by two butterfly shuffles, so that
  // lane c holds all 8 columns of block 4g + c and writes them as one
  // 16-byte store: a warp store covers 8 rows x 64 contiguous bytes
  // (whole sectors), 4x fewer stores than one 4-byte pair each (the trace
  // measured the pair-wise epilogue at 5.7k cycles per item at D = 64,
  // 11.6k at D = 128: 1.3-3 steps). The runtime requires 16-byte aligned
  // rows. Shuffles before the row guard: every lane takes part.
  auto sel = [&](Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y).getResult();
  };
  auto xorLane = [&](Value v, int64_t m) {
    return NVVM::ShflOp::create(
               b, loc, w.i32, w.c32(-1), v, w.c32(m), w.c32(0x1f),
               NVVM::ShflKindAttr::get(ctx, NVVM::ShflKind::bfly),
               UnitAttr())
        .getResult();
  };
  // The lane's place in its quad: c = lane % 4 and its two bits.
  struct Quad {
    Value c, hi1, hi0;
  };
  auto quadOf = [&] {
    Value c = g.rem(t.lane, g.idx(4));
    Value hi1 = g.lt(g.idx(1), c); // quad bit 1 (2 or 3)
    Value hi0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                      g.rem(c, g.idx(2)), g.idx(0));
    return Quad{c, hi1, hi0};
  };
  // a[i] of lane c -> lane i's a[c] (two stages: 2x2 blocks, then within
  // them).
  auto transpose = [&](const Quad &q, SmallVectorImpl<Value> &a) {
    for (auto [m, hi, pairs] :
         {std::tuple{int64_t(2), q.hi1, std::array<int, 4>{0, 2, 1, 3}},
          std::tuple{int64_t(1), q.hi0, std::array<int, 4>{0, 1, 2, 3}}})
      for (int u = 0; u < 4; u += 2) {
        int lo = pairs[u], up = pairs[u + 1];
        Value got = xorLane(sel(hi, a[lo], a[up]), m);
        a[lo] = sel(hi, got, a[lo]);
        a[up] = sel(hi, a[up], got);
      }
  };
  // The accumulator's bf16 pairs of 8-column group grp (columns 32 grp..)
  // at row half `half`, dK's scaled, transposed across the quad.
  auto rowPiece = [&](const Quad &q, Value acc, bool isK, int64_t half,
                      int64_t grp) {
    SmallVector<Value> a;
    for (int64_t i = 0; i < 4; ++i) {
      int64_t r = 4 * (4 * grp + i) + 2 * half;
      Value x = w.elem(acc, r), y = w.elem(acc, r + 1);
      if (isK) { // dK = scale * dS^T Q
        x = g.mul(x, k.arg(kScale));
        y = g.mul(y, k.arg(kScale));
      }
      a.push_back(w.packBf16(x, y));
    }
    transpose(q, a);
    return a;
  };
  auto directEpilogue = [&] {
    Quad q = quadOf();
    Value quad = q.c;
    auto global = LLVM::LLVMPointerType::get(ctx, 1);
    for (auto [acc, isK] : {std::pair{accV, false},
                            std::pair{accK, true}}) {
      for (int64_t half = 0; half < 2; ++half) {
        Value row = g.add(kv0, g.add(t.wgRows, rowOf(t, 2 * half)));
        Value inRows = arith::ExtUIOp::create(b, loc, w.i32, g.lt(row, Sk));
        Value rowPtr = LLVM::AddrSpaceCastOp::create(
            b, loc, global,
            k.elementPtr(k.arg(isK ? kDk : kDv),
                         {it.bb, row, it.h, g.mul(quad, g.idx(8))}));
        for (int64_t grp = 0; grp < D / 32; ++grp) {
          SmallVector<Value> a = rowPiece(q, acc, isK, half, grp);
          // Predicated, not branched: rows past S_k store nothing.
          Value ptr = LLVM::GEPOp::create(
              b, loc, global, b.getI8Type(), rowPtr,
              ArrayRef<LLVM::GEPArg>{int32_t(grp * 64)});
          w.ptx("{\n.reg .pred p;\nsetp.ne.b32 p, $5, 0;\n"
                "@p st.global.v4.b32 [$0], {$1, $2, $3, $4};\n}",
                {ptr, a[0], a[1], a[2], a[3], inRows});
        }
      }
    }
  };
  // dkdv-bulk (D = 64): the same transposed 16-byte pieces go to the
  // dS^T buffer of the walk's last step (dK's 128 rows, then dV's,
  // 128B-swizzled as the K/V tiles) and the storer writes them by TMA
  // (WgmmaDkdvStorer.cpp) while the MMA warps start the next walk. The
  // buffer's next writer is the next walk's second dS^T store, after a
  // dS^T barrier the storer joins only once its stores have read the
  // buffer, or an empty walk's epilogue, which waits for EPI_EMPTY.
  auto bulkEpilogue = [&] {
    Value stage = lastStepDsT(first, it.len);
    // Both warpgroups' last dQ have read that buffer; an empty walk's
    // epilogue follows the previous item's stores out of it (EPI_EMPTY
    // phase it.index - 1; before the unit's first item the wait on the
    // phase "before" phase 0 passes).
    w.mbarWait(w.mbar(kEpiEmpty), g.rem(g.add(it.index, g.idx(1)), g.idx(2)),
               g.idx(kEpiEmpty), {unit, it.bb, it.h, first});
    w.barSync(kBarMma, kMmaThreads);
    Quad q = quadOf();
    // Rows r and r + 1 of a quarter warp would share 16 banks: odd rows
    // store their two 64-byte halves in the other order.
    Value odd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                      g.rem(g.div(t.lane, g.idx(4)), g.idx(2)),
                                      g.idx(0));
    for (auto [acc, isK] : {std::pair{accV, false},
                            std::pair{accK, true}}) {
      Value tile = g.add(stage, g.idx(isK ? 0 : kDkdvTileBytes));
      for (int64_t half = 0; half < 2; ++half) {
        Value row = g.add(t.wgRows, rowOf(t, 2 * half));
        Value rowAddr = g.add(tile, g.mul(row, g.idx(128)));
        Value swz = g.rem(row, g.idx(8));
        std::array<SmallVector<Value>, 2> grps{
            rowPiece(q, acc, isK, half, 0), rowPiece(q, acc, isK, half, 1)};
        // Store u: group u (even rows) or 1 - u (odd rows), the lane's
        // 16-byte chunk 4 group + c at its swizzled place.
        for (int64_t u = 0; u < 2; ++u) {
          Value chunk = g.add(sel(odd, g.idx(4 * (1 - u)), g.idx(4 * u)), q.c);
          chunk = arith::XOrIOp::create(b, loc, chunk, swz);
          SmallVector<Value> v{
              w.sh(g.add(rowAddr, g.mul(chunk, g.idx(16))))};
          for (int64_t i = 0; i < 4; ++i)
            v.push_back(sel(odd, grps[1 - u][i], grps[u][i]));
          w.ptx("st.shared.v4.b32 [$0], {$1, $2, $3, $4};", v);
        }
      }
    }
    w.fenceAsyncShared();
    w.mbarArrive(w.mbar(kEpiFull));
  };
  // GQA: the f32 partials of this query head, in 8-byte pairs.
  auto accumEpilogue = [&] {
    for (int64_t r = 0; r < D / 2; r += 2) {
      Value row = g.add(kv0, g.add(t.wgRows, rowOf(t, r)));
      Value col = colOf(t, r);
      g.when(g.lt(row, Sk), [&] {
        for (auto [acc, isK] : {std::pair{accV, false},
                                std::pair{accK, true}}) {
          Value pair = vector::FromElementsOp::create(
              b, loc, VectorType::get({2}, w.f32),
              ValueRange{w.elem(acc, r), w.elem(acc, r + 1)});
          vector::StoreOp::create(b, loc, pair,
                                  k.arg(isK ? kDkAcc : kDvAcc),
                                  ValueRange{it.bb, it.h, row, col}, false,
                                  llvm::Align(8));
        }
      });
    }
  };
  {
    OpBuilder::InsertionGuard eg(b);
    b.setInsertionPointToStart(&ifDirect.getThenRegion().front());
    if (config.dkdvBulk)
      bulkEpilogue();
    else
      directEpilogue();
    b.setInsertionPointToStart(&ifDirect.getElseRegion().front());
    accumEpilogue();
  }
}
