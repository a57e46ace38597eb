// warp-producer (TMA kernels): the whole of warp 10 runs the producer's walk,
// converged, and one lane elected at its start issues every TMA copy and
// expect-tx arrival as a predicated instruction (the K/V prefetches, which
// have no predicate operand, and kv-via-ds's copy branch on it). ptxas then
// keeps the walk in uniform registers; from a lane-0 branch each copy was a
// loop moving its operands into uniform registers and the walk spilled.
// Default: on for TMA kernels but deterministic D = 64 full-mask ones
// (bench/NOTES.md sections 36, 38). Off, lane 0 of the warp runs the walk
// alone. Refused for cp.async kernels.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/; s/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=LANE0
// RUN: sed 's/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=warp-producer=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=warp-producer=0" --canonicalize --cse | FileCheck %s --check-prefix=LANE0
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=warp-producer=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=CPASYNC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=warp-producer=2" 2>&1 | FileCheck %s --check-prefix=RANGE

// CHECK: dash.config = {{{.*}}warp_producer = true
// CHECK-LABEL: gpu.func @dash_bwd_main(
// The producer's branch (warp 10: threads 320 .. 351), no lane test in it.
// CHECK: arith.cmpi slt, %thread_id_x, %c352 : index
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[ELECT:.*]] = nvvm.elect.sync -> i1
// CHECK-NOT: arith.cmpi eq, %{{.*}}, %c0 : index
// Per item: the first step's copies, K and V, the next item's prefetch; then
// the walk's steps, every copy and arrival predicated on the elected lane.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, predicate = %[[ELECT]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} predicate = %[[ELECT]]
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, predicate = %[[ELECT]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} predicate = %[[ELECT]]
// CHECK: scf.if %[[ELECT]] {
// CHECK-NOT: }
// CHECK: nvvm.cp.async.bulk.tensor.prefetch
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// The step's Q tile index and rank: the elected lane's one store (a warp's
// 32 stores of one word are a race to compute-sanitizer).
// CHECK: nvvm.inline_ptx "st.shared{{(.v2)?}}.b32 {{.*}} predicate = %[[ELECT]]
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, predicate = %[[ELECT]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} predicate = %[[ELECT]]
// CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}] : !llvm.ptr<7>
// CHECK: gpu.func @dash_bwd_postprocess(

// LANE0: dash.config = {{{.*}}warp_producer = false
// LANE0-LABEL: gpu.func @dash_bwd_main(
// LANE0-NOT: nvvm.elect.sync
// LANE0: arith.cmpi slt, %thread_id_x, %c352 : index
// LANE0-NEXT: scf.if
// LANE0-NEXT: arith.subi %thread_id_x, %c320 : index
// LANE0-NEXT: arith.cmpi eq, %{{.*}}, %c0 : index
// LANE0-NEXT: scf.if
// LANE0: llvm.store %{{.*}} : i32, !llvm.ptr<3>
// LANE0: nvvm.mbarrier.arrive.expect_tx %{{.*}} : !llvm.ptr<3>, i32
// LANE0: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// LANE0-NOT: predicate =
// LANE0: gpu.func @dash_bwd_postprocess(

// CPASYNC: error: 'dash.scheduled_attention_bwd' op warp-producer=1 needs mma=wgmma with loads=tma
// RANGE: error: 'dash.scheduled_attention_bwd' op warp-producer must be 0 or 1, or -1 for the default (got 2)
!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
