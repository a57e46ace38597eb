// Illegal schedule choices are compile errors that say why.
// RUN: not dash-opt %s --dash-tile --dash-schedule="policy=symmetric-shift" 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not dash-opt %s --dash-tile --dash-schedule="policy=zigzag" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// 3 KV tiles of 128: symmetric shift pairs tiles (p, N-1-p) and needs N even.
// ODD: error: 'dash.attention_bwd' op schedule 'symmetric_shift' is illegal here: symmetric-shift needs an even number of KV tiles (N = 3)
// UNKNOWN: error: dash-schedule: unknown policy 'zigzag'; expected ascending, spt, descending, shift, symmetric-shift or auto
!t = memref<1x384x4x128xbf16>
func.func @odd(%q: !t, %lse: memref<1x4x384xf32>) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = causal scale = 0.088 deterministic = true : !t, !t, !t, !t, !t, memref<1x4x384xf32>
  return
}
