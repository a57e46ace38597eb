// stats-in-main (TMA kernels; off by default, bench/NOTES.md section 34):
// the main kernel computes dPsum and lse_log2 itself. Before the roles split
// every warp computes the rows of the first two rounds' heads (chunks of 64
// rows dealt out by global warp index, 4 groups of rows in flight), warp 11
// the others from a ticket (2 groups in flight), and each chunk ends in a
// warp barrier and lane 0's release of its row count into the head's count,
// which the producer acquires before the item's first statistics load (then
// a generic-to-async proxy fence). The preprocess loads neither O nor dO; it
// zeroes the ticket and the counts after the semaphores. Refused with
// dkdv-bulk (its storer is warp 11), trace-timeline (which writes over O)
// and cp.async kernels.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=1" 2>&1 | FileCheck %s --check-prefix=BULK
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=1 dkdv-bulk=0" --canonicalize --cse | FileCheck %s --check-prefix=FULL
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=1 trace-timeline=1" 2>&1 | FileCheck %s --check-prefix=TRACE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=CPASYNC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-main=2" 2>&1 | FileCheck %s --check-prefix=RANGE

// CHECK: dash.config = {{{.*}}stats_in_main = true
// The preprocess: no activation loads; dq_accum's rows only where S_k = 0
// or S_k < S_q (no key for row 0); then the B * H + 1 words after the
// semaphores from the statistics ticket (word 1) on are zeroed.
// CHECK-LABEL: gpu.func @dash_bwd_preprocess(
// CHECK-NOT: -> vector<8xbf16>
// CHECK: %[[NOKEY:.*]] = arith.ori
// CHECK-NEXT: scf.if %[[NOKEY]] {
// CHECK: vector.store %cst, %arg9
// CHECK: %[[BH:.*]] = arith.muli %dim, %dim_1 : index
// CHECK-NEXT: %[[WORDS:.*]] = arith.addi %[[BH]], %c1 : index
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %[[WORDS]] step
// CHECK-NEXT: %[[W:.*]] = arith.addi %[[E]], %c1 : index
// CHECK: %[[AT:.*]] = arith.addi %{{.*}}, %[[W]] : index
// CHECK: llvm.store %c0_i32
// CHECK-NOT: -> vector<8xbf16>
// CHECK-LABEL: gpu.func @dash_bwd_main(
// The first rounds' chunks before the split: 16 passes of 4 rows at D = 64,
// 4 groups in flight (dO, O a group), the preprocess's butterfly (lanes 4,
// 2, 1 apart), the warp barrier, lane 0's fence and count.
// CHECK: nvvm.fence.mbarrier.init
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4 {
// CHECK-COUNT-8: -> vector<8xbf16>
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: nvvm.bar.warp.sync %c-1_i32 : i32
// CHECK: scf.if
// CHECK-NEXT: llvm.fence syncscope("device") release
// CHECK: llvm.atomicrmw add %{{.*}} syncscope("device") monotonic : !llvm.ptr, i32
// CHECK: nvvm.shfl.sync  idx
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: nvvm.setmaxregister  decrease 40
// The producer, per item: the head's count acquired up to S_q, then the
// proxy fence, before the item's first step goes out.
// CHECK: nvvm.fence.proxy.acquire <gpu>
// CHECK: scf.for
// CHECK: scf.while
// CHECK-NEXT: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: nvvm.mbarrier.try_wait.parity
// Warp 11: lane 0 draws a ticket, broadcast; chunks of 2 groups in flight.
// CHECK: scf.if %{{.*}} -> (i32) {
// CHECK-NEXT: llvm.atomicrmw add %{{.*}}, %c1_i32 syncscope("device") monotonic
// CHECK: nvvm.shfl.sync  idx
// CHECK: scf.while
// CHECK: nvvm.shfl.sync  idx
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c2 {
// CHECK-COUNT-4: -> vector<8xbf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: gpu.func @dash_bwd_postprocess(

// Off by default: the preprocess loads O and dO, the producer waits for no
// count.
// OFF: dash.config = {{{.*}}stats_in_main = false
// OFF-LABEL: gpu.func @dash_bwd_preprocess(
// OFF: -> vector<8xbf16>
// OFF-LABEL: gpu.func @dash_bwd_main(
// OFF-NOT: -> vector<8xbf16>
// OFF: gpu.func @dash_bwd_postprocess(

// Full masks default to dkdv-bulk at D = 64: refused unless it is off.
// BULK: error: 'dash.scheduled_attention_bwd' op stats-in-main=1 needs mma=wgmma with loads=tma, without dkdv-bulk (whose storer is warp 11, the statistics' streamer) or trace-timeline (which writes over O)
// FULL: dash.config = {{{.*}}dkdv_bulk = false{{.*}}stats_in_main = true
// TRACE: error: 'dash.scheduled_attention_bwd' op stats-in-main=1 needs
// CPASYNC: error: 'dash.scheduled_attention_bwd' op stats-in-main=1 needs
// RANGE: error: 'dash.scheduled_attention_bwd' op stats-in-main must be 0 or 1, or -1 for the default (got 2)

!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
