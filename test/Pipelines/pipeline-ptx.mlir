// The whole flow to PTX, and ptxas on it (no GPU needed).
// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: dash-opt %s --dash-pipeline="policy=symmetric-shift block-m=64 block-n=128 format=isa dump-dir=%t/dump" -o %t/out.mlir
// RUN: FileCheck %s --input-file=%t/out.mlir
// RUN: ls %t/dump | FileCheck %s --check-prefix=DUMP
// RUN: python3 %dash_src_root/scripts/extract-binary %t/out.mlir %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/k.ptx
// RUN: %ptxas -arch=sm_90a -v %t/k.ptx -o %t/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// Without tile options the GPU pipeline takes the kernel family's tiles:
// wgmma (default) 128x128 at D = 64 (64x128 at D = 128), sync 64x64.
// RUN: dash-opt %s --dash-pipeline="policy=descending format=isa dump-dir=%t/dump2" -o /dev/null
// RUN: FileCheck %s --check-prefix=TILE --input-file=%t/dump2/01-scheduled.mlir
// TILE: #dash.tiling<block_m = 128, block_n = 128, stages = 2>
// RUN: dash-opt %s --dash-pipeline="policy=descending mma=sync format=isa dump-dir=%t/dump3" -o %t/sync.mlir
// RUN: FileCheck %s --check-prefix=SYNCTILE --input-file=%t/dump3/01-scheduled.mlir
// SYNCTILE: #dash.tiling<block_m = 64, block_n = 64, stages = 2>
// The sync family loads by cp.async (ISA 8.0); cp-async wgmma kernels too.
// RUN: FileCheck %s --check-prefix=SYNC --input-file=%t/sync.mlir
// SYNC: features = "+ptx80"
// RUN: dash-opt %s --dash-pipeline="policy=descending loads=cp-async format=isa" -o %t/cpasync.mlir
// RUN: python3 %dash_src_root/scripts/extract-binary %t/cpasync.mlir %t/cpasync.ptx
// RUN: FileCheck %s --check-prefix=CPASYNC --input-file=%t/cpasync.ptx
// CPASYNC: .version 8.0
// CPASYNC: cp.async.cg.shared.global

// The wgmma kernels load by TMA unless told otherwise: the PTX ISA is raised
// to 8.3 (fence.proxy.tensormap).
// CHECK: gpu.binary @dash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx83">
// DUMP: 01-scheduled.mlir
// DUMP: 02-materialized.mlir
// DUMP: 03-gpu.mlir
// DUMP: 04-binary.mlir
// PTX: .target sm_90a
// PTX: .visible .entry dash_bwd_preprocess(
// PTX: .visible .entry dash_bwd_main(
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 232
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX-DAG: elect.sync
// PTX-DAG: @%p{{[0-9]+}} cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX-DAG: ld.acquire.gpu.b32
// PTX-DAG: ex2.approx.ftz.f32
// PTX-DAG: fence.acq_rel.gpu
// PTX: .visible .entry dash_bwd_postprocess(
// PTXAS: Compiling entry function 'dash_bwd_main' for 'sm_90a'
// PTXAS: Used {{[0-9]+}} registers
!act = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
