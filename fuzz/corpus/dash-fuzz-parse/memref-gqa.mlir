!q = memref<2x128x8x128xf16>
!k = memref<2x384x2x128xf16>
func.func @g(%q: !q, %k: !k, %v: !k, %o: !q, %do: !q, %l: memref<2x8x128xf32>,
             %dq: !q, %dk: !k, %dv: !k) {
  dash.attention_bwd %q, %k, %v, %o, %do, %l outs(%dq, %dk, %dv : !q, !k, !k)
      mask = full scale = 0.088 deterministic = true : !q, !k, !k, !q, !q, memref<2x8x128xf32>
  return
}
