// dps-fold: dPsum folded into dP^T as a ninth k-step. The preprocess writes
// each row's dPsum as a bf16 pair (hi, lo = dPsum - hi) in the bytes of the
// head's f32 row; the producer loads both rows of a Q tile (one 4-D box)
// into k-rows 0 and 1 of the stage's 128B-swizzled atom; the k-step's A is
// -1 in K columns 0 and 1 of every KV row (two unswizzled core matrices,
// written once with the atoms' zeros), so dP^T's accumulator holds
// dP - dPsum and the dS math reads no dPsum. At 128-row Q tiles (D = 64) a
// stage has one atom per 64 Q rows (two copies, the B's panels one LBO apart)
// and dP^T starts at zero instead of at dPsum (stats-in-acc 0); the atoms
// leave room for two dS^T buffers and one dQ staging buffer, or one and two,
// and the default takes the first. dps-fold=2 ("rows") reads the hi and lo
// rows as the TMA copies them (one unswizzled box of bm Q rows) as an
// unswizzled B: Q blocks of 8 at 16-byte steps (SBO 16), the lo row one LBO
// (2 bm bytes) on, against A = -1 in K columns 0 and 8; 4 bm + 128 bytes a
// stage, so two dQ staging buffers still fit at D = 64.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1" --canonicalize --cse | FileCheck %s --check-prefix=FULL
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=2" --canonicalize --cse | FileCheck %s --check-prefix=ROWS
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=2" --canonicalize --cse | FileCheck %s --check-prefix=ROWS64
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=3" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1" --canonicalize --cse | FileCheck %s --check-prefix=D64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 dq-buffers=2" | FileCheck %s --check-prefix=D64DQ2
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=2 stats-in-acc=1" 2>&1 | FileCheck %s --check-prefix=ACC
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-shfl=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 stats-in-main=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 dps-ahead=1" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=1 loads=cp-async" 2>&1 | FileCheck %s --check-prefix=NEEDS

// The manifest says so (the runtime builds dPsum's map from it); the atoms
// and A's core matrices take 2 KiB + 256 B where the f32 rows took 512 B.
// CHECK: dps_fold = "atoms"
// CHECK-SAME: shared_bytes = 232272
// The preprocess: hi, then lo = dPsum - hi, as bf16 at s and S + s.
// CHECK-LABEL: gpu.func @dash_bwd_preprocess
// CHECK: %[[HI:.*]] = arith.truncf %[[DPS:.*]] : f32 to bf16
// CHECK: %[[HIF:.*]] = arith.extf %[[HI]] : bf16 to f32
// CHECK: %[[RES:.*]] = arith.subf %[[DPS]], %[[HIF]] : f32
// CHECK: %[[LO:.*]] = arith.truncf %[[RES]] : f32 to bf16
// CHECK: llvm.store %[[HI]], %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK: llvm.store %[[LO]], %{{.*}} {alignment = 2 : i64} : bf16, !llvm.ptr<1>
// CHECK-LABEL: gpu.func @dash_bwd_main
// Before the roles: 128 + 16 threads write the atoms' zeros and A (-1.0 as a
// bf16 pair: 0xBF80BF80), then the proxy fence, then the CTA barrier.
// CHECK: %[[ONES:.*]] = arith.select %{{.*}}, %c-1082081408_i32, %c0_i32 : i32
// CHECK: vector.from_elements %[[ONES]], %c0_i32, %c0_i32, %c0_i32 : vector<4xi32>
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: gpu.barrier
// The step: lse_log2's 8 pairs ahead of the products, no dPsum anywhere.
// CHECK-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// CHECK-NOT: -> vector<2xf32>
// S^T: 8 k-steps, one group.
// CHECK-COUNT-8: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// dP^T: 8 k-steps and the folded ninth in the same group: A K-major from
// onesA (LBO 128 = the K core matrix, SBO 0, no swizzle: the descriptor's
// high word stays 0), B N-major from the stage's atom (SBO 0, 128B swizzle).
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} B[<bf16>, <one>, <col>]
// CHECK: %[[BL:.*]] = arith.ori %{{.*}}, %c4194304_i32 : i32
// CHECK-NEXT: %[[BW:.*]] = arith.extui %[[BL]] : i32 to i64
// CHECK-NEXT: %[[B:.*]] = arith.ori %[[BW]], %c4611686018427387904_i64 : i64
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
// The producer: lse_log2's 3-D box, then dPsum's 4-D one (row 0 of the hi /
// lo pair) into the stage's atom.
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0:[0-9]+]], %[[H:[0-9]+]], %[[BB:[0-9]+]]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0]], %c0_i32, %[[H]], %[[BB]]]

// OFF-NOT: dps_fold
// OFF: shared_bytes = 230480
// OFF-LABEL: gpu.func @dash_bwd_preprocess
// OFF-NOT: : bf16, !llvm.ptr<1>
// OFF: llvm.store {{.*}} : f32, !llvm.ptr<1>
// OFF-LABEL: gpu.func @dash_bwd_main
// OFF-NOT: vector<4xi32>, !llvm.ptr<3>
// OFF: gpu.barrier

// Full masks (the dS pass after the join): the same ninth k-step, no dPsum.
// FULL: dps_fold = "atoms"
// FULL-LABEL: gpu.func @dash_bwd_main
// FULL-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// FULL-NOT: -> vector<2xf32>
// FULL: nvvm.wgmma.mma_async {{.*}} B[<bf16>, <one>, <row>]
// FULL-NEXT: nvvm.wgmma.commit.group.sync.aligned
// FULL-NOT: -> vector<2xf32>
// FULL: nvvm.wgmma.wait.group.sync.aligned 0
// FULL-NOT: llvm.load {{.*}} -> f32
// FULL: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>

// D = 64: one dQ staging buffer by default, dP^T from zero, 2 x 2 atoms.
// D64: dps_fold = "atoms"
// D64-SAME: dq_buffers = 1
// D64-SAME: shared_bytes = 202056
// D64-SAME: stats_in_acc = 0
// D64-LABEL: gpu.func @dash_bwd_main
// D64-COUNT-4: nvvm.wgmma.mma_async {{.*}}, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// D64-NEXT: nvvm.wgmma.commit.group.sync.aligned
// D64-COUNT-4: nvvm.wgmma.mma_async {{.*}}, D[<f32>, <{{zero|one}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// D64: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// D64-NEXT: nvvm.wgmma.commit.group.sync.aligned
// D64-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// The producer: one 4-D copy per 64 Q rows, the second at q0 + 64 into the
// next atom.
// D64: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0:[0-9]+]], %c0_i32, %[[H:[0-9]+]], %[[BB:[0-9]+]]]
// D64: %[[Q64:.*]] = arith.addi %{{.*}}, %c64 : index
// D64-NEXT: arith.index_cast %[[Q64]] : index to i32
// D64: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%{{[0-9]+}}, %c0_i32, %[[H]], %[[BB]]]
// Two staging buffers asked for: then one dS^T buffer fits beside them.
// D64DQ2: dps_fold = "atoms"
// D64DQ2-SAME: dq_buffers = 2
// D64DQ2-SAME: ds_buffers = 1

// "rows": 2 x (4 bm + 128) bytes of stages where the f32 rows took 2 x 4 bm.
// ROWS: dps_fold = "rows"
// ROWS-SAME: shared_bytes = 230992
// ROWS-LABEL: gpu.func @dash_bwd_main
// A's 16 rows each start with one bf16 -1.0 (0xBF80: K columns 0 and 8).
// ROWS: %[[ONE:.*]] = arith.select %{{.*}}, %c49024_i32, %c0_i32 : i32
// ROWS: vector.from_elements %[[ONE]], %c0_i32, %c0_i32, %c0_i32 : vector<4xi32>
// ROWS-COUNT-8: llvm.load {{.*}} -> vector<2xf32>
// ROWS-NOT: -> vector<2xf32>
// ROWS-COUNT-8: nvvm.wgmma.mma_async {{.*}} B[<bf16>, <one>, <col>]
// B: LBO 128 (the lo row, 2 bm bytes on), SBO 16 (1 << 32), unswizzled.
// ROWS: %[[BL:.*]] = arith.ori %{{.*}}, %c524288_i32 : i32
// ROWS-NEXT: %[[BW:.*]] = arith.extui %[[BL]] : i32 to i64
// ROWS-NEXT: %[[B:.*]] = arith.ori %[[BW]], %c4294967296_i64 : i64
// ROWS: %[[AL:.*]] = arith.ori %{{.*}}, %c524288_i32 : i32
// ROWS-NEXT: %[[A:.*]] = arith.extui %[[AL]] : i32 to i64
// ROWS-NEXT: nvvm.wgmma.mma_async %[[A]], %[[B]], %{{.*}} B[<bf16>, <one>, <row>]
// ROWS-NEXT: nvvm.wgmma.commit.group.sync.aligned
// The producer: one 4-D copy of both rows.
// ROWS: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0:[0-9]+]], %[[H:[0-9]+]], %[[BB:[0-9]+]]]
// ROWS-NOT: cp.async.bulk.tensor
// ROWS: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%[[Q0]], %c0_i32, %[[H]], %[[BB]]]
// ROWS-NEXT: }
// At D = 64 two dS^T and two dQ staging buffers fit beside it; LBO 256.
// ROWS64: dps_fold = "rows"
// ROWS64-SAME: dq_buffers = 2
// ROWS64-SAME: ds_buffers = 2
// ROWS64-SAME: shared_bytes = 232016
// ROWS64-LABEL: gpu.func @dash_bwd_main
// ROWS64: %[[BL:.*]] = arith.ori %{{.*}}, %c1048576_i32 : i32
// ROWS64-NEXT: %[[BW:.*]] = arith.extui %[[BL]] : i32 to i64
// ROWS64-NEXT: %[[B:.*]] = arith.ori %[[BW]], %c4294967296_i64 : i64
// ROWS64: nvvm.wgmma.mma_async %{{.*}}, %[[B]], %{{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]

// RANGE: error: 'dash.scheduled_attention_bwd' op dps-fold must be 0, 1 or 2, or -1 for the default (got 3)
// ACC: error: 'dash.scheduled_attention_bwd' op dps-fold=2 needs mma=wgmma with loads=tma, stats-in-acc=0 and none of stats-shfl, stats-in-main or dps-ahead (they read dPsum as f32)
// NEEDS: error: 'dash.scheduled_attention_bwd' op dps-fold=1 needs mma=wgmma with loads=tma, stats-in-acc=0 and none of stats-shfl, stats-in-main or dps-ahead

!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
