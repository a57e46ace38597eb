// trace-timeline=1 (diagnostic kernels for bench/item_trace.py): MMA thread 0
// stores globaltimer and clock64 at the CTA's start and end, and clock64 at
// each item's walk start, step 0's FULL_Q pass, the ends of steps 0 and 1, the
// walk's end and the epilogue's end; the producer stores clock64 once it has
// issued the item's first step's copies and once it may load the item's K/V.
// All go as i64 words into O's buffer (the main kernel never reads O). Off by
// default; bad values and cp.async kernels are refused. trace-timeline=2 also
// stamps the phases of each walk's step 2: thread 0 of each MMA warpgroup at
// every phase boundary, the reducer lane of that step's hand-off at its
// waits, each as one predicated store of clock64 (no branch in the MMA code).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=trace-timeline=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=trace-timeline=2" --canonicalize --cse | FileCheck %s --check-prefix=PHASES
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=trace-timeline=1" --canonicalize --cse | FileCheck %s --check-prefix=NOPHASES
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=trace-timeline=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async trace-timeline=1" 2>&1 | FileCheck %s --check-prefix=CPASYNC

// CHECK: dash.config = {{{.*}}trace_timeline = 1
// CHECK-LABEL: gpu.func @dash_bwd_main(
// CHECK-SAME: %[[O:arg3]]: memref<?x?x?x128xbf16, {{.*}}> {dash.name = "o"}
// The MMA side: the CTA's start (globaltimer, clock64), each item's walk
// start, walk end and epilogue end, the CTA's end.
// CHECK: nvvm.setmaxregister  increase
// CHECK: nvvm.read.ptx.sreg.globaltimer : i64
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : i64, !llvm.ptr
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: scf.for
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: nvvm.read.ptx.sreg.globaltimer : i64
// CHECK: nvvm.read.ptx.sreg.clock64 : i64
// The producer: the unit's item count, then per item its clock once the
// walk's first step's copies (Q, dO, lse_log2, dPsum: issued before the
// item's K/V, q-before-kv) are out ...
// CHECK: nvvm.setmaxregister  decrease
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-6: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NEXT: nvvm.read.ptx.sreg.clock64 : i64
// ... and once EMPTY_KV has passed.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.read.ptx.sreg.clock64 : i64
// CHECK: gpu.return

// OFF-NOT: trace_timeline
// OFF-NOT: nvvm.read.ptx.sreg.globaltimer
// OFF-NOT: nvvm.read.ptx.sreg.clock64

// Level 2: the walk's step top (before FULL_Q), ..., S^T and dP^T issued,
// S^T complete, ..., the end of the step (dK complete, EMPTY_Q arrived).
// PHASES: dash.config = {{{.*}}trace_timeline = 2
// PHASES: nvvm.setmaxregister  increase
// PHASES: scf.for
// PHASES: scf.for
// PHASES: %[[TOP:.*]] = nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{\0A.reg .pred p;\0Asetp.ne.b32 p, $1, 0;\0A@p st.global.b64 [$0], $2;\0A}" ro(%{{.*}}, %{{.*}}, %[[TOP]] : !llvm.ptr<1>, i32, i64)
// PHASES: nvvm.mbarrier.try_wait.parity
// PHASES: nvvm.wgmma.commit.group.sync.aligned
// PHASES: nvvm.wgmma.commit.group.sync.aligned
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// PHASES-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// PHASES: nvvm.wgmma.wait.group.sync.aligned 0
// PHASES: nvvm.mbarrier.arrive
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// The reducer's stamps: before and after its FULL wait, after the rank wait.
// PHASES: nvvm.setmaxregister  decrease
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// PHASES: nvvm.inline_ptx "barrier.sync $0, $1;"
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// PHASES: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// PHASES: nvvm.read.ptx.sreg.clock64
// PHASES-NEXT: nvvm.inline_ptx "{{.*}}@p st.global.b64
// NOPHASES-NOT: st.global.b64

// BAD: error: 'dash.scheduled_attention_bwd' op trace-timeline must be 1 or 2, or 0 for the default (got 3)
// CPASYNC: error: 'dash.scheduled_attention_bwd' op trace-timeline=1 needs mma=wgmma with loads=tma (the producer's and the MMA warps' item boundaries)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
