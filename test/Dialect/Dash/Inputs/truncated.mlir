func.func @f(%q: tensor<2x128x16x128xbf16>) {
  %r:3 = dash.attention_bwd %q, %q,
