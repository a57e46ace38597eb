// kv-via-ds=1 (D = 64, 128-row Q tiles): the next item's K and V (2 x 128 x
// 64 bf16 = 32 KiB, one dS^T buffer) are loaded into the dS^T buffer the
// walk's last step leaves free, from that step's dS^T barrier on, and moved
// into the K/V tiles by one shared-to-shared bulk copy once the last dQ has
// read K (early-kv's release), completing FULL_KV. Two more mbarriers
// (EMPTY_DS: the MMA threads, FULL_DS: the producer's own wait); the MMA
// walk changes only by the EMPTY_DS arrival. Kernels where K and V do not
// fit one dS^T buffer, or with a single one, are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-via-ds=1" --canonicalize --cse | FileCheck %s
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DEFAULT
// RUN: sed 's/x64xbf16/x128xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-via-ds=1" 2>&1 | FileCheck %s --check-prefix=D128
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-via-ds=1 ds-buffers=1" 2>&1 | FileCheck %s --check-prefix=ONEBUF
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-via-ds=1 early-kv=0" 2>&1 | FileCheck %s --check-prefix=NOEARLY
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=kv-via-ds=2" 2>&1 | FileCheck %s --check-prefix=RANGE

// CHECK: dash.config = {{{.*}}early_kv = true{{.*}}kv_via_ds = true{{.*}}shared_bytes = 232032 : i64
// A shared-to-shared bulk copy is an illegal instruction outside a cluster:
// the main kernel is a cluster of one by its own attribute.
// CHECK: gpu.func @dash_bwd_main({{.*}} attributes {nvvm.cluster_dim = array<i32: 1, 1, 1>,
// CHECK-COUNT-8: nvvm.mbarrier.init
// CHECK-NOT: nvvm.mbarrier.init
// The MMA walk: right after the dS^T barrier, the walk's last step arrives on
// EMPTY_DS (shared byte 231984 of the window: mbarrier 6).
// CHECK: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32 : i32, i32)
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[STEP:.*]], %c1 : index
// CHECK-NEXT: %[[LAST:.*]] = arith.cmpi eq, %[[NEXT]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: %[[EDS:.*]] = arith.addi %{{.*}}, %c231984 : index
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// The producer, per item: the dS^T buffer of the unit's step `first`
// (98304 + 32768 (first % 2)), EMPTY_DS, K and V into it on FULL_DS
// (231992: mbarrier 7), step 0's copies, EMPTY_KV, FULL_DS, then the bulk
// copy of both tiles to the K/V tiles (window byte 0) on FULL_KV, its
// operands 32-bit shared::cta addresses.
// CHECK: arith.addi %{{.*}}, %c231968 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[FULLKV:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: %[[DS0:.*]] = arith.addi %{{.*}}, %c98304 : index
// CHECK-NEXT: %[[PAR:.*]] = arith.remui %[[FIRST:.*]], %c2 : index
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[PAR]], %c32768 : index
// CHECK-NEXT: %[[DS:.*]] = arith.addi %[[DS0]], %[[OFF]] : index
// CHECK: arith.addi %{{.*}}, %c231992 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[FULLDS:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: arith.addi %{{.*}}, %c231984 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[EMPTYDS:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: nvvm.mbarrier.try_wait.parity %[[EMPTYDS]], %[[NOTPAR:.*]], %c10000000_i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[FULLDS]], %c32768_i32
// CHECK: %[[DSPTR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK-NEXT: %[[DSCL:.*]] = llvm.addrspacecast %[[DSPTR]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[DSCL]], %{{.*}}, %[[FULLDS]]
// CHECK: arith.addi %[[DS]], %c16384 : index
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULLDS]]
// CHECK: scf.if
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c33792_i32
// CHECK: arith.addi %{{.*}}, %c231976 : index
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[EMPTYKV:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[EMPTYKV]], %[[NOTPAR]], %c10000000_i32
// CHECK: nvvm.mbarrier.try_wait.parity %[[FULLDS]], %{{.*}}, %c10000000_i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[FULLKV]], %c32768_i32, predicate = %[[ELECT:.*]] :
// CHECK-NEXT: scf.if %[[ELECT]] {
// CHECK-NEXT: %[[K32:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: %[[DS32:.*]] = arith.index_cast %[[DS]] : index to i32
// CHECK-NEXT: %[[BAR32:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: nvvm.inline_ptx "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];" ro(%[[K32]], %[[DS32]], %c32768_i32, %[[BAR32]] : i32, i32, i32, i32)
// CHECK: gpu.func @dash_bwd_postprocess(

// DEFAULT: dash.config = {{{.*}}early_kv = true{{.*}}kv_via_ds = false{{.*}}shared_bytes = 232016 : i64
// DEFAULT: gpu.func @dash_bwd_main({{.*}} attributes {nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {
// DEFAULT-COUNT-6: nvvm.mbarrier.init
// DEFAULT-NOT: nvvm.mbarrier.init
// DEFAULT-NOT: cp.async.bulk.shared::cluster.shared::cta
// DEFAULT: gpu.func @dash_bwd_postprocess(

// D128: error: 'dash.scheduled_attention_bwd' op kv-via-ds=1 needs mma=wgmma with loads=tma, D = 64 on 128-row Q tiles and two dS^T buffers without dq-kv-split (the next item's K and V must fit the dS^T buffer the walk's last step leaves free; got D = 128, 64-row Q tiles, 2 dS^T buffer(s))
// ONEBUF: error: 'dash.scheduled_attention_bwd' op kv-via-ds=1 needs {{.*}}got D = 64, 128-row Q tiles, 1 dS^T buffer(s))
// NOEARLY: error: 'dash.scheduled_attention_bwd' op kv-via-ds=1 frees K/V after the item's last dQ: it implies early-kv=1, not 0
// RANGE: error: 'dash.scheduled_attention_bwd' op kv-via-ds must be 0 or 1, or -1 for the default (got 2)

!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
