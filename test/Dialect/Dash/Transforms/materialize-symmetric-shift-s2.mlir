// symmetric-shift with two Q tiles per KV tile (s = block-n / block-m = 2, the
// d = 128 kernels' 64 x 128 tiles): one head, 8 KV tiles of 64 keys, 16 Q
// tiles of 32 queries, G = 4 units, so one wave of R = 4 pairs. The long
// tiles' rectangle is rows [Rs, M) = [6, 16); long tile i starts s*i rows
// into it, so every row's visits there are s = 2 steps apart (row 12: unit 3
// at step 0, unit 2 at 2, unit 1 at 4, unit 0 at 6), as in the triangle and
// among the short tiles. A rank waits on an add issued two steps earlier,
// not one (docs/Scheduling.md §3, bench/NOTES.md section 47).
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=4" --dash-materialize-schedule | FileCheck %s --check-prefix=IR

// CHECK: remark: unit 0: (b0 h0 kv0) q6:r0 q7:r0 q8:r1 q9:r1 q10:r2 q11:r2 q12:r3 q13:r3 q14:r3 q15:r3 q0:r0 q1:r0 q2:r1 q3:r1 q4:r2 q5:r2 (b0 h0 kv7) q15:r7 q14:r7
// CHECK: remark: unit 1: (b0 h0 kv1) q8:r0 q9:r0 q10:r1 q11:r1 q12:r2 q13:r2 q14:r2 q15:r2 q6:r3 q7:r3 q2:r0 q3:r0 q4:r1 q5:r1 (b0 h0 kv6) q15:r6 q14:r6 q13:r6 q12:r6
// CHECK: remark: unit 2: (b0 h0 kv2) q10:r0 q11:r0 q12:r1 q13:r1 q14:r1 q15:r1 q6:r2 q7:r2 q8:r3 q9:r3 q4:r0 q5:r0 (b0 h0 kv5) q15:r5 q14:r5 q13:r5 q12:r5 q11:r5 q10:r5
// CHECK: remark: unit 3: (b0 h0 kv3) q12:r0 q13:r0 q14:r0 q15:r0 q6:r1 q7:r1 q8:r2 q9:r2 q10:r3 q11:r3 (b0 h0 kv4) q15:r4 q14:r4 q13:r4 q12:r4 q11:r4 q10:r4 q9:r4 q8:r4
// CHECK: remark: schedule 'symmetric_shift' matches lib/Schedule on 72 tasks

// The rectangle's visit: Rs + (s*i + step) mod (M - Rs), one unsigned
// remainder; its rank divides (q - Rs) by s = 2 unsigned (a shift).
// IR: visit {
// IR: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[STEP:.*]]: index):
// IR: %[[RS:[0-9]+]] = arith.muli %{{[0-9]+}}, %c2 : index
// IR-NEXT: %[[RECT:[0-9]+]] = arith.subi %c16, %[[RS]] : index
// IR-NEXT: %[[SI:[0-9]+]] = arith.muli %{{[0-9]+}}, %c2 : index
// IR-NEXT: %[[AT:[0-9]+]] = arith.addi %[[SI]], %[[STEP]] : index
// IR-NEXT: arith.remui %[[AT]], %[[RECT]] : index
// IR: } rank {
// IR: arith.divui %{{[0-9]+}}, %c2 : index

!t = memref<1x512x1x64xbf16>
func.func @causal(%q: !t, %lse: memref<1x1x512xf32>, %dq: !t, %dk: !t, %dv: !t) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%dq, %dk, %dv : !t, !t, !t)
      mask = causal scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 32, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x512xf32>
  return
}
