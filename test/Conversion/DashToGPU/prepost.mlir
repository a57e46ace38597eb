// The elementwise kernels around the main one: D/8 lanes per row, each lane
// 8 contiguous elements (one 16-byte access per lane and tensor), a warp on
// 256/D consecutive rows at once, two such groups in flight, two CTAs per
// SM; a warp's unit is a chunk of two groups, consecutive rows of one (b, h),
// chunks walked by a mixed-radix counter (no division inside the row loops;
// an empty row space, e.g. dk_accum of a kernel that writes dk/dv itself,
// skips the divisions), so the groups' addresses differ by the row term only. Deterministic TMA kernels: each Q tile's rank-0 hand-off stores
// its dQ partial, so the preprocess zeroes only the dq_accum rows no key is
// visible to (the non-deterministic kernels: every row, and the pad rows).
// The postprocess's dQ pass is checked with dq-in-main=0 (by default the
// deterministic main kernel writes dQ itself: dq-in-main.mlir).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-in-main=0" --canonicalize --cse | FileCheck %s
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=counted-adds=0" --canonicalize --cse | FileCheck %s --check-prefix=NONDET
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-in-main=0" --canonicalize --cse | FileCheck %s --check-prefix=D64
// RUN: sed 's/align = bottom_right/align = top_left/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=TOPLEFT

// CHECK: dq_accum_init = "rank0-store"
// CHECK-LABEL: gpu.func @dash_bwd_preprocess
// CHECK-SAME: nvvm.minctasm = 2 : i32
// D = 128: 16 lanes per row, the lane's place in its row and its row of the
// warp's two.
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32 : index
// CHECK-NEXT: %[[RL:.*]] = arith.remui %[[LANE]], %c16 : index
// CHECK-NEXT: %[[SUB:.*]] = arith.divui %[[LANE]], %c16 : index
// Chunks of 2 x 2 = 4 rows: ceil(S_q / 4) per (b, h).
// CHECK: arith.divui %{{.*}}, %c4 : index
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi sgt, %[[TOTAL:.*]], %c0 : index
// CHECK-NEXT: scf.if %[[NONEMPTY]] {
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TOTAL]] step %{{.*}} iter_args(%[[B:.*]] = %{{.*}}, %[[H:.*]] = %{{.*}}, %[[C:.*]] = %{{.*}}) -> (index, index, index) {
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// The groups' rows: the chunk's first + 2u + the lane's row; a lane past S_q
// takes the last row; group 1 only where its first row is inside S_q.
// CHECK: %[[FIRST:.*]] = arith.muli %[[C]], %c4 : index
// CHECK-NEXT: %[[R0:.*]] = arith.addi %[[FIRST]], %[[SUB]] : index
// CHECK-NEXT: %[[S0:.*]] = arith.minsi %[[R0]], %[[LAST:.*]] : index
// CHECK-NEXT: %[[G1:.*]] = arith.addi %[[FIRST]], %c2 : index
// CHECK-NEXT: %[[R1:.*]] = arith.addi %[[G1]], %[[SUB]] : index
// CHECK-NEXT: %[[S1:.*]] = arith.minsi %[[R1]], %[[LAST]] : index
// CHECK-NEXT: %[[V1:.*]] = arith.cmpi slt, %[[G1]], %{{.*}} : index
// CHECK-NEXT: %[[COL:.*]] = arith.muli %[[RL]], %c8 : index
// dO's element (b, s, h, col): the sum without s once, then s * stride.
// CHECK-NEXT: memref.extract_strided_metadata %arg4
// CHECK-NEXT: arith.muli %[[B]], %strides#0 : index
// CHECK-NEXT: arith.addi %offset, %{{.*}} : index
// CHECK-NEXT: arith.muli %[[H]], %strides#2 : index
// CHECK-NEXT: arith.addi
// CHECK-NEXT: %[[DOFIX:.*]] = arith.addi %{{.*}}, %[[COL]] : index
// CHECK-NEXT: arith.muli %[[S0]], %strides#1 : index
// Both groups' loads go out unconditionally (a group past the row space reads
// the last row), held packed until their use.
// CHECK: %[[DO0:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: %[[O0:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// Group 1 pays the s term only.
// CHECK-NEXT: %[[DO1S:.*]] = arith.muli %[[S1]], %strides#1 : index
// CHECK-NEXT: arith.addi %[[DOFIX]], %[[DO1S]] : index
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// CHECK-NEXT: arith.extf %[[DO0]] : vector<8xbf16> to vector<8xf32>
// CHECK-NEXT: arith.extf %[[O0]] : vector<8xbf16> to vector<8xf32>
// dPsum: the lane's 8 products, then a butterfly over the row's 16 lanes.
// CHECK-NOT: gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// Every lane of the row holds the sum: all store dPsum and lse_log2, no
// branch (behind one, ptxas sank the lse load into it).
// CHECK-NOT: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-NOT: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// dq_accum only where row s sees no key (S_k = 0, or s + S_k < S_q under the
// bottom-right mask), at dQ row s's place in the tiles layout.
// CHECK-NEXT: %[[SK0:.*]] = arith.cmpi eq, %[[SK:.*]], %c0 : index
// CHECK-NEXT: %[[SSK:.*]] = arith.addi %[[S0]], %[[SK]] : index
// CHECK-NEXT: %[[ABOVE:.*]] = arith.cmpi slt, %[[SSK]], %{{.*}} : index
// CHECK-NEXT: %[[NOKEY:.*]] = arith.ori %[[SK0]], %[[ABOVE]] : i1
// CHECK-NEXT: scf.if %[[NOKEY]] {
// CHECK: arith.andi %{{.*}}, %c63 : index
// CHECK: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x128xf32>, vector<8xf32>
// The counter: digit + step + carry wraps with one subtraction.
// CHECK: arith.cmpi uge
// CHECK: arith.select
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : index, index, index
// No loop over the pad rows; then dk_accum, dv_accum, the semaphores.
// CHECK-NOT: memref.dim %arg9
// CHECK: vector.store %{{.*}}, %arg10
// CHECK: vector.store %{{.*}}, %arg11
// CHECK: memref.collapse_shape %arg14
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @dash_bwd_postprocess
// CHECK: %[[LANE:.*]] = arith.remui %thread_id_x, %c32 : index
// CHECK-NEXT: %[[RL:.*]] = arith.remui %[[LANE]], %c16 : index
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (index, index, index) {
// CHECK-NOT: arith.divui
// dq_accum in the "tiles" layout (D = 128, 64-row Q tiles): row s of column
// c = 8 lane is element ((c / 64) * 4096 + (c % 64 / 8) * 512 + (s % 64) * 8
// + c % 8) of the tile from row s - s % 64, by shifts and masks.
// CHECK: %[[C:.*]] = arith.muli %[[RL]], %c8 : index
// CHECK: %[[R:.*]] = arith.andi %[[S:.*]], %c63 : index
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
// CHECK: vector.load %arg9[%{{.*}}, %{{.*}}, %[[ROW]], %[[COL]]] {alignment = 32 : i64} : memref<?x?x?x128xf32>, vector<8xf32>
// CHECK-NOT: scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK: vector.load %arg9
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %{{.*}}, %arg6[{{.*}}] {alignment = 16 : i64}
// GQA only: the group's query heads in ascending order, dK scaled.
// CHECK: arith.cmpi ne
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>) {
// CHECK: vector.load %arg10
// CHECK: vector.load %arg11
// CHECK: vector.store %{{.*}}, %arg7
// CHECK: vector.store %{{.*}}, %arg8

// Non-deterministic: unordered adds, so every lane zeroes its part of row s
// of dq_accum, then the rows S_q + p that pad the tiles.
// NONDET-NOT: dq_accum_init
// NONDET-LABEL: gpu.func @dash_bwd_preprocess
// NONDET: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// NONDET: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// NONDET-NOT: scf.if
// NONDET: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x128xf32>, vector<8xf32>
// NONDET: %[[ROWS:.*]] = memref.dim %arg9, %c2
// NONDET-NEXT: %[[PAD:.*]] = arith.subi %[[ROWS]], %[[SQ:.*]] : index
// NONDET: %[[PADROW:.*]] = arith.addi %[[SQ]], %{{.*}} : index
// NONDET: vector.store %{{.*}}, %arg9[%{{.*}}, %{{.*}}, %[[PADROW]], %{{.*}}] {alignment = 32 : i64}
// NONDET: gpu.func @dash_bwd_postprocess

// Top-left alignment: every query sees key 0, so only S_k = 0 leaves rows
// without a key.
// TOPLEFT-LABEL: gpu.func @dash_bwd_preprocess
// TOPLEFT: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// TOPLEFT: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// TOPLEFT-NEXT: %[[SK0:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// TOPLEFT-NEXT: scf.if %[[SK0]] {

// D = 64: 8 lanes per row, four rows per warp; two groups per iteration,
// both groups' loads first (no branch), then the math and stores of each
// (the second's only inside the row space).
// D64: gpu.func @dash_bwd_preprocess
// D64: %[[LANE:.*]] = arith.remui %thread_id_x, %c32 : index
// D64-NEXT: arith.remui %[[LANE]], %c8 : index
// D64-NEXT: arith.divui %[[LANE]], %c8 : index
// Chunks of 4 x 2 = 8 rows.
// D64: arith.divui %{{.*}}, %c8 : index
// D64: scf.for
// D64: arith.muli %{{.*}}, %c8 : index
// D64: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// D64: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// D64: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// D64: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// D64: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// D64: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// D64-NOT: llvm.load
// D64: scf.if %{{.*}} {
// D64-NOT: llvm.load
// D64-NOT: gpu.shuffle  xor %{{.*}}, %c8_i32
// D64: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// D64: vector.store %{{.*}}, %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x64xf32>, vector<8xf32>
// D64: gpu.func @dash_bwd_postprocess
// 128-row Q tiles: the parts are the tile's row halves (part = s % 128 / 64,
// its row s % 64), all 64 columns each.
// D64: %[[R:.*]] = arith.andi %{{.*}}, %c127 : index
// D64: %[[PART:.*]] = arith.shrui %[[R]], %c6 : index
// D64: %[[RP:.*]] = arith.andi %[[R]], %c63 : index
// D64: arith.shli %[[PART]], %c12 : index
// D64: arith.shli %[[RP]], %c3 : index
// D64: vector.load %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x64xf32>, vector<8xf32>
// D64-NOT: scf.if %{{.*}} -> (vector<8xf32>) {
// D64: vector.load %arg9[{{.*}}] {alignment = 32 : i64} : memref<?x?x?x64xf32>, vector<8xf32>
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
