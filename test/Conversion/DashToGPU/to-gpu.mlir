// RUN: dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=simt --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=simt --canonicalize --cse | FileCheck %s --check-prefix=NONDET
// RUN: dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=sync --canonicalize --cse | FileCheck %s --check-prefix=MMA
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=sync 2>&1 | FileCheck %s --check-prefix=MMATILE

// Run-time B, S, H and strides (one kernel for every shape), causal d=128.
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>

// The host function keeps its return: the runtime launches the kernels.
// CHECK: module attributes {gpu.container_module}
// CHECK: func.func @bwd
// CHECK-NEXT: return
// The config the AOT step writes into the manifest.
// CHECK: gpu.module @dash_kernels attributes {dash.config = {align = "bottom_right", block_m = 64 : i64, block_n = 64 : i64, debug_spin_limit = 0 : i64, deterministic = true, dkdv_direct = false, element_type = "bf16", head_dim = 128 : i64, loads = "cp-async", mask = "causal", mma = "simt", policy = "descending", shared_bytes = 65536 : i64, threads = 256 : i64}}
// The ABI: user tensors, workspace, scale (docs/Runtime.md).
// CHECK: gpu.func @dash_bwd_preprocess(%{{.*}}: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>> {dash.name = "q"}
// CHECK-SAME: {dash.name = "dq_accum"}
// CHECK-SAME: {dash.name = "semaphores"}, %{{.*}}: f32 {dash.name = "scale"}) kernel attributes {nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32}
// CHECK: arith.cmpf oeq
// The main kernel: one persistent CTA per unit, G = gridDim.x in the
// cloned schedule regions.
// CHECK: gpu.func @dash_bwd_main
// CHECK-DAG: %[[UNIT:.*]] = gpu.block_id x
// CHECK-DAG: %[[G:.*]] = gpu.grid_dim x
// CHECK-DAG: gpu.dynamic_shared_memory
// CHECK: scf.for %[[ITEM:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for %[[STEP:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.cmpi sle
// Deterministic: spin with an acquire load until the semaphore is the rank,
// add, fence, barrier, release increment.
// CHECK: scf.while
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addf
// CHECK: llvm.fence syncscope("device") release
// CHECK: gpu.barrier
// CHECK: llvm.fence syncscope("device") release
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") monotonic
// CHECK: gpu.func @dash_bwd_postprocess

// mma.sync tensor cores: 5 products per task on mma.sync m16n8k16 bf16;
// dV/dK are loop-carried registers of the walk (64 f32 per thread at D=128).
// MMA: shared_bytes = 130048 : i64
// MMA: gpu.func @dash_bwd_main
// The walk carries dV/dK (64 f32 per thread at D=128) and the pending dQ
// hand-off (Q tile, rank, pending).
// MMA: scf.for %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, index, index, index) {
// MMA: nvvm.ldmatrix
// MMA: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// The previous step's dQ hand-off, overlapped with this step's products:
// wait for the rank, bulk reduce-add from shared memory, wait for completion,
// release.
// MMA: scf.while
// MMA: llvm.load %{{.*}} atomic syncscope("device") acquire
// MMA: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// MMA: nvvm.inline_ptx "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;"
// MMA: nvvm.cp.async.bulk.commit.group
// MMA-NEXT: nvvm.cp.async.bulk.wait_group 0
// MMA-NOT: {read}
// MMA: llvm.fence syncscope("device") release
// MMA: llvm.atomicrmw add
// This step's partial is staged for the next hand-off.
// MMA: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// MMA: gpu.func @dash_bwd_postprocess
// The simt and mma.sync kernels always leave dK/dV in the f32 accumulators:
// the postprocess converts them whatever the grouping.
// MMA-NOT: arith.cmpi ne
// MMA: vector.load %arg10
// MMATILE: error: 'dash.scheduled_attention_bwd' op mma=sync needs 64x64 tiles, 256 threads and bf16 (got 64x128, 256 threads, 'bf16'); use mma=simt or dash-tile="block-m=64 block-n=64"

// NONDET: gpu.func @dash_bwd_main
// NONDET-NOT: scf.while
// NONDET: memref.atomic_rmw addf
// NONDET-NOT: llvm.atomicrmw
// NONDET: gpu.func @dash_bwd_postprocess
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
