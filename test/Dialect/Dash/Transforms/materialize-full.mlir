// The materialised schedule of a small full-mask problem (N = 4 KV tiles of
// 48 keys, M = 6 Q tiles of 32 queries, G = 4), per policy; see
// materialize-causal.mlir for how to read the remarks.
// RUN: dash-opt %s --dash-schedule="policy=ascending num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ASC
// RUN: dash-opt %s --dash-schedule="policy=spt num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SPT
// RUN: dash-opt %s --dash-schedule="policy=descending num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=DESC
// RUN: dash-opt %s --dash-schedule="policy=shift num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SHIFT
// RUN: not dash-opt %s --dash-schedule="policy=symmetric-shift num-units=4" 2>&1 | FileCheck %s --check-prefix=SYM

// ASC: remark: unit 0: (b0 h0 kv0) q0:r0 q1:r0 q2:r0 q3:r0 q4:r0 q5:r0
// ASC: remark: unit 1: (b0 h0 kv1) q0:r1 q1:r1 q2:r1 q3:r1 q4:r1 q5:r1
// ASC: remark: unit 2: (b0 h0 kv2) q0:r2 q1:r2 q2:r2 q3:r2 q4:r2 q5:r2
// ASC: remark: unit 3: (b0 h0 kv3) q0:r3 q1:r3 q2:r3 q3:r3 q4:r3 q5:r3
// ASC: remark: schedule 'ascending' matches lib/Schedule on 24 tasks

// SPT: remark: unit 0: (b0 h0 kv3) q0:r0 q1:r0 q2:r0 q3:r0 q4:r0 q5:r0
// SPT: remark: unit 1: (b0 h0 kv2) q0:r1 q1:r1 q2:r1 q3:r1 q4:r1 q5:r1
// SPT: remark: unit 2: (b0 h0 kv1) q0:r2 q1:r2 q2:r2 q3:r2 q4:r2 q5:r2
// SPT: remark: unit 3: (b0 h0 kv0) q0:r3 q1:r3 q2:r3 q3:r3 q4:r3 q5:r3
// SPT: remark: schedule 'spt' matches lib/Schedule on 24 tasks

// DESC: remark: unit 0: (b0 h0 kv0) q5:r0 q4:r0 q3:r0 q2:r0 q1:r0 q0:r0
// DESC: remark: unit 1: (b0 h0 kv1) q5:r1 q4:r1 q3:r1 q2:r1 q1:r1 q0:r1
// DESC: remark: unit 2: (b0 h0 kv2) q5:r2 q4:r2 q3:r2 q2:r2 q1:r2 q0:r2
// DESC: remark: unit 3: (b0 h0 kv3) q5:r3 q4:r3 q3:r3 q2:r3 q1:r3 q0:r3
// DESC: remark: schedule 'descending' matches lib/Schedule on 24 tasks

// Shift: KV tile a starts at row a and wraps; row 0 receives kv0, kv3, kv2,
// kv1 (ranks 0..3) at steps 0, 3, 4, 5 (SCHEDULES.md §4): no two units ever
// wait on the same row at the same depth.
// SHIFT: remark: unit 0: (b0 h0 kv0) q0:r0 q1:r1 q2:r2 q3:r3 q4:r3 q5:r3
// SHIFT: remark: unit 1: (b0 h0 kv1) q1:r0 q2:r1 q3:r2 q4:r2 q5:r2 q0:r3
// SHIFT: remark: unit 2: (b0 h0 kv2) q2:r0 q3:r1 q4:r1 q5:r1 q0:r2 q1:r3
// SHIFT: remark: unit 3: (b0 h0 kv3) q3:r0 q4:r0 q5:r0 q0:r1 q1:r2 q2:r3
// SHIFT: remark: schedule 'shift' matches lib/Schedule on 24 tasks
// The wraps: visit's argument is never negative (one unsigned remainder),
// rank's lies in (-R, R) (no division: + R where negative).
// SHIFT: } visit {
// SHIFT: arith.remui
// SHIFT: } rank {
// SHIFT-NOT: arith.rem
// SHIFT: %[[NEG:.*]] = arith.cmpi slt, %[[OFF:.*]], %c0 : index
// SHIFT: arith.select %[[NEG]], %{{.*}}, %[[OFF]] : index
// SHIFT-NOT: arith.rem
// SHIFT: dash.yield

// SYM: error: 'dash.attention_bwd' op schedule 'symmetric_shift' is illegal here: symmetric-shift needs a causal mask (use shift for full)

!t = memref<1x192x1x64xbf16>
func.func @full(%q: !t, %lse: memref<1x1x192xf32>, %dq: !t, %dk: !t, %dv: !t) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%dq, %dk, %dv : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 32, block_n = 48, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x192xf32>
  return
}
