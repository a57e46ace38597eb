// early-st=1 (off by default, 64-row Q tiles): each step issues the next
// step's S^T = K Q^T once its own dQ is complete, before its dQ hand-off, so
// S^T runs on the tensor cores under the hand-off and dK; the stage's FULL
// wait moves there too. The walk's first S^T goes out before the walk. Both
// complete before the back edge (wait_group 0): an S^T accumulator in flight
// into the loop and read by the exp2 pass made ptxas serialise every wgmma
// (C7514). The deterministic D = 128 kernels keep 240 registers (at 232
// ptxas serialises them, C7512). 128-row Q tiles, cp.async kernels,
// stats-in-acc=2 and early-kv=1 (a walk's last step issues one S^T it never
// reads, on the item's K) are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-st=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-st=1" 2>&1 | FileCheck %s --check-prefix=BM128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async early-st=1" 2>&1 | FileCheck %s --check-prefix=BM128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-acc=2 early-st=1" 2>&1 | FileCheck %s --check-prefix=BM128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-st=2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-st=1 early-kv=1" 2>&1 | FileCheck %s --check-prefix=KV

// CHECK: dash.config = {{{.*}}early_st = true{{.*}}mma_regs = 240
// CHECK: nvvm.setmaxregister  increase 240
// The walk's first S^T: its stage's FULL wait (only for a non-empty walk),
// eight guarded m64n64k16 (K = 128), complete before the walk.
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: @g wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.for {{.*}} iter_args({{.*}}, {{.*}}, %{{.*}} = %{{.*}})
// A step: no FULL wait before dP^T (its S^T is the carried accumulator).
// CHECK-NOT: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// dQ and dK issued, dQ complete; then the next stage's FULL wait (not past
// the walk's end) and the next S^T, ahead of the hand-off's barrier.
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: @g wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;"
// The end of the step: dK and the next S^T complete, the stage released, the
// S^T accumulator carried.
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : {{.*}}, {{.*}}, !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>

// OFF: early_st = false
// OFF: nvvm.setmaxregister  increase 232
// OFF-NOT: @g wgmma

// BM128: error: 'dash.scheduled_attention_bwd' op early-st=1 needs mma=wgmma with loads=tma, 64-row Q tiles (at 128 the next S^T's accumulator does not fit beside the hand-off: ptxas serialises the wgmmas) and stats-in-acc below 2 (S^T's accumulator cannot start at the statistics a step ahead)
// KV: error: 'dash.scheduled_attention_bwd' op early-st=1 and early-kv=1 exclude each other (the walk's last S^T reads K after early-kv has freed it)
// BAD: error: 'dash.scheduled_attention_bwd' op early-st must be 0 or 1, or -1 for the default (got 2)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
