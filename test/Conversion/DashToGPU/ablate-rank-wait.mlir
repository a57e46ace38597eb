// ablate-rank-wait=1 builds diagnostic kernels (WRONG gradients: the rank-0
// store may land after another rank's add) whose deterministic dQ reducers
// add and release without waiting for the row's rank, to measure what the
// ordered chain costs the deterministic kernels (bench/NOTES.md section
// 28). The shipped reducer polls the row's semaphore with acquire loads
// before its first bulk store-or-add; the ablated one goes straight to the
// adds, and still waits for them and releases the row (so the dQ
// conversion's counts still complete). Non-deterministic kernels wait for no
// rank: the option leaves them as they are.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=SHIPPED
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ablate-rank-wait=1" --canonicalize --cse | FileCheck %s --check-prefix=ABLATE
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ablate-rank-wait=1 counted-adds=0" --canonicalize --cse | FileCheck %s --check-prefix=NONDET
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ablate-rank-wait=2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async ablate-rank-wait=1" 2>&1 | FileCheck %s --check-prefix=CPASYNC

// SHIPPED-NOT: ablate_rank_wait
// SHIPPED-LABEL: gpu.func @dash_bwd_main
// The dQ conversion's poll (after the walk), then the reducer's rank poll
// ahead of its first add.
// SHIPPED-COUNT-2: llvm.load %{{.*}} atomic syncscope("device") acquire
// SHIPPED: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// SHIPPED: cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\0A@!p cp.reduce.async.bulk

// ABLATE: ablate_rank_wait = true
// ABLATE-LABEL: gpu.func @dash_bwd_main
// The only acquire polls left are the dQ conversion's (after the walk).
// ABLATE-COUNT-1: llvm.load %{{.*}} atomic syncscope("device") acquire
// ABLATE-NOT: llvm.load %{{.*}} atomic syncscope("device") acquire
// ABLATE: cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\0A@!p cp.reduce.async.bulk
// ABLATE: cp.async.bulk.wait_group 0
// ABLATE: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// ABLATE: llvm.atomicrmw add %{{.*}}, %c1_i32 syncscope("device") monotonic

// NONDET-NOT: ablate_rank_wait
// NONDET-LABEL: gpu.func @dash_bwd_main
// NONDET-NOT: atomic syncscope("device") acquire
// NONDET: cp.reduce.async.bulk

// BAD: error: 'dash.scheduled_attention_bwd' op ablate-rank-wait must be 1, or 0 for the default (got 2)
// CPASYNC: error: 'dash.scheduled_attention_bwd' op ablate-rank-wait=1 needs mma=wgmma with loads=tma

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
