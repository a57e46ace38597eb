// The warp-specialised WGMMA main kernel (the default mma=wgmma): two MMA
// warpgroups on 64x128 tiles and a dQ-reducer warp, hand-offs on named
// barriers, operands in 128B-swizzled shared tiles filled by cp.async.
// RUN: dash-opt %s --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=symmetric-shift --dash-materialize-schedule --convert-dash-to-gpu=loads=cp-async --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=loads=cp-async --canonicalize --cse | FileCheck %s --check-prefix=NONDET
// RUN: dash-opt %s --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu="loads=cp-async debug-spin-limit=5000" --canonicalize --cse | FileCheck %s --check-prefix=DEBUG
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not dash-opt %s --dash-tile="block-m=128 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu 2>&1 | FileCheck %s --check-prefix=TILE128
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=threads=256 2>&1 | FileCheck %s --check-prefix=THREADS
// D = 64 takes 128-row Q tiles: S^T is m64n128 and dQ is split by rows
// (each warpgroup 64 Q rows, all 64 columns), staging rows of 64 x 4 + 32 B.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=loads=cp-async --canonicalize --cse | FileCheck %s --check-prefix=D64
// D = 64 on 64-row Q tiles (scripts/aot --block-m 64=64): dQ split by
// columns again (n = 32 per warpgroup), dV issued before dP^T is waited for.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile="block-m=64 block-n=128" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D64BM64

// CHECK: dash.config = {{{.*}}block_m = 64 : i64, block_n = 128 : i64{{.*}}dkdv_direct = true{{.*}}mma = "wgmma", mma_regs = 240 : i64, policy = "symmetric_shift", shared_bytes = 218112 : i64, threads = 384 : i64}
// CHECK: gpu.func @dash_bwd_main(
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// The role is the warpgroup index broadcast from lane 0 (warp-uniform).
// CHECK: nvvm.shfl.sync  idx
// MMA warpgroups take registers from the reducer's warpgroup (240; the 232
// split is for the deterministic TMA kernels).
// CHECK: nvvm.setmaxregister  increase 240
// Per KV tile: K and V by 16-byte cp.async (zero-fill past S_k).
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// lse_log2 / dPsum rows by 4-byte cp.async.
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca
// The walk carries dV and dK (m64n128 f32 accumulators) in registers.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (!llvm.struct<(f32, {{.*}})>, !llvm.struct<(f32, {{.*}})>)
// Thread values rebuilt per step from an opaque copy (no hoisted addresses).
// CHECK: llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
// This step's tiles have landed; the next step's are prefetched.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// CHECK: scf.if
// CHECK: nvvm.cp.async.commit.group
// S^T = K Q^T: K-major A and B, the first k-step overwrites (scale-d 0).
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// dP^T = V dO^T in a second group; P is computed while it runs.
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// The per-element mask only on tiles that need it.
// CHECK: scf.if %{{.*}} -> (f32, {{.*}}) {
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.select
// CHECK: } else {
// CHECK-NOT: arith.select
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// Tensor-core order dV, dQ, dK (three groups). With 64-row Q tiles dV +=
// P^T dO goes out as soon as P^T is known: A from registers (inline PTX, 4
// b32 words of bf16 P^T), N-major B (dO), D = 128 columns; it runs behind
// dP^T and under the dS^T math.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, {{.*}}}, {$128, $129, $130, $131}, $132, p, 1, 1, 1;
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// This thread's dPsum pairs are read while dP^T finishes, then wait for S^T
// and dP^T only.
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// CHECK-NOT: wgmma
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// dS^T is visible to wgmma (for dQ); dS^T also stays in registers.
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// dQ = dS K after both warpgroups' dS: K-major A (ds-trans, the default at
// D = 128: the buffer holds dS), N-major B.
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// dK += dS^T Q (register A, N-major Q); then wait for dV and dQ only: the
// dQ hand-off below overlaps dK, which is waited for at the end of the step.
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, {{.*}}}, {$128, $129, $130, $131}, $132, p, 1, 1, 1;
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// Warpgroup w's part of staging buffer j = hand-off % 2 free (EMPTY, barrier
// 2 + 6j + 2w: this warpgroup and the reducer, 160 threads) -> store the
// partial -> FULL (barrier 3 + 6j + 2w).
// Staging rows are D x 4 + 32 = 544 B apart (half-warp stores conflict-free).
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: arith.muli %{{.*}}, %c544 : index
// CHECK: llvm.store %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// The item's epilogue: without GQA (H == H_kv) dV and scale * dK go to dv/dk
// as bf16 (no f32 workspace): each quad of lanes transposes its pairs with
// two butterfly shuffles (xor 2, then xor 1) so that a lane holds 8
// contiguous columns, stored as 16 bytes, predicated on the row (no branch
// around the shuffles); with GQA to the per-query-head f32 accumulators the
// postprocess sums.
// CHECK: %[[DIRECT:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if %[[DIRECT]] {
// CHECK: memref.extract_aligned_pointer_as_index %arg8
// CHECK: nvvm.shfl.sync  bfly %c-1_i32, %{{.*}}, %c2_i32, %c31_i32 : i32 -> i32
// CHECK: nvvm.shfl.sync  bfly %c-1_i32, %{{.*}}, %c1_i32, %c31_i32 : i32 -> i32
// CHECK: @p st.global.v4.b32 [$0], {$1, $2, $3, $4};
// CHECK: memref.extract_aligned_pointer_as_index %arg7
// CHECK: arith.mulf %{{.*}}, %arg15 : f32
// CHECK: @p st.global.v4.b32 [$0], {$1, $2, $3, $4};
// CHECK-NOT: vector.store %{{.*}}, %arg7
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %arg11[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x128xf32>, vector<2xf32>
// CHECK: vector.store %{{.*}}, %arg10[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x128xf32>, vector<2xf32>
// After the walks: the reducer's last EMPTY arrives of both buffers
// (barriers 2 + 2w and 8 + 2w).
// CHECK: %[[WG2:.*]] = arith.muli %{{.*}}, %c2_i32 : i32
// CHECK-NEXT: %[[E0:.*]] = arith.addi %[[WG2]], %c2_i32 : i32
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%[[E0]], %c160_i32
// CHECK-NEXT: %[[E1:.*]] = arith.addi %[[WG2]], %c8_i32 : i32
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%[[E1]], %c160_i32
// The reducers: 24 registers; warps 8 and 9 (threads 256..319), warp j owns
// staging buffer j, which starts free. Per hand-off of its parity: FULL, the
// rank wait, one bulk add per staging row, EMPTY once the copies have read
// the buffer, then full completion and the release.
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister  decrease 24
// CHECK-NEXT: %[[REDUCER:.*]] = arith.cmpi slt, %thread_id_x, %c320 : index
// CHECK-NEXT: scf.if %[[REDUCER]] {
// Both warpgroups' parts start free; FULL of both parts before the adds.
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: %[[MINE:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: nvvm.bar.warp.sync
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: nvvm.inline_ptx "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;" ro(%{{.*}}, %{{.*}}, %c512_i32
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// Then every lane waits for its adds and fences them at gpu scope itself
// (bar.warp.sync orders the lanes only informally), and lane 0 releases the
// row.
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: llvm.fence syncscope("device") release
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: scf.if
// CHECK-NEXT: llvm.fence syncscope("device") release
// CHECK-NEXT: llvm.atomicrmw add %{{.*}}, %c1_i32 syncscope("device") monotonic
// Postprocess: dQ always; the dK/dV group sums only with GQA.
// CHECK: gpu.func @dash_bwd_postprocess
// CHECK: vector.load %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x128xf32>, vector<8xf32>
// CHECK: vector.store %{{.*}}, %arg6[{{.*}}] {alignment = 16 : i64} : memref<?x?x?x128xbf16, {{.*}}>, vector<8xbf16>
// CHECK: %[[GQA:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if %[[GQA]] {
// CHECK: vector.load %arg10

// Non-deterministic: no semaphores, the staging buffer is free once read.
// Non-deterministic kernels keep 240 registers for the MMA warpgroups.
// NONDET: mma_regs = 240 : i64
// NONDET: gpu.func @dash_bwd_main
// NONDET: nvvm.setmaxregister  increase 240
// NONDET: nvvm.setmaxregister  decrease 24
// NONDET-NOT: atomic syncscope("device") acquire
// NONDET: nvvm.cp.async.bulk.wait_group 0 {read}
// NONDET: gpu.func @dash_bwd_postprocess

// The reducer's rank wait is the bounded, reporting spin in debug kernels.
// DEBUG: gpu.func @dash_bwd_main(
// DEBUG-SAME: dash.name = "debug"
// DEBUG: nvvm.setmaxregister  decrease 24
// DEBUG: scf.while
// DEBUG: arith.cmpi slt, %{{.*}}, %c5000_i64 : i64
// DEBUG: llvm.intr.trap

// Two dS^T buffers are the default only where measured (TMA, D = 128).
// D64BM64: block_m = 64 : i64, block_n = 128 : i64{{.*}}ds_buffers = 1 : i64{{.*}}loads = "tma"
// D64BM64: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// D64BM64: nvvm.wgmma.wait.group.sync.aligned 1
// D64BM64: llvm.inline_asm {{.*}}wgmma.mma_async.sync.aligned.m64n64k16
// D64BM64: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 32, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// D = 64 on 64-row Q tiles: each warpgroup's part is 64 rows x 32 columns
// (8 KiB), one bulk reduce-add each (deterministic: a copy for rank 0), no
// tensor reduce-add.
// D64BM64-COUNT-2: "{{.*}}@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;\0A}" ro(%{{.*}}, %{{.*}}, %c8192_i32
// D64BM64-NOT: nvvm.cp.async.bulk.tensor.reduce
// D64: block_m = 128 : i64, block_n = 128 : i64
// D64: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// 128-row Q tiles: P^T, its bf16 copy and dP^T do not fit in the registers
// together, so dV follows the dS^T math (wait for everything first).
// D64: nvvm.wgmma.wait.group.sync.aligned 1
// D64: nvvm.wgmma.wait.group.sync.aligned 0
// D64: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// D64-NEXT: nvvm.wgmma.fence.aligned
// D64: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $69, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// D64: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// D64: arith.muli %{{.*}}, %c288 : index
// D64: "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;" ro(%{{.*}}, %{{.*}}, %c256_i32

// TILE: error: 'dash.scheduled_attention_bwd' op mma=wgmma needs 128-row KV tiles, 64-row Q tiles (or 128 at D = 64) and bf16 (got 64x64 at D = 128, 'bf16'); use dash-tile="block-m=64 block-n=128"
// TILE128: error: 'dash.scheduled_attention_bwd' op mma=wgmma needs 128-row KV tiles, 64-row Q tiles (or 128 at D = 64) and bf16 (got 128x128 at D = 128, 'bf16')
// THREADS: error: 'dash.scheduled_attention_bwd' op mma=wgmma runs 384 threads (2 MMA warpgroups + the dQ reducer's warpgroup); got threads=256
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
