// RUN: dash-opt %s --dash-tile | FileCheck %s --check-prefix=DEFAULT
// RUN: dash-opt %s --dash-tile="block-m=128 block-n=64 stages=3" | FileCheck %s --check-prefix=OVERRIDE
// RUN: not dash-opt %s --dash-tile="block-m=24" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: dash-opt %s --dash-tile=kernels=wgmma | FileCheck %s --check-prefix=WGMMA
// RUN: dash-opt %s --dash-tile=kernels=sync | FileCheck %s --check-prefix=SYNC
// RUN: not dash-opt %s --dash-tile=kernels=tma 2>&1 | FileCheck %s --check-prefix=BADK
// The WGMMA kernels' tiles: d=128 64x128 (either mask), d=64 128x128; a kernel
// family replaces even an existing tiling (it is what the kernels need).
// WGMMA-LABEL: func @d128_causal
// WGMMA: tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>
// WGMMA-LABEL: func @d128_full
// WGMMA: tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>
// WGMMA-LABEL: func @d64_causal
// WGMMA: tiling = #dash.tiling<block_m = 128, block_n = 128, stages = 2>
// WGMMA-LABEL: func @pretiled
// WGMMA: tiling = #dash.tiling<block_m = 128, block_n = 128, stages = 2>
// SYNC-LABEL: func @d128_full
// SYNC: tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>
// BADK: error: dash-tile: unknown kernels='tma'; expected fa3, wgmma or sync

// FA3's Hopper tiles: d=128 causal 64x128, d=128 full 80x128, d=64 128x128.
// DEFAULT-LABEL: func @d128_causal
// DEFAULT: tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>
// OVERRIDE-LABEL: func @d128_causal
// OVERRIDE: tiling = #dash.tiling<block_m = 128, block_n = 64, stages = 3>
// BAD: error: 'dash.attention_bwd' op block_m must be a positive multiple of 16, got 24
!t128 = tensor<1x256x4x128xbf16>
func.func @d128_causal(%q: !t128, %lse: tensor<1x4x256xf32>) -> !t128 {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = causal scale = 0.088 deterministic = true
      : !t128, !t128, !t128, !t128, !t128, tensor<1x4x256xf32> -> !t128, !t128, !t128
  return %r#0 : !t128
}

// DEFAULT-LABEL: func @d128_full
// DEFAULT: tiling = #dash.tiling<block_m = 80, block_n = 128, stages = 2>
func.func @d128_full(%q: !t128, %lse: tensor<1x4x256xf32>) -> !t128 {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.088 deterministic = true
      : !t128, !t128, !t128, !t128, !t128, tensor<1x4x256xf32> -> !t128, !t128, !t128
  return %r#0 : !t128
}

// DEFAULT-LABEL: func @d64_causal
// DEFAULT: tiling = #dash.tiling<block_m = 128, block_n = 128, stages = 2>
!t64 = tensor<1x256x4x64xf16>
func.func @d64_causal(%q: !t64, %lse: tensor<1x4x256xf32>) -> !t64 {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = causal scale = 0.125 deterministic = true
      : !t64, !t64, !t64, !t64, !t64, tensor<1x4x256xf32> -> !t64, !t64, !t64
  return %r#0 : !t64
}

// An existing tiling is kept unless an option overrides it.
// DEFAULT-LABEL: func @pretiled
// DEFAULT: tiling = #dash.tiling<block_m = 32, block_n = 64, stages = 1>
// OVERRIDE-LABEL: func @pretiled
// OVERRIDE: tiling = #dash.tiling<block_m = 128, block_n = 64, stages = 3>
func.func @pretiled(%q: !t64, %lse: tensor<1x4x256xf32>) -> !t64 {
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 32, block_n = 64, stages = 1>}
      : !t64, !t64, !t64, !t64, !t64, tensor<1x4x256xf32> -> !t64, !t64, !t64
  return %r#0 : !t64
}
