//===- MainWgmma.h - What the WGMMA kernel's roles share --------*- C++ -*-===//
//
// Internal to lib/Conversion/DashToGPU: WgmmaMain holds what the three roles
// of dash_bwd_main share while they are emitted (the kernel and its
// builder, the configuration, the shapes, the unit's walk). MainWgmma.cpp
// sets it up and splits the roles; WgmmaProducer.cpp, WgmmaReducers.cpp and
// WgmmaMma.cpp emit one role each (the MMA role's step, operands, dQ
// hand-off and dK/dV epilogue in WgmmaMmaStep.cpp, WgmmaMmaOperands.cpp,
// WgmmaDqHandOff.cpp and WgmmaDkdvEpilogue.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_CONVERSION_DASHTOGPU_MAINWGMMA_H
#define DASH_LIB_CONVERSION_DASHTOGPU_MAINWGMMA_H

#include "WgmmaBuilder.h"

namespace mlir::dash::detail::wgmma {

struct WgmmaMain {
  /// Creates the kernel and emits what precedes the roles (the shared
  /// window's check, the shapes).
  WgmmaMain(OpBuilder &b, Location loc, ArrayRef<Type> argTypes,
            ScheduledAttentionBwdOp op, int64_t D, int64_t spinLimit,
            const WgmmaConfig &config);
  /// The mbarriers, the role split, the roles, the return.
  void build();

  /// One work item of the unit's walk: (b, h, kv, len), its position in the
  /// walk; step s of it is the unit's hand-off `first + s`.
  struct Item {
    Value bb, h, kv, len;
    Value index;
  };
  /// Runs `body` for every item of the unit with `first`, the unit's steps
  /// before it; returns the unit's step count.
  Value forItems(function_ref<void(const Item &, Value first)> body);
  /// Barrier id (i32) of warpgroup `wg`'s part of dQ staging buffer `buf`
  /// (indices): base + 6 buf + 2 wg.
  Value bufBarrier(int base, Value buf, Value wg);
  /// The schedule's Q tile of an item's step and the rank of its Q tile.
  Value visit(const Item &it, Value step);
  Value rankOf(const Item &it, Value qt);
  /// The K/V head of query head h (GQA groups of H / H_kv) and the first KV
  /// row of KV tile kv.
  Value kvHead(Value h);
  Value kvRow0(Value kv);
  /// The producer: KV tile rows from `row0` of K and V head `head` into L2.
  void prefetchKV(Value bb, Value row0, Value head);
  /// The producer: `issue` (copies whose ops take no predicate) by the
  /// elected lane alone where the whole warp runs the walk
  /// (WgmmaBuilder::issuePred), else as is.
  void byIssuer(function_ref<void()> issue);
  /// dkdv-bulk: the dS^T buffer of the walk's last step (the unit's step
  /// first + len - 1; two buffers alternate), where the item's dK/dV rows
  /// are staged.
  Value lastStepDsT(Value first, Value len);
  /// Shared address (index) of byte `off` of the window.
  Value at(int64_t off);
  /// trace-timeline kernels: stores i64 `v` as word `word` (TraceWord) of
  /// this CTA's timeline, or of item `item`'s record when given (items past
  /// kTraceMaxItems are not recorded); the caller picks the thread.
  void trace(int64_t word, Value v, Value item = Value());
  /// trace(word, clock(), item) when `step` is `s` (step events of a walk).
  void traceAtStep(Value step, int64_t s, int64_t word, Value item);
  /// trace-timeline=2: clock64 into phase word `phase` of slot `slot` (0, 1:
  /// MMA warpgroups, 2: the reducer; TracePhase) of `item`'s record, by the
  /// threads where `who` (i1) holds, at step kTracePhaseStep only. Read and
  /// stored by one predicated inline-PTX store, no branch, so the MMA
  /// warps' code around it keeps its shape.
  void tracePhase(Value step, Value item, Value slot, Value who,
                  int64_t phase);
  Value clock();
  Value nanoseconds();

  /// The roles: warpgroup 2 (reducer warps 8, 9 and, loads=tma, the
  /// producer in warp 10) in the role branch's else region; the MMA
  /// warpgroups 0 and 1 in its then region.
  void emitReducers();
  void emitProducer();
  /// dkdv-bulk: warp 11 writes each item's staged dK/dV rows
  /// (WgmmaDkdvStorer.cpp).
  void emitDkdvStorer();
  void emitMma();

  /// An MMA thread's place: its warpgroup (0 | 1), warp in the group, lane,
  /// the row and column its m64nN accumulator fragments start at, and the
  /// warpgroup's first KV row of the tile (64 wg). Built from a thread id
  /// where it is used (WgmmaMmaStep.cpp: an opaque copy per step).
  struct MmaThread {
    Value wg, wi, lane, fragRow, fragCol, wgRows;
  };
  MmaThread mmaThread(Value t);
  /// What a step of the MMA role's walk (emitMma, WgmmaMma.cpp) needs from
  /// it: the item, the unit's steps before it and its first KV row, the
  /// role's thread id, -1 / (scale log2 e) (stats-in-acc=2), and the
  /// thread's place, which each step rebuilds from an opaque thread id.
  struct MmaWalk {
    const Item &it;
    Value first, kv0, tidMma, negInvScaleLog2;
    MmaThread &th;
  };
  /// One step of the walk (WgmmaMmaStep.cpp) at `step` with the carried
  /// accumulators `acc` (dV, dK and, early-st, the step's S^T), up to the
  /// loop body's yield.
  void emitMmaStep(const MmaWalk &walk, Value step, ValueRange acc);
  /// trace-timeline kernels: `body` on thread 0 (of the current `tid`).
  void traceThread(function_ref<void()> body);
  /// early-st: S^T = K_w Q^T of the step in stage `sbuf` as one committed
  /// group, issued only where `on32` (i32) is non-zero.
  Value issueSIf(const MmaThread &t, Value sbuf, Value on32);
  /// wg-turns: warpgroup w passes the turn on barrier kBarTurn + (1 - w)
  /// once its S^T is done and dP^T issued (1), or once its exp2 pass is
  /// done (2).
  Value turnBarrier(Value wgOf);
  /// A turn: warpgroup 1 waits at a step's top for warpgroup 0's issue of
  /// that step (turn barrier 1), warpgroup 0 at the step's end for
  /// warpgroup 1's (turn barrier 0), so every arrival is consumed in its
  /// own step and no warpgroup needs a first or last turn of its own. Both
  /// execute both waits: the other warpgroup's is a sync of its own 128
  /// threads (its dq-kv-split barrier). No predicate or branch: a
  /// predicated barrier puts every later wgmma on ptxas's divergent path
  /// and it serialises them all (C7520), which is what sections 15 and 23
  /// of bench/NOTES.md measured.
  void turnWait(Value wgOf, bool top);
  /// cp.async kernels: the MMA threads' copies of step tile `qt` (Q, dO,
  /// lse_log2, dPsum) into buffer `buf`, one committed group.
  void loadStep(const Item &it, Value qt, Value buf);
  /// TMA kernels: the unit's step n's stage sb (= n % 2) has its tiles
  /// (FULL_Q phase n / 2).
  void waitFullQ(const Item &it, Value n, Value sb);
  /// TMA kernels: done with the item's K and V (EMPTY_KV).
  void freeKV();
  /// How the warpgroups split a dQ tile between them: by Q rows at 128-row
  /// tiles (warpgroup w: rows 64w.., all D columns), by D columns at 64 (all
  /// rows, columns w D/2..); the staging and dq_accum order follow it.
  DqAccumLayout dqParts() const { return DqAccumLayout{bm, D}; }
  /// Accumulator register r of m64nN: row fragRow + 8((r/2)%2), column
  /// 8(r/4) + fragCol + r%2.
  Value rowOf(const MmaThread &t, int64_t r);
  Value colOf(const MmaThread &t, int64_t r);
  /// A step's shared-memory operands (WgmmaMmaOperands.cpp), built where
  /// they are used: the Q or dO tile of stage `buf` (an N-major B; also
  /// S^T's K-major B); this warpgroup's 64 rows of the K or V tile at byte
  /// `off` of the window (S^T's / dP^T's A); K as dQ's N-major B (all of it,
  /// or this warpgroup's half of the columns); the dS^T buffer of stage
  /// `buf` and dS as dQ's M-major A from it.
  WgmmaBuilder::Desc qDesc(Arg a, Value buf);
  WgmmaBuilder::Desc wgRowsDesc(const MmaThread &t, int64_t off);
  WgmmaBuilder::Desc dqBDesc(const MmaThread &t);
  Value dsTile(Value buf);
  /// dps-fold: the start of stage `buf`'s hi / lo buffer (SmemLayout::dps).
  Value dpsStage(Value buf);
  WgmmaBuilder::Desc dqADesc(const MmaThread &t, Value buf);
  /// K-step kk of a K-major operand of `rows`-row panels: 32 B into panel
  /// kk / 4.
  static int64_t kStep(int64_t kk, int64_t rows) {
    return (kk / 4) * rows * 128 + (kk % 4) * 32;
  }
  /// ds-stmatrix: this thread's packed dS^T pairs (the A of dK) into the
  /// dS^T buffer of stage `buf`, four 8x8 bf16 matrices per stmatrix
  /// (ds-trans: transposed, so the buffer holds dS for dQ's K-major A).
  void storeDsStmatrix(const MmaThread &t, Value buf, ArrayRef<Value> packed);
  /// The MMA warpgroups' hand-off of a step's dQ partial `dqs` (one
  /// accumulator, or dq-kv-split's two Q halves) to the reducer: staging
  /// buffer (first + step) % dqBufs, the stage `buf`'s Q tile `qt`
  /// (WgmmaDqHandOff.cpp). `phase` stamps trace-timeline=2's phases.
  void emitDqHandOff(const MmaThread &t, Value first, Value step, Value qt,
                     Value buf, ArrayRef<Value> dqs,
                     function_ref<void(int64_t)> phase);
  /// After an item's walk: its dV and dK accumulators to dv / dk (bf16,
  /// directly or, dkdv-bulk, through the storer warp) or, with GQA, as f32
  /// partials to dv_accum / dk_accum (WgmmaDkdvEpilogue.cpp).
  void emitDkdvEpilogue(const Item &it, Value first, Value kv0,
                        const MmaThread &t, Value accV, Value accK);
  /// stats-in-main (WgmmaStats.cpp): the chunk counts (before any role),
  /// the first round's rows by every thread, the rest by warp 11, and the
  /// producer's wait for a head's rows before its statistics loads.
  void setUpStats();
  void emitStatsFirstRound();
  void emitStatsStreamer();
  void waitForStats(Value bb, Value h);
  /// Rows of chunk `chunk` ((b H + h) * chunks per head + c) by the
  /// calling warp, `unroll` groups of rows in flight, then released.
  void statsChunk(Value chunk, int64_t unroll);
  /// Head (b H + h)'s count of rows with their statistics written.
  Value statsReadyPtr(Value bh);
  /// dq-in-main: after the walk, the MMA threads (`t` in [0, 256)) convert
  /// finished dQ tiles drawn from the ticket (WgmmaDqConvert.cpp).
  void emitDqConvert(Value t);
  /// The KV tiles covering Q tile q: the final value of its semaphore.
  Value coveringKVTiles(Value q);
  /// Thread t's chunks of one dQ tile of dq_accum: rows, first columns and
  /// the f32 sums (two 4-vectors per chunk).
  struct DqTileChunks {
    SmallVector<Value> rows, cols, sums;
  };
  DqTileChunks loadDqTile(Value tile32, Value t);
  /// Scaled, as bf16 into dq (bb, rows of Q tile q, h), where `valid`.
  void storeDqTile(const DqTileChunks &c, Value bb, Value h, Value q,
                   Value valid);

  OpBuilder &b;
  Location loc;
  ScheduledAttentionBwdOp op;
  const int64_t D;
  const WgmmaConfig &config;
  const bool tma, earlyKV;
  // dq-kv-split: each warpgroup's dQ covers the whole Q tile over its own KV
  // rows; warpgroup 0 stores its partial, warpgroup 1 adds its own onto it
  // and hands the tile to the reducer.
  const bool split;
  // wg-turns: the warpgroups alternate issuing a step's S^T and dP^T.
  const int64_t turns;
  // stats-in-acc: dP^T's accumulator starts at dPsum and the products are
  // subtracted (acc = dPsum - dP^T), so the dS pass loads no dPsum; at 2
  // S^T's starts at -lse_log2 / c (c = scale log2 e), so P = exp2(c acc)
  // and the exp2 pass loads no lse_log2. The loads move ahead of the
  // products, whose accumulators hold the values: no registers of their
  // own, no load-to-use stall in the passes (at D = 64 they were read at
  // use, 32 of each per thread and step).
  const bool dpsAcc, lseAcc;
  const bool traced;
  const bool phases;
  const int64_t dsBufs;
  OpBuilder::InsertionGuard guard;
  Kernel k;
  const int64_t bm, dqBufs;
  WgmmaBuilder w;
  LoopGen &g;
  MLIRContext *ctx;
  const SmemLayout &L;
  const bool causal, det, bottomRight;
  /// The 1024-aligned shared window (a constant address).
  Value window;
  Value Sq, H, Sk, Hkv;
  Value off; // the causal diagonal's offset: S_k - S_q bottom-right, else 0
  Value scaleLog2, unit;
  /// stats-in-main: chunks per head, in all, and in the heads computed
  /// before the roles split (setUpStats).
  Value statsChunksPerHead, statsChunks, statsFirstChunks;
  RegionMapping map;
  /// The thread id; the MMA walk rebinds it to an opaque copy per step.
  Value tid;
  /// The warpgroup index broadcast from lane 0 (warp-uniform to ptxas): the
  /// role branch's, and with uniform-wg the MMA threads' (mmaThread).
  Value wgUniform;
  scf::IfOp roles;
};

} // namespace mlir::dash::detail::wgmma

#endif // DASH_LIB_CONVERSION_DASHTOGPU_MAINWGMMA_H
