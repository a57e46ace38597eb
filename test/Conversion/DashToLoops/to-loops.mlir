// RUN: dash-opt %s --dash-tile="block-m=32 block-n=64" --dash-schedule="policy=descending num-units=3" --dash-materialize-schedule --convert-dash-to-loops --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile="block-m=32 block-n=64" --dash-schedule="policy=descending num-units=3" --dash-materialize-schedule --convert-dash-to-loops="exact-intermediates=true" | FileCheck %s --check-prefix=EXACT
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile="block-m=32 block-n=64" --dash-schedule="policy=descending num-units=3" --dash-materialize-schedule --convert-dash-to-loops --canonicalize --cse | FileCheck %s --check-prefix=NONDET

// Causal, S = 100 (tails: 4 Q tiles of 32, 2 KV tiles of 64), 2 heads,
// descending schedule on G = 3 units.
!t = memref<1x100x2x64xbf16>
!l = memref<1x2x100xf32>

// Workspace as on the GPU, plus one dQ partial slot per (Q tile, rank).
// CHECK-LABEL: func @causal_descending
// CHECK-DAG: %[[DQACC:.*]] = memref.alloc() : memref<1x2x100x64xf32>
// CHECK-DAG: %[[PART:.*]] = memref.alloc() : memref<1x2x4x2x32x64xf32>
// Preprocess: dPsum = rowsum(dO * O) and lse * log2(e).
// CHECK: scf.for
// CHECK: arith.cmpf oeq
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// Every unit runs its items in schedule order; the item count, the work item
// and the walk are the inlined schedule regions.
// CHECK: scf.for %[[UNIT:.*]] = %c0 to %c3 step %c1 {
// CHECK:   %[[NITEMS:.*]] = arith.floordivsi %{{.*}}, %c3 : index
// CHECK:   scf.for %[[ITEM:.*]] = %c0 to %[[NITEMS]] step %c1 {
// CHECK:     %[[LEN:.*]] = arith.subi %c4, %{{.*}} : index
// CHECK:     scf.for %[[STEP:.*]] = %c0 to %[[LEN]] step %c1 {
// Descending: Q tile = M - 1 - step.
// CHECK:       %[[QT:.*]] = arith.subi %c3, %[[STEP]] : index
// S, P with the causal predicate on every tile, dP, dS.
// CHECK:       math.exp2
// CHECK:       arith.cmpi sle
// Operands of the later products are rounded like bf16 MMA inputs.
// CHECK:       arith.truncf %{{.*}} : f32 to bf16
// The dQ partial goes to the slot of its rank (descending: rank = KV tile).
// CHECK:       memref.store %{{.*}}, %[[PART]][%{{.*}}, %{{.*}}, %[[QT]], %{{.*}}, %{{.*}}, %{{.*}}]
// Ordered reduction: per Q tile, rank slot r before r + 1.
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK:   scf.for %{{.*}} = %c0 to %c4 step %c1 {
// CHECK:     scf.for %[[RANK:.*]] = %c0 to %c2 step %c1 {
// CHECK:       memref.load %[[PART]][%c0, %{{.*}}, %{{.*}}, %[[RANK]], %{{.*}}, %{{.*}}]
// CHECK:       memref.store %{{.*}}, %[[DQACC]]
// Postprocess: dQ = bf16(dQaccum * scale).
// CHECK: arith.mulf %{{.*}}, %cst : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.dealloc %[[PART]]

// exact-intermediates: nothing is rounded between exp2 and the dQ partial.
// EXACT-LABEL: func @causal_descending
// EXACT: math.exp2
// EXACT-NOT: arith.truncf
// EXACT: memref.store %{{.*}} : memref<1x2x4x2x32x64xf32>

// Non-deterministic: no partial slots; partials are added as they come.
// NONDET-LABEL: func @causal_descending
// NONDET-NOT: memref<1x2x4x2x32x64xf32>
// NONDET: math.exp2
// NONDET: memref.load %{{.*}} : memref<1x2x100x64xf32>
// NONDET: arith.addf
// NONDET: memref.store %{{.*}} : memref<1x2x100x64xf32>
func.func @causal_descending(%q: !t, %lse: !l, %dq: !t) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%dq, %dq, %dq : !t, !t, !t)
      mask = causal scale = 0.125 deterministic = true : !t, !t, !t, !t, !t, !l
  return
}
