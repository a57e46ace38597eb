// The exp2 pass of a step (D = 128: 64-row Q tiles, 32 S^T values per
// thread). exp2-chunks=N splits it into N chunks whose FFMAs read the scale
// through the previous chunk's last exp2 (c + min(p, 0), inline PTX that
// neither LLVM nor ptxas folds), so ptxas cannot issue every FFMA of the
// pass ahead of its first MUFU.EX2. Default: one pass at 64-row Q tiles (D =
// 128; 8 chunks in causal kernels, with ds-in-pass:
// ds-in-pass.mlir), 8 chunks at 128-row tiles (D = 64: 64 values per
// thread, measured +1.2..+2.4%). ablate-exp2=1 builds diagnostic kernels
// (wrong gradients) without the exp2.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=4" --canonicalize --cse | FileCheck %s
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=1" --canonicalize --cse | FileCheck %s --check-prefix=OFF64
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ablate-exp2=1" --canonicalize --cse | FileCheck %s --check-prefix=ABLATE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=3" 2>&1 | FileCheck %s --check-prefix=DIV
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=128" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync exp2-chunks=2" 2>&1 | FileCheck %s --check-prefix=SYNC
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync ablate-exp2=1" 2>&1 | FileCheck %s --check-prefix=ABSYNC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ablate-exp2=2" 2>&1 | FileCheck %s --check-prefix=ABBAD

// CHECK: dash.config = {{{.*}}exp2_chunks = 4
// The masked pass (diagonal tiles), then the plain one: 8 exp2, then the
// chain value, 8 more whose FFMAs read it, ... (3 links per pass).
// CHECK: scf.if
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: %[[C1:.*]] = llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t, $2, 0f00000000;\0Aadd.f32 $0, $1, t;\0A}", "=f,f,f"
// CHECK: llvm.intr.fma(%{{.*}}, %[[C1]], %{{.*}})
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: %[[C2:.*]] = llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t
// CHECK: llvm.intr.fma(%{{.*}}, %[[C2]], %{{.*}})
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: %[[C3:.*]] = llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t
// CHECK: llvm.intr.fma(%{{.*}}, %[[C3]], %{{.*}})
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT: llvm.nvvm.ex2.approx.ftz.f
// CHECK: } else {
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK: llvm.inline_asm "{\0A.reg .f32 t;\0Amin.f32 t
// CHECK-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT: llvm.nvvm.ex2.approx.ftz.f
// CHECK: scf.yield

// OFF: exp2_chunks = 1
// OFF-NOT: ablate_exp2
// OFF-NOT: min.f32
// OFF-COUNT-64: llvm.nvvm.ex2.approx.ftz.f
// OFF-NOT: llvm.nvvm.ex2.approx.ftz.f

// OFF64: block_m = 128
// OFF64-SAME: exp2_chunks = 1
// OFF64-NOT: min.f32
// OFF64-COUNT-128: llvm.nvvm.ex2.approx.ftz.f
// OFF64-NOT: llvm.nvvm.ex2.approx.ftz.f

// D = 64 by default: 8 chunks of 8 in each pass (7 links), 128 exp2 in all.
// D64: block_m = 128
// D64-SAME: exp2_chunks = 8
// D64: scf.if
// D64-COUNT-7: min.f32 t, $2, 0f00000000
// D64: } else {
// D64-COUNT-7: min.f32 t, $2, 0f00000000
// D64-NOT: min.f32
// D64: scf.yield

// ABLATE: ablate_exp2 = true
// ABLATE-NOT: llvm.nvvm.ex2.approx.ftz.f

// DIV: error: 'dash.scheduled_attention_bwd' op exp2-chunks=3 needs mma=wgmma and must divide the 32 S^T values a thread holds at 64-row Q tiles
// ZERO: error: 'dash.scheduled_attention_bwd' op exp2-chunks=0 needs mma=wgmma and must divide the 32 S^T values a thread holds at 64-row Q tiles
// RANGE: error: 'dash.scheduled_attention_bwd' op exp2-chunks must be a divisor of the thread's S^T values, or -1 for the default (got 128)
// SYNC: error: 'dash.scheduled_attention_bwd' op exp2-chunks=2 needs mma=wgmma and must divide
// ABSYNC: error: 'dash.scheduled_attention_bwd' op ablate-exp2=1 needs mma=wgmma
// ABBAD: error: 'dash.scheduled_attention_bwd' op ablate-exp2 must be 1, or 0 for the default (got 2)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
