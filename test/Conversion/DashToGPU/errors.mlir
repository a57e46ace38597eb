// RUN: not dash-opt %s -split-input-file --dash-tile --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=simt 2>&1 | FileCheck %s

// CHECK: error: 'dash.scheduled_attention_bwd' op the GPU kernels write gradients in the input element type; f32 gradients are a CPU-loops feature for now
!a = memref<1x128x2x64xbf16>
!g = memref<1x128x2x64xf32>
func.func @f32_grads(%q: !a, %lse: memref<1x2x128xf32>, %g: !g) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%g, %g, %g : !g, !g, !g)
      mask = full scale = 0.125 deterministic = true : !a, !a, !a, !a, !a, memref<1x2x128xf32>
  return
}

// -----

// CHECK: error: 'dash.scheduled_attention_bwd' op tile 256x256 with D = 128 needs 655360 B of shared memory (> 227 KiB)
!a = memref<1x512x2x128xbf16>
func.func @too_big(%q: !a, %lse: memref<1x2x512xf32>) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !a, !a, !a)
      mask = full scale = 0.125 deterministic = true {tiling = #dash.tiling<block_m = 256, block_n = 256, stages = 2>}
      : !a, !a, !a, !a, !a, memref<1x2x512xf32>
  return
}
