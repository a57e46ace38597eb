// ds-in-pass: dS = P (dP - dPsum) computed inside the exp2 pass. Each
// branch of the pass (masked: the diagonal tiles; plain: the rest) runs
// the first exp2 chunks, the wait for dP^T after chunk ds-wait-chunk, then
// each pair's exp2, dS math and packing, and the dS^T stores (stmatrix),
// and yields P's and dS's bf16 pairs, so ptxas schedules the dS math under
// the pass's exp2s in one block. Default: on at 128-row Q tiles (D = 64,
// 8 chunks, the wait after 4) and in causal kernels on 64-row tiles (D =
// 128, 8 chunks, the wait after 4), deterministic or not; off in D = 128
// full-mask kernels, where the wait and the dS pass follow the branch's
// join.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-wait-chunk=0" --canonicalize --cse | FileCheck %s --check-prefix=W0
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s 
// RUN: sed 's/x64xbf16/x128xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D128DEF
// RUN: sed 's/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefixes=OFF,OFF128
// RUN: sed 's/x64xbf16/x128xbf16/; s/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D128DEF
// RUN: sed 's/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/; s/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefixes=OFF,OFF128
// RUN: sed 's/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/; s/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=ND128FULL
// RUN: sed 's/x64xbf16/x128xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=1 exp2-chunks=1" --canonicalize --cse | FileCheck %s --check-prefix=D128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-wait-chunk=9" 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=0 ds-wait-chunk=2" 2>&1 | FileCheck %s --check-prefix=NOFUSE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=1 early-dv=1" 2>&1 | FileCheck %s --check-prefix=EARLYDV
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=1 ds-buffers=1" 2>&1 | FileCheck %s --check-prefix=EARLYDV
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=EARLYDV
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-in-pass=2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-wait-chunk=65" 2>&1 | FileCheck %s --check-prefix=WRANGE
// dps-ahead=N (64-row tiles): dPsum read N chunks ahead of the wait, or
// (ds-wait-chunk + 1) its first half with lse_log2 before the products.
// Shown with the pass in 4 chunks (the wait after 2), where it was measured.
// RUN: sed 's/x64xbf16/x128xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DPS0
// RUN: sed 's/x64xbf16/x128xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=4 dps-ahead=1" --canonicalize --cse | FileCheck %s --check-prefix=DPS1
// RUN: sed 's/x64xbf16/x128xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=4 dps-ahead=3" --canonicalize --cse | FileCheck %s --check-prefix=DPS3
// RUN: sed 's/x64xbf16/x128xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=exp2-chunks=4 dps-ahead=4" 2>&1 | FileCheck %s --check-prefix=DPSFAR
// RUN: sed 's/x64xbf16/x128xbf16/; s/mask = causal align = bottom_right/mask = full/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-ahead=1" 2>&1 | FileCheck %s --check-prefix=DPSOFF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-ahead=1" 2>&1 | FileCheck %s --check-prefix=DPSOFF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-ahead=66" 2>&1 | FileCheck %s --check-prefix=DPSRANGE
// stats-shfl=1: lse_log2 and dPsum held bm / 32 per lane (two pairs at
// 128-row tiles), each thread's column by a shuffle at use; dP^T starts at
// zero (stats-in-acc 0 by default then, and required).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-shfl=1" --canonicalize --cse | FileCheck %s --check-prefix=SHFL
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-shfl=1 stats-in-acc=1" 2>&1 | FileCheck %s --check-prefix=SHFLACC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-shfl=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=SHFLACC

// CHECK: ds_in_pass = true
// CHECK-SAME: ds_wait_chunk = 4
// CHECK-SAME: exp2_chunks = 8
// D = 64 causal kernels split the registers 232 / 40 (full masks: 240 / 24,
// test/Tools/aot/options.test).
// CHECK-SAME: mma_regs = 232 : i64
// The walk's step: S^T and dP^T issued, S^T waited for.
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.if %{{.*}} -> (i32, i32,
// The masked branch: four chunks (32 exp2), the wait for dP^T, then the
// rest of the pass with the dS math and the dS^T stores, all before the
// branch yields its 32 + 32 packed pairs.
// CHECK-COUNT-32: llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT: llvm.nvvm.ex2.approx.ftz.f
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK: nvvm.stmatrix
// CHECK-NOT: nvvm.wgmma.wait.group
// CHECK: scf.yield
// CHECK-SAME: : i32, i32,
// CHECK-NEXT: } else {
// CHECK-COUNT-32: llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT: llvm.nvvm.ex2.approx.ftz.f
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK-COUNT-8: nvvm.stmatrix
// CHECK-NOT: nvvm.wgmma.wait.group
// CHECK: scf.yield
// After the join: no second wait and no stores of dS^T before its proxy
// fence and dV.
// CHECK-NEXT: }
// CHECK-NOT: nvvm.wgmma.wait.group
// CHECK-NOT: nvvm.stmatrix
// CHECK: nvvm.fence.proxy

// W0: ds_wait_chunk = 0
// W0: scf.if %{{.*}} -> (i32, i32,
// W0-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// W0: } else {
// W0-NEXT: nvvm.wgmma.wait.group.sync.aligned 0

// Off: the branches yield P's f32 values; the wait and the dS^T stores
// follow the join.
// OFF: ds_in_pass = false
// D = 128 full masks and non-deterministic kernels: one pass.
// OFF128-SAME: exp2_chunks = 1
// OFF-NOT: ds_wait_chunk
// OFF: scf.if %{{.*}} -> (f32, f32,
// OFF-NOT: nvvm.wgmma.wait.group
// OFF-NOT: nvvm.stmatrix
// OFF: scf.yield
// OFF: nvvm.wgmma.wait.group.sync.aligned 0
// OFF: nvvm.stmatrix

// D = 128 deterministic causal by default: 8 chunks of 4, the wait after
// the fourth (16 exp2 in each branch before it).
// D128DEF: ds_in_pass = true
// D128DEF-SAME: ds_wait_chunk = 4
// D128DEF-SAME: exp2_chunks = 8
// Non-deterministic kernels too (their step in the deterministic form: 232
// MMA registers, the producer on its warp); at D = 128 full masks they keep
// 240 registers.
// D128DEF-SAME: mma_regs = 232 : i64
// D128DEF-SAME: warp_producer = true
// ND128FULL: deterministic = false
// ND128FULL-SAME: mma_regs = 240 : i64
// ND128FULL-SAME: warp_producer = true
// D128DEF: scf.if %{{.*}} -> (i32, i32,
// D128DEF-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// D128DEF-NOT: llvm.nvvm.ex2.approx.ftz.f
// D128DEF: nvvm.wgmma.wait.group.sync.aligned 0
// D128DEF-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// D128DEF-NOT: llvm.nvvm.ex2.approx.ftz.f
// D128DEF: } else {
// D128DEF-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// D128DEF-NOT: llvm.nvvm.ex2.approx.ftz.f
// D128DEF: nvvm.wgmma.wait.group.sync.aligned 0
// D128DEF-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// D128DEF-NOT: llvm.nvvm.ex2.approx.ftz.f
// D128DEF: scf.yield

// D = 128 in one pass (exp2-chunks=1) with ds-in-pass=1: the wait (after the
// dPsum loads) ahead of the pass's first exp2.
// D128: ds_in_pass = true
// D128-SAME: ds_wait_chunk = 0
// D128: scf.if %{{.*}} -> (i32, i32,
// D128-NOT: llvm.nvvm.ex2.approx.ftz.f
// D128: nvvm.wgmma.wait.group.sync.aligned 0
// D128: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"

// Default: lse_log2's 8 pairs before the products, dPsum's 8 in each
// branch right before the wait for dP^T.
// DPS0-NOT: dps_ahead
// DPS0-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// DPS0-NOT: -> vector<2xf32>
// DPS0: nvvm.wgmma.mma_async
// DPS0: scf.if %{{.*}} -> (i32, i32,
// DPS0-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// DPS0-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// DPS0-NOT: llvm.nvvm.ex2.approx.ftz.f
// DPS0: nvvm.wgmma.wait.group.sync.aligned 0
// DPS1: dps_ahead = 1
// DPS1: scf.if %{{.*}} -> (i32, i32,
// DPS1-COUNT-8: llvm.nvvm.ex2.approx.ftz.f
// DPS1-NOT: llvm.nvvm.ex2.approx.ftz.f
// DPS1-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// DPS1-NOT: llvm.load {{.*}} -> vector<2xf32>
// DPS1: nvvm.wgmma.wait.group.sync.aligned 0
// DPS3: dps_ahead = 3
// DPS3-COUNT-12: llvm.load {{.*}} -> vector<2xf32>
// DPS3-NOT: -> vector<2xf32>
// DPS3: nvvm.wgmma.mma_async
// DPS3: scf.if %{{.*}} -> (i32, i32,
// DPS3-COUNT-16: llvm.nvvm.ex2.approx.ftz.f
// DPS3-COUNT-4: llvm.load {{.*}} -> vector<2xf32>
// DPS3-NOT: llvm.nvvm.ex2.approx.ftz.f
// DPS3: nvvm.wgmma.wait.group.sync.aligned 0
// DPSFAR: error: 'dash.scheduled_attention_bwd' op dps-ahead=4 needs ds-in-pass on 64-row Q tiles, stats-in-acc=0 and at most ds-wait-chunk + 1 (3: with lse_log2, before the products)
// DPSOFF: error: 'dash.scheduled_attention_bwd' op dps-ahead=1 needs ds-in-pass on 64-row Q tiles
// DPSRANGE: error: 'dash.scheduled_attention_bwd' op dps-ahead must be 0 .. ds-wait-chunk + 1, or -1 for the default (got 66)

// SHFL: stats_in_acc = 0
// SHFL-SAME: stats_shfl = true
// The walk's step: 2 + 2 held pairs before the products, nothing read at
// use: 32 shuffles for lse_log2 and 32 for dPsum in each branch.
// SHFL-COUNT-4: llvm.load {{.*}} -> vector<2xf32>
// SHFL-NOT: -> vector<2xf32>
// SHFL: nvvm.wgmma.mma_async
// SHFL: scf.if %{{.*}} -> (i32, i32,
// SHFL-COUNT-64: gpu.shuffle  idx
// SHFL-NOT: llvm.load {{.*}} -> f32
// SHFL: } else {
// SHFL-COUNT-64: gpu.shuffle  idx
// SHFL-NOT: llvm.load {{.*}} -> f32
// SHFL: scf.yield
// SHFLACC: error: 'dash.scheduled_attention_bwd' op stats-shfl=1 needs mma=wgmma with loads=tma and stats-in-acc=0

// LATE: error: 'dash.scheduled_attention_bwd' op ds-wait-chunk=9 needs ds-in-pass=1 and at most exp2-chunks (8)
// NOFUSE: error: 'dash.scheduled_attention_bwd' op ds-wait-chunk=2 needs ds-in-pass=1 and at most exp2-chunks (8)
// EARLYDV: error: 'dash.scheduled_attention_bwd' op ds-in-pass=1 needs mma=wgmma with loads=tma, early-dv=0 and two dS^T buffers or dq-kv-split=1
// RANGE: error: 'dash.scheduled_attention_bwd' op ds-in-pass must be 0 or 1, or -1 for the default (got 2)
// WRANGE: error: 'dash.scheduled_attention_bwd' op ds-wait-chunk must be 0 .. exp2-chunks, or -1 for the default (got 65)

!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
