// pdl=1 (TMA kernels; off by default): the main kernel is a programmatic
// dependent launch of the preprocess ("pdl": true in the manifest, the
// runtime launches it with programmatic stream serialization). The
// preprocess lets it launch first thing; every main-kernel thread but the
// producer (warp 10 with warp-producer, the deterministic default; else its
// lane 0) waits for the preprocess right after the mbarriers' set-up, the
// producer after prefetching its first item's K and V into L2 (with
// stats-in-main everyone waits before the statistics' first rows, whose
// counts the preprocess zeroes). Refused for cp.async kernels.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=pdl=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=pdl=1 stats-in-main=1" --canonicalize --cse | FileCheck %s --check-prefix=STATS
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=pdl=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=CPASYNC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=pdl=3" 2>&1 | FileCheck %s --check-prefix=RANGE

// CHECK: dash.config = {{{.*}}pdl = true
// CHECK-LABEL: gpu.func @dash_bwd_preprocess(
// CHECK-NOT: scf.
// CHECK: nvvm.griddepcontrol launch_dependents
// CHECK-NOT: nvvm.griddepcontrol
// CHECK-LABEL: gpu.func @dash_bwd_main(
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// Every warp but the producer's (warp 10: warp-producer, the default of
// deterministic kernels) waits before the roles split.
// CHECK-NEXT: %[[WARP:.*]] = arith.divui %thread_id_x, %c32 : index
// CHECK-NEXT: %[[NOTPROD:.*]] = arith.cmpi ne, %[[WARP]], %c10 : index
// CHECK-NEXT: scf.if %[[NOTPROD]] {
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: }
// The producer: the tensor maps' fences, the first item's K and V
// prefetched (maps 1 and 2, by the elected lane), then its own wait,
// before its first item.
// CHECK: %[[ELECT:.*]] = nvvm.elect.sync
// CHECK: nvvm.fence.proxy.acquire <gpu>
// CHECK: scf.if
// CHECK: scf.if %[[ELECT]] {
// CHECK: nvvm.cp.async.bulk.tensor.prefetch
// CHECK: nvvm.cp.async.bulk.tensor.prefetch
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: scf.for
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: gpu.func @dash_bwd_postprocess(
// CHECK-NOT: nvvm.griddepcontrol

// STATS-LABEL: gpu.func @dash_bwd_main(
// STATS: gpu.barrier
// STATS-NEXT: nvvm.griddepcontrol wait
// STATS-NOT: nvvm.griddepcontrol
// STATS: gpu.func @dash_bwd_postprocess(

// OFF: dash.config = {{{.*}}pdl = false
// OFF-NOT: nvvm.griddepcontrol

// CPASYNC: error: 'dash.scheduled_attention_bwd' op pdl=1 needs mma=wgmma with loads=tma
// RANGE: error: 'dash.scheduled_attention_bwd' op pdl must be 0 or 1, or -1 for the default (got 3)

!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
