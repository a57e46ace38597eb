//===- WgmmaDqHandOff.cpp - A step's dQ partial to its reducer ------------===//
//
// The MMA warpgroups' end of the dQ hand-off: once a step's dQ product has
// completed, each warpgroup waits for its part of the staging buffer to be
// free (the reducer's EMPTY arrival), stores its f32 partial there in the
// layout the reducer's bulk reduce-add reads (SmemLayout::dQBytes), fences
// it for the async proxy and passes it on (FULL). dq-kv-split: warpgroup 1
// adds its partial onto warpgroup 0's instead. The reducer's end is
// WgmmaReducers.cpp; docs/GPU.md has the protocol.
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

void WgmmaMain::emitDqHandOff(const MmaThread &t, Value first, Value step,
                              Value qt, Value buf, ArrayRef<Value> dqs,
                              function_ref<void(int64_t)> phase) {
  const bool dqByRows = dqParts().partsByRows();
  const int64_t dqN = dqParts().partCols();
  // Hand the dQ partial to the reducer (staging buffer of hand-off
  // first + step).
  Value qbuf = g.rem(g.add(first, step), g.idx(dqBufs));
  auto stagingOf = [&] {
    return g.add(at(L.dQ()), g.mul(qbuf, g.idx(L.dQ(1) - L.dQ(0))));
  };
  // The hand-off's step for the reducer, by MMA thread 0 before the
  // arrival that passes the tile on (the stage is ours until the
  // EMPTY_Q arrival below).
  auto writeHandOff = [&] {
    g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                 g.idx(0)),
           [&] {
             w.storeHandOff(w.i32of(qt), w.handOffSlot(qbuf, 0));
             if (config.countedAdds)
               w.storeHandOff(
                   LLVM::LoadOp::create(b, loc, w.i32,
                                        w.stepTileSlot(buf, 1), 4),
                   w.handOffSlot(qbuf, 1));
           });
  };
  auto f32x2 = VectorType::get({2}, w.f32);
  auto pairOf = [&](Value acc, int64_t r) -> Value {
    return vector::FromElementsOp::create(
        b, loc, f32x2, ValueRange{w.elem(acc, r), w.elem(acc, r + 1)});
  };
  // TMA staging tiles: byte offset of accumulator pair r in its part
  // beyond the thread's own (fragRow, fragCol): panel r/4, 8 rows
  // down for (r/2) odd (SmemLayout::dQBytes).
  auto pairInPart = [&](int64_t r) {
    return (r / 4) * L.dQPanel() + 8 * ((r / 2) % 2) * 32;
  };
  if (split) {
    // Both Q halves are parts 0 and 1 of the tile (parts by rows);
    // pair r of half i: part i, panel r/4, the thread's row and
    // column (SmemLayout::dQBytes). Warpgroup 0 stores its partial
    // once the reducer has read the buffer; warpgroup 1 adds its
    // own onto it (dQ = partial 0 + partial 1, the same order every
    // run), element by element at the same addresses (the two
    // warpgroups' fragments coincide), and passes the tile on.
    Value staging = stagingOf();
    Value threadOff = g.add(g.mul(t.fragRow, g.idx(32)),
                            g.mul(t.fragCol, g.idx(4)));
    auto pairAddr = [&](int64_t half, int64_t r) {
      return w.sh(g.add(
          staging,
          g.add(threadOff,
                g.idx(half * L.dQPartBytes() + pairInPart(r)))));
    };
    Value xchg = bufBarrier(kBarXchg, qbuf, g.idx(0));
    auto ifFirst = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t.wg,
                              g.idx(0)),
        /*withElse=*/true);
    {
      OpBuilder::InsertionGuard sg(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      w.barSync(bufBarrier(kBarEmpty, qbuf, g.idx(0)),
                kHandOffThreads);
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < D / 2; r += 2)
          LLVM::StoreOp::create(b, loc, pairOf(dqs[half], r),
                                pairAddr(half, r), 8);
      writeHandOff();
      w.barArrive(xchg, kMmaThreads);
      b.setInsertionPointToStart(&ifFirst.getElseRegion().front());
      w.barSync(xchg, kMmaThreads);
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < D / 2; r += 2) {
          Value addr = pairAddr(half, r);
          Value sum = arith::AddFOp::create(
              b, loc, LLVM::LoadOp::create(b, loc, f32x2, addr, 8),
              pairOf(dqs[half], r));
          LLVM::StoreOp::create(b, loc, sum, addr, 8);
        }
      w.fenceAsyncShared();
      w.barArrive(bufBarrier(kBarFull, qbuf, g.idx(1)),
                  kHandOffThreads);
    }
  } else {
    w.barSync(bufBarrier(kBarEmpty, qbuf, t.wg), kHandOffThreads);
    phase(kPhStagingFree);
    Value dq = dqs[0];
    Value rowBase = dqByRows ? t.wgRows : g.idx(0);
    Value colBase = dqByRows ? g.idx(0) : g.mul(t.wg, g.idx(D / 2));
    Value staging = stagingOf();
    // Byte offset of the pair (rowOf(r), colOf(r)) in the staging
    // tile. TMA kernels: this warpgroup's part (SmemLayout::dQBytes),
    // pair r in its panel r/4, column fragCol: one per-thread offset,
    // the rest constants. cp.async kernels: padded rows.
    Value threadOff =
        tma ? g.add(g.add(g.mul(t.wg, g.idx(L.dQPartBytes())),
                          g.mul(t.fragRow, g.idx(32))),
                    g.mul(t.fragCol, g.idx(4)))
            : Value();
    auto pairOffset = [&](int64_t r) -> Value {
      if (tma)
        return g.add(threadOff, g.idx(pairInPart(r)));
      return g.add(g.mul(g.add(rowBase, rowOf(t, r)), g.idx(L.dQRow())),
                   g.mul(g.add(colBase, colOf(t, r)), g.idx(4)));
    };
    for (int64_t r = 0; r < dqN / 2; r += 2)
      LLVM::StoreOp::create(b, loc, pairOf(dq, r),
                            w.sh(g.add(staging, pairOffset(r))), 8);
    w.fenceAsyncShared();
    if (tma)
      writeHandOff();
    w.barArrive(bufBarrier(kBarFull, qbuf, t.wg), kHandOffThreads);
    phase(kPhHandedOff);
  }
}
