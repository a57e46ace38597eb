//===- MainWgmma.cpp - The warp-specialised WGMMA main kernel -------------===//
//
// dash_bwd_main for sm_90a on warpgroup MMA (wgmma.mma_async, operands from
// shared-memory descriptors over 128-byte-swizzled tiles):
//
//  * 384 threads: warpgroups 0 and 1 do the tile math, each on 64 of the
//    128 KV rows of the unit's current KV tile; warps 8 and 9 (of warpgroup
//    2) are the dQ reducers, one per staging buffer; with loads=tma (the
//    default) lane 0 of warp 10 is the producer. setmaxnreg moves registers
//    from warpgroup 2 (24, or 40 with mma-regs=232) to the MMA warpgroups (240
//    or 232), whose dK/dV accumulators stay live.
//  * Per KV tile (item): K and V are loaded once. Per Q tile (step): Q, dO,
//    lse_log2 and dPsum arrive in one of two stages, one step ahead: all by
//    TMA from the producer, which also walks the schedule and hands each
//    step's Q tile index (and rank) over in the stage (loads=tma; full/empty
//    mbarriers), or by cp.async from the MMA threads (loads=cp-async;
//    zero-filled past S).
//  * Per step and warpgroup w (rows R = KV rows 64w..64w+63):
//      S^T  = K_R Q^T, dP^T = V_R dO^T              (m64n64,  K = D)
//      P^T  = exp2(S^T * scale * log2e - lse_log2), dS^T = P^T (dP^T - dPsum)
//      (bf16, written swizzled to shared memory; masked entries are 0)
//      dV_R += P^T_R dO, dK_R += dS^T_R Q           (m64nD,   K = 64)
//      dQ[:, half w] = dS K[:, half w]               (m64nD/2, K = 128)
//    dV/dK stay in registers for the whole walk (d = 64: 128-row Q tiles,
//    dQ split by rows; dP^T's accumulator starts at dPsum and subtracts the
//    products, stats-in-acc, so the dS pass reads no dPsum).
//  * The dQ partial goes registers -> shared (f32, staging buffer = hand-off
//    parity); that buffer's reducer warp waits for the row's turn
//    (deterministic: the semaphore equals the rank), adds the tile (TMA: lane
//    0, one 1-D `cp.reduce.async.bulk ... add.f32` per warpgroup's part, the
//    workspace holding each tile in the staging order; cp.async kernels:
//    one per row from every lane), frees
//    the buffer once the copies have read it, waits for the adds to complete
//    and releases the row. Named barriers, one pair per warpgroup's part of
//    each buffer, hand the staging buffer between the two sides (FULL: MMA ->
//    reducer, EMPTY: reducer -> MMA), so the rank waits overlap the next
//    steps' products, two rows at a time (d = 64: one buffer, one row), and
//    a warpgroup does not wait for the other to hand its part over.
//
// Shared layouts (bf16, 1024-byte aligned): a [rows][D] tile is stored as
// D/64 panels of [rows][64]; row r of a panel is 128 bytes whose 16-byte
// chunks are permuted by chunk ^ (r % 8) (the TMA/wgmma 128B swizzle). The
// same K tile is then the K-major A of S^T (rows = KV) and the N-major B of
// dQ; Q and dO are the K-major B of S^T/dP^T and the N-major B of dK/dV;
// dS^T [128][64] is the K-major A of dK and the M-major A of dQ.
//
// This file sets the kernel up and splits the roles; WgmmaProducer.cpp,
// WgmmaReducers.cpp and WgmmaMma.cpp emit them (MainWgmma.h: what they
// share).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

int64_t mlir::dash::detail::wgmmaSharedBytes(int64_t d, int64_t bm,
                                             const WgmmaConfig &config) {
  // No slack: the buffers start at the 1024-aligned shared window, not at
  // a base aligned at run time (the atom of slack that needed went in
  // bench/NOTES.md section 19, making room for two dQ staging buffers
  // beside two dS^T buffers at D = 64).
  return smemLayoutOf(d, bm, config).end();
}

WgmmaMain::WgmmaMain(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
                     ScheduledAttentionBwdOp op, int64_t D, int64_t spinLimit,
                     const WgmmaConfig &config)
    : b(b), loc(loc), op(op), D(D), config(config), tma(config.tma),
      earlyKV(config.earlyKV), split(config.dqKvSplit), turns(config.wgTurns),
      dpsAcc(config.statsInAcc >= 1), lseAcc(config.statsInAcc >= 2),
      traced(config.traceTimeline), phases(config.tracePhases),
      dsBufs(config.dsBufs), guard(b),
      k(b, loc, "dash_bwd_main", argTypes, kWgmmaThreads, spinLimit),
      bm(op.getTiling().getBlockM()), dqBufs(config.dqBufs),
      w(k, op, D, bm, config), g(k.g), ctx(b.getContext()), L(w.L),
      causal(op.getMask() == Mask::Causal), det(op.getDeterministic()),
      bottomRight(op.getEffectiveAlign() == CausalAlign::BottomRight) {
  // One CTA per SM: lets ptxas honour setmaxnreg beyond the 168 registers
  // that 384 threads get at entry.
  k.func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  // kv-via-ds: a shared-to-shared bulk copy is an illegal instruction
  // outside a cluster (bench/micro/s2s_bulk.cu on the H200): a cluster of
  // one, fixed at compile time (.reqnctapercluster), so a plain launch
  // forms it.
  if (config.kvViaDs)
    k.func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                    b.getDenseI32ArrayAttr({1, 1, 1}));
  assert(w.L.swizzleAligned() &&
         "a shared buffer off its swizzle atom or its TMA alignment");
  assert(w.L.foldTilesInside() &&
         "dps-fold's operand tiles past the end of shared memory");

  // The 1024-aligned shared window (a constant address). Its alignment is
  // declared; thread 0 traps if a loader ever placed it otherwise (every
  // swizzled tile would be wrong).
  window = w.alignedSharedWindow();
  w.base = window;
  g.when(g.andI(k.isThread0(),
                g.lt(g.idx(0), arith::AndIOp::create(b, loc, window,
                                                     g.idx(kAlign - 1)))),
         [&] { LLVM::Trap::create(b, loc); });

  Sq = k.dim(kQ, 1);
  H = k.dim(kQ, 2);
  Sk = k.dim(kK, 1);
  Hkv = k.dim(kK, 2);
  off = bottomRight ? g.sub(Sk, Sq) : g.idx(0);
  scaleLog2 = g.mul(k.arg(kScale), g.f32(kLog2e));
  unit = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  map = k.scheduleMapping(op);
  tid = k.tid;
}

Value WgmmaMain::at(int64_t off) { return g.add(w.base, g.idx(off)); }

void WgmmaMain::trace(int64_t word, Value v, Value item) {
  if (!traced)
    return;
  auto store = [&](Value wordInCta) {
    Value idx = g.add(g.mul(unit, g.idx(kTraceWords)), wordInCta);
    if (v.getType().isIndex())
      v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
    LLVM::StoreOp::create(b, loc, v, w.linearPtr(kO, w.i32of(idx), 8), 8);
  };
  if (!item)
    return store(g.idx(word));
  g.when(g.lt(item, g.idx(kTraceMaxItems)), [&] {
    store(g.add(g.idx(kTraceItem0 + word),
                g.mul(item, g.idx(kTraceItemWords))));
  });
}

void WgmmaMain::traceAtStep(Value step, int64_t s, int64_t word, Value item) {
  if (!traced)
    return;
  g.when(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, step,
                               g.idx(s)),
         [&] { trace(word, clock(), item); });
}

void WgmmaMain::tracePhase(Value step, Value item, Value slot, Value who,
                           int64_t phase) {
  if (!phases)
    return;
  Value on = g.andI(g.andI(who, arith::CmpIOp::create(
                                    b, loc, arith::CmpIPredicate::eq, step,
                                    g.idx(kTracePhaseStep))),
                    g.lt(item, g.idx(kTracePhaseItems)));
  Value rec = g.minIdx(item, g.idx(kTracePhaseItems - 1));
  Value idx = g.add(
      g.add(g.mul(unit, g.idx(kTraceWords)), g.idx(kTracePhase0 + phase)),
      g.add(g.mul(rec, g.idx(kTracePhaseItemWords)),
            g.mul(slot, g.idx(kTracePhaseSlotWords))));
  // (InlinePtxOp reads `%` as an operand mark: the clock comes in as one.)
  w.ptx("{\n.reg .pred p;\nsetp.ne.b32 p, $1, 0;\n@p st.global.b64 [$0], "
        "$2;\n}",
        {w.linearPtr(kO, w.i32of(idx), 8, 1),
         arith::ExtUIOp::create(b, loc, w.i32, on), clock()});
}

Value WgmmaMain::clock() {
  return NVVM::Clock64Op::create(b, loc, b.getI64Type());
}

Value WgmmaMain::nanoseconds() {
  return NVVM::GlobalTimerOp::create(b, loc, b.getI64Type());
}

Value WgmmaMain::forItems(function_ref<void(const Item &, Value first)> body) {
  Value numItems = k.numItems(op, map, unit);
  return scf::ForOp::create(
             b, loc, g.idx(0), numItems, g.idx(1), ValueRange{g.idx(0)},
             [&](OpBuilder &nb, Location, Value item, ValueRange count) {
               OpBuilder::InsertionGuard ig(b);
               b.setInsertionPoint(nb.getInsertionBlock(),
                                   nb.getInsertionPoint());
               Kernel::WorkItem it = k.workItem(op, map, unit, item);
               Item item4{it.bb, it.h, it.kv, it.len, item};
               body(item4, count[0]);
               scf::YieldOp::create(b, loc, g.add(count[0], item4.len));
             })
      .getResult(0);
}

Value WgmmaMain::bufBarrier(int base, Value buf, Value wg) {
  auto i32of = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, w.i32, v);
  };
  return arith::AddIOp::create(
      b, loc, w.c32(base),
      arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, i32of(buf), w.c32(kBarBufStride)),
          arith::MulIOp::create(b, loc, i32of(wg), w.c32(kBarWgStride))));
}

Value WgmmaMain::visit(const Item &it, Value step) {
  return inlineScheduleRegion(b, op.getVisit(), {it.bb, it.h, it.kv, step},
                              map)[0];
}

Value WgmmaMain::rankOf(const Item &it, Value qt) {
  return inlineScheduleRegion(b, op.getRank(), {it.bb, it.h, it.kv, qt},
                              map)[0];
}

Value WgmmaMain::kvHead(Value h) { return g.div(h, g.div(H, Hkv)); }

Value WgmmaMain::kvRow0(Value kv) { return g.mul(kv, g.idx(kBn)); }

Value WgmmaMain::lastStepDsT(Value first, Value len) {
  Value buf = g.rem(g.add(first, g.add(len, g.idx(1))), g.idx(2));
  return g.add(at(L.dsT(0)), g.mul(buf, g.idx(L.dsBytes())));
}

void WgmmaMain::build() {
  // TMA kernels: thread 0 initialises the mbarriers before any role runs.
  // FULL_Q and FULL_KV: the producer's expect-tx arrival; EMPTY_Q and
  // EMPTY_KV: every MMA thread once it is done with the stage / the item's K
  // and V.
  if (tma) {
    g.when(k.isThread0(), [&] {
      for (int j = 0; j < 2; ++j) {
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kFullQ + j), w.c32(1),
                                     Value());
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kEmptyQ + j),
                                     w.c32(kMmaThreads), Value());
      }
      NVVM::MBarrierInitOp::create(b, loc, w.mbar(kFullKV), w.c32(1), Value());
      NVVM::MBarrierInitOp::create(b, loc, w.mbar(kEmptyKV),
                                   w.c32(kMmaThreads), Value());
      if (config.kvViaDs) {
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kEmptyDs),
                                     w.c32(kMmaThreads), Value());
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kFullDs), w.c32(1),
                                     Value());
      }
      if (config.dkdvBulk) {
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kEpiFull),
                                     w.c32(kMmaThreads), Value());
        NVVM::MBarrierInitOp::create(b, loc, w.mbar(kEpiEmpty), w.c32(1),
                                     Value());
      }
      NVVM::FenceMbarrierInitOp::create(b, loc);
    });
    // dps-fold: both stages' buffers zeroed once (16 B a thread), so what
    // the TMA never writes is zeros for every step's wgmma, and the k-step's
    // A written (16 bytes a row, each of the 16 rows starting with one bf16
    // -1.0); the proxy fence makes the stores visible to the async proxy
    // (the TMA and the wgmmas) past the barrier.
    if (config.dpsFold) {
      const int64_t kStageChunks = 2 * L.dpsStageBytes() / 16,
                    kOnesChunks = SmemLayout::kOnesABytes / 16;
      g.when(g.lt(tid, g.idx(kStageChunks + kOnesChunks)), [&] {
        Value isStage = g.lt(tid, g.idx(kStageChunks));
        Value ones = g.sub(tid, g.idx(kStageChunks)); // chunk of onesA
        Value addr = arith::SelectOp::create(
            b, loc, isStage, g.add(at(L.dps(0)), g.mul(tid, g.idx(16))),
            g.add(at(L.onesA()), g.mul(ones, g.idx(16))));
        Value first = arith::SelectOp::create(
            b, loc, g.andI(g.lt(ones, g.idx(16)), g.lt(g.idx(-1), ones)),
            w.c32(0x0000BF80), w.c32(0));
        Value z = w.c32(0);
        Value v = vector::FromElementsOp::create(
            b, loc, VectorType::get({4}, w.i32), ValueRange{first, z, z, z});
        LLVM::StoreOp::create(b, loc, v, w.sh(addr), 16);
        w.fenceAsyncShared();
      });
    }
    k.barrier();
  }
  // pdl: nothing below may read what the preprocess writes (the
  // statistics, zeroed semaphores and accumulators, the tickets) before
  // it has completed. The producer (lane 0 of warp 10, or the whole warp
  // with warp-producer) waits after prefetching its first K/V
  // (emitProducer), unless stats-in-main's rows come first.
  if (config.pdl) {
    auto wait = [&] {
      NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);
    };
    if (config.statsInMain)
      wait();
    else
      g.when(arith::CmpIOp::create(
                 b, loc, arith::CmpIPredicate::ne,
                 config.warpProducer ? g.div(tid, g.idx(32)) : tid,
                 g.idx(config.warpProducer ? kProducerWarp
                                           : 32 * kProducerWarp)),
             wait);
  }
  if (config.statsInMain) {
    setUpStats();
    emitStatsFirstRound();
  }

  // The warpgroup index, broadcast from lane 0: ptxas then knows the role
  // branches are warp-uniform (else it serialises the wgmmas, C7520).
  wgUniform = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      w.fromLane0(w.i32of(g.div(tid, g.idx(128)))));
  Value isMma = g.lt(wgUniform, g.idx(2));
  roles = scf::IfOp::create(b, loc, isMma, /*withElseRegion=*/true);

  emitReducers();
  emitMma();

  b.setInsertionPointAfter(roles);
  gpu::ReturnOp::create(b, loc);
}

void mlir::dash::detail::buildMainWgmma(OpBuilder &b, Location loc,
                                        ArrayRef<Type> argTypes,
                                        ScheduledAttentionBwdOp op, int64_t D,
                                        int64_t spinLimit,
                                        const WgmmaConfig &config) {
  WgmmaMain(b, loc, argTypes, op, D, spinLimit, config).build();
}
