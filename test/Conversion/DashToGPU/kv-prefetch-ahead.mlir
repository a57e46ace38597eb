// kv-prefetch-ahead=P: the TMA producer prefetches the next item's K/V into
// L2 with the copies of step max(len - P, 0) of the current walk, so the
// lines are recent in L2 when the walk ends; 0 (the default) prefetches right
// after the item's own K/V, a whole walk earlier (wgmma-tma.mlir checks that
// order). Only the producer changes; bad values and kernels without a TMA
// producer are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-prefetch-ahead=4" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DEFAULT
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-prefetch-ahead=-2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async kv-prefetch-ahead=2" 2>&1 | FileCheck %s --check-prefix=CPASYNC

// CHECK: dash.config = {{{.*}}kv_prefetch_ahead = 4 : i64
// The producer: step 0's copies (q-before-kv), the item's K and V, the next
// item's coordinates (whether there is one: %[[NEXT]]), then no prefetch
// before the step loop unless the walk is too short for one in it (1 >=
// len - 4: the prefetch goes out here).
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: %[[NEXT:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.subi %{{.*}}, %c4 : index
// CHECK-NEXT: %[[LATE:.*]] = arith.cmpi sgt, %[[AT]], %c1 : index
// CHECK-NEXT: %[[NOW:.*]] = arith.cmpi sle, %[[AT]], %c1 : index
// CHECK-NEXT: %[[NOWNEXT:.*]] = arith.andi %[[NOW]], %[[NEXT]] : i1
// (and the producer warp's elected lane: warp-producer.mlir)
// CHECK-NEXT: %[[NOWNEXTE:.*]] = arith.andi %[[NOWNEXT]], %[[ELECT:.*]] : i1
// CHECK-NEXT: scf.if %[[NOWNEXTE]] {
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.prefetch
// The step loop: each step's copies, then, at step len - 4 of a long walk,
// the prefetch.
// CHECK: scf.for %[[STEP:.*]] = %c1 to
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c33280_i32
// CHECK-COUNT-6: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: %[[EQ:.*]] = arith.cmpi eq, %[[STEP]], %[[AT]] : index
// CHECK-NEXT: %[[BOTH:.*]] = arith.andi %[[LATE]], %[[EQ]] : i1
// CHECK-NEXT: %[[BOTHNEXT:.*]] = arith.andi %[[BOTH]], %[[NEXT]] : i1
// CHECK-NEXT: %[[BOTHNEXTE:.*]] = arith.andi %[[BOTHNEXT]], %[[ELECT]] : i1
// CHECK-NEXT: scf.if %[[BOTHNEXTE]] {
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.prefetch
// CHECK-NOT: nvvm.cp.async.bulk.tensor.prefetch
// CHECK: gpu.func @dash_bwd_postprocess(

// The default: one prefetch, right after the item's K and V, outside the
// step loop.
// DEFAULT: dash.config = {{{.*}}kv_prefetch_ahead = 0 : i64
// DEFAULT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32
// DEFAULT-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// DEFAULT-NEXT: arith.addi
// DEFAULT: scf.if
// DEFAULT-COUNT-4: nvvm.cp.async.bulk.tensor.prefetch
// DEFAULT: scf.for
// DEFAULT-NOT: nvvm.cp.async.bulk.tensor.prefetch
// DEFAULT: gpu.func @dash_bwd_postprocess(

// RANGE: error: 'dash.scheduled_attention_bwd' op kv-prefetch-ahead must be a step count >= 0, or -1 for the default (got -2)
// CPASYNC: error: 'dash.scheduled_attention_bwd' op kv-prefetch-ahead=2 needs mma=wgmma with loads=tma (the producer prefetches the next item's K/V)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
