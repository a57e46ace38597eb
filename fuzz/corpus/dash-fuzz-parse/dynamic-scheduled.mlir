!d = tensor<?x?x4x64xbf16>
func.func @h(%q: !d, %l: tensor<?x4x?xf32>) -> !d {
  %a, %b, %c = dash.attention_bwd %q, %q, %q, %q, %q, %l
      mask = causal align = bottom_right scale = 0.125 deterministic = false
      {tiling = #dash.tiling<block_m = 64, block_n = 128, stages = 2>,
       schedule = #dash.schedule<policy = spt, requested = spt, num_units = 8,
                                 c = 1.0, r = 0.5, makespan = 1.0, critical_path = 1.0>}
      : !d, !d, !d, !d, !d, tensor<?x4x?xf32> -> !d, !d, !d
  return %a : !d
}
