//===- WgmmaDqConvert.cpp - dQ in the output type, from the main kernel ---===//
//
// dq-in-main (deterministic TMA kernels): once a unit's walk is done, its
// two MMA warpgroups (256 threads) write finished dQ tiles in the output
// type. Thread 0 draws the next tile from a ticket counter (the workspace
// word after the semaphores, zeroed by the preprocess) and waits until the
// tile's semaphore equals the number of KV tiles covering it: every rank has
// added (a reducer releases its rank only after its adds completed and were
// fenced). Then the 256 threads scale the tile's f32 sums and store bf16.
// A ticket is kDqTilesPerTicket consecutive tiles, all their loads in flight
// at once, and the next ticket is drawn while they are converted: one tile
// at a time, a unit is a chain of round trips (~2 us a tile).
//
// Tickets go out in (b, h, q) order, the order in which the persistent grid
// finishes heads, so the units the last round leaves idle (every shape the
// benchmark runs has some: 2048 causal pairs on 132 units at D = 64) convert
// the heads finished before it while the others still compute, and the
// postprocess has no dQ pass (bench/NOTES.md section 23).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

Value WgmmaMain::coveringKVTiles(Value q) {
  // As lib/Schedule/Problem.cpp's coveringCount: the KV tiles up to the one
  // holding the last key the tile's last query sees.
  Value nKV = g.div(g.add(Sk, g.idx(kBn - 1)), g.idx(kBn));
  if (!causal)
    return nKV;
  Value lastQuery =
      g.sub(g.minIdx(g.mul(g.add(q, g.idx(1)), g.idx(bm)), Sq), g.idx(1));
  Value lastKey = g.add(lastQuery, off); // off < 0 when S_q > S_k
  Value seen = g.minIdx(nKV, g.add(g.div(lastKey, g.idx(kBn)), g.idx(1)));
  return arith::SelectOp::create(b, loc, g.lt(lastKey, g.idx(0)), g.idx(0),
                                 seen);
}

WgmmaMain::DqTileChunks WgmmaMain::loadDqTile(Value tile32, Value t) {
  const DqAccumLayout layout{bm, D};
  const int64_t chunkCols = DqAccumLayout::kPanelCols; // 32 B of f32
  const int64_t chunksPerRow = D / chunkCols;
  const int64_t perThread = bm * D / chunkCols / kMmaThreads;
  assert(perThread * kMmaThreads * chunkCols == bm * D &&
         "a dQ tile of whole chunks per MMA thread");
  auto global = LLVM::LLVMPointerType::get(ctx, 1);
  auto v4f32 = VectorType::get({4}, w.f32);
  Value tileBase = w.linearPtr(kDqAcc, tile32, L.dQBytes(), 1);
  // Chunk c of the tile: row c / chunksPerRow, columns 8 (c % chunksPerRow)
  // onwards. Consecutive threads take consecutive columns of a row, so each
  // warp stores whole 128- or 256-byte rows of dq; each thread's loads are
  // one 32-byte sector of dq_accum.
  DqTileChunks out;
  for (int64_t j = 0; j < perThread; ++j) {
    Value c = g.add(t, g.idx(j * kMmaThreads));
    out.rows.push_back(g.div(c, g.idx(chunksPerRow)));
    out.cols.push_back(
        g.mul(g.rem(c, g.idx(chunksPerRow)), g.idx(chunkCols)));
    Value f = dqTileFloat(k, layout, out.rows.back(), out.cols.back());
    Value src = LLVM::GEPOp::create(b, loc, global, w.f32, tileBase,
                                    ValueRange{w.i32of(f)});
    for (int64_t half = 0; half < 2; ++half) {
      Value p = LLVM::GEPOp::create(b, loc, global, w.f32, src,
                                    ArrayRef<LLVM::GEPArg>{int32_t(4 * half)});
      out.sums.push_back(
          LLVM::LoadOp::create(b, loc, v4f32, p, /*alignment=*/16));
    }
  }
  return out;
}

void WgmmaMain::storeDqTile(const DqTileChunks &c, Value bb, Value h, Value q,
                            Value valid) {
  Value q0 = g.mul(q, g.idx(bm));
  for (size_t j = 0; j < c.rows.size(); ++j) {
    SmallVector<Value> x;
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t e = 0; e < 4; ++e)
        x.push_back(g.mul(
            vector::ExtractOp::create(b, loc, c.sums[2 * j + half], e)
                .getResult(),
            k.arg(kScale)));
    SmallVector<Value> packed;
    for (int64_t e = 0; e < 8; e += 2)
      packed.push_back(w.packBf16(x[e], x[e + 1]));
    Value row = g.add(q0, c.rows[j]);
    Value on = arith::ExtUIOp::create(b, loc, w.i32,
                                      g.andI(valid, g.lt(row, Sq)));
    // Predicated, not branched: rows past S_q (and a group's tiles past
    // the last) store nothing.
    w.ptx("{\n.reg .pred p;\nsetp.ne.b32 p, $5, 0;\n"
          "@p st.global.v4.b32 [$0], {$1, $2, $3, $4};\n}",
          {w.global(kDq, {bb, row, h, c.cols[j]}), packed[0], packed[1],
           packed[2], packed[3], on});
  }
}

void WgmmaMain::emitDqConvert(Value t) {
  Value lead = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t,
                                     g.idx(0));
  Value B = k.dim(kQ, 0), M = k.dim(kSem, 2);
  Value tiles = g.mul(g.mul(B, H), M);
  Value groups32 = w.i32of(
      g.div(g.add(tiles, g.idx(kDqTilesPerTicket - 1)),
            g.idx(kDqTilesPerTicket)));
  Value ticket = dqTicketPtr(k);
  // Thread 0 hands each ticket to the others through a hand-off slot, free
  // once the walk's last hand-off went back (the final EMPTY waits).
  Value slot = w.handOffSlot(g.idx(0), 0);
  auto draw = [&] { // by thread 0 alone; 0 elsewhere
    auto ifLead = scf::IfOp::create(b, loc, TypeRange{w.i32}, lead, true);
    OpBuilder::InsertionGuard dg(b);
    b.setInsertionPointToStart(&ifLead.getThenRegion().front());
    Value drawn = LLVM::AtomicRMWOp::create(
        b, loc, LLVM::AtomicBinOp::add, ticket, w.c32(1),
        LLVM::AtomicOrdering::monotonic, StringRef("device"));
    scf::YieldOp::create(b, loc, drawn);
    b.setInsertionPointToStart(&ifLead.getElseRegion().front());
    scf::YieldOp::create(b, loc, w.c32(0));
    return ifLead.getResult(0);
  };
  auto broadcast = [&](Value drawn) { // drawn: valid in thread 0
    g.when(lead, [&] { w.storeHandOff(drawn, slot); });
    w.barSync(kBarMma, kMmaThreads);
    return w.loadHandOff(slot);
  };
  Value first = broadcast(draw());
  // The tile of group `cur`'s slot i (index), clamped into range (a group
  // past the last tile loads the last one and stores nothing), and its
  // coordinates.
  struct Tile {
    Value valid, tile32, bb, h, q;
  };
  auto tileOf = [&](Value cur, Value i) -> Tile {
    Value raw =
        g.add(g.mul(arith::IndexCastOp::create(b, loc, b.getIndexType(), cur),
                    g.idx(kDqTilesPerTicket)),
              i);
    Value valid = g.lt(raw, tiles);
    Value tile = g.minIdx(raw, g.sub(tiles, g.idx(1)));
    Value q = g.rem(tile, M), bh = g.div(tile, M);
    return {valid, w.i32of(tile), g.div(bh, H), g.rem(bh, H), q};
  };
  scf::WhileOp::create(
      b, loc, TypeRange{w.i32}, ValueRange{first},
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::ConditionOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, args[0],
                                  groups32),
            args);
      },
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard ig(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value cur = args[0];
        // The next ticket, drawn now: its latency runs under this group.
        Value next = draw();
        // Lane i of warp 0 waits for the group's tile i: finished once its
        // semaphore reached its KV tiles' count (a reducer releases its rank
        // after its adds completed, with a proxy fence); the acquire and the
        // barrier order every thread's loads after that.
        g.when(g.lt(t, g.idx(kDqTilesPerTicket)), [&] {
          Tile own = tileOf(cur, t);
          g.when(own.valid, [&] {
            k.spinUntil(w.linearPtr(kSem, own.tile32, 4),
                        coveringKVTiles(own.q), {unit, own.bb, own.h, own.q});
          });
        });
        w.barSync(kBarMma, kMmaThreads);
        // Every tile's loads before the first store: the group's sums are
        // in flight together.
        SmallVector<Tile> group;
        SmallVector<DqTileChunks> sums;
        for (int64_t i = 0; i < kDqTilesPerTicket; ++i) {
          group.push_back(tileOf(cur, g.idx(i)));
          sums.push_back(loadDqTile(group.back().tile32, t));
        }
        for (int64_t i = 0; i < kDqTilesPerTicket; ++i)
          storeDqTile(sums[i], group[i].bb, group[i].h, group[i].q,
                      group[i].valid);
        // (Every thread read the slot before the barrier above: thread 0
        // may overwrite it.)
        scf::YieldOp::create(b, loc, ValueRange{broadcast(next)});
      });
}
