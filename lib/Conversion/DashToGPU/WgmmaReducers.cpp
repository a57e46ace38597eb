//===- WgmmaReducers.cpp - The WGMMA kernel's dQ reducers -----------------===//
//
// Warps 8 and 9 (one dQ staging buffer: warp 8 alone): reducer j owns
// staging buffer j, i.e. the hand-offs of parity j, so two rows' ordered
// adds are in flight at once (one reducer would serialise every rank wait
// and bulk completion of the unit). Per hand-off: wait FULL,
// (deterministic) lane 0 waits for the row's turn, the tile is added (TMA
// kernels: lane 0, one 1-D bulk reduce-add per warpgroup's part as soon as
// it is in, or one for the whole tile with dq-kv-split; deterministic, the
// tile's rank 0 stores instead, over dq_accum the preprocess did not zero;
// cp.async kernels:
// every lane, one bulk reduce-add per staging row); once the copies have
// read shared memory the buffer goes back to the MMA side (EMPTY);
// deterministic mode then waits for the adds to complete, fences and
// releases the row to the next rank. Warp 10 is the producer
// (WgmmaProducer.cpp).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

void WgmmaMain::emitReducers() {
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(&roles.getElseRegion().front());
  NVVM::SetMaxRegisterOp::create(
      b, loc, b.getI32IntegerAttr(otherRegsFor(config.mmaRegs)),
      NVVM::SetMaxRegisterActionAttr::get(
          ctx, NVVM::SetMaxRegisterAction::decrease));
  auto reducerWarp = scf::IfOp::create(
      b, loc, g.lt(tid, g.idx(kMmaThreads + 32 * dqBufs)), tma);
  if (tma) { // warp 10: the producer
    OpBuilder::InsertionGuard pg(b);
    b.setInsertionPointToStart(&reducerWarp.getElseRegion().front());
    g.when(g.lt(tid, g.idx(32 * (kProducerWarp + 1))),
           [&] { emitProducer(); });
    if (config.dkdvBulk || config.statsInMain) // warp 11
      g.when(g.lt(g.idx(32 * kStorerWarp - 1), tid), [&] {
        if (config.dkdvBulk)
          emitDkdvStorer();
        else
          emitStatsStreamer();
      });
  }
  b.setInsertionPointToStart(&reducerWarp.getThenRegion().front());
  Value rtid = g.sub(tid, g.idx(kMmaThreads));
  Value mine = g.div(rtid, g.idx(32)); // the staging buffer of this warp
  Value rlane = g.rem(rtid, g.idx(32));
  Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      rlane, g.idx(0));
  // Both warpgroups' parts start free; the reducer waits for both parts
  // of a hand-off and frees both. dq-kv-split: warpgroup 0 alone waits for
  // the buffer (EMPTY) and warpgroup 1 alone hands it over (FULL).
  auto emptyParts = [&](function_ref<void(Value)> f) {
    for (int64_t part = 0; part < (split ? 1 : 2); ++part)
      f(g.idx(part));
  };
  emptyParts([&](Value wgPart) {
    w.barArrive(bufBarrier(kBarEmpty, mine, wgPart), kHandOffThreads);
  });
  forItems([&](const Item &it, Value first) {
    g.loop(it.len, [&](Value step) {
      Value buf = g.rem(g.add(first, step), g.idx(dqBufs));
      g.when(
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, buf, mine),
          [&] {
            // trace-timeline=2: lane 0 stamps the hand-off of the walk's
            // step kTracePhaseStep (slot 2).
            auto phase = [&](int64_t p) {
              tracePhase(step, it.index, g.idx(2), lane0, p);
            };
            phase(kPhRedWait);
            // TMA kernels: the hand-off carries its Q tile and rank (read
            // after FULL); cp.async kernels evaluate the schedule here.
            Value qt, rank, rank32;
            if (!tma) {
              qt = visit(it, step);
              if (det)
                rank = rankOf(it, qt);
            }
            // TMA kernels read the hand-off's fields once the first part
            // is in (MMA thread 0 wrote them before its FULL arrival).
            w.barSync(bufBarrier(kBarFull, buf, g.idx(split ? 1 : 0)),
                      kHandOffThreads);
            phase(kPhRedFull);
            if (!tma) {
              w.barSync(bufBarrier(kBarFull, buf, g.idx(1)),
                        kHandOffThreads);
            } else {
              // Lane 0 alone reads the fields (it alone waits, adds and
              // releases): one shared atomic per field on the ordered
              // chain instead of a warp's 32.
              auto fields = scf::IfOp::create(
                  b, loc, TypeRange{w.i32, w.i32}, lane0, true);
              {
                OpBuilder::InsertionGuard fg(b);
                b.setInsertionPointToStart(&fields.getThenRegion().front());
                Value r = config.countedAdds
                              ? w.loadHandOff(w.handOffSlot(buf, 1))
                              : w.c32(0);
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{w.loadHandOff(w.handOffSlot(buf, 0)), r});
                b.setInsertionPointToStart(&fields.getElseRegion().front());
                scf::YieldOp::create(b, loc, ValueRange{w.c32(0), w.c32(0)});
              }
              auto toIndex = [&](Value v) -> Value {
                return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                  v);
              };
              qt = toIndex(fields.getResult(0));
              if (config.countedAdds) {
                rank32 = fields.getResult(1);
                rank = toIndex(rank32);
              }
            }
            Value semPtr;
            Value staging =
                g.add(at(L.dQ()), g.mul(buf, g.idx(L.dQ(1) - L.dQ(0))));
            if (tma) {
              // Lane 0 alone: the rank wait, then per warpgroup part (16
              // KiB, contiguous here and in dq_accum's tile, "tiles"
              // layout) one bulk reduce-add as soon as that part is in:
              // part 0's add runs while warpgroup 1 still stores part 1.
              // Rows past S_q land in dq_accum's padding. The warp
              // reconverges before each barrier (a warp's bar arrival
              // counts all its lanes).
              // The row's tile among the unit's (b, h) rows of tiles: the
              // index of its semaphore and of its dq_accum tile (both
              // contiguous workspace buffers), in 32 bits.
              Value tile = arith::AddIOp::create(
                  b, loc,
                  arith::MulIOp::create(
                      b, loc,
                      arith::AddIOp::create(
                          b, loc,
                          arith::MulIOp::create(b, loc, w.i32of(it.bb),
                                                w.i32of(H)),
                          w.i32of(it.h)),
                      w.i32of(k.dim(kSem, 2))),
                  w.i32of(qt));
              if (config.countedAdds)
                semPtr = w.linearPtr(kSem, tile, 4);
              // dq-kv-split: the whole tile is in at once, one add.
              const int64_t adds = split ? 1 : 2;
              const int64_t addBytes =
                  split ? L.dQBytes() : L.dQPartBytes();
              for (int64_t part = 0; part < adds; ++part) {
                if (part == 1) {
                  w.syncWarp();
                  w.barSync(bufBarrier(kBarFull, buf, g.idx(1)),
                            kHandOffThreads);
                  phase(kPhRedFull1);
                }
                g.when(lane0, [&] {
                  if (config.countedAdds && part == 0) {
                    // Deterministic: the row's turn (ablate-rank-wait:
                    // diagnostic, no ordering). Counted non-deterministic:
                    // rank 0's store has landed (rank 0 waits for nothing).
                    if (det && !config.ablateRankWait)
                      k.spinUntil(semPtr, rank, {unit, it.bb, it.h, qt});
                    else if (!det)
                      k.spinUntil(semPtr, g.minIdx(rank, g.idx(1)),
                                  {unit, it.bb, it.h, qt}, /*atLeast=*/true);
                    NVVM::FenceProxyOp::create(
                        b, loc, NVVM::ProxyKind::async_global, nullptr);
                    phase(kPhRedRank);
                  }
                  Value dst = w.linearPtr(kDqAcc, tile, L.dQBytes(), 1);
                  if (part == 1)
                    dst = LLVM::GEPOp::create(
                        b, loc, dst.getType(), w.i32, dst,
                        ArrayRef<LLVM::GEPArg>{L.dQPartBytes() / 4});
                  Value src = g.add(staging, g.idx(part * addBytes));
                  // Counted: rank 0 stores (dq_accum is not zeroed).
                  if (config.countedAdds)
                    w.bulkStoreOrAdd(dst, src, w.c32(addBytes), rank32);
                  else
                    w.bulkReduceAdd(dst, src, w.c32(addBytes));
                  NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
                  if (part == adds - 1) // the buffer is free once read
                    NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0,
                                                         b.getUnitAttr());
                });
              }
              w.syncWarp();
              phase(kPhRedRead);
              emptyParts([&](Value wgPart) {
                w.barArrive(bufBarrier(kBarEmpty, buf, wgPart),
                            kHandOffThreads);
              });
              // Counted: the adds complete before the row's next rank goes
              // (or the dQ conversion reads the tile).
              if (config.countedAdds)
                g.when(lane0, [&] {
                  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr());
                  NVVM::FenceProxyOp::create(
                      b, loc, NVVM::ProxyKind::async_global, nullptr);
                  k.releaseBy(semPtr);
                  phase(kPhRedDone);
                });
              return;
            }
            if (det) {
              semPtr = k.elementPtr(k.arg(kSem), {it.bb, it.h, qt});
              g.when(lane0, [&] {
                k.spinUntil(semPtr, rank, {unit, it.bb, it.h, qt});
              });
              w.syncWarp();
              NVVM::FenceProxyOp::create(
                  b, loc, NVVM::ProxyKind::async_global, nullptr);
            }
            Value q0 = g.mul(qt, g.idx(bm));
            Value qRows = g.minIdx(g.idx(bm), g.sub(Sq, q0));
            // Opaque lane: the staging-row addresses stay in the step
            // (hoisted, they outlive the reducer's registers and spill).
            Value lane = w.opaque(rlane);
            for (int64_t half = 0; half < bm / 32; ++half) {
              Value row = g.add(lane, g.idx(32 * half));
              g.when(g.lt(row, qRows), [&] {
                Value dst =
                    w.global(kDqAcc, {it.bb, it.h, g.add(q0, row), g.idx(0)});
                Value src =
                    w.sh(g.add(staging, g.mul(row, g.idx(L.dQRow()))));
                w.ptx("cp.reduce.async.bulk.global.shared::cta.bulk_group."
                      "add.f32 [$0], [$1], $2;",
                      {dst, src, w.c32(D * 4)});
              });
            }
            NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
            // The staging buffer is free once read.
            NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
            emptyParts([&](Value wgPart) {
              w.barArrive(bufBarrier(kBarEmpty, buf, wgPart),
                          kHandOffThreads);
            });
            if (det) { // the adds complete before the row's next rank goes
              // Each lane waits for its own adds and makes them visible at
              // gpu scope itself (bar.warp.sync's ordering is not part of the
              // formal memory model), then lane 0 releases the row.
              NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr());
              NVVM::FenceProxyOp::create(
                  b, loc, NVVM::ProxyKind::async_global, nullptr);
              LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release,
                                    "device");
              w.syncWarp();
              g.when(lane0, [&] { k.releaseBy(semPtr); });
            }
          });
    });
  });
  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr());
}
