// The bundled example: causal attention backward, d = 128, bf16, on memrefs
// in destination style. scripts/run-example takes it through the pipeline.
//
//   q, o, dO: [B=1, S=1024, H=4, D=128] (BSHD)    lse: [B, H, S] f32
!act = memref<1x1024x4x128xbf16>
!lse = memref<1x4x1024xf32>

func.func @attention_bwd(%q: !act, %k: !act, %v: !act, %o: !act, %dO: !act,
                         %lse: !lse, %dq: !act, %dk: !act, %dv: !act)
    attributes {llvm.emit_c_interface} {
  dash.attention_bwd %q, %k, %v, %o, %dO, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal scale = 0.08838834764 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
