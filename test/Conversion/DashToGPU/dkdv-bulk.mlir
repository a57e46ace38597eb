// dkdv-bulk (D = 64, 128-row Q tiles; default for full-mask kernels):
// the dK/dV epilogue stages the item's bf16 rows in the dS^T buffer of the
// walk's last step, 128B-swizzled as the K/V tiles are (dK's 128 rows, then
// dV's at +16384), and arrives on EPI_FULL; warp 11 waits for the next
// item's K/V (FULL_KV), stores both tiles by TMA through tensor maps 7 and 8
// (dk, dv: the argument grows to nine maps, 144 words) and frees the buffer
// before the next item's first dS^T barrier, a 288-thread barrier it takes
// part in (id 12), so the MMA walk itself has no wait for the stores. An
// empty walk's epilogue waits for EPI_EMPTY. Causal kernels keep the
// register epilogue; kernels where dK and dV do not fit one dS^T buffer are
// refused.
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DET
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=1" --canonicalize --cse | FileCheck %s --check-prefix=DETON
// RUN: sed 's/deterministic = true/deterministic = false/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DET
// RUN: sed 's/deterministic = true/deterministic = false/; s/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=NDFULL
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DETFULL
// RUN: sed 's/x64xbf16/x128xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=1" 2>&1 | FileCheck %s --check-prefix=D128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=1 ds-buffers=1" 2>&1 | FileCheck %s --check-prefix=ONEBUF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=1 kv-via-ds=1" 2>&1 | FileCheck %s --check-prefix=KVDS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dkdv-bulk=2" 2>&1 | FileCheck %s --check-prefix=RANGE

// CHECK: dash.config = {{{.*}}deterministic = false, dkdv_bulk = true{{.*}}shared_bytes = 232048 : i64
// CHECK: gpu.func @dash_bwd_main({{.*}}%arg16: memref<144xi64> {dash.name = "tensor_maps"})
// Two more mbarriers in slots 8 and 9 (after kv-via-ds's, unused here):
// EPI_FULL (232000) waits for the 256 MMA threads, EPI_EMPTY (232008) for
// the storer's one arrival.
// CHECK-COUNT-6: nvvm.mbarrier.init
// CHECK-NEXT: %[[EF:.*]] = arith.addi %{{.*}}, %c232000 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK-NEXT: arith.addi %{{.*}}, %c232008 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NOT: nvvm.mbarrier.init
// The step's dS^T barrier ahead of dQ: 288 threads on barrier 12.
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c12_i32, %c288_i32 : i32, i32)
// CHECK-NOT: barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// CHECK: nvvm.wgmma.fence.aligned
// The epilogue (no GQA): the last step's dS^T buffer (98304 + 32768 ((first +
// len + 1) % 2), as the storer computes it below), EPI_EMPTY of the item
// before, both warpgroups past their
// last dQ, then eight 16-byte stores a thread at swizzled chunks, the proxy
// fence and the EPI_FULL arrival.
// CHECK: arith.addi %{{.*}}, %c232008 : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32 : i32, i32)
// CHECK: arith.addi %{{.*}}, %c16384 : index
// CHECK: arith.xori
// CHECK: nvvm.inline_ptx "st.shared.v4.b32 [$0], {$1, $2, $3, $4};"
// CHECK-COUNT-7: nvvm.inline_ptx "st.shared.v4.b32 [$0], {$1, $2, $3, $4};"
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: arith.addi %{{.*}}, %c232000 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: nvvm.mbarrier.arrive
// CHECK-NEXT: } else {
// The storer, lane 0 of warp 11 (thread 352) when H == H_kv: the dk / dv
// maps (bytes 896, 1024) acquired once; per item, the previous item's
// stores' reads waited for and EPI_EMPTY arrived on, one 288-thread
// barrier per step (the whole warp), EPI_FULL, the next item's FULL_KV, the
// two TMA stores at rows kv * 128 and commit; at the end, completion.
// CHECK: %[[LEAD:.*]] = arith.cmpi eq, %thread_id_x, %c352 : index
// CHECK-NEXT: %[[DIRECT:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[STORE:.*]] = arith.andi %[[LEAD]], %[[DIRECT]] : i1
// CHECK-NEXT: scf.if %[[STORE]] {
// CHECK: arith.addi %{{.*}}, %c896 : index
// CHECK: nvvm.fence.proxy.acquire <gpu>
// CHECK: arith.addi %{{.*}}, %c1024 : index
// CHECK: nvvm.fence.proxy.acquire <gpu>
// CHECK: scf.for %[[ITEM:.*]] = %c0 to %{{.*}} step %c1 iter_args
// CHECK: %[[LATER:.*]] = arith.cmpi sgt, %[[ITEM]], %c0 : index
// CHECK-NEXT: %[[FREE:.*]] = arith.andi %[[STORE]], %[[LATER]] : i1
// CHECK-NEXT: scf.if %[[FREE]] {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: arith.addi %{{.*}}, %c232008 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: llvm.inttoptr
// CHECK-NEXT: nvvm.mbarrier.arrive
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK-NEXT: scf.for
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c12_i32, %c288_i32 : i32, i32)
// CHECK-NEXT: }
// CHECK-NEXT: scf.if %[[STORE]] {
// CHECK-NEXT: arith.addi %{{.*}}, %c232000 : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: arith.addi %{{.*}}, %c231968 : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[L1:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: %[[F:.*]] = arith.addi %{{.*}}, %[[L1]] : index
// CHECK-NEXT: %[[PAR:.*]] = arith.remui %[[F]], %c2 : index
// CHECK-NEXT: %[[DS0:.*]] = arith.addi %{{.*}}, %c98304 : index
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[PAR]], %c32768 : index
// CHECK-NEXT: arith.addi %[[DS0]], %[[OFF]] : index
// CHECK: arith.addi %{{.*}}, %c896 : index
// CHECK: arith.muli %{{.*}}, %c128 : index
// CHECK: nvvm.inline_ptx "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [$0, {$1, $2, $3, $4}], [$5];" ro(%{{.*}}, %c0_i32,
// CHECK: arith.addi %{{.*}}, %c1024 : index
// CHECK: arith.addi %{{.*}}, %c16384 : index
// CHECK: nvvm.inline_ptx "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [$0, {$1, $2, $3, $4}], [$5];"
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK: scf.if %[[STORE]] {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0
// CHECK: gpu.func @dash_bwd_postprocess(

// DET: dash.config = {{{.*}}dkdv_bulk = false{{.*}}shared_bytes = 232016 : i64
// DET: gpu.func @dash_bwd_main({{.*}}%arg16: memref<112xi64> {dash.name = "tensor_maps"})
// DET-COUNT-6: nvvm.mbarrier.init
// DET-NOT: nvvm.mbarrier.init
// DET-NOT: %c288_i32
// DET-NOT: cp.async.bulk.tensor.4d.global.shared::cta
// DET: gpu.func @dash_bwd_postprocess(

// Deterministic full-mask kernels take it by default too.
// DETFULL: dash.config = {{{.*}}deterministic = true, dkdv_bulk = true{{.*}}mask = "full"
// DETFULL: cp.async.bulk.tensor.4d.global.shared::cta.bulk_group

// NDFULL: dash.config = {{{.*}}deterministic = false, dkdv_bulk = true{{.*}}mask = "full"
// NDFULL: cp.async.bulk.tensor.4d.global.shared::cta.bulk_group

// DETON: dash.config = {{{.*}}deterministic = true, dkdv_bulk = true
// DETON: cp.async.bulk.tensor.4d.global.shared::cta.bulk_group

// D128: error: 'dash.scheduled_attention_bwd' op dkdv-bulk=1 needs mma=wgmma with loads=tma, D = 64 on 128-row Q tiles and two dS^T buffers, without dq-kv-split or kv-via-ds (an item's dK and dV rows must fit the dS^T buffer of the walk's last step; got D = 128, 64-row Q tiles, 2 dS^T buffer(s))
// ONEBUF: error: 'dash.scheduled_attention_bwd' op dkdv-bulk=1 needs {{.*}}got D = 64, 128-row Q tiles, 1 dS^T buffer(s))
// KVDS: error: 'dash.scheduled_attention_bwd' op dkdv-bulk=1 needs {{.*}}without dq-kv-split or kv-via-ds
// RANGE: error: 'dash.scheduled_attention_bwd' op dkdv-bulk must be 0 or 1, or -1 for the default (got 2)

!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
