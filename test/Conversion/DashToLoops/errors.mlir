// RUN: not dash-opt %s --convert-dash-to-loops 2>&1 | FileCheck %s --check-prefix=UNSCHED
// RUN: not dash-opt %s --dash-tile --dash-schedule --dash-materialize-schedule 2>&1 | FileCheck %s --check-prefix=TENSOR

// UNSCHED: error: 'dash.attention_bwd' op has no schedule regions; run --dash-tile --dash-schedule --dash-materialize-schedule first
// TENSOR: error: 'dash.attention_bwd' op materialisation needs the memref form (outs(...)); bufferize tensors first
!t = tensor<1x128x2x64xbf16>
func.func @tensors(%q: !t, %lse: tensor<1x2x128xf32>) -> !t {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      : !t, !t, !t, !t, !t, tensor<1x2x128xf32> -> !t, !t, !t
  return %r#0 : !t
}
