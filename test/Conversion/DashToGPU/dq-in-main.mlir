// dq-in-main (the default of deterministic TMA kernels): after its walk, a
// unit's MMA warpgroups draw tickets of 4 consecutive dQ tiles from the word
// after the semaphores, lanes 0-3 wait (acquire) until each tile's semaphore
// equals the KV tiles covering it, and the 256 threads load the 4 tiles'
// f32 sums (all loads before the first store), scale them and store bf16 to
// dq. The next ticket is drawn before the waits. The preprocess zeroes the
// ticket; the postprocess keeps only GQA's dK/dV (its dq_accum loads go).
// Non-deterministic kernels count their adds too (counted-adds, default 1): the
// producer hands each step's rank over, rank 0 stores, later ranks wait
// (acquire) only until the row's semaphore is >= 1 (min(rank, 1): rank 0
// waits for nothing), every hand-off releases the semaphore once its adds
// completed, and the same conversion follows the walks.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-in-main=0" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=0" --canonicalize --cse | FileCheck %s --check-prefix=NONDET
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-in-main=2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sed 's/deterministic = true/deterministic = false/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-in-main=1 counted-adds=0" 2>&1 | FileCheck %s --check-prefix=REFUSE
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=COUNTED
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=1" --canonicalize --cse | FileCheck %s --check-prefix=COUNTED
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=1 dq-in-main=0" --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=1" 2>&1 | FileCheck %s --check-prefix=CDET
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=0" 2>&1 | FileCheck %s --check-prefix=CDET0
// RUN: sed 's/deterministic = true/deterministic = false/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async counted-adds=1" 2>&1 | FileCheck %s --check-prefix=CDET
// RUN: sed 's/deterministic = true/deterministic = false/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=2" 2>&1 | FileCheck %s --check-prefix=CBAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async dq-in-main=1" 2>&1 | FileCheck %s --check-prefix=REFUSE

// CHECK: dash.config = {{{.*}}dq_in_main = true
// CHECK-LABEL: gpu.func @dash_bwd_preprocess
// The ticket (semaphores + B * H * M), zeroed by thread 0 of CTA 0.
// CHECK: %[[SEM:.*]] = memref.extract_aligned_pointer_as_index %arg14
// CHECK: %[[TPTR:.*]] = llvm.inttoptr
// CHECK: llvm.store %c0_i32, %[[TPTR]] {alignment = 4 : i64} : i32, !llvm.ptr
// CHECK-LABEL: gpu.func @dash_bwd_main
// The first ticket, drawn by thread 0 and handed to the 256 MMA threads.
// CHECK: %[[FIRST:.*]] = llvm.atomicrmw add %[[TICKET:.*]], %c1_i32 syncscope("device") monotonic
// CHECK-NEXT: llvm.atomicrmw xchg %[[SLOT:.*]], %[[FIRST]] syncscope("block")
// CHECK: barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// CHECK: %[[GROUP0:.*]] = llvm.atomicrmw add %[[SLOT]], %c0_i32 syncscope("block")
// CHECK: scf.while (%[[CUR:.*]] = %[[GROUP0]]) : (i32) -> i32 {
// CHECK: scf.condition
// CHECK: } do {
// The next ticket first, then lanes 0-3 wait for their tile's count.
// CHECK: llvm.atomicrmw add %[[TICKET]], %c1_i32 syncscope("device") monotonic
// CHECK: arith.cmpi slt, %thread_id_x, %c4 : index
// CHECK: scf.while
// CHECK-NEXT: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// 4 tiles x 4 chunks x two 16-byte loads, then 16 predicated 16-byte stores.
// CHECK-COUNT-32: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NOT: st.global.v4.b32
// CHECK-NOT: llvm.load %{{.*}} -> vector<4xf32>
// CHECK-COUNT-16: @p st.global.v4.b32
// CHECK-NOT: vector<4xf32>
// The next ticket handed over, the loop carries it.
// CHECK: llvm.atomicrmw xchg %[[SLOT]]
// CHECK: barrier.sync
// CHECK: %[[NEXT:.*]] = llvm.atomicrmw add %[[SLOT]], %c0_i32 syncscope("block")
// CHECK: scf.yield %[[NEXT]] : i32
// CHECK-LABEL: gpu.func @dash_bwd_postprocess
// CHECK-NOT: vector.load %arg9
// CHECK: gpu.return

// OFF: dq_in_main = false
// OFF-LABEL: gpu.func @dash_bwd_main
// OFF-NOT: vector<4xf32>
// OFF-LABEL: gpu.func @dash_bwd_postprocess
// OFF: vector.load %arg9

// NONDET-NOT: dq_in_main
// NONDET-NOT: dq_accum_init
// NONDET: counted_adds = false
// NONDET-NOT: dq_in_main
// The unordered reducer: no semaphore, plain reduce-adds.
// NONDET-LABEL: gpu.func @dash_bwd_main
// NONDET-NOT: atomic syncscope("device") acquire
// NONDET-NOT: @p cp.async.bulk.global.shared::cta.bulk_group
// NONDET-LABEL: gpu.func @dash_bwd_postprocess
// NONDET: vector.load %arg9

// The counted reducer (lane 0, part 0): the rank from the hand-off, the
// wait for min(rank, 1) with a signed less-than (>= 1, not == rank), the
// store-or-add, and the release after the adds completed.
// COUNTED: counted_adds = true
// COUNTED-SAME: dq_accum_init = "rank0-store"
// COUNTED-LABEL: gpu.func @dash_bwd_main
// COUNTED: %[[MINR:.*]] = arith.minsi %{{.*}}, %c1 : index
// COUNTED: %[[MIN32:.*]] = arith.index_cast %[[MINR]] : index to i32
// COUNTED: %[[SEEN:.*]] = llvm.load %{{.*}} atomic syncscope("device") acquire
// COUNTED-NEXT: arith.cmpi slt, %[[SEEN]], %[[MIN32]] : i32
// COUNTED: @p cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\0A@!p cp.reduce.async.bulk
// COUNTED: nvvm.cp.async.bulk.wait_group 0
// COUNTED: llvm.fence syncscope("device") release
// COUNTED-NEXT: llvm.atomicrmw add

// CDET: error: 'dash.scheduled_attention_bwd' op counted-adds=1 needs a non-deterministic kernel with mma=wgmma and loads=tma (deterministic ones always count)
// CDET0: error: 'dash.scheduled_attention_bwd' op counted-adds=0 needs a non-deterministic kernel (the ordered adds are counted)
// CBAD: error: 'dash.scheduled_attention_bwd' op counted-adds must be 0 or 1, or -1 for the default (got 2)
// BAD: error: 'dash.scheduled_attention_bwd' op dq-in-main must be 0 or 1, or -1 for the default (got 2)
// REFUSE: error: 'dash.scheduled_attention_bwd' op dq-in-main=1 needs a kernel with mma=wgmma and loads=tma whose adds are counted (deterministic, or counted-adds=1: a dQ tile is known finished by its semaphore)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
