// The materialised schedule of a small causal problem (one head, 8 KV tiles
// of 32 keys, 8 Q tiles of 32 queries, G = 4 units), per policy. The regions
// are index code; dash-check-schedule evaluates them (print-order: per unit,
// its work items and the Q tiles each visits, q<tile>:r<rank>) and checks
// them against lib/Schedule task by task.
// RUN: dash-opt %s --dash-schedule="policy=ascending num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ASC
// RUN: dash-opt %s --dash-schedule="policy=spt num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SPT
// RUN: dash-opt %s --dash-schedule="policy=descending num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=DESC
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=4" --dash-materialize-schedule --dash-check-schedule=print-order --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SYM
// RUN: not dash-opt %s --dash-schedule="policy=shift num-units=4" 2>&1 | FileCheck %s --check-prefix=SHIFT

// Ascending (FA3 baseline): KV tile j walks its Q tiles low -> high and adds
// with rank j, so unit j waits for units 0..j-1 on the diagonal.
// ASC: remark: unit 0: (b0 h0 kv0) q0:r0 q1:r0 q2:r0 q3:r0 q4:r0 q5:r0 q6:r0 q7:r0 (b0 h0 kv4) q4:r4 q5:r4 q6:r4 q7:r4
// ASC: remark: unit 1: (b0 h0 kv1) q1:r1 q2:r1 q3:r1 q4:r1 q5:r1 q6:r1 q7:r1 (b0 h0 kv5) q5:r5 q6:r5 q7:r5
// ASC: remark: unit 2: (b0 h0 kv2) q2:r2 q3:r2 q4:r2 q5:r2 q6:r2 q7:r2 (b0 h0 kv6) q6:r6 q7:r6
// ASC: remark: unit 3: (b0 h0 kv3) q3:r3 q4:r3 q5:r3 q6:r3 q7:r3 (b0 h0 kv7) q7:r7
// ASC: remark: schedule 'ascending' matches lib/Schedule on 36 tasks
// ASC: dash.scheduled_attention_bwd
// ASC: visit {
// ASC: ^bb0(%[[B:.*]]: index, %[[H:.*]]: index, %[[KV:.*]]: index, %[[STEP:.*]]: index):
// ASC: dash.yield
// ASC: rank {
// ASC-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[RKV:.*]]: index, %{{.*}}: index):
// ASC-NEXT: dash.yield %[[RKV]]

// SPT (FA3's causal deterministic schedule): shortest walk first, and each
// dQ row reduces in descending KV order, so the diagonal tile adds first.
// SPT: remark: unit 0: (b0 h0 kv7) q7:r0 (b0 h0 kv3) q3:r0 q4:r1 q5:r2 q6:r3 q7:r4
// SPT: remark: unit 1: (b0 h0 kv6) q6:r0 q7:r1 (b0 h0 kv2) q2:r0 q3:r1 q4:r2 q5:r3 q6:r4 q7:r5
// SPT: remark: unit 2: (b0 h0 kv5) q5:r0 q6:r1 q7:r2 (b0 h0 kv1) q1:r0 q2:r1 q3:r2 q4:r3 q5:r4 q6:r5 q7:r6
// SPT: remark: unit 3: (b0 h0 kv4) q4:r0 q5:r1 q6:r2 q7:r3 (b0 h0 kv0) q0:r0 q1:r1 q2:r2 q3:r3 q4:r4 q5:r5 q6:r6 q7:r7
// SPT: remark: schedule 'spt' matches lib/Schedule on 36 tasks

// Descending: walk Q tiles high -> low, rank unchanged (= KV tile).
// DESC: remark: unit 0: (b0 h0 kv0) q7:r0 q6:r0 q5:r0 q4:r0 q3:r0 q2:r0 q1:r0 q0:r0 (b0 h0 kv4) q7:r4 q6:r4 q5:r4 q4:r4
// DESC: remark: unit 1: (b0 h0 kv1) q7:r1 q6:r1 q5:r1 q4:r1 q3:r1 q2:r1 q1:r1 (b0 h0 kv5) q7:r5 q6:r5 q5:r5
// DESC: remark: unit 2: (b0 h0 kv2) q7:r2 q6:r2 q5:r2 q4:r2 q3:r2 q2:r2 (b0 h0 kv6) q7:r6 q6:r6
// DESC: remark: unit 3: (b0 h0 kv3) q7:r3 q6:r3 q5:r3 q4:r3 q3:r3 (b0 h0 kv7) q7:r7
// DESC: remark: schedule 'descending' matches lib/Schedule on 36 tasks
// DESC: visit {
// DESC-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[STEP:.*]]: index):
// DESC-NEXT: %[[C7:.*]] = arith.constant 7 : index
// DESC-NEXT: %[[Q:.*]] = arith.subi %[[C7]], %[[STEP]] : index
// DESC-NEXT: dash.yield %[[Q]]

// Symmetric shift: unit p runs the long tile p (rectangle rows shifted by p,
// then its own triangle) and the short tile N-1-p; every unit runs N+1 = 9
// tasks, and row 7 receives kv3 kv2 kv1 kv0 kv4 kv5 kv6 kv7 (SCHEDULES.md).
// SYM: remark: unit 0: (b0 h0 kv0) q3:r0 q4:r1 q5:r2 q6:r3 q7:r3 q0:r0 q1:r1 q2:r2 (b0 h0 kv7) q7:r7
// SYM: remark: unit 1: (b0 h0 kv1) q4:r0 q5:r1 q6:r2 q7:r2 q3:r3 q1:r0 q2:r1 (b0 h0 kv6) q7:r6 q6:r6
// SYM: remark: unit 2: (b0 h0 kv2) q5:r0 q6:r1 q7:r1 q3:r2 q4:r3 q2:r0 (b0 h0 kv5) q7:r5 q6:r5 q5:r5
// SYM: remark: unit 3: (b0 h0 kv3) q6:r0 q7:r0 q3:r1 q4:r2 q5:r3 (b0 h0 kv4) q7:r4 q6:r4 q5:r4 q4:r4
// SYM: remark: schedule 'symmetric_shift' matches lib/Schedule on 36 tasks

// SHIFT: error: 'dash.attention_bwd' op schedule 'shift' is illegal here: shift needs a full mask (use symmetric-shift for causal)

!t = memref<1x256x1x64xbf16>
func.func @causal(%q: !t, %lse: memref<1x1x256xf32>, %dq: !t, %dk: !t, %dv: !t) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%dq, %dk, %dv : !t, !t, !t)
      mask = causal scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 32, block_n = 32, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x256xf32>
  return
}
