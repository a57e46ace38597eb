//===- KernelOptions.cpp - convert-dash-to-gpu's options, checked ---------===//
//
// What the pass's options resolve to for one op: each option checked against
// the kernel family, head dim and tiles it applies to, and the defaults each
// measured where bench/NOTES.md says. DashToGPU.cpp builds the kernels from
// the result.
//
//===----------------------------------------------------------------------===//

#include "KernelOptions.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

FailureOr<ResolvedKernel>
mlir::dash::detail::resolveKernelOptions(ScheduledAttentionBwdOp op,
                                         const ConvertDashToGPUOptions &o) {
  if (o.debugSpinLimit < 0)
    return op.emitOpError() << "debug-spin-limit must be >= 0";
  // The options under their pass names.
  const std::string &mma = o.mma, &loads = o.loads;
  const int64_t threads = o.threads,
      dsBuffers = o.dsBuffers,
      dqBuffers = o.dqBuffers,
      mmaRegs = o.mmaRegs,
      earlyKv = o.earlyKv,
      qBeforeKv = o.qBeforeKv,
      kvPrefetchAhead = o.kvPrefetchAhead,
      kvViaDs = o.kvViaDs,
      dkdvBulk = o.dkdvBulk,
      pdl = o.pdl,
      warpProducer = o.warpProducer,
      statsInMain = o.statsInMain,
      dsStmatrix = o.dsStmatrix,
      earlyDv = o.earlyDv,
      earlySt = o.earlySt,
      exp2Chunks = o.exp2Chunks,
      dsInPass = o.dsInPass,
      dsWaitChunk = o.dsWaitChunk,
      dqKvSplit = o.dqKvSplit,
      wgTurns = o.wgTurns,
      statsInAcc = o.statsInAcc,
      dqInMain = o.dqInMain,
      countedAdds = o.countedAdds,
      uniformWg = o.uniformWg,
      dsTrans = o.dsTrans,
      dvBeforeFence = o.dvBeforeFence, dpsAhead = o.dpsAhead,
      statsShfl = o.statsShfl,
      dpsFold = o.dpsFold,
      ablateExp2 = o.ablateExp2,
      ablateRankWait = o.ablateRankWait,
      traceTimeline = o.traceTimeline;
  auto qT = cast<MemRefType>(op.getQ().getType());
  Type elt = qT.getElementType();
  int64_t D = qT.getDimSize(3);
  if (cast<MemRefType>(op.getDq().getType()).getElementType() != elt)
    return op.emitOpError() << "the GPU kernels write gradients in the "
                               "input element type; f32 gradients are a "
                               "CPU-loops feature for now";
  int64_t bm = op.getTiling().getBlockM(), bn = op.getTiling().getBlockN();
  int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  bool useSync = mma == "sync", useWgmma = mma == "wgmma";
  if (!useSync && !useWgmma && mma != "simt")
    return op.emitOpError() << "unknown mma mode '" << mma
                            << "'; expected wgmma, sync or simt";
  // loads unset: the mode's own (wgmma: tma, measured faster in every
  // d = 128 cell, bench/NOTES.md; sync and simt: cp-async).
  bool tma = loads == "tma" || (loads.empty() && useWgmma);
  if (!tma && !loads.empty() && loads != "cp-async")
    return op.emitOpError() << "unknown loads mode '" << loads
                            << "'; expected cp-async or tma";
  if (tma && !useWgmma)
    return op.emitOpError() << "loads=tma needs mma=wgmma (got mma=" << mma
                            << ")";
  // An integer option takes `allowed` (dflt + 1 .. hi) or dflt, which
  // picks the default.
  auto checkOption = [&](StringRef name, int64_t v, int64_t dflt,
                         int64_t hi, StringRef allowed) -> LogicalResult {
    if (v >= dflt && v <= hi)
      return success();
    return op.emitOpError() << name << " must be " << allowed << ", or "
                            << dflt << " for the default (got " << v << ")";
  };
  if (failed(checkOption("ds-buffers", dsBuffers, 0, 2, "1 or 2")))
    return failure();
  if (dsBuffers == 2 && !(useWgmma && tma))
    return op.emitOpError() << "ds-buffers=2 needs mma=wgmma with "
                               "loads=tma (the cp.async kernels "
                               "synchronise every step anyway)";
  if (failed(checkOption("dq-buffers", dqBuffers, 0, 2, "1 or 2")))
    return failure();
  if (dqBuffers == 1 && !(useWgmma && tma))
    return op.emitOpError() << "dq-buffers=1 needs mma=wgmma with "
                               "loads=tma";
  // Defaults where they were measured (bench/NOTES.md sections 10-11):
  // D = 128: two dS^T buffers, two dQ staging buffers (+0..3% of cuDNN's
  // throughput over one dS^T buffer); D = 64 on 128-row Q tiles: one dQ
  // staging buffer, which frees the 32 KiB of a second dS^T buffer
  // (FlashAttention-3's hdim-64 form: +1..11%). Elsewhere one dS^T buffer
  // and two staging buffers.
  bool tmaWgmma = useWgmma && tma;
  // A 0 / 1 option (-1: the default) whose 1 needs a TMA WGMMA kernel,
  // for the reason `why`.
  auto checkTmaFlag = [&](StringRef name, int64_t v,
                          StringRef why) -> LogicalResult {
    if (failed(checkOption(name, v, -1, 1, "0 or 1")))
      return failure();
    if (v == 1 && !tmaWgmma)
      return op.emitOpError()
             << name << "=1 needs mma=wgmma with loads=tma (" << why << ")";
    return success();
  };
  if (failed(checkOption("dq-kv-split", dqKvSplit, -1, 1, "0 or 1")))
    return failure();
  if (dqKvSplit == 1 && !(tmaWgmma && bm == 128))
    return op.emitOpError()
           << "dq-kv-split=1 needs mma=wgmma with loads=tma and 128-row Q "
              "tiles (D = 64; got "
           << bm << " rows at D = " << D << ")";
  bool kvSplit = dqKvSplit == 1;
  if (failed(checkOption("wg-turns", wgTurns, -1, 2, "0, 1 or 2")))
    return failure();
  // With dQ split by rows the warpgroups meet at the dS^T barrier every
  // step: turns would only add a second meeting.
  if (wgTurns > 0 && !kvSplit)
    return op.emitOpError() << "wg-turns=" << int64_t(wgTurns)
                            << " needs dq-kv-split=1";
  int64_t turns = wgTurns > 0 ? int64_t(wgTurns) : 0;
  if (failed(checkOption("stats-in-acc", statsInAcc, -1, 2, "0, 1 or 2")))
    return failure();
  if (statsInAcc > 0 && !tmaWgmma)
    return op.emitOpError() << "stats-in-acc=" << int64_t(statsInAcc)
                            << " needs mma=wgmma with loads=tma";
  // Default: dPsum in the accumulator where the statistics were read at
  // use (128-row Q tiles, D = 64: +10..20%); at D = 128 they are read
  // ahead and it measured even (bench/NOTES.md section 15).
  if (failed(checkOption("stats-shfl", statsShfl, -1, 1, "0 or 1")))
    return failure();
  // Shuffled statistics replace both other forms: dP^T starts at zero (its
  // dPsum start made ptxas wait for S^T before issuing dP^T; ncu, d = 64:
  // 3.6% of all samples, bench/NOTES.md section 42).
  if (statsShfl == 1 && !(tmaWgmma && statsInAcc <= 0))
    return op.emitOpError() << "stats-shfl=1 needs mma=wgmma with loads=tma "
                               "and stats-in-acc=0";
  if (failed(checkOption("dps-fold", dpsFold, -1, 1, "0 or 1")))
    return failure();
  // dP^T gets one more k-step (A: -1 in K columns 0 and 8, in shared
  // memory; B: the stage's hi / lo rows of dPsum as copied, an unswizzled
  // B, 4 bm + 128 bytes a stage), so its accumulator is dP - dPsum and the
  // dS math loads nothing (at 64-row tiles ~3% of the samples stalled on
  // that load, bench/NOTES.md section 42; at 128 dPsum as the accumulator's
  // start made ptxas wait for S^T before issuing dP^T, 3.6%), for 1/8
  // (D = 128) or 1/4 (D = 64) more dP^T tensor work. The other statistics
  // forms read dPsum themselves.
  const bool foldFits = tmaWgmma && statsInAcc <= 0 && statsShfl != 1 &&
                        statsInMain != 1 && dpsAhead <= 0;
  // Default: on at D = 64 where the other options leave it room (H100,
  // same process: +1..+5% det, bench/NOTES.md section 45); off at D = 128,
  // where it measured -1.6..-4.2%.
  const bool foldOn = dpsFold >= 0 ? dpsFold == 1 : foldFits && D == 64;
  if (foldOn && !foldFits)
    return op.emitOpError()
           << "dps-fold=1 needs mma=wgmma with loads=tma, stats-in-acc=0 and "
              "none of stats-shfl, stats-in-main or dps-ahead (they read "
              "dPsum as f32)";
  int64_t statsAcc = statsInAcc >= 0 ? int64_t(statsInAcc)
                     : (tmaWgmma && bm == 128 && statsShfl != 1 && !foldOn)
                         ? 1
                         : 0;
  // Each warpgroup reads only its own dS^T rows, after its own previous dQ
  // has completed: a second dS^T buffer would have no use.
  if (kvSplit && dsBuffers == 2)
    return op.emitOpError() << "ds-buffers=2 has no use with dq-kv-split=1 "
                               "(a warpgroup reads only its own dS^T rows)";
  int64_t dqBufs = dqBuffers;
  // Two staging buffers (two reducer warps) wherever they leave room for
  // two dS^T buffers; at D = 64 on 128-row Q tiles that is 231504 of
  // 232448 B (bench/NOTES.md section 19), 232016 with dps-fold's 512.
  auto sharedWith = [&](int64_t ds, int64_t dq) {
    WgmmaConfig c;
    c.tma = tma;
    c.dsBufs = ds;
    c.dqBufs = dq;
    c.dpsFold = foldOn;
    return wgmmaSharedBytes(D, bm, c);
  };
  if (dqBufs == 0)
    dqBufs = tmaWgmma && D == 64 && bm == 128 && sharedWith(2, 2) > kMaxShared
                 ? 1
                 : 2;
  int64_t dsBufs = dsBuffers;
  if (dsBufs == 0)
    dsBufs = !kvSplit && tmaWgmma && (D == 128 || (D == 64 && bm == 128)) &&
                     sharedWith(2, dqBufs) <= kMaxShared
                 ? 2
                 : 1;
  if (failed(checkTmaFlag("early-kv", earlyKv, "K/V come from the producer")))
    return failure();
  if (failed(checkOption("kv-via-ds", kvViaDs, -1, 1, "0 or 1")))
    return failure();
  // The next item's K and V (2 x 128 x D bf16) fill a dS^T buffer (128 x
  // bm bf16) exactly when bm = 2 D: D = 64 on 128-row Q tiles. The second
  // dS^T buffer is what the walk's last step leaves free; the copy into
  // the K/V tiles waits for the last dQ, which is early-kv's release.
  bool kvViaDsOn = kvViaDs == 1;
  // kv-via-ds and dkdv-bulk fill one dS^T buffer with 32 KiB: D = 64 on
  // 128-row Q tiles, two dS^T buffers, no dq-kv-split.
  bool dsBufferIs32K =
      tmaWgmma && D == 64 && bm == 128 && dsBufs == 2 && !kvSplit;
  std::string gotShape = "got D = " + std::to_string(D) + ", " +
                         std::to_string(bm) + "-row Q tiles, " +
                         std::to_string(dsBufs) + " dS^T buffer(s))";
  if (kvViaDsOn && !dsBufferIs32K)
    return op.emitOpError()
           << "kv-via-ds=1 needs mma=wgmma with loads=tma, D = 64 on "
              "128-row Q tiles and two dS^T buffers without dq-kv-split "
              "(the next item's K and V must fit the dS^T buffer the walk's "
              "last step leaves free; "
           << gotShape;
  if (failed(checkOption("dkdv-bulk", dkdvBulk, -1, 1, "0 or 1")))
    return failure();
  // dK and dV's bf16 rows of an item (2 x 128 x 128 B) fill one dS^T
  // buffer (128 x bm bf16) exactly when bm = 2 D: D = 64 on 128-row Q
  // tiles. kv-via-ds loads the next K/V into the other buffer meanwhile.
  bool bulkFits = dsBufferIs32K && !kvViaDsOn;
  // Default: on where it fits for full masks (deterministic +1.3..+1.7% at
  // s = 1024 .. 8192, -1.9% at 16384, bench/NOTES.md section 33; with the
  // non-deterministic kernels in the deterministic ones' step form, section
  // 38, +0.5..+1.1% against off at s = 4096 / 8192), off for causal ones
  // (deterministic -0.3..-0.0%; non-deterministic -1..-2%, section 38).
  bool bulkDkdv =
      dkdvBulk == 1 ||
      (dkdvBulk == -1 && bulkFits && op.getMask() == Mask::Full);
  if (bulkDkdv && !bulkFits)
    return op.emitOpError()
           << "dkdv-bulk=1 needs mma=wgmma with loads=tma, D = 64 on "
              "128-row Q tiles and two dS^T buffers, without dq-kv-split "
              "or kv-via-ds (an item's dK and dV rows must fit the dS^T "
              "buffer of the walk's last step; "
           << gotShape;
  if (kvViaDsOn && earlyKv == 0)
    return op.emitOpError() << "kv-via-ds=1 frees K/V after the item's "
                               "last dQ: it implies early-kv=1, not 0";
  // Default: on for causal masks (TMA kernels without early-st, whose
  // walk's last S^T reads K after the release): two same-process A/Bs
  // measured d = 64 causal deterministic +0.5..+1.0% at s = 4096 / 8192,
  // d = 128 causal non-deterministic +0.9..+1.9%, no causal cell below
  // -0.8%; full masks det -1.8..+0.5%, off (bench/NOTES.md section 32).
  bool kvEarly =
      earlyKv == 1 || kvViaDsOn ||
      (earlyKv == -1 && tmaWgmma && op.getMask() == Mask::Causal &&
       earlySt != 1);
  if (failed(checkOption("early-st", earlySt, -1, 1, "0 or 1")))
    return failure();
  if (earlySt == 1 && !(tmaWgmma && bm == 64 && statsAcc < 2))
    return op.emitOpError()
           << "early-st=1 needs mma=wgmma with loads=tma, 64-row Q tiles "
              "(at 128 the next S^T's accumulator does not fit beside the "
              "hand-off: ptxas serialises the wgmmas) and stats-in-acc below "
              "2 (S^T's accumulator cannot start at the statistics a step "
              "ahead)";
  // A walk's last step issues one S^T it never reads, on the item's K:
  // with early-kv that K may already be the next item's, half-written.
  if (earlySt == 1 && kvEarly)
    return op.emitOpError() << "early-st=1 and early-kv=1 exclude each "
                               "other (the walk's last S^T reads K after "
                               "early-kv has freed it)";
  bool stEarly = earlySt == 1;
  if (failed(checkOption("exp2-chunks", exp2Chunks, -1, 64,
                         "a divisor of the thread's S^T values")))
    return failure();
  // A thread holds bm / 2 values of S^T (its 64-row slice of the KV rows
  // times bm Q columns, over 128 threads). Default: 8 chunks at 128-row Q
  // tiles (D = 64: +1.2..+2.4% deterministic in all six cells measured),
  // one pass at 64 (D = 128: within noise; bench/NOTES.md section 22),
  // except in causal TMA kernels there, which also default to ds-in-pass:
  // 8 chunks of 4 values (+0.7..+1.4% against 4 chunks on FA3's operand
  // order; bench/NOTES.md section 48).
  const bool causalRows64 =
      tmaWgmma && bm == 64 && op.getMask() == Mask::Causal;
  int64_t chunks = exp2Chunks >= 0 ? int64_t(exp2Chunks)
                   : useWgmma && (bm == 128 || causalRows64) ? 8
                                                             : 1;
  if (chunks == 0 || (chunks > 1 && !(useWgmma && (bm / 2) % chunks == 0)))
    return op.emitOpError()
           << "exp2-chunks=" << chunks << " needs mma=wgmma and must divide "
           << "the " << bm / 2 << " S^T values a thread holds at " << bm
           << "-row Q tiles";
  if (failed(checkTmaFlag("q-before-kv", qBeforeKv,
                          "Q/dO come from the producer")))
    return failure();
  // Default on: the producer's boundary path (K/V, the next item's
  // prefetch, the first step's visit and rank) took 5-7k cycles on its 24
  // registers, which the first step waited out (bench/NOTES.md section 19).
  bool qFirst = tmaWgmma && qBeforeKv != 0;
  if (failed(checkOption("kv-prefetch-ahead", kvPrefetchAhead, -1, 1 << 20,
                         "a step count >= 0")))
    return failure();
  if (kvPrefetchAhead >= 1 && !tmaWgmma)
    return op.emitOpError() << "kv-prefetch-ahead=" << int64_t(kvPrefetchAhead)
                            << " needs mma=wgmma with loads=tma (the "
                               "producer prefetches the next item's K/V)";
  // Default 0: the prefetch right after the item's own K/V (section 13 of
  // bench/NOTES.md); later ones (P = 4, 8) measured -0.4..+0.5% at d = 64
  // causal and -0.8..-2.3% at d = 128 causal (section 31).
  int64_t kvAhead = kvPrefetchAhead > 0 ? int64_t(kvPrefetchAhead) : 0;
  if (failed(checkOption("ds-stmatrix", dsStmatrix, -1, 1, "0 or 1")))
    return failure();
  if (dsStmatrix == 1 && !useWgmma)
    return op.emitOpError() << "ds-stmatrix=1 needs mma=wgmma (the "
                            << mma << " kernels keep dS elsewhere)";
  // Default on: a quarter of the dS^T store instructions and their address
  // math (bench/NOTES.md section 19: d = 128 det +0.5..+2.5%).
  bool dsStm = useWgmma && dsStmatrix != 0;
  if (failed(checkOption("early-dv", earlyDv, -1, 1, "0 or 1")))
    return failure();
  if (earlyDv == 1 && !useWgmma)
    return op.emitOpError() << "early-dv=1 needs mma=wgmma (the " << mma
                            << " kernels have no dV issue order)";
  // Default off: dV after the dS pass and its proxy fence. At 128-row
  // tiles early dV measured -5.5..-9% (bench/NOTES.md section 19), at
  // 64-row tiles, where it was the default, -0.1..-1.6% against late dV
  // in 15 of 16 cells (section 24; TMA kernels: the cp.async ones keep
  // it early unless early-dv=0, unmeasured).
  bool dvEarly = useWgmma && (earlyDv == 1 || (earlyDv == -1 && bm == 64 &&
                                                !tma));
  if (failed(checkOption("ablate-exp2", ablateExp2, 0, 1, "1")))
    return failure();
  if (ablateExp2 == 1 && !useWgmma)
    return op.emitOpError() << "ablate-exp2=1 needs mma=wgmma";
  if (failed(checkOption("ablate-rank-wait", ablateRankWait, 0, 1, "1")))
    return failure();
  // (Non-deterministic reducers wait for no rank: nothing to drop.)
  if (ablateRankWait == 1 && !(useWgmma && tma))
    return op.emitOpError()
           << "ablate-rank-wait=1 needs mma=wgmma with loads=tma";
  const bool noRankWait = ablateRankWait == 1 && op.getDeterministic();
  if (failed(checkOption("ds-in-pass", dsInPass, -1, 1, "0 or 1")) ||
      failed(checkOption("ds-wait-chunk", dsWaitChunk, -1, 64,
                         "0 .. exp2-chunks")))
    return failure();
  // The dS^T stores move into the pass's branches: no barrier may sit
  // between the pass and them (one dS^T buffer without dq-kv-split waits
  // there for the other warpgroup's dQ), and early dV reads P before them.
  bool dsInPassAllowed = tmaWgmma && !dvEarly && (dsBufs == 2 || kvSplit);
  if (dsInPass == 1 && !dsInPassAllowed)
    return op.emitOpError() << "ds-in-pass=1 needs mma=wgmma with "
                               "loads=tma, early-dv=0 and two dS^T buffers "
                               "or dq-kv-split=1";
  // Default: on at 128-row Q tiles (D = 64 deterministic: +2.4..+6.9% with
  // the wait halfway, bench/NOTES.md section 29) and in causal kernels on
  // 64-row tiles with the pass in chunks (D = 128 deterministic, 4 chunks:
  // +0.5..+2.0% in all six readings, section 30; full masks -2.8..+0.7%,
  // one pass -0.3..-2.7%); not with dq-kv-split (unmeasured). The
  // non-deterministic kernels gain it with the rest of the deterministic
  // step form (the producer on its warp, the epilogue's opaque thread id;
  // alone their MMA side spilled 6-16 values): D = 64 +3.3..+7.3%, D = 128
  // causal +0.9..+1.5% (section 38).
  bool dsFused =
      dsInPass == 1 || (dsInPass == -1 && dsInPassAllowed && !kvSplit &&
                        (bm == 128 || causalRows64));
  if (dsWaitChunk >= 0 && (!dsFused || dsWaitChunk > chunks))
    return op.emitOpError()
           << "ds-wait-chunk=" << int64_t(dsWaitChunk)
           << " needs ds-in-pass=1 and at most exp2-chunks (" << chunks
           << ")";
  int64_t dsWait = !dsFused ? -1
                   : dsWaitChunk >= 0 ? int64_t(dsWaitChunk)
                                      : chunks / 2;
  if (failed(checkOption("counted-adds", countedAdds, -1, 1, "0 or 1")))
    return failure();
  if (countedAdds == 1 && !(tmaWgmma && !op.getDeterministic()))
    return op.emitOpError()
           << "counted-adds=1 needs a non-deterministic kernel with "
              "mma=wgmma and loads=tma (deterministic ones always count)";
  if (countedAdds == 0 && op.getDeterministic())
    return op.emitOpError() << "counted-adds=0 needs a non-deterministic "
                               "kernel (the ordered adds are counted)";
  // Default on (non-deterministic kernels, against unordered adds into a
  // zeroed dq_accum and the postprocess's dQ pass: +0.2..+7.5% in all 12
  // cells of d = 64 / 128 x causal / full x s = 4096 .. 16384,
  // bench/NOTES.md section 38).
  bool counted = tmaWgmma && (op.getDeterministic() || countedAdds != 0);
  if (failed(checkOption("dq-in-main", dqInMain, -1, 1, "0 or 1")))
    return failure();
  // It needs the semaphores (a tile is finished when its semaphore
  // reaches the tile's KV count) and the tiles layout of dq_accum.
  if (dqInMain == 1 && !counted)
    return op.emitOpError()
           << "dq-in-main=1 needs a kernel with mma=wgmma and loads=tma "
              "whose adds are counted (deterministic, or counted-adds=1: a "
              "dQ tile is known finished by its semaphore)";
  // Default on: the units the last round leaves idle do the dQ pass.
  bool dqMain = counted && dqInMain != 0;
  if (failed(checkOption("uniform-wg", uniformWg, -1, 1, "0 or 1")))
    return failure();
  if (uniformWg == 1 && !useWgmma)
    return op.emitOpError() << "uniform-wg=1 needs mma=wgmma (the " << mma
                            << " kernels build no wgmma descriptors)";
  // Default off: 3-6% fewer instructions per step (the descriptors' R2UR
  // and vector math gone), yet -0.6..-4.0% in 10 of 11 cells measured
  // (bench/NOTES.md sections 40, 42): the step is not issue-bound.
  if (failed(checkOption("ds-trans", dsTrans, -1, 1, "0 or 1")))
    return failure();
  // dq-kv-split's dQ reads each warpgroup's own dS^T rows (kv-via-ds and
  // dkdv-bulk use the buffer as scratch only), and the 4-byte pair stores
  // have no transposed form.
  const bool dsTransLegal = useWgmma && dsStm && !kvSplit;
  if (dsTrans == 1 && !dsTransLegal)
    return op.emitOpError() << "ds-trans=1 needs mma=wgmma with ds-stmatrix "
                               "and without dq-kv-split";
  if (failed(checkOption("dv-before-fence", dvBeforeFence, -1, 1, "0 or 1")))
    return failure();
  const bool dvBfLegal = useWgmma && !dvEarly;
  if (dvBeforeFence == 1 && !dvBfLegal)
    return op.emitOpError() << "dv-before-fence=1 needs mma=wgmma with "
                               "early-dv=0 (dV after the dS^T stores)";
  // Default on together at D = 128 (FlashAttention-3's operand majors and
  // dV order): det -0.0..+2.2%, nondet +0.5..+3.9% in the 12 D = 128 cells,
  // ahead of an identical-cubin control (-1.4..+0.8%) in each; at D = 64
  // the pair loses (causal -1.0..+0.1%, full -2.8..-5.1%; bench/NOTES.md
  // sections 42-43).
  bool dsTransOn = dsTrans == 1 || (dsTrans == -1 && D == 128 && dsTransLegal);
  bool dvBfOn =
      dvBeforeFence == 1 || (dvBeforeFence == -1 && D == 128 && dvBfLegal);
  if (failed(checkOption("dps-ahead", dpsAhead, -1, 65,
                         "0 .. ds-wait-chunk + 1")))
    return failure();
  // Read at the wait, dPsum's loads stall the dS math right after it
  // (ncu, D = 128 causal: short-scoreboard on the first dP - dPsum, ~3% of
  // all samples; bench/NOTES.md section 42). Ahead, 16 values live longer.
  if (dpsAhead > 0 && !(dsWait >= 0 && bm == 64 && !statsAcc &&
                        statsShfl != 1 && dpsAhead <= dsWait + 1))
    return op.emitOpError()
           << "dps-ahead=" << int64_t(dpsAhead)
           << " needs ds-in-pass on 64-row Q tiles, stats-in-acc=0 and at "
              "most ds-wait-chunk + 1 ("
           << dsWait + 1 << ": with lse_log2, before the products)";
  if (failed(checkOption("trace-timeline", traceTimeline, 0, 2, "1 or 2")))
    return failure();
  if (traceTimeline != 0 && !tmaWgmma)
    return op.emitOpError() << "trace-timeline=" << int64_t(traceTimeline)
                            << " needs mma=wgmma with loads=tma (the "
                               "producer's and the MMA warps' item "
                               "boundaries)";
  if (failed(checkOption("stats-in-main", statsInMain, -1, 1, "0 or 1")))
    return failure();
  // Warp 11 computes the statistics after the first round's: it must be
  // free (dkdv-bulk's storer is warp 11), and O must hold O (the trace
  // kernels write their timeline over it).
  if (statsInMain == 1 && !(tmaWgmma && !bulkDkdv && traceTimeline == 0))
    return op.emitOpError()
           << "stats-in-main=1 needs mma=wgmma with loads=tma, without "
              "dkdv-bulk (whose storer is warp 11, the statistics' "
              "streamer) or trace-timeline (which writes over O)";
  bool statsMain = statsInMain == 1;
  if (failed(checkTmaFlag("pdl", pdl,
                          "the main kernel's roles wait for the preprocess")))
    return failure();
  bool pdlOn = pdl == 1;
  if (failed(checkTmaFlag("warp-producer", warpProducer,
                          "it is the TMA producer's form")))
    return failure();
  // Default: on for deterministic kernels (+2.6..+3.5% at D = 64 causal,
  // +1.4..+2.1% at D = 128 full, -0.1..+0.7% at D = 128 causal) but D = 64
  // full masks (-2.1..-3.8% at s = 4096 / 8192), bench/NOTES.md section 36;
  // on for non-deterministic ones, whose epilogue then takes the opaque
  // thread id too (with the fused dS pass: D = 64 +3.3..+7.3%, D = 128
  // causal +0.9..+1.5%; D = 128 full +0.4..+0.5% at s = 2048 .. 8192;
  // section 38. Alone, before that, -1..-3%: the MMA side spilled).
  bool warpProd =
      warpProducer == 1 ||
      (warpProducer == -1 && tmaWgmma &&
       !(op.getDeterministic() && D == 64 && op.getMask() == Mask::Full));
  if (mmaRegs != 0 && mmaRegs != 240 && mmaRegs != 232)
    return op.emitOpError() << "mma-regs must be 240 or 232, or 0 for the "
                               "default (got "
                            << int64_t(mmaRegs) << ")";
  if (mmaRegs != 0 && !useWgmma)
    return op.emitOpError() << "mma-regs needs mma=wgmma (the " << mma
                            << " kernels do not split registers by role)";
  // mma-regs unset: the deterministic TMA kernels at D = 128 give the MMA
  // warpgroups 232 so warpgroup 2 gets 40 (at 24 it spills, and its
  // reducers' hand-offs are links of the ordered-add chain: +4-6% at D =
  // 128 causal), and so do the non-deterministic ones in that step form
  // (fused dS pass: the causal ones, section 38). At D = 64 the MMA side
  // spilled at 232 (-10..35%) until the dPsum fold (section 46); now it
  // fits, and the causal kernels gain +0.4..+2.5% from warpgroup 2's
  // local ops gone, while the full-mask ones lose 1.5-3% at s >= 8192
  // (section 48). The others keep 240 (D = 128 full non-deterministic: -4%
  // at 232; cp.async kernels not measured), and so do early-st kernels (at
  // 232 ptxas serialises their wgmmas).
  const bool regs232 =
      tma && !stEarly &&
      (D == 64 ? op.getMask() == Mask::Causal
               : op.getDeterministic() || dsFused);
  int64_t regs = mmaRegs ? int64_t(mmaRegs) : regs232 ? 232 : 240;
  // threads = 0: the mode's own count (wgmma: 2 MMA warpgroups + the dQ
  // reducer's warpgroup; sync and simt: 256).
  int64_t nthreads = threads ? threads : (useWgmma ? kWgmmaThreads : 256);
  if (useWgmma) {
    if (nthreads != kWgmmaThreads)
      return op.emitOpError() << "mma=wgmma runs " << kWgmmaThreads
                              << " threads (2 MMA warpgroups + the dQ "
                                 "reducer's warpgroup); got threads="
                              << nthreads;
  } else if (nthreads < 128 || nthreads % 128 != 0 || nthreads > 1024) {
    return op.emitOpError() << "threads must be a multiple of 128 in "
                               "[128, 1024]";
  }
  if (useWgmma && (!(bm == 64 || (bm == 128 && D == 64)) || bn != 128 ||
                   !elt.isBF16()))
    return op.emitOpError()
           << "mma=wgmma needs 128-row KV tiles, 64-row Q tiles (or 128 at "
              "D = 64) and bf16 (got "
           << bm << "x" << bn << " at D = " << D << ", " << elt
           << "); use dash-tile=\"block-m=64 block-n=128\"";
  if (useSync && (bm != 64 || bn != 64 || nthreads != 256 || !elt.isBF16()))
    return op.emitOpError()
           << "mma=sync needs 64x64 tiles, 256 threads and bf16 (got "
           << bm << "x" << bn << ", " << nthreads << " threads, " << elt
           << "); use mma=simt or dash-tile=\"block-m=64 block-n=64\"";
  // Shared memory of main. simt: K, V (input type), P, dS (f32).
  // sync: K, V, Q, dO (input type), P^T, dS^T, dS (input type).
  int64_t kvBytes = bn * D * eltBytes;
  int64_t pBytes = bm * bn * 4;
  WgmmaConfig wgmmaConfig{tma,     dsBufs,  regs,  dqBufs,
                          kvEarly, kvSplit, turns, statsAcc,
                          traceTimeline != 0, qFirst, dsStm, dvEarly,
                          traceTimeline == 2, stEarly, chunks,
                          ablateExp2 == 1, dqMain,  noRankWait,
                          dsWait,  kvAhead, kvViaDsOn, bulkDkdv,
                          statsMain, pdlOn, warpProd, counted,
                          uniformWg == 1, dsTransOn,
                          dvBfOn, std::max<int64_t>(dpsAhead, 0),
                          statsShfl == 1, foldOn};
  int64_t sharedBytes = useWgmma  ? wgmmaSharedBytes(D, bm, wgmmaConfig)
                        : useSync ? mmaSharedBytes(D)
                                  : 2 * kvBytes + 2 * pBytes;
  if (sharedBytes > kMaxShared)
    return op.emitOpError() << "tile " << bm << "x" << bn << " with D = "
                            << D << " needs " << sharedBytes
                            << " B of shared memory (> 227 KiB)";

  return ResolvedKernel{elt,     D,        bm,       bn,         useWgmma,
                        useSync, nthreads, sharedBytes, wgmmaConfig};
}
