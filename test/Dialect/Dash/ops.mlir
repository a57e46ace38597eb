// RUN: dash-opt %s | FileCheck %s
// Round trip: the printed form parses back to the same text.
// RUN: dash-opt %s | dash-opt | FileCheck %s
// Generic form parses back to the custom form.
// RUN: dash-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: dash-opt %s --mlir-print-op-generic | dash-opt | FileCheck %s

!bf = tensor<2x1024x16x128xbf16>
!lse = tensor<2x16x1024xf32>

// CHECK-LABEL: func @causal_tensors
// CHECK: %{{.*}}:3 = dash.attention_bwd %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 mask = causal scale = 1.250000e-01 deterministic = true : tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>, tensor<2x16x1024xf32> -> tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>, tensor<2x1024x16x128xbf16>
// GENERIC: sym_name = "causal_tensors"
// GENERIC: "dash.attention_bwd"(%{{.*}}) <{deterministic = true, mask = #dash<mask causal>, scale = 1.250000e-01 : f32}>
func.func @causal_tensors(%q: !bf, %k: !bf, %v: !bf, %o: !bf, %do: !bf, %lse: !lse)
    -> (!bf, !bf, !bf) {
  %dq, %dk, %dv = dash.attention_bwd %q, %k, %v, %o, %do, %lse
      mask = causal scale = 0.125 deterministic = true
      : !bf, !bf, !bf, !bf, !bf, !lse -> !bf, !bf, !bf
  return %dq, %dk, %dv : !bf, !bf, !bf
}

// Full mask, f16, d = 64, grouped-query attention (8 query heads share 2 KV heads),
// non-deterministic.
// CHECK-LABEL: func @gqa_full_f16
// CHECK: dash.attention_bwd {{.*}} mask = full scale = 1.250000e-01 deterministic = false : tensor<1x256x8x64xf16>, tensor<1x512x2x64xf16>
func.func @gqa_full_f16(%q: tensor<1x256x8x64xf16>, %k: tensor<1x512x2x64xf16>,
                        %v: tensor<1x512x2x64xf16>, %o: tensor<1x256x8x64xf16>,
                        %do: tensor<1x256x8x64xf16>, %lse: tensor<1x8x256xf32>)
    -> (tensor<1x256x8x64xf16>, tensor<1x512x2x64xf16>, tensor<1x512x2x64xf16>) {
  %dq, %dk, %dv = dash.attention_bwd %q, %k, %v, %o, %do, %lse
      mask = full scale = 0.125 deterministic = false
      : tensor<1x256x8x64xf16>, tensor<1x512x2x64xf16>, tensor<1x512x2x64xf16>,
        tensor<1x256x8x64xf16>, tensor<1x256x8x64xf16>, tensor<1x8x256xf32>
      -> tensor<1x256x8x64xf16>, tensor<1x512x2x64xf16>, tensor<1x512x2x64xf16>
  return %dq, %dk, %dv : tensor<1x256x8x64xf16>, tensor<1x512x2x64xf16>, tensor<1x512x2x64xf16>
}

// Memrefs, destination style; q/o/dO are BHSD in memory, expressed as strided
// BSHD views. Causal with s_q != s_k needs an explicit alignment.
// CHECK-LABEL: func @memref_bhsd_top_left
// CHECK: dash.attention_bwd %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 outs(%arg6, %arg7, %arg8 : memref<1x100x4x64xbf16, strided<[25600, 64, 6400, 1]>>, memref<1x200x4x64xbf16>, memref<1x200x4x64xbf16>) mask = causal align = top_left scale = 1.250000e-01 deterministic = true
!qs = memref<1x100x4x64xbf16, strided<[25600, 64, 6400, 1]>>
!ks = memref<1x200x4x64xbf16>
func.func @memref_bhsd_top_left(%q: !qs, %k: !ks, %v: !ks, %o: !qs, %do: !qs,
                                %lse: memref<1x4x100xf32>,
                                %dq: !qs, %dk: !ks, %dv: !ks) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !qs, !ks, !ks)
      mask = causal align = top_left scale = 0.125 deterministic = true
      : !qs, !ks, !ks, !qs, !qs, memref<1x4x100xf32>
  return
}

// Dynamic batch and sequence lengths (the kernels take them at run time).
// CHECK-LABEL: func @dynamic
// CHECK: mask = causal align = bottom_right
!dyn = tensor<?x?x16x64xbf16>
func.func @dynamic(%q: !dyn, %k: !dyn, %v: !dyn, %o: !dyn, %do: !dyn,
                   %lse: tensor<?x16x?xf32>) -> (!dyn, !dyn, !dyn) {
  %dq, %dk, %dv = dash.attention_bwd %q, %k, %v, %o, %do, %lse
      mask = causal align = bottom_right scale = 0.125 deterministic = true
      : !dyn, !dyn, !dyn, !dyn, !dyn, tensor<?x16x?xf32> -> !dyn, !dyn, !dyn
  return %dq, %dk, %dv : !dyn, !dyn, !dyn
}

// The decisions of later passes round-trip too.
// CHECK-LABEL: func @with_decisions
// CHECK: {schedule = #dash.schedule<policy = descending, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 24.25, critical_path = 24.25>, tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>}
func.func @with_decisions(%q: !bf, %k: !bf, %v: !bf, %o: !bf, %do: !bf, %lse: !lse)
    -> (!bf, !bf, !bf) {
  %dq, %dk, %dv = dash.attention_bwd %q, %k, %v, %o, %do, %lse
      mask = causal scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>,
       schedule = #dash.schedule<policy = descending, requested = auto, num_units = 132,
                                 c = 1.0, r = 0.25, makespan = 24.25, critical_path = 24.25>}
      : !bf, !bf, !bf, !bf, !bf, !lse -> !bf, !bf, !bf
  return %dq, %dk, %dv : !bf, !bf, !bf
}
