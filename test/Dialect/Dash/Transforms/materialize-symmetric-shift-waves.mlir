// The materialised symmetric-shift regions against lib/Schedule, task by
// task, where waves split heads: s = 2 (64-key KV tiles, 32-query Q tiles),
// 6 heads of N = 12 KV tiles (6 pairs each, 36 pairs), on grids of 1 .. 36
// units. With G = 5, 7 or 13 a head's pairs fall into two waves (F > 0 and
// a partial R), which is where the rectangle start s*(F+R-1) and the
// rectangle's spread by s meet. materialize-symmetric-shift-s2.mlir shows
// one wave's order.
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=1" --dash-materialize-schedule --dash-check-schedule 2>&1 | FileCheck %s
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=5" --dash-materialize-schedule --dash-check-schedule 2>&1 | FileCheck %s
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=7" --dash-materialize-schedule --dash-check-schedule 2>&1 | FileCheck %s
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=13" --dash-materialize-schedule --dash-check-schedule 2>&1 | FileCheck %s
// RUN: dash-opt %s --dash-schedule="policy=symmetric-shift num-units=36" --dash-materialize-schedule --dash-check-schedule 2>&1 | FileCheck %s

// 36 pairs of s*(N+1) = 26 tasks each.
// CHECK: remark: schedule 'symmetric_shift' matches lib/Schedule on 936 tasks
// CHECK-NOT: error

!t = memref<2x768x3x64xbf16>
func.func @causal(%q: !t, %lse: memref<2x3x768xf32>, %dq: !t, %dk: !t, %dv: !t) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%dq, %dk, %dv : !t, !t, !t)
      mask = causal scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 32, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<2x3x768xf32>
  return
}
