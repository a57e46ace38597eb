//===- WgmmaDkdvStorer.cpp - The dkdv-bulk kernels' dK/dV storer ----------===//
//
// dkdv-bulk=1 (D = 64, no GQA): warp 11 writes each item's dK and dV. The
// MMA warps stage the item's bf16 rows in the dS^T buffer of its walk's
// last step, swizzled as the K/V tiles are (dK's 128 rows, then dV's), and
// arrive on EPI_FULL; lane 0 then waits for the next item's K/V to land
// (FULL_KV: on the H200 a 32 KiB load behind 32 KiB of outgoing traffic
// takes ~1.5k cycles longer, bench/micro/tma_queue.cu) and stores both
// tiles by TMA through the runtime's dk and dv maps (rows past S_k are not
// written). That buffer's next dS^T stores come after the next item's first
// dS^T barrier (kBarDsStep), which this warp passes only once the stores
// have read it; an empty walk's epilogue, which stages into it directly,
// waits for EPI_EMPTY. So the MMA warps never wait for the stores in a
// step (a wait there measured -1.9..-3.4% non-deterministic at d = 64
// causal, bench/NOTES.md section 33).
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

void WgmmaMain::emitDkdvStorer() {
  Value lead = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                     g.idx(32 * kStorerWarp));
  // With GQA the MMA warps write f32 partials themselves (no EPI_FULL): the
  // warp only takes part in the steps' barriers.
  Value direct = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, H, Hkv);
  Value store = g.andI(lead, direct);
  // The runtime rewrites the maps before every call (WgmmaProducer.cpp).
  g.when(store, [&] {
    for (int i : {kTensorMapDk, kTensorMapDv})
      NVVM::FenceProxyAcquireOp::create(b, loc, NVVM::MemScopeKind::GPU,
                                        w.tensorMap(i), w.c32(128));
  });
  Value numItems = k.numItems(op, map, unit);
  forItems([&](const Item &it, Value first) {
    // The previous item's stores are out of its buffer: free it (the MMA
    // side's empty-walk epilogue waits for that) before this item's steps.
    g.when(g.andI(store, g.lt(g.idx(0), it.index)), [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
      w.mbarArrive(w.mbar(kEpiEmpty));
    });
    w.syncWarp();
    g.loop(it.len, [&](Value) {
      w.barSync(kBarDsStep, kDsStepThreadsDkdvBulk);
    });
    g.when(store, [&] {
      w.mbarWait(w.mbar(kEpiFull), g.rem(it.index, g.idx(2)),
                 g.idx(kEpiFull), {unit, it.bb, it.h, first});
      Value next = g.add(it.index, g.idx(1));
      g.when(g.lt(next, numItems), [&] {
        w.mbarWait(w.mbar(kFullKV), g.rem(next, g.idx(2)), g.idx(kFullKV),
                   {unit, it.bb, it.h, first});
      });
      Value stage = lastStepDsT(first, it.len);
      for (auto [map, off] : {std::pair{kTensorMapDk, int64_t(0)},
                              std::pair{kTensorMapDv, kDkdvTileBytes}})
        w.tmaStore(w.tensorMap(map), g.add(stage, g.idx(off)),
                   {w.c32(0), w.i32of(kvRow0(it.kv)), w.i32of(it.h),
                    w.i32of(it.bb)});
      NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
    });
  });
  // The last item's rows written before the CTA (and its shared memory)
  // goes.
  g.when(store,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, UnitAttr()); });
}
