//===- PrePost.cpp - The preprocess and postprocess kernels ---------------===//
//
// dash_bwd_preprocess: dPsum = rowsum(dO * O) and lse_log2 = lse * log2(e)
// (0 for a fully masked row) per query row, and the zeroed dQ accumulator
// (deterministic TMA kernels: only its rows without a visible key, since
// each Q tile's first hand-off stores), dK/dV accumulators and semaphores. dash_bwd_postprocess: dQ = scale *
// dq_accum, and where the main kernel left them in the workspace, dK =
// scale * (sum over the query heads of a group), dV = that sum, in a fixed
// order (deterministic GQA).
//
// Both are memory-bound. D/8 lanes per row, a warp on 256/D consecutive rows
// at once (two such groups in flight): lane l owns the 8 contiguous
// elements 8l.. of its row (one 16-byte access per lane and tensor), and the
// rows are walked by a mixed-radix counter, so the loop runs no division per
// row.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

namespace {
/// Groups of rows a warp has in flight (each lane 16 bytes of each tensor
/// per group), at two CTAs per SM (buildRowKernel). H200, b * s = 16k, h * d
/// = 2048 (bench/kernel_times.py, bench/NOTES.md sections 16 and 21): two
/// groups at two CTAs took the preprocess to 52-53 us and the postprocess to
/// 50-54 us, from 111-175 and 58-88 us (one warp per row, four rows in
/// flight) and 85 and 65-68 us (two and four groups, one CTA per SM at
/// 104-116 registers); with every group's loads unconditional and the
/// activations held packed until their use, 47-48 us (three groups: 46-47
/// with a few spills at 80 registers; four: 58-59, spilling).
constexpr int64_t kPreGroupsInFlight = 2;
constexpr int64_t kPostGroupsInFlight = 2;

/// Per-row vector accesses of one kernel: `lanes` = D / V lanes per row,
/// lane l of a row owning its columns [l * V, l * V + V), V = 8 (16 bytes of
/// the 2-byte activations, 32 of f32), so a warp takes 32 / lanes rows at
/// once. At one warp per row (4-byte lanes at D = 64, 8 at D = 128) the
/// preprocess ran at 1.6-2.3 TB/s.
struct RowAccess {
  static constexpr int64_t V = 8;
  Kernel &k;
  OpBuilder &b;
  Location loc;
  int64_t lanes;
  Type elt; // the gradients' / activations' element type

  RowAccess(Kernel &k, int64_t d, Type elt)
      : k(k), b(k.b), loc(k.loc), lanes(d / V), elt(elt) {
    assert(d % V == 0 && llvm::isPowerOf2_64(lanes) && lanes <= 32);
  }

  VectorType vec(Type t) { return VectorType::get({V}, t); }
  /// The first of lane `lane`'s columns (`lane` within the row).
  Value col(Value lane) { return k.g.mul(lane, k.g.idx(V)); }
  unsigned bytes(Type t) { return V * t.getIntOrFloatBitWidth() / 8; }
  /// The lane's V elements as f32.
  Value load(Value mem, ValueRange idx) { return widen(loadRaw(mem, idx)); }
  /// The lane's V elements in the memref's element type: a row kernel with
  /// several groups' loads in flight holds them packed until their use
  /// (16 bytes of 2-byte activations are 4 registers, as f32 8).
  Value loadRaw(Value mem, ValueRange idx) {
    Type t = cast<MemRefType>(mem.getType()).getElementType();
    return vector::LoadOp::create(b, loc, vec(t), mem, idx,
                                  /*nontemporal=*/false,
                                  llvm::Align(bytes(t)));
  }
  /// The same through a global pointer (Kernel::elementPtr).
  Value loadRaw(Value ptr) {
    return LLVM::LoadOp::create(b, loc, vec(elt), ptr, bytes(elt));
  }
  Value loadScalar(Value ptr) {
    return LLVM::LoadOp::create(b, loc, b.getF32Type(), ptr, 4);
  }
  Value widen(Value v) {
    if (cast<VectorType>(v.getType()).getElementType().isF32())
      return v;
    return arith::ExtFOp::create(b, loc, vec(b.getF32Type()), v);
  }
  /// Stores V f32 values, rounded to the memref's element type.
  void store(Value v, Value mem, ValueRange idx) {
    Type t = cast<MemRefType>(mem.getType()).getElementType();
    if (!t.isF32())
      v = arith::TruncFOp::create(b, loc, vec(t), v);
    vector::StoreOp::create(b, loc, v, mem, idx, /*nontemporal=*/false,
                            llvm::Align(bytes(t)));
  }
  Value splat(Value scalar) {
    return vector::BroadcastOp::create(b, loc, vec(scalar.getType()), scalar);
  }
  Value zeros() {
    auto t = vec(b.getF32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getF32FloatAttr(0.0f)));
  }
};

/// The rows of the row-major space [d0, d1, d2], row.lanes lanes each, so
/// a warp takes R = 32 / row.lanes consecutive rows at once. A warp's unit of
/// work is a chunk of `unroll` such groups, R * unroll consecutive rows along
/// d2 at fixed (i0, i1), and the grid strides over the chunks: load(i0, i1,
/// i2, lane) for every group of the chunk first, then finish(i0, i1, i2,
/// lane, loaded) for each, so a warp has `unroll` groups' loads in flight
/// (the loads' latency bounds these kernels). The chunk's coordinates advance
/// by the grid's warp count as a mixed-radix add (those digits are computed
/// once), so no row pays for a division, and its groups differ only in i2,
/// so the index math is paid once a chunk: the loop with the counter per
/// group of rows issued ~330 instructions per iteration of two groups, which
/// made the preprocess issue-bound (bench/NOTES.md section 31). `lane` is the
/// lane within its row. Lanes past d2 take its last row: they repeat its
/// loads and stores (the same values to the same addresses), so no predicate
/// splits a warp (the preprocess's butterfly needs every lane); a group with
/// no row inside d2 is skipped as a whole (a warp-uniform branch).
using RowLoad = function_ref<SmallVector<Value>(Value, Value, Value, Value)>;
using RowFinish =
    function_ref<void(Value, Value, Value, Value, ArrayRef<Value>)>;
void warpRows(Kernel &k, const RowAccess &row, Value d0, Value d1, Value d2,
              int64_t unroll, RowLoad load, RowFinish finish) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  LoopGen &g = k.g;
  const int64_t R = 32 / row.lanes, C = R * unroll;
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value nb = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value c32 = g.idx(32), warpsPerCta = g.idx(k.threads / 32);
  Value lane = g.rem(k.tid, c32);
  Value rowLane = g.rem(lane, g.idx(row.lanes));
  Value sub = g.div(lane, g.idx(row.lanes)); // the lane's row in the group
  Value warp = g.add(g.mul(bid, warpsPerCta), g.div(k.tid, c32));
  Value W = g.mul(nb, warpsPerCta);
  // Chunks: [d0, d1, ceil(d2 / C)].
  Value n2 = g.div(g.add(d2, g.idx(C - 1)), g.idx(C));
  Value plane = g.mul(d1, n2), total = g.mul(d0, plane);
  // An empty space (dk_accum when the main kernel writes dk/dv) must not
  // reach the divisions below.
  auto nonEmpty = scf::IfOp::create(b, loc, g.lt(g.idx(0), total), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&nonEmpty.getThenRegion().front());
  auto digits = [&](Value x) {
    return SmallVector<Value>{g.div(x, plane), g.rem(g.div(x, n2), d1),
                              g.rem(x, n2)};
  };
  SmallVector<Value> start = digits(warp), step = digits(W);
  // The chunk W after `at`: digit + step digit + carry-in < 2 * radix, so
  // one subtraction wraps.
  auto advance = [&](ArrayRef<Value> at) {
    Value carry = g.idx(0);
    auto addDigit = [&](Value x, Value dx, Value radix) {
      Value y = g.add(g.add(x, dx), carry);
      Value wraps =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, y, radix);
      carry = arith::SelectOp::create(b, loc, wraps, g.idx(1), g.idx(0));
      return arith::SelectOp::create(b, loc, wraps, g.sub(y, radix), y)
          .getResult();
    };
    Value i2 = addDigit(at[2], step[2], n2);
    Value i1 = addDigit(at[1], step[1], d1);
    Value i0 = g.add(g.add(at[0], step[0]), carry);
    return SmallVector<Value>{i0, i1, i2};
  };
  Value last2 = g.sub(d2, g.idx(1));
  scf::ForOp::create(
      b, loc, warp, total, W, start,
      [&](OpBuilder &nb2, Location, Value, ValueRange at) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb2.getInsertionBlock(), nb2.getInsertionPoint());
        Value first = g.mul(at[2], g.idx(C)); // the chunk's first row
        SmallVector<Value> rows, valid;
        for (int64_t u = 0; u < unroll; ++u) {
          Value groupRow = g.add(first, g.idx(u * R));
          rows.push_back(g.minIdx(g.add(groupRow, sub), last2));
          // Group 0 always has a row inside d2.
          valid.push_back(u == 0 ? Value() : g.lt(groupRow, d2));
        }
        // Every group's loads go out before any group is finished; a group
        // past d2 reads its last row (in bounds) and is not finished, so
        // the loads need no branch.
        SmallVector<SmallVector<Value>> loaded;
        for (int64_t u = 0; u < unroll; ++u)
          loaded.push_back(load(at[0], at[1], rows[u], rowLane));
        for (int64_t u = 0; u < unroll; ++u) {
          auto body = [&] {
            finish(at[0], at[1], rows[u], rowLane, loaded[u]);
          };
          if (u == 0)
            body();
          else
            g.when(valid[u], body);
        }
        scf::YieldOp::create(b, loc, advance(SmallVector<Value>(at)));
      });
}
/// One group per iteration, loads and all in `body`.
void warpRows(Kernel &k, const RowAccess &row, Value d0, Value d1, Value d2,
              function_ref<void(Value, Value, Value, Value)> body) {
  warpRows(
      k, row, d0, d1, d2, 1,
      [](Value, Value, Value, Value) { return SmallVector<Value>{}; },
      [&](Value i0, Value i1, Value i2, Value lane, ArrayRef<Value>) {
        body(i0, i1, i2, lane);
      });
}

/// Zeroes a contiguous workspace buffer (identity layout) element by
/// element over a flat view: no index decomposition.
void zeroFlat(Kernel &k, Value mem) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  auto type = cast<MemRefType>(mem.getType());
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  Value flat = memref::CollapseShapeOp::create(b, loc, mem, all);
  Value n = memref::DimOp::create(b, loc, flat, 0);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  k.gridLoop(n, [&](Value e) {
    memref::StoreOp::create(b, loc, zero, flat, ValueRange{e});
  });
}

/// A kernel of the row-wise kind: `body` fills it, given the kernel context
/// and the lanes' row accesses (vectors of the activations' element type).
void buildRowKernel(OpBuilder &b, Location loc, StringRef name,
                    ArrayRef<Type> argTypes, int64_t D, int64_t threads,
                    function_ref<void(Kernel &, RowAccess &)> body) {
  OpBuilder::InsertionGuard guard(b);
  Kernel k(b, loc, name, argTypes, threads);
  // Two CTAs per SM (<= 80 registers at 384 threads; a few spill stores,
  // outside the row loops' loads): at 104-116 registers, one CTA, half the
  // loads in flight per SM.
  k.func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(2));
  RowAccess row(k, D, cast<MemRefType>(argTypes[kQ]).getElementType());
  body(k, row);
  gpu::ReturnOp::create(b, loc);
}
} // namespace

/// Shifts and masks by power-of-two extents (the tiles layout's are).
static int64_t log2Of(int64_t n) {
  assert(llvm::isPowerOf2_64(n) && "a power-of-two extent");
  return int64_t(llvm::Log2_64(n));
}
static Value shrBy(Kernel &k, Value x, int64_t n) { // x / n
  return arith::ShRUIOp::create(k.b, k.loc, x, k.g.idx(log2Of(n)));
}
static Value shlBy(Kernel &k, Value x, int64_t n) { // x * n
  return arith::ShLIOp::create(k.b, k.loc, x, k.g.idx(log2Of(n)));
}
static Value lowBits(Kernel &k, Value x, int64_t n) { // x % n
  (void)log2Of(n); // asserts the power of two
  return arith::AndIOp::create(k.b, k.loc, x, k.g.idx(n - 1));
}

Value mlir::dash::detail::dqTileFloat(Kernel &k, const DqAccumLayout &l,
                                      Value r, Value col) {
  LoopGen &g = k.g;
  const int64_t rows = DqAccumLayout::kPartRows,
                cols = DqAccumLayout::kPanelCols;
  Value part, rp, cp;
  if (l.partsByRows()) {
    part = shrBy(k, r, rows);
    rp = lowBits(k, r, rows);
    cp = col;
  } else {
    part = shrBy(k, col, l.partCols());
    rp = r;
    cp = lowBits(k, col, l.partCols());
  }
  // part * partFloats + (cp / 8) * panelFloats + rp * 8 + cp % 8
  return g.add(g.add(shlBy(k, part, l.partFloats()),
                     shlBy(k, shrBy(k, cp, cols), l.panelFloats())),
               g.add(shlBy(k, rp, cols), lowBits(k, cp, cols)));
}

/// The memref indices of dq_accum's element for dQ (bb, h, s, col): `col`
/// the first of a lane's V = 8 columns, which are one row of one 8-column
/// panel in the tiles layout, so the lane's access stays one vector (and
/// the 32 / lanes rows of a warp are consecutive 32-byte rows of each
/// panel). Every extent is a power of two: shifts and masks, no
/// division per row.
static SmallVector<Value> dqAccumIndex(Kernel &k, const DqAccumLayout &l,
                                       Value bb, Value h, Value s, Value col) {
  if (!l.tiles())
    return {bb, h, s, col};
  Value r = lowBits(k, s, l.tileRows), q0 = k.g.sub(s, r);
  Value f = dqTileFloat(k, l, r, col);
  return {bb, h, k.g.add(q0, shrBy(k, f, l.d)), lowBits(k, f, l.d)};
}

std::pair<Value, Value> mlir::dash::detail::rowStatistics(Kernel &k, Value dO8,
                                                          Value o8, Value lse,
                                                          int64_t lanes) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  LoopGen &g = k.g;
  auto widen = [&](Value v) {
    auto t = cast<VectorType>(v.getType());
    return arith::ExtFOp::create(
        b, loc, VectorType::get(t.getShape(), b.getF32Type()), v);
  };
  Value prod = arith::MulFOp::create(b, loc, widen(dO8), widen(o8));
  Value part = vector::ExtractOp::create(b, loc, prod, 0);
  for (int64_t i = 1; i < RowAccess::V; ++i)
    part = g.add(part, vector::ExtractOp::create(b, loc, prod, i));
  // An order-fixed butterfly within the row's aligned group of lanes: every
  // lane adds the same pairs, commuted.
  for (int32_t off = lanes / 2; off >= 1; off /= 2)
    part = g.add(part, gpu::ShuffleOp::create(b, loc, part, off, 32,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
  Value isInf =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, lse,
                            g.f32(-std::numeric_limits<double>::infinity()));
  Value l2 = arith::SelectOp::create(b, loc, isInf, g.f32(0.0),
                                     g.mul(lse, g.f32(kLog2e)));
  return {part, l2};
}

void mlir::dash::detail::storeDpsumHiLo(Kernel &k, Value headRow, Value s,
                                        Value dps) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  LoopGen &g = k.g;
  // Row s of hi at bf16 element s, of lo at S + s: the head's f32 row of
  // S (a multiple of 8 rows, the runtime's padding for dps-fold kernels)
  // holds both in its bytes.
  Type bf16 = b.getBF16Type();
  Value hi = arith::TruncFOp::create(b, loc, bf16, dps);
  Value lo = arith::TruncFOp::create(
      b, loc, bf16,
      g.sub(dps, arith::ExtFOp::create(b, loc, b.getF32Type(), hi)));
  Value rows = k.dim(kDPsum, 2);
  auto at = [&](Value i) {
    return LLVM::GEPOp::create(
        b, loc, headRow.getType(), bf16, headRow,
        ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), i)});
  };
  LLVM::StoreOp::create(b, loc, hi, at(s), 2);
  LLVM::StoreOp::create(b, loc, lo, at(g.add(rows, s)), 2);
}

void mlir::dash::detail::buildPreprocess(OpBuilder &b, Location loc,
                                         ArrayRef<Type> argTypes, int64_t D,
                                         int64_t threads,
                                         DqAccumLayout dqLayout,
                                         DqAccumInit dqInit) {
  auto body = [&](Kernel &k, RowAccess &row) {
    LoopGen &g = k.g;
    // pdl: the main kernel may launch now; its CTAs start as this kernel's
    // leave the SMs, and wait for all of them (griddepcontrol.wait).
    if (dqInit.launchDependents)
      NVVM::GriddepcontrolOp::create(
          b, loc, NVVM::GridDepActionKind::launch_dependents);
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
          Sk = k.dim(kK, 1);
    // Rows (b, h, s) of the [B, H, S_q] statistics and of dq_accum. The
    // chunk's groups differ in s only: their addresses add its term last
    // (through the descriptors' own 64-bit sums each group rebuilt them
    // whole, bench/NOTES.md section 31).
    auto act = [&](Arg a, ValueRange bshd) { // O, dO: s is dim 1
      return k.elementPtr(k.arg(a), bshd, 1, /*global*/ 1);
    };
    auto stat = [&](Arg a, ValueRange bhs) { // [B, H, S] rows: s is dim 2
      return k.elementPtr(k.arg(a), bhs, 2, /*global*/ 1);
    };
    // dQ's rows without a visible key (where they are), or with
    // rankZeroStores off every row below S_q (in the tiles layout row s of
    // the buffer, not dQ's row s, but all of them are zeroed the same).
    auto noKeyRow = [&](Value s) {
      Value noKey =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, Sk, g.idx(0));
      if (dqInit.causalBottomRight) // key j <= s + S_k - S_q
        noKey = arith::OrIOp::create(b, loc, noKey, g.lt(g.add(s, Sk), Sq));
      return noKey;
    };
    auto zeroDqRow = [&](Value bb, Value h, Value s, Value lane) {
      Value col = row.col(lane);
      if (!dqInit.rankZeroStores)
        return row.store(row.zeros(), k.arg(kDqAcc), {bb, h, s, col});
      g.when(noKeyRow(s), [&] {
        row.store(row.zeros(), k.arg(kDqAcc),
                  dqAccumIndex(k, dqLayout, bb, h, s, col));
      });
    };
    if (dqInit.statsInMain) {
      // The main kernel computes the statistics; only the zeroing is left
      // (with rankZeroStores none unless row 0 has no visible key).
      auto zeroRows = [&] { warpRows(k, row, B, H, Sq, zeroDqRow); };
      if (dqInit.rankZeroStores)
        g.when(noKeyRow(g.idx(0)), zeroRows);
      else
        zeroRows();
      // The statistics ticket and the per-head row counts.
      k.gridLoop(g.add(g.mul(B, H), g.idx(kSemStatsReady0 - kSemStatsTicket)),
                 [&](Value e) {
                   LLVM::StoreOp::create(
                       b, loc, arith::ConstantIntOp::create(b, loc, 0, 32),
                       semTailPtr(k, g.add(e, g.idx(kSemStatsTicket))), 4);
                 });
    } else {
      warpRows(
          k, row, B, H, Sq, kPreGroupsInFlight,
          [&](Value bb, Value h, Value s, Value lane) {
            Value col = row.col(lane);
            return SmallVector<Value>{row.loadRaw(act(kDO, {bb, s, h, col})),
                                      row.loadRaw(act(kO, {bb, s, h, col})),
                                      row.loadScalar(stat(kLse, {bb, h, s}))};
          },
          [&](Value bb, Value h, Value s, Value lane, ArrayRef<Value> in) {
            // Every lane of the row holds the same sum and the same lse: all
            // of them store, so the statistics need no branch (one
            // instruction either way; behind a lane-0 branch ptxas sank the
            // lse load into it, after the butterfly, a memory latency per
            // group).
            auto [part, l2] = rowStatistics(k, in[0], in[1], in[2], row.lanes);
            if (dqInit.dpsumHiLo)
              storeDpsumHiLo(k, stat(kDPsum, {bb, h, g.idx(0)}), s, part);
            else
              LLVM::StoreOp::create(b, loc, part, stat(kDPsum, {bb, h, s}), 4);
            LLVM::StoreOp::create(b, loc, l2, stat(kLse2, {bb, h, s}), 4);
            zeroDqRow(bb, h, s, lane);
          });
    }
    // The tiles layout pads dq_accum's rows to whole tiles: those past S_q
    // (none when block_m divides S_q) in a loop of their own (measured: a
    // separate pass over all of dq_accum cost 18-20 us per call); with
    // rankZeroStores the first hand-off writes them.
    if (dqLayout.tiles() && !dqInit.rankZeroStores) {
      Value pad = g.sub(k.dim(kDqAcc, 2), Sq);
      warpRows(k, row, B, H, pad, [&](Value bb, Value h, Value p, Value lane) {
        row.store(row.zeros(), k.arg(kDqAcc),
                  {bb, h, g.add(Sq, p), row.col(lane)});
      });
    }
    // dK/dV accumulators: their rows come from their own descriptors (none
    // when the main kernel writes dk/dv itself).
    for (Arg acc : {kDkAcc, kDvAcc})
      warpRows(k, row, k.dim(acc, 0), k.dim(acc, 1), k.dim(acc, 2),
               [&](Value bb, Value h, Value s, Value lane) {
                 row.store(row.zeros(), k.arg(acc),
                           {bb, h, s, row.col(lane)});
               });
    zeroFlat(k, k.arg(kSem));
    if (dqInit.dqTicket) // the word after the semaphores, by one thread
      g.when(g.andI(k.isThread0(),
                    g.lt(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
                         g.idx(1))),
             [&] {
               LLVM::StoreOp::create(
                   b, loc, arith::ConstantIntOp::create(b, loc, 0, 32),
                   dqTicketPtr(k), 4);
             });
  };
  buildRowKernel(b, loc, "dash_bwd_preprocess", argTypes, D, threads, body);
}

void mlir::dash::detail::buildPostprocess(OpBuilder &b, Location loc,
                                          ArrayRef<Type> argTypes, int64_t D,
                                          int64_t threads, bool dkdvDirect,
                                          DqAccumLayout dqLayout,
                                          bool dqInMain) {
  auto body = [&](Kernel &k, RowAccess &row) {
    LoopGen &g = k.g;
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
          Sk = k.dim(kK, 1), Hkv = k.dim(kK, 2);
    Value scale = row.splat(k.arg(kScale));
    // dQ, unless the main kernel wrote it (dq-in-main, WgmmaDqConvert.cpp).
    auto dqPass = [&] {
      warpRows(
          k, row, B, H, Sq, kPostGroupsInFlight,
          [&](Value bb, Value h, Value s, Value lane) {
            return SmallVector<Value>{
                row.load(k.arg(kDqAcc),
                         dqAccumIndex(k, dqLayout, bb, h, s, row.col(lane)))};
          },
          [&](Value bb, Value h, Value s, Value lane, ArrayRef<Value> in) {
            row.store(arith::MulFOp::create(b, loc, in[0], scale), k.arg(kDq),
                      {bb, s, h, row.col(lane)});
          });
    };
    if (!dqInMain)
      dqPass();
    // dK/dV from the per-query-head accumulators; a kernel that writes them
    // itself (dkdvDirect) does so unless H != H_kv.
    scf::IfOp gqaOnly;
    if (dkdvDirect) {
      Value gqa =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, H, Hkv);
      gqaOnly = scf::IfOp::create(b, loc, gqa, /*withElse=*/false);
      b.setInsertionPointToStart(&gqaOnly.getThenRegion().front());
    }
    Value group = g.div(H, Hkv);
    warpRows(k, row, B, Hkv, Sk, [&](Value bb, Value hkv, Value s, Value lane) {
      Value col = row.col(lane);
      Value h0 = g.mul(hkv, group);
      // Ascending query head: a fixed order.
      auto sums = scf::ForOp::create(
          b, loc, g.idx(0), group, g.idx(1),
          ValueRange{row.zeros(), row.zeros()},
          [&](OpBuilder &nb, Location, Value gi, ValueRange acc) {
            OpBuilder::InsertionGuard ig(b);
            b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
            Value h = g.add(h0, gi);
            Value dk = arith::AddFOp::create(
                b, loc, acc[0], row.load(k.arg(kDkAcc), {bb, h, s, col}));
            Value dv = arith::AddFOp::create(
                b, loc, acc[1], row.load(k.arg(kDvAcc), {bb, h, s, col}));
            scf::YieldOp::create(b, loc, ValueRange{dk, dv});
          });
      row.store(arith::MulFOp::create(b, loc, sums.getResult(0), scale),
                k.arg(kDk), {bb, s, hkv, col});
      row.store(sums.getResult(1), k.arg(kDv), {bb, s, hkv, col});
    });
    if (gqaOnly)
      b.setInsertionPointAfter(gqaOnly);
  };
  buildRowKernel(b, loc, "dash_bwd_postprocess", argTypes, D, threads, body);
}
