// dps-fold: dPsum folded into dP^T as a ninth k-step. The preprocess writes
// each row's dPsum as a bf16 pair (hi, lo = dPsum - hi) in the bytes of the
// head's f32 row; the producer loads both rows of a Q tile as one
// unswizzled 4-D box; the k-step reads them as an unswizzled N-major B (Q
// blocks of 8 at 16-byte steps, SBO 16; the lo row one LBO = 2 bm bytes on)
// against A = -1 in K columns 0 and 8 of every KV row (two unswizzled core
// matrices written once, with the stages' zeros), so dP^T's accumulator
// holds dP - dPsum and the dS math reads no dPsum; 4 bm + 128 bytes a stage.
// On by default at D = 64 (bench/NOTES.md section 45), off at D = 128.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1" --canonicalize --cse | FileCheck %s --check-prefix=FULL
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=0" | FileCheck %s --check-prefix=OFF64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-shfl=1" | FileCheck %s --check-prefix=OFF64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-acc=1" | FileCheck %s --check-prefix=OFF64
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-in-acc=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-shfl=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-in-main=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 dps-ahead=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-in-acc=2" 2>&1 | FileCheck %s --check-prefix=NEEDS

// The manifest says so (the runtime builds dPsum's map from it): 2 x (4 bm +
// 128) bytes of stages where the f32 rows took 2 x 4 bm, and A's 256 B.
// CHECK: dps_fold = "rows"
// CHECK-SAME: shared_bytes = 230992
// CHECK-SAME: stats_in_acc = 0
// The preprocess: hi, then lo = dPsum - hi, as bf16 at s and S + s.
// CHECK-LABEL: gpu.func @dash_bwd_preprocess
// CHECK: %[[HI:.*]] = arith.truncf %[[DPS:.*]] : f32 to bf16
// CHECK: %[[HIF:.*]] = arith.extf %[[HI]] : bf16 to f32
// CHECK: %[[RES:.*]] = arith.subf %[[DPS]], %[[HIF]] : f32
// CHECK: %[[LO:.*]] = arith.truncf %[[RES]] : f32 to bf16
// CHECK: llvm.store %[[HI]], %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK: llvm.store %[[LO]], %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK-LABEL: gpu.func @dash_bwd_main
// Before the roles: the stages' zeros and A, whose 16 rows each start with
// one bf16 -1.0 (0xBF80), then the proxy fence, then the CTA barrier.
// CHECK: %[[ONE:.*]] = arith.select %{{.*}}, %c49024_i32, %c0_i32 : i32
// CHECK: vector.from_elements %[[ONE]], %c0_i32, %c0_i32, %c0_i32 : vector<4xi32>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: gpu.barrier
// The step: lse_log2's 8 pairs ahead of the products, no dPsum anywhere.
// CHECK-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// CHECK-NOT: -> vector<2xf32>
// S^T: 8 k-steps, one group.
// CHECK-COUNT-8: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// dP^T: 8 k-steps and the folded ninth in the same group. B: LBO 128 (the lo
// row, 2 bm bytes on), SBO 16 (1 << 32), unswizzled; A K-major from onesA
// (LBO 128 = the K core matrix, SBO 0, unswizzled).
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} B[<bf16>, <one>, <col>]
// CHECK: %[[BL:.*]] = arith.ori %{{.*}}, %c524288_i32 : i32
// CHECK-NEXT: %[[BW:.*]] = arith.extui %[[BL]] : i32 to i64
// CHECK-NEXT: %[[B:.*]] = arith.ori %[[BW]], %c4294967296_i64 : i64
// CHECK: %[[AL:.*]] = arith.ori %{{.*}}, %c524288_i32 : i32
// CHECK-NEXT: %[[A:.*]] = arith.extui %[[AL]] : i32 to i64
// CHECK-NEXT: nvvm.wgmma.mma_async %[[A]], %[[B]], %{{.*}} D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// In both branches of the pass the wait for dP^T, then dS = P * acc with no
// load between.
// CHECK: scf.if %{{.*}} -> (i32, i32,
// CHECK-NOT: -> vector<2xf32>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: llvm.load {{.*}} -> f32
// CHECK: } else {
// CHECK-NOT: -> vector<2xf32>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: llvm.load {{.*}} -> f32
// CHECK: scf.yield
// The producer: lse_log2's 3-D box, then dPsum's 4-D one (both rows), and
// no other copy of the stage.
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0:[0-9]+]], %[[H:[0-9]+]], %[[BB:[0-9]+]]]
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0]], %c0_i32, %[[H]], %[[BB]]]
// CHECK-NEXT: }

// The default at D = 128: dPsum as f32 rows, read by the dS math.
// OFF-NOT: dps_fold
// OFF: shared_bytes = 230480
// OFF-LABEL: gpu.func @dash_bwd_preprocess
// OFF-NOT: : bf16, !llvm.ptr<1>
// OFF: llvm.store {{.*}} : f32, !llvm.ptr<1>
// OFF-LABEL: gpu.func @dash_bwd_main
// OFF-NOT: vector<4xi32>, !llvm.ptr<3>
// OFF: gpu.barrier

// Full masks (the dS pass after the join): the same ninth k-step, no dPsum.
// FULL: dps_fold = "rows"
// FULL-LABEL: gpu.func @dash_bwd_main
// FULL-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// FULL-NOT: -> vector<2xf32>
// FULL: nvvm.wgmma.mma_async {{.*}} B[<bf16>, <one>, <row>]
// FULL-NEXT: nvvm.wgmma.commit.group.sync.aligned
// FULL-NOT: -> vector<2xf32>
// FULL: nvvm.wgmma.wait.group.sync.aligned 0
// FULL-NOT: llvm.load {{.*}} -> f32
// FULL: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>

// The default at D = 64: folded, dP^T from zero, and two dS^T and two dQ
// staging buffers still fit beside it; B's LBO 256 (2 bm).
// D64: dps_fold = "rows"
// D64-SAME: dq_buffers = 2
// D64-SAME: ds_buffers = 2
// D64-SAME: shared_bytes = 232016
// D64-SAME: stats_in_acc = 0
// D64-LABEL: gpu.func @dash_bwd_main
// The layout: A (onesA, 256 B) right after the two dS^T buffers (163840),
// then the two 640-byte stages (164096), then dQ's staging (165376), so that
// compute-sanitizer's dense view of each operand (2048 B from A, bm x 16
// bf16 from a stage) stays inside the allocation.
// D64: %c165376 = arith.constant 165376 : index
// D64: %[[STAGES:.*]] = arith.addi %{{.*}}, %c164096 : index
// D64: %[[ONES:.*]] = arith.addi %{{.*}}, %c163840 : index
// D64: nvvm.fence.proxy
// D64-COUNT-4: nvvm.wgmma.mma_async {{.*}}, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// D64-NEXT: nvvm.wgmma.commit.group.sync.aligned
// D64-COUNT-4: nvvm.wgmma.mma_async {{.*}}, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// D64: %[[BL:.*]] = arith.ori %{{.*}}, %c1048576_i32 : i32
// D64-NEXT: %[[BW:.*]] = arith.extui %[[BL]] : i32 to i64
// D64-NEXT: %[[B:.*]] = arith.ori %[[BW]], %c4294967296_i64 : i64
// D64: nvvm.wgmma.mma_async %{{.*}}, %[[B]], %{{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// D64-NEXT: nvvm.wgmma.commit.group.sync.aligned
// D64-NEXT: nvvm.wgmma.wait.group.sync.aligned 1

// Off at D = 64 (asked for, or where another statistics form reads dPsum
// itself): dPsum back as dP^T's start, or as the chosen form wants.
// OFF64-NOT: dps_fold
// OFF64: gpu.func @dash_bwd_preprocess
// OFF64-NOT: : bf16, !llvm.ptr<1>
// OFF64: llvm.store {{.*}} : f32, !llvm.ptr<1>

// RANGE: error: 'dash.scheduled_attention_bwd' op dps-fold must be 0 or 1, or -1 for the default (got 2)
// NEEDS: error: 'dash.scheduled_attention_bwd' op dps-fold=1 needs mma=wgmma with loads=tma, stats-in-acc=0 and none of stats-shfl, stats-in-main or dps-ahead (they read dPsum as f32)

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
