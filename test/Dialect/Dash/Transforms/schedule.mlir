// RUN: dash-opt %s -split-input-file --dash-tile --dash-schedule | FileCheck %s --check-prefix=AUTO
// RUN: dash-opt %s -split-input-file --dash-tile --dash-schedule="policy=descending num-units=66" | FileCheck %s --check-prefix=DESC
// RUN: dash-opt %s -split-input-file --dash-tile --dash-schedule="policy=ascending c=2.0 r=1.0" | FileCheck %s --check-prefix=COST
// RUN: not dash-opt %s -split-input-file --dash-tile --dash-schedule="policy=shift" 2>&1 | FileCheck %s --check-prefix=SHIFT
// RUN: not dash-opt %s -split-input-file --dash-schedule 2>&1 | FileCheck %s --check-prefix=UNTILED
// RUN: not dash-opt %s -split-input-file --dash-tile --dash-schedule="num-units=0" 2>&1 | FileCheck %s --check-prefix=BADG
// launch=persistent models ascending/spt/descending as DASH's kernels run them
// (a persistent grid over the FA3 launch slots; dash-pipeline sets it).
// RUN: dash-opt %s -split-input-file --dash-tile --dash-schedule="policy=ascending launch=persistent" | FileCheck %s --check-prefix=PERS
// RUN: dash-opt %s -split-input-file --dash-tile --dash-schedule="policy=ascending" | FileCheck %s --check-prefix=FA3L
// RUN: not dash-opt %s -split-input-file --dash-tile --dash-schedule="launch=grid" 2>&1 | FileCheck %s --check-prefix=BADL
// RUN: dash-opt %s -split-input-file --dash-tile="block-m=64 block-n=64" --dash-schedule="launch=persistent" | FileCheck %s --check-prefix=ORDER
// PERS-LABEL: func @full_2k
// PERS: makespan = 667.75, critical_path = 667.75>
// FA3L-LABEL: func @full_2k
// FA3L: makespan = 660.0, critical_path = 660.0>
// BADL: error: dash-schedule: unknown launch 'grid'; expected fa3 or persistent

// Causal d=128 s=8192, 16 heads, G=132 (the paper's H200/H800 setting): the
// model prefers symmetric shift; auto records both the request and the pick.
// AUTO-LABEL: func @causal_8k
// AUTO: schedule = #dash.schedule<policy = symmetric_shift, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 650.0, critical_path = 650.0>
// DESC-LABEL: func @causal_8k
// DESC: schedule = #dash.schedule<policy = descending, requested = descending, num_units = 66
// COST-LABEL: func @causal_8k
// COST: schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 132, c = 2.0, r = 1.0
// SHIFT: error: 'dash.attention_bwd' op schedule 'shift' is illegal here: shift needs a full mask (use symmetric-shift for causal)
// UNTILED: error: 'dash.attention_bwd' op needs a #dash.tiling before scheduling; run --dash-tile first
// BADG: error: dash-schedule: need num-units >= 1, c > 0 and r >= 0 (got 0, 1, 0.25)
!c = memref<1x8192x16x128xbf16>
!l = memref<1x16x8192xf32>
func.func @causal_8k(%q: !c, %lse: !l) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !c, !c, !c)
      mask = causal scale = 0.088 deterministic = true : !c, !c, !c, !c, !c, !l
  return
}

// -----

// Full mask d=64 s=2048, 32 heads: shift is legal here.
// AUTO-LABEL: func @full_2k
// AUTO: schedule = #dash.schedule<policy = {{[a-z_]+}}, requested = auto
// SHIFT-LABEL: func @full_2k
// SHIFT: schedule = #dash.schedule<policy = shift, requested = shift
!f = tensor<8x2048x32x64xbf16>
!fl = tensor<8x32x2048xf32>
func.func @full_2k(%q: !f, %lse: !fl) -> !f {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      : !f, !f, !f, !f, !f, !fl -> !f, !f, !f
  return %r#0 : !f
}

// -----

// Dynamic shapes: `auto` stays unresolved; the runtime resolves it with the
// same model once B, S and H are known.
// AUTO-LABEL: func @dynamic
// AUTO: schedule = #dash.schedule<policy = auto, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>
// DESC-LABEL: func @dynamic
// DESC: schedule = #dash.schedule<policy = descending, requested = descending, num_units = 66
!d = tensor<?x?x16x128xbf16>
func.func @dynamic(%q: !d, %lse: tensor<?x16x?xf32>) -> !d {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = causal align = bottom_right scale = 0.088 deterministic = true
      : !d, !d, !d, !d, !d, tensor<?x16x?xf32> -> !d, !d, !d
  return %r#0 : !d
}

// -----

// Non-deterministic kernels add dQ partials as they come: auto models them
// without the rank order. Causal s=512, 4 heads on 132 units: with the order,
// ascending's chains cost and spt wins; without it ascending (listed first)
// ties spt at the same makespan and is kept.
// ORDER-LABEL: func @ordered
// ORDER: schedule = #dash.schedule<policy = spt, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 10.0
// ORDER-LABEL: func @unordered
// ORDER: schedule = #dash.schedule<policy = ascending, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 10.0
!s = memref<1x512x4x128xbf16>
!sl = memref<1x4x512xf32>
func.func @ordered(%q: !s, %lse: !sl) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !s, !s, !s)
      mask = causal scale = 0.088 deterministic = true : !s, !s, !s, !s, !s, !sl
  return
}
func.func @unordered(%q: !s, %lse: !sl) {
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !s, !s, !s)
      mask = causal scale = 0.088 deterministic = false : !s, !s, !s, !s, !s, !sl
  return
}
