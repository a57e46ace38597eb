// RUN: dash-opt %s -split-input-file -verify-diagnostics
// The verifier of the materialised form evaluates its schedule regions.

!t = memref<1x128x1x64xbf16>
// A hand-edited rank region: every KV tile claims rank 0 on every row, so
// the reducers of the other tiles would wait forever.
func.func @ranks_not_a_permutation(%q: !t, %lse: memref<1x1x128xf32>) {
  // expected-error @+1 {{ranks are not a permutation on dQ row (b=0, h=0, q=0): KV tiles 0 and 1 both have rank 0}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    %c1 = arith.constant 1 : index
    dash.yield %c1
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    dash.yield %step
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    %c0 = arith.constant 0 : index
    dash.yield %c0
  }
  return
}

// -----

!t = memref<1x128x1x64xbf16>
// Rank out of range: row 1 has two covering KV tiles, ranks must be 0..1.
func.func @rank_out_of_range(%q: !t, %lse: memref<1x1x128xf32>) {
  // expected-error @+1 {{ranks are not a permutation on dQ row (b=0, h=0, q=0): KV tile 0 has rank 2, outside 0..1}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    %c1 = arith.constant 1 : index
    dash.yield %c1
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    dash.yield %step
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    %c2 = arith.constant 2 : index
    %r = arith.addi %kv, %c2 : index
    dash.yield %r
  }
  return
}

// -----

!t = memref<1x128x1x64xbf16>
// A walk that visits the same Q tile twice (and so misses another).
func.func @visits_twice(%q: !t, %lse: memref<1x1x128xf32>) {
  // expected-error @+1 {{KV tile 0 of (b=0, h=0) visits Q tile 0 twice}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    %c1 = arith.constant 1 : index
    dash.yield %c1
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    %c0 = arith.constant 0 : index
    dash.yield %c0
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    dash.yield %kv
  }
  return
}

// -----

!t = memref<1x128x1x64xbf16>
// A unit list that forgets KV tile 1.
func.func @misses_tasks(%q: !t, %lse: memref<1x1x128xf32>) {
  // expected-error @+1 {{schedule visits 2 of the 4 covered (KV tile, Q tile) tasks}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %is0 = arith.cmpi eq, %unit, %c0 : index
    %n = arith.select %is0, %c1, %c0 : index
    dash.yield %n
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    dash.yield %step
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    dash.yield %kv
  }
  return
}

// -----

!t = memref<1x128x1x64xbf16>
func.func @bad_region_signature(%q: !t, %lse: memref<1x1x128xf32>) {
  // expected-error @+1 {{region 'rank' must yield 1 index values}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    %c1 = arith.constant 1 : index
    dash.yield %c1
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    dash.yield %step
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    dash.yield %kv, %qt
  }
  return
}

// -----

!t = memref<1x128x1x64xbf16>
func.func @unsupported_op(%q: !t, %lse: memref<1x1x128xf32>, %n: index) {
  // expected-error @+1 {{items(0): schedule region uses a value that is not a constant}}
  dash.scheduled_attention_bwd %q, %q, %q, %q, %q, %lse outs(%q, %q, %q : !t, !t, !t)
      mask = full scale = 0.125 deterministic = true
      {schedule = #dash.schedule<policy = ascending, requested = ascending, num_units = 2, c = 1.0, r = 0.25, makespan = 0.0, critical_path = 0.0>,
       tiling = #dash.tiling<block_m = 64, block_n = 64, stages = 2>}
      : !t, !t, !t, !t, !t, memref<1x1x128xf32>
  items {
  ^bb0(%unit: index):
    dash.yield %n
  } work {
  ^bb0(%unit: index, %item: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    dash.yield %c0, %c0, %unit, %c2
  } visit {
  ^bb0(%b: index, %h: index, %kv: index, %step: index):
    dash.yield %step
  } rank {
  ^bb0(%b: index, %h: index, %kv: index, %qt: index):
    dash.yield %kv
  }
  return
}
