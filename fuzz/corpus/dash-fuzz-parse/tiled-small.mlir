!t = tensor<1x300x2x64xbf16>
func.func @f(%q: !t, %l: tensor<1x2x300xf32>) -> (!t, !t, !t) {
  %a, %b, %c = dash.attention_bwd %q, %q, %q, %q, %q, %l
      mask = causal align = top_left scale = 0.5 deterministic = true
      {tiling = #dash.tiling<block_m = 16, block_n = 32, stages = 1>}
      : !t, !t, !t, !t, !t, tensor<1x2x300xf32> -> !t, !t, !t
  return %a, %b, %c : !t, !t, !t
}
