// The elementwise kernels around the main one: one warp per row (up to four rows
// in flight per warp), each lane D/32 contiguous elements as one vector access, rows walked by a
// mixed-radix counter (no division inside the row loops; an empty row space,
// e.g. dk_accum of a kernel that writes dk/dv itself, skips the divisions).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=D64

// CHECK-LABEL: gpu.func @dash_bwd_preprocess
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi sgt, %{{.*}}, %c0 : index
// CHECK-NEXT: scf.if %[[NONEMPTY]] {
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (index, index, index) {
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// dPsum: dO . O of the lane's 4 elements, then a butterfly over the warp.
// At D = 128 one row per iteration (D64 below: four).
// CHECK: vector.load %arg4[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x128xbf16, {{.*}}>, vector<4xbf16>
// CHECK: vector.load %arg3[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x128xbf16, {{.*}}>, vector<4xbf16>
// CHECK-NOT: scf.if
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// Lane 0 writes dPsum and lse_log2; every lane zeroes its part of row s of
// dq_accum.
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg12
// CHECK: memref.store %{{.*}}, %arg13
// CHECK: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 16 : i64} : memref<?x?x?x128xf32>, vector<4xf32>
// The counter: digit + step + carry wraps with one subtraction.
// CHECK: arith.cmpi uge
// CHECK: arith.select
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : index, index, index
// The "tiles" layout pads dq_accum's rows to whole Q tiles: rows S_q + p
// for p below (its rows - S_q); then dk_accum, dv_accum, the semaphores.
// CHECK: %[[ROWS:.*]] = memref.dim %arg9, %c2
// CHECK-NEXT: %[[PAD:.*]] = arith.subi %[[ROWS]], %[[SQ:.*]] : index
// CHECK: %[[PADROW:.*]] = arith.addi %[[SQ]], %{{.*}} : index
// CHECK: vector.store %{{.*}}, %arg9[%{{.*}}, %{{.*}}, %[[PADROW]], %{{.*}}] {alignment = 16 : i64}
// CHECK: vector.store %{{.*}}, %arg10
// CHECK: vector.store %{{.*}}, %arg11
// CHECK: memref.collapse_shape %arg14
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @dash_bwd_postprocess
// CHECK: scf.for {{.*}} iter_args(%[[B:.*]] = %{{.*}}, %[[H:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (index, index, index) {
// CHECK-NOT: arith.divui
// dq_accum in the "tiles" layout (D = 128, 64-row Q tiles): row s of column
// c = 4 lane is element ((c / 64) * 4096 + (c % 64 / 8) * 512 + (s % 64) * 8
// + c % 8) of the tile from row s - s % 64, by shifts and masks.
// CHECK: %[[C:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK: %[[R:.*]] = arith.andi %[[S]], %c63 : index
// CHECK: %[[Q0:.*]] = arith.subi %[[S]], %[[R]] : index
// CHECK: %[[PART:.*]] = arith.shrui %[[C]], %c6 : index
// CHECK: %[[CP:.*]] = arith.andi %[[C]], %c63 : index
// CHECK: %[[POFF:.*]] = arith.shli %[[PART]], %c12 : index
// CHECK: %[[PANEL:.*]] = arith.shrui %[[CP]], %c3 : index
// CHECK: %[[PANOFF:.*]] = arith.shli %[[PANEL]], %c9 : index
// CHECK: %[[HI:.*]] = arith.addi %[[POFF]], %[[PANOFF]] : index
// CHECK: %[[ROFF:.*]] = arith.shli %[[R]], %c3 : index
// CHECK: %[[CL:.*]] = arith.andi %[[CP]], %c7 : index
// CHECK: %[[LO:.*]] = arith.addi %[[ROFF]], %[[CL]] : index
// CHECK: %[[F:.*]] = arith.addi %[[HI]], %[[LO]] : index
// CHECK: %[[FR:.*]] = arith.shrui %[[F]], %c7 : index
// CHECK: %[[ROW:.*]] = arith.addi %[[Q0]], %[[FR]] : index
// CHECK: %[[COL:.*]] = arith.andi %[[F]], %c127 : index
// CHECK: vector.load %arg9[%[[B]], %[[H]], %[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x?x?x128xf32>, vector<4xf32>
// CHECK-COUNT-3: scf.if %{{.*}} -> (vector<4xf32>) {
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: vector.store %{{.*}}, %arg6[{{.*}}] {alignment = 8 : i64}
// GQA only: the group's query heads in ascending order, dK scaled.
// CHECK: arith.cmpi ne
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>) {
// CHECK: vector.load %arg10
// CHECK: vector.load %arg11
// CHECK: vector.store %{{.*}}, %arg7
// CHECK: vector.store %{{.*}}, %arg8

// D64: gpu.func @dash_bwd_preprocess
// Four rows per iteration, their loads first (rows 2-4 only inside the row
// space), then the math and stores of each.
// D64: vector.load %arg4[{{.*}}] {alignment = 4 : i64} : memref<?x?x?x64xbf16, {{.*}}>, vector<2xbf16>
// D64-COUNT-3: scf.if %{{.*}} -> (vector<2xf32>, vector<2xf32>, f32) {
// D64: } else {
// D64-NEXT: scf.yield %cst{{.*}}, %cst{{.*}}, %cst{{.*}} : vector<2xf32>, vector<2xf32>, f32
// D64-NOT: vector.load
// D64: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// D64: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x64xf32>, vector<2xf32>
// D64: gpu.func @dash_bwd_postprocess
// 128-row Q tiles: the parts are the tile's row halves (part = s % 128 / 64,
// its row s % 64), all 64 columns each.
// D64: %[[R:.*]] = arith.andi %{{.*}}, %c127 : index
// D64: %[[PART:.*]] = arith.shrui %[[R]], %c6 : index
// D64: %[[RP:.*]] = arith.andi %[[R]], %c63 : index
// D64: arith.shli %[[PART]], %c12 : index
// D64: arith.shli %[[RP]], %c3 : index
// D64: vector.load %arg9[{{.*}}] {alignment = 8 : i64} : memref<?x?x?x64xf32>, vector<2xf32>
// D64-COUNT-3: scf.if %{{.*}} -> (vector<2xf32>) {
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
