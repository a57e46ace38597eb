//===- PrePost.cpp - The preprocess and postprocess kernels ---------------===//
//
// dash_bwd_preprocess: dPsum = rowsum(dO * O) and lse_log2 = lse * log2(e)
// (0 for a fully masked row) per query row, and the zeroed dQ accumulator,
// dK/dV accumulators and semaphores. dash_bwd_postprocess: dQ = scale *
// dq_accum, and where the main kernel left them in the workspace, dK =
// scale * (sum over the query heads of a group), dV = that sum, in a fixed
// order (deterministic GQA).
//
// Both are memory-bound. One warp per row (up to four in flight): lane l owns
// the D/32 contiguous elements l*D/32.. of the row (one vector access per lane,
// a warp reads a whole row), and the rows are walked by a mixed-radix counter,
// so the loop runs no division per row.
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
/// Rows a warp has in flight (H200, bench/kernel_times.py, b * s = 16k, h *
/// d = 2048): the postprocess's dQ 64 -> 50 us (D = 128) and 96 -> 75 us (D =
/// 64) with four; the preprocess 202 -> 172 us at D = 64, but 116 -> 147 us at
/// D = 128, where four rows' addresses take 100 registers and one CTA per SM.
int64_t preRowsInFlight(int64_t d) { return d == 64 ? 4 : 1; }
constexpr int64_t kPostRowsInFlight = 4;

/// Per-row vector accesses of one kernel: lane `lane` owns columns
/// [lane * V, lane * V + V) of a D-element row, V = D / 32.
struct RowAccess {
  Kernel &k;
  OpBuilder &b;
  Location loc;
  int64_t V;
  Type elt; // the gradients' / activations' element type

  RowAccess(Kernel &k, int64_t d, Type elt)
      : k(k), b(k.b), loc(k.loc), V(d / 32), elt(elt) {}

  VectorType vec(Type t) { return VectorType::get({V}, t); }
  /// The first of lane `lane`'s columns.
  Value col(Value lane) { return k.g.mul(lane, k.g.idx(V)); }
  unsigned bytes(Type t) { return V * t.getIntOrFloatBitWidth() / 8; }
  /// The lane's V elements as f32.
  Value load(Value mem, ValueRange idx) {
    Type t = cast<MemRefType>(mem.getType()).getElementType();
    Value v = vector::LoadOp::create(b, loc, vec(t), mem, idx,
                                     /*nontemporal=*/false,
                                     llvm::Align(bytes(t)));
    if (!t.isF32())
      v = arith::ExtFOp::create(b, loc, vec(b.getF32Type()), v);
    return v;
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

/// One warp per row of the row-major space [d0, d1, d2], grid-stride over
/// the grid's warps, `unroll` rows per iteration: load(i0, i1, i2, lane) for
/// each of them first, then finish(i0, i1, i2, lane, loaded) for each, so
/// a warp has `unroll` rows' loads in flight (one row's leaves the memory
/// pipe mostly idle: the loads' latency, not the bandwidth, bounded these
/// kernels). The coordinates advance by the grid's warp count W as a
/// mixed-radix add (W's digits are computed once), so no row pays for a
/// division.
using RowLoad = function_ref<SmallVector<Value>(Value, Value, Value, Value)>;
using RowFinish =
    function_ref<void(Value, Value, Value, Value, ArrayRef<Value>)>;
void warpRows(Kernel &k, Value d0, Value d1, Value d2, int64_t unroll,
              RowLoad load, RowFinish finish) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  LoopGen &g = k.g;
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value nb = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value c32 = g.idx(32), warpsPerCta = g.idx(k.threads / 32);
  Value lane = g.rem(k.tid, c32);
  Value first = g.add(g.mul(bid, warpsPerCta), g.div(k.tid, c32));
  Value W = g.mul(nb, warpsPerCta);
  Value plane = g.mul(d1, d2), total = g.mul(d0, plane);
  // An empty space (dk_accum when the main kernel writes dk/dv) must not
  // reach the divisions below.
  auto nonEmpty = scf::IfOp::create(b, loc, g.lt(g.idx(0), total), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&nonEmpty.getThenRegion().front());
  auto digits = [&](Value x) {
    return SmallVector<Value>{g.div(x, plane), g.rem(g.div(x, d2), d1),
                              g.rem(x, d2)};
  };
  SmallVector<Value> start = digits(first), step = digits(W);
  // The row W after `at`: digit + step digit + carry-in < 2 * radix, so one
  // subtraction wraps.
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
    Value i2 = addDigit(at[2], step[2], d2);
    Value i1 = addDigit(at[1], step[1], d1);
    Value i0 = g.add(g.add(at[0], step[0]), carry);
    return SmallVector<Value>{i0, i1, i2};
  };
  scf::ForOp::create(
      b, loc, first, total, g.mul(W, g.idx(unroll)), start,
      [&](OpBuilder &nb2, Location, Value iv, ValueRange at0) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb2.getInsertionBlock(), nb2.getInsertionPoint());
        SmallVector<SmallVector<Value>> at{SmallVector<Value>(at0)};
        SmallVector<Value> valid{Value()}; // row 0 is inside the loop bound
        for (int64_t u = 1; u < unroll; ++u) {
          at.push_back(advance(at.back()));
          valid.push_back(g.lt(g.add(iv, g.mul(W, g.idx(u))), total));
        }
        SmallVector<SmallVector<Value>> loaded{
            load(at[0][0], at[0][1], at[0][2], lane)};
        SmallVector<Type> types;
        for (Value v : loaded[0])
          types.push_back(v.getType());
        for (int64_t u = 1; u < unroll; ++u) {
          auto ifValid = scf::IfOp::create(b, loc, types, valid[u], true);
          OpBuilder::InsertionGuard lg(b);
          b.setInsertionPointToStart(&ifValid.getThenRegion().front());
          scf::YieldOp::create(b, loc,
                               load(at[u][0], at[u][1], at[u][2], lane));
          b.setInsertionPointToStart(&ifValid.getElseRegion().front());
          SmallVector<Value> zeros;
          for (Type t : types)
            zeros.push_back(arith::ConstantOp::create(
                b, loc, cast<TypedAttr>(b.getZeroAttr(t))));
          scf::YieldOp::create(b, loc, zeros);
          loaded.push_back(SmallVector<Value>(ifValid.getResults()));
        }
        for (int64_t u = 0; u < unroll; ++u) {
          auto body = [&] {
            finish(at[u][0], at[u][1], at[u][2], lane, loaded[u]);
          };
          if (u == 0)
            body();
          else
            g.when(valid[u], body);
        }
        scf::YieldOp::create(b, loc, advance(at.back()));
      });
}
/// One row per iteration, loads and all in `body`.
void warpRows(Kernel &k, Value d0, Value d1, Value d2,
              function_ref<void(Value, Value, Value, Value)> body) {
  warpRows(
      k, d0, d1, d2, 1,
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
  RowAccess row(k, D, cast<MemRefType>(argTypes[kQ]).getElementType());
  body(k, row);
  gpu::ReturnOp::create(b, loc);
}
} // namespace

/// The memref indices of dq_accum's element for dQ (bb, h, s, col): `col`
/// the first of a lane's V columns, which lie in one 8-column panel of one
/// part in the tiles layout (V = D / 32 <= 4), so the lane's access stays
/// one vector. Every extent is a power of two: shifts and masks, no
/// division per row.
static SmallVector<Value> dqAccumIndex(Kernel &k, const DqAccumLayout &l,
                                       Value bb, Value h, Value s, Value col) {
  if (!l.tiles())
    return {bb, h, s, col};
  LoopGen &g = k.g;
  auto log2 = [](int64_t n) {
    assert(llvm::isPowerOf2_64(n) && "a power-of-two extent");
    return int64_t(llvm::Log2_64(n));
  };
  auto shr = [&](Value x, int64_t n) -> Value {
    return arith::ShRUIOp::create(k.b, k.loc, x, g.idx(log2(n)));
  };
  auto low = [&](Value x, int64_t n) -> Value {
    (void)log2(n); // asserts the power of two
    return arith::AndIOp::create(k.b, k.loc, x, g.idx(n - 1));
  };
  auto shl = [&](Value x, int64_t n) -> Value {
    return arith::ShLIOp::create(k.b, k.loc, x, g.idx(log2(n)));
  };
  const int64_t rows = DqAccumLayout::kPartRows,
                cols = DqAccumLayout::kPanelCols;
  Value r = low(s, l.tileRows), q0 = g.sub(s, r);
  Value part, rp, cp;
  if (l.partsByRows()) {
    part = shr(r, rows);
    rp = low(r, rows);
    cp = col;
  } else {
    part = shr(col, l.partCols());
    rp = r;
    cp = low(col, l.partCols());
  }
  // part * partFloats + (cp / 8) * panelFloats + rp * 8 + cp % 8
  Value f = g.add(g.add(shl(part, l.partFloats()),
                        shl(shr(cp, cols), l.panelFloats())),
                  g.add(shl(rp, cols), low(cp, cols)));
  return {bb, h, g.add(q0, shr(f, l.d)), low(f, l.d)};
}

void mlir::dash::detail::buildPreprocess(OpBuilder &b, Location loc,
                                         ArrayRef<Type> argTypes, int64_t D,
                                         int64_t threads,
                                         DqAccumLayout dqLayout) {
  auto body = [&](Kernel &k, RowAccess &row) {
    LoopGen &g = k.g;
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2);
    // Rows (b, h, s) of the [B, H, S_q] statistics and of dq_accum.
    warpRows(
        k, B, H, Sq, preRowsInFlight(D),
        [&](Value bb, Value h, Value s, Value lane) {
          Value col = row.col(lane);
          return SmallVector<Value>{row.load(k.arg(kDO), {bb, s, h, col}),
                                    row.load(k.arg(kO), {bb, s, h, col}),
                                    g.load(k.arg(kLse), {bb, h, s})};
        },
        [&](Value bb, Value h, Value s, Value lane, ArrayRef<Value> in) {
          Value col = row.col(lane);
          Value prod = arith::MulFOp::create(b, loc, in[0], in[1]);
          Value part = vector::ExtractOp::create(b, loc, prod, 0);
          for (int64_t i = 1; i < row.V; ++i)
            part = g.add(part, vector::ExtractOp::create(b, loc, prod, i));
          // Butterfly: every lane ends with the same, order-fixed sum.
          for (int32_t off = 16; off >= 1; off /= 2)
            part = g.add(part, gpu::ShuffleOp::create(b, loc, part, off, 32,
                                                      gpu::ShuffleMode::XOR)
                                   .getShuffleResult());
          g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       lane, g.idx(0)),
                 [&] {
                   memref::StoreOp::create(b, loc, part, k.arg(kDPsum),
                                           ValueRange{bb, h, s});
                   Value l = in[2];
                   Value isInf = arith::CmpFOp::create(
                       b, loc, arith::CmpFPredicate::OEQ, l,
                       g.f32(-std::numeric_limits<double>::infinity()));
                   Value l2 = arith::SelectOp::create(
                       b, loc, isInf, g.f32(0.0), g.mul(l, g.f32(kLog2e)));
                   memref::StoreOp::create(b, loc, l2, k.arg(kLse2),
                                           ValueRange{bb, h, s});
                 });
          // Row s of the buffer (in the tiles layout not dQ's row s, but
          // every row below S_q is zeroed all the same).
          row.store(row.zeros(), k.arg(kDqAcc), {bb, h, s, col});
        });
    // The tiles layout pads dq_accum's rows to whole tiles: those past S_q
    // (none when block_m divides S_q) in a loop of their own (measured: a
    // separate pass over all of dq_accum cost 18-20 us per call).
    if (dqLayout.tiles()) {
      Value pad = g.sub(k.dim(kDqAcc, 2), Sq);
      warpRows(k, B, H, pad, [&](Value bb, Value h, Value p, Value lane) {
        row.store(row.zeros(), k.arg(kDqAcc),
                  {bb, h, g.add(Sq, p), row.col(lane)});
      });
    }
    // dK/dV accumulators: their rows come from their own descriptors (none
    // when the main kernel writes dk/dv itself).
    for (Arg acc : {kDkAcc, kDvAcc})
      warpRows(k, k.dim(acc, 0), k.dim(acc, 1), k.dim(acc, 2),
               [&](Value bb, Value h, Value s, Value lane) {
                 row.store(row.zeros(), k.arg(acc),
                           {bb, h, s, row.col(lane)});
               });
    zeroFlat(k, k.arg(kSem));
  };
  buildRowKernel(b, loc, "dash_bwd_preprocess", argTypes, D, threads, body);
}

void mlir::dash::detail::buildPostprocess(OpBuilder &b, Location loc,
                                          ArrayRef<Type> argTypes, int64_t D,
                                          int64_t threads, bool dkdvDirect,
                                          DqAccumLayout dqLayout) {
  auto body = [&](Kernel &k, RowAccess &row) {
    LoopGen &g = k.g;
    Value B = k.dim(kQ, 0), Sq = k.dim(kQ, 1), H = k.dim(kQ, 2),
          Sk = k.dim(kK, 1), Hkv = k.dim(kK, 2);
    Value scale = row.splat(k.arg(kScale));
    warpRows(
        k, B, H, Sq, kPostRowsInFlight,
        [&](Value bb, Value h, Value s, Value lane) {
          return SmallVector<Value>{
              row.load(k.arg(kDqAcc),
                       dqAccumIndex(k, dqLayout, bb, h, s, row.col(lane)))};
        },
        [&](Value bb, Value h, Value s, Value lane, ArrayRef<Value> in) {
          row.store(arith::MulFOp::create(b, loc, in[0], scale), k.arg(kDq),
                    {bb, s, h, row.col(lane)});
        });
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
    warpRows(k, B, Hkv, Sk, [&](Value bb, Value hkv, Value s, Value lane) {
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
