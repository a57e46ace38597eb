//===- WgmmaStats.cpp - dPsum and lse_log2 inside the main kernel ---------===//
//
// stats-in-main (TMA kernels; off by default): the preprocess reads all of
// O and dO (44 us a call at ~3.2 TB/s, the H200's read rate for them:
// bench/micro/preprocess_bw.cu) before the main kernel may start, though a
// head's statistics are needed only when its first item starts. Here the
// main kernel computes them:
//
//  * before the roles split, every warp of every CTA computes the rows of
//    the heads the first kStatsFirstRounds rounds of items start on (the
//    persistent grid takes launch slots head-major: every head up to the
//    last unit's first item's, times the rounds), chunks dealt out by warp
//    index;
//  * warp 11 then computes the other heads' rows in head order, drawing
//    chunks from a ticket (the word after the dQ ticket), while the MMA
//    warps walk;
//  * after a chunk's stores a warp barrier, then lane 0's gpu-scope release
//    (fence + relaxed add of the chunk's row count) into its head's count;
//    the producer acquires the count of an item's head before the item's
//    first statistics load, and a proxy fence orders those generic-proxy
//    writes before its tensor-map loads.
//
// The rows are the preprocess's (rowStatistics): bitwise the same dPsum.
// Every claimed chunk is finished without waiting on anything, so no wait
// of a producer can deadlock on a stalled streamer.
//
// Measured (bench/NOTES.md section 34): the call loses the preprocess's
// 44 us but the main kernel gains 30-40 us with warp 11 streaming (the
// producers waiting for it, and its traffic beside the walks): -0.3..+0.9%
// on d = 64 / 128 causal 4096 / 8192, within the runs' noise.
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

namespace {
/// Rows a chunk: one ticket (and one release) per 64 rows.
constexpr int64_t kStatsChunkRows = 64;
/// Groups of a warp's rows in flight: before the split every thread has
/// 168 registers; warp 11 has its warpgroup's 24 (D = 64) or 40: at 1 it
/// fell a round behind the MMA warps, at 4 it spilled (D = 64 -13%).
constexpr int64_t kStatsUnrollFirstRound = 4, kStatsUnrollStreamer = 2;
/// The heads computed before the split: those of the first this many
/// rounds of launch slots (at 1 the producers waited for warp 11 at D =
/// 64).
constexpr int64_t kStatsFirstRounds = 2;
} // namespace

void WgmmaMain::setUpStats() {
  Value B = k.dim(kQ, 0);
  statsChunksPerHead = g.div(g.add(Sq, g.idx(kStatsChunkRows - 1)),
                             g.idx(kStatsChunkRows));
  statsChunks = g.mul(g.mul(B, H), statsChunksPerHead);
  // The last unit's first item has the highest head of the first round
  // (a unit without items gives one past the last head: clamped).
  Kernel::WorkItem last =
      k.workItem(op, map, g.sub(map.numUnits, g.idx(1)), g.idx(0));
  Value heads = g.minIdx(
      g.mul(g.add(g.add(g.mul(last.bb, H), last.h), g.idx(1)),
            g.idx(kStatsFirstRounds)),
      g.mul(B, H));
  statsFirstChunks = g.mul(heads, statsChunksPerHead);
}

Value WgmmaMain::statsReadyPtr(Value bh) {
  return semTailPtr(k, g.add(bh, g.idx(kSemStatsReady0)));
}

void WgmmaMain::statsChunk(Value chunk, int64_t unroll) {
  const int64_t lanes = D / 8, rowsAtOnce = 32 / lanes,
                passes = kStatsChunkRows / rowsAtOnce;
  assert(passes % unroll == 0 && "whole groups of passes");
  Value bh = g.div(chunk, statsChunksPerHead);
  Value r0 = g.mul(g.rem(chunk, statsChunksPerHead), g.idx(kStatsChunkRows));
  Value bb = g.div(bh, H), h = g.rem(bh, H);
  Value lane = g.rem(tid, g.idx(32));
  Value col = g.mul(g.rem(lane, g.idx(lanes)), g.idx(8));
  Value sub = g.div(lane, g.idx(lanes)); // the lane's row of a pass
  Value last = g.sub(Sq, g.idx(1));
  // The sequence index is added last (Kernel::elementPtr): a chunk's rows
  // share the rest of each address.
  auto act = [&](Arg a, Value s) {
    return k.elementPtr(k.arg(a), {bb, s, h, col}, 1, /*global*/ 1);
  };
  auto stat = [&](Arg a, Value s) {
    return k.elementPtr(k.arg(a), {bb, h, s}, 2, /*global*/ 1);
  };
  auto v8 = VectorType::get({8}, w.bf16);
  g.loop(g.idx(0), g.idx(passes), g.idx(unroll), [&](Value p) {
    // Every group's loads before any group's sums; rows past S_q repeat
    // the last row (the same values to the same addresses).
    SmallVector<Value> rows, dOs, os, lses;
    for (int64_t u = 0; u < unroll; ++u) {
      Value s = g.minIdx(
          g.add(r0, g.add(g.mul(g.add(p, g.idx(u)), g.idx(rowsAtOnce)), sub)),
          last);
      rows.push_back(s);
      dOs.push_back(LLVM::LoadOp::create(b, loc, v8, act(kDO, s), 16));
      os.push_back(LLVM::LoadOp::create(b, loc, v8, act(kO, s), 16));
      lses.push_back(LLVM::LoadOp::create(b, loc, w.f32, stat(kLse, s), 4));
    }
    for (int64_t u = 0; u < unroll; ++u) {
      auto [dps, l2] = rowStatistics(k, dOs[u], os[u], lses[u], lanes);
      LLVM::StoreOp::create(b, loc, dps, stat(kDPsum, rows[u]), 4);
      LLVM::StoreOp::create(b, loc, l2, stat(kLse2, rows[u]), 4);
    }
  });
  // The warp's stores before lane 0's release (the warp barrier orders
  // them before its fence, which is cumulative), which adds the chunk's
  // rows to the head's count.
  NVVM::SyncWarpOp::create(b, loc, w.c32(-1));
  Value count = g.minIdx(g.idx(kStatsChunkRows), g.sub(Sq, r0));
  g.when(g.lt(lane, g.idx(1)), [&] {
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, "device");
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add,
                              statsReadyPtr(bh), w.i32of(count),
                              LLVM::AtomicOrdering::monotonic, "device");
  });
}

void WgmmaMain::emitStatsFirstRound() {
  // Chunk c to global warp c mod W: warp-uniform trip counts.
  Value warps = g.idx(kWgmmaThreads / 32);
  Value warp = g.add(g.mul(unit, warps), g.div(tid, g.idx(32)));
  g.loop(warp, statsFirstChunks, g.mul(map.numUnits, warps),
         [&](Value c) { statsChunk(c, kStatsUnrollFirstRound); });
}

void WgmmaMain::emitStatsStreamer() {
  Value lane0 = g.lt(g.rem(tid, g.idx(32)), g.idx(1));
  Value ticket = semTailPtr(k, g.idx(kSemStatsTicket));
  // The next chunk: a ticket drawn by lane 0, broadcast.
  auto draw = [&] {
    auto ifLead = scf::IfOp::create(b, loc, TypeRange{w.i32}, lane0, true);
    {
      OpBuilder::InsertionGuard dg(b);
      b.setInsertionPointToStart(&ifLead.getThenRegion().front());
      scf::YieldOp::create(
          b, loc,
          LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, ticket,
                                    w.c32(1), LLVM::AtomicOrdering::monotonic,
                                    StringRef("device"))
              .getResult());
      b.setInsertionPointToStart(&ifLead.getElseRegion().front());
      scf::YieldOp::create(b, loc, w.c32(0));
    }
    Value all = NVVM::ShflOp::create(
        b, loc, w.i32, w.c32(-1), ifLead.getResult(0), w.c32(0), w.c32(0x1f),
        NVVM::ShflKindAttr::get(ctx, NVVM::ShflKind::idx), UnitAttr());
    return g.add(statsFirstChunks,
                 arith::IndexCastOp::create(b, loc, b.getIndexType(), all)
                     .getResult());
  };
  Value firstChunk = draw();
  scf::WhileOp::create(
      b, loc, TypeRange{b.getIndexType()}, ValueRange{firstChunk},
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::ConditionOp::create(b, loc, g.lt(args[0], statsChunks), args);
      },
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value next = draw();
        statsChunk(args[0], kStatsUnrollStreamer);
        scf::YieldOp::create(b, loc, ValueRange{next});
      });
}

void WgmmaMain::waitForStats(Value bb, Value h) {
  k.spinUntil(statsReadyPtr(g.add(g.mul(bb, H), h)), Sq,
              {unit, bb, h, g.idx(-1)});
  NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_global, nullptr);
}
