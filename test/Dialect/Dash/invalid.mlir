// RUN: dash-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of dash.attention_bwd.

// q rank
func.func @q_rank(%q: tensor<2x128x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{operand 'q' must have rank 4 [B, S, H, D], got rank 3}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// lse rank
func.func @lse_rank(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x128xf32>) {
  // expected-error @+1 {{operand 'lse' must have rank 3 [B, H_q, S_q], got rank 2}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// q element type
func.func @q_element_type(%q: tensor<2x128x16x128xf32>, %k: tensor<2x128x16x128xf32>, %v: tensor<2x128x16x128xf32>, %o: tensor<2x128x16x128xf32>, %do: tensor<2x128x16x128xf32>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{operand 'q' must have element type bf16 or f16, got 'f32'}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>, tensor<2x16x128xf32> -> tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>, tensor<2x128x16x128xf32>
  return
}

// -----

// mixed element types
func.func @mixed_element_types(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{operand 'v' has element type 'f16' but 'q' has 'bf16'}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xf16>
  return
}

// -----

// lse element type
func.func @lse_element_type(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xbf16>) {
  // expected-error @+1 {{operand 'lse' must have element type f32, got 'bf16'}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xbf16> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// batch mismatch
func.func @batch_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<3x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{batch size B mismatch: operand 'k' has 3 (dim 0) but 'q' has 2 (dim 0)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<3x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<3x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// query length mismatch
func.func @query_length_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x64xf32>) {
  // expected-error @+1 {{query length S_q mismatch: operand 'lse' has 64 (dim 2) but 'q' has 128 (dim 1)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x64xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// key length mismatch
func.func @key_length_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x256x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{key length S_k mismatch: operand 'v' has 256 (dim 1) but 'k' has 128 (dim 1)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x256x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x256x16x128xbf16>
  return
}

// -----

// query heads mismatch
func.func @query_heads_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x8x128xf32>) {
  // expected-error @+1 {{query heads H_q mismatch: operand 'lse' has 8 (dim 1) but 'q' has 16 (dim 2)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x8x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// kv heads mismatch
func.func @kv_heads_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x8x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{key/value heads H_kv mismatch: operand 'v' has 8 (dim 2) but 'k' has 16 (dim 2)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x8x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x8x128xbf16>
  return
}

// -----

// head dim mismatch
func.func @head_dim_mismatch(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x64xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{head dim D mismatch: operand 'k' has 64 (dim 3) but 'q' has 128 (dim 3)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x64xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// unsupported head dim
func.func @unsupported_head_dim(%q: tensor<2x128x16x96xbf16>, %k: tensor<2x128x16x96xbf16>, %v: tensor<2x128x16x96xbf16>, %o: tensor<2x128x16x96xbf16>, %do: tensor<2x128x16x96xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{unsupported head dim D = 96 (operand 'q' dim 3); supported: 64, 128}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>, tensor<2x128x16x96xbf16>
  return
}

// -----

// dynamic head dim
func.func @dynamic_head_dim(%q: tensor<2x128x16x?xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x?xbf16>, %do: tensor<2x128x16x?xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{head dim D (dim 3 of 'q') must be static}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x?xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x?xbf16>, tensor<2x128x16x?xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x?xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// gqa heads
func.func @gqa_heads(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x6x128xbf16>, %v: tensor<2x128x6x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{query heads H_q = 16 must be a multiple of key/value heads H_kv = 6}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x6x128xbf16>, tensor<2x128x6x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x6x128xbf16>, tensor<2x128x6x128xbf16>
  return
}

// -----

// dq shape
func.func @dq_shape(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{'dq' must have the shape of 'q' ('tensor<2x128x16x128xbf16>') and its element type or f32, got 'tensor<2x128x16x128xf16>'}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// dk shape
func.func @dk_shape(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{'dk' must have the shape of 'k' ('tensor<2x128x16x128xbf16>') and its element type or f32, got 'tensor<2x64x16x128xbf16>'}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x64x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// result count
func.func @result_count(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{on tensors expects 3 results (dq, dk, dv) and no 'outs', got 2 results and 0 outs}}
  %r:2 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// zero scale
func.func @zero_scale(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{scale must be finite and > 0, got 0}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0.0 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// negative scale
func.func @negative_scale(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{scale must be finite and > 0, got -0.125}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = -0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// infinite scale
func.func @infinite_scale(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{scale must be finite and > 0, got inf}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0x7F800000 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// nan scale
func.func @nan_scale(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{scale must be finite and > 0, got nan}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full scale = 0x7FC00000 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// align on full mask
func.func @align_on_full_mask(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{'align' applies only to a causal mask, but mask is full}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = full align = top_left scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// causal lengths differ
func.func @causal_lengths_differ(%q: tensor<2x128x16x128xbf16>, %k: tensor<2x256x16x128xbf16>, %v: tensor<2x256x16x128xbf16>, %o: tensor<2x128x16x128xbf16>, %do: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{causal mask with S_q (128) possibly != S_k (256) needs an explicit 'align = bottom_right' (FlashAttention) or 'align = top_left' (PyTorch SDPA is_causal)}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = causal scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x256x16x128xbf16>, tensor<2x256x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x256x16x128xbf16>, tensor<2x256x16x128xbf16>
  return
}

// -----

// causal dynamic lengths
func.func @causal_dynamic_lengths(%q: tensor<2x?x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %v: tensor<2x128x16x128xbf16>, %o: tensor<2x?x16x128xbf16>, %do: tensor<2x?x16x128xbf16>, %lse: tensor<2x16x?xf32>) {
  // expected-error @+1 {{causal mask with S_q (?) possibly != S_k (128) needs an explicit}}
  %r:3 = dash.attention_bwd %q, %k, %v, %o, %do, %lse mask = causal scale = 0.125 deterministic = true : tensor<2x?x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x?x16x128xbf16>, tensor<2x?x16x128xbf16>, tensor<2x16x?xf32> -> tensor<2x?x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// mixed tensor and memref
func.func @mixed(%q: memref<2x128x16x128xbf16>, %k: tensor<2x128x16x128xbf16>, %lse: memref<2x16x128xf32>, %g: memref<2x128x16x128xbf16>) {
  // expected-error @+1 {{operand 'k' is a tensor but 'q' is a memref; use tensors or memrefs throughout}}
  dash.attention_bwd %q, %k, %q, %q, %q, %lse outs(%g, %g, %g : memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>) mask = full scale = 0.125 deterministic = true : memref<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x16x128xf32>
  return
}

// -----

// memrefs need three outs
func.func @memref_outs(%q: memref<2x128x16x128xbf16>, %lse: memref<2x16x128xf32>) {
  // expected-error @+1 {{on memrefs expects 3 'outs' buffers (dq, dk, dv) and no results, got 2 outs and 0 results}}
  dash.attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q : memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>) mask = full scale = 0.125 deterministic = true : memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x128x16x128xbf16>, memref<2x16x128xf32>
  return
}

// -----

// bad tiling attribute
func.func @bad_tiling(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+2 {{block_m must be a positive multiple of 16, got 10}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {tiling = #dash.tiling<block_m = 10, block_n = 128, stages = 2>}
      : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// bad schedule attribute: no units
func.func @bad_schedule_units(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+2 {{num_units must be >= 1, got 0}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = shift, requested = shift, num_units = 0, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>}
      : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// bad schedule attribute: a concrete request that was not honoured
func.func @bad_schedule_policy(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+2 {{policy 'descending' differs from the requested 'shift'}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = descending, requested = shift, num_units = 132, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>}
      : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

// bad schedule attribute: costs
func.func @bad_schedule_costs(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+2 {{costs must be finite with c > 0 and r >= 0, got c = 0, r = 0.25}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = shift, requested = shift, num_units = 8, c = 0.0, r = 0.25, makespan = 0.0, critical_path = 0.0>}
      : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

func.func @bad_mask(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{unknown mask 'sliding'; expected 'full' or 'causal'}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = sliding scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

func.func @bad_policy(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+2 {{unknown schedule policy 'zigzag'}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = zigzag, requested = auto, num_units = 132, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>}
      : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}

// -----

func.func @bad_align(%q: tensor<2x128x16x128xbf16>, %lse: tensor<2x16x128xf32>) {
  // expected-error @+1 {{unknown causal alignment 'center'; expected 'bottom_right' or 'top_left'}}
  %r:3 = dash.attention_bwd %q, %q, %q, %q, %q, %lse mask = causal align = center scale = 0.125 deterministic = true : tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x16x128xf32> -> tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>, tensor<2x128x16x128xbf16>
  return
}
