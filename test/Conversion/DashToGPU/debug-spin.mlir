// Debug kernels cannot hang silently: a semaphore wait gives up after
// debug-spin-limit polls, the first stuck CTA records (unit, b, h, q, rank,
// seen, polls) in the extra `debug` argument (host-mapped by the runtime),
// fences at system scope and traps; the runtime reports DASH_ERROR_HANG.
// RUN: dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu="mma=sync debug-spin-limit=1000" | FileCheck %s
// RUN: dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=mma=sync | FileCheck %s --check-prefix=RELEASE
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu="mma=sync debug-spin-limit=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: debug_spin_limit = 1000 : i64
// CHECK: gpu.func @dash_bwd_main(
// CHECK-SAME: %{{.*}}: f32 {dash.name = "scale"}, %{{.*}}: memref<?xi64> {dash.name = "debug"}) kernel
// The spin stops at the limit...
// CHECK: scf.while
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: arith.cmpi slt, %{{.*}}, %c1000_i64 : i64
// ...and a stuck wait claims the record, writes it, fences, traps.
// CHECK: llvm.atomicrmw xchg %{{.*}}, %c3662938334_i64 monotonic
// CHECK: memref.store
// CHECK: llvm.fence seq_cst
// CHECK-NEXT: llvm.intr.trap

// RELEASE-NOT: dash.name = "debug"
// RELEASE-NOT: llvm.intr.trap
// BAD: error: 'dash.scheduled_attention_bwd' op debug-spin-limit must be >= 0
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
