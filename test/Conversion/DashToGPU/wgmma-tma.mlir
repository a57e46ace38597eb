// loads=tma: Q, dO, K, V, lse_log2, dPsum come by TMA from a producer (warp 10) through
// full/empty mbarriers, from tensor maps the runtime writes into the last
// argument; the MMA threads issue no copies and wait on the barriers.
// The step below is the unfused form (the dS pass after the exp2 pass's
// join, one pass): the default of D = 128 full masks and non-deterministic
// kernels; deterministic causal ones fuse it (ds-in-pass.mlir).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=tma ds-in-pass=0 exp2-chunks=1" --canonicalize --cse | FileCheck %s
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu=loads=bulk 2>&1 | FileCheck %s --check-prefix=BADLOADS
// RUN: not dash-opt %s --dash-tile=kernels=sync --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync loads=tma" 2>&1 | FileCheck %s --check-prefix=NOTWGMMA
// Two dS^T buffers (alternating by step): one barrier between the
// warpgroups per step; the default at D = 128 and at D = 64 (beside two dQ
// staging buffers: 231504 of 232448 B); TMA kernels only. ds-buffers=1
// keeps the barrier before the dS^T stores.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-buffers=1" --canonicalize --cse | FileCheck %s --check-prefix=DS1
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=tma ds-buffers=2" --canonicalize --cse | FileCheck %s --check-prefix=DS2
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-buffers=3" 2>&1 | FileCheck %s --check-prefix=DS3
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async ds-buffers=2" 2>&1 | FileCheck %s --check-prefix=DS2CPASYNC
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-buffers=2 ds-buffers=2" --canonicalize --cse | FileCheck %s --check-prefix=DS2D64
// One dQ staging buffer (dq-buffers=1; one reducer warp, constant barrier
// ids): 32 KiB back at D = 64. The default there is two, beside two dS^T
// buffers. Other counts and cp.async kernels are refused.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-buffers=1 dq-in-main=0" --canonicalize --cse | FileCheck %s --check-prefix=DQ1
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DQ2D64
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-buffers=3" 2>&1 | FileCheck %s --check-prefix=DQ3
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async dq-buffers=1" 2>&1 | FileCheck %s --check-prefix=DQ1CPASYNC
// Row statistics as accumulator starts (stats-in-acc): the default at D = 64
// without dps-fold (1): dP^T's accumulator starts at the thread's dPsum pairs (loaded after
// S^T is issued) and its products are subtracted (scale-a -1), so dS = -P
// acc; 0: dPsum in the dS pass (the D = 128 default); 2: S^T's also starts
// at lse_log2 * (-1 / c). Bad values and cp.async kernels are refused.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dps-fold=0" --canonicalize --cse | FileCheck %s --check-prefix=STATS1
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-acc=0" --canonicalize --cse | FileCheck %s --check-prefix=STATS0
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-acc=2" --canonicalize --cse | FileCheck %s --check-prefix=STATS2
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=stats-in-acc=3" 2>&1 | FileCheck %s --check-prefix=STATSBAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async stats-in-acc=1" 2>&1 | FileCheck %s --check-prefix=STATSCPASYNC
// dq-kv-split=1 (128-row Q tiles): each warpgroup's dQ covers the whole tile
// over its own 64 KV rows; no barrier between the warpgroups at dS^T (one
// dS^T buffer, a 128-thread barrier per warpgroup); warpgroup 0 stores its
// partial, warpgroup 1 adds its own onto it and hands the tile over, one
// 32 KiB add. wg-turns=1 adds turn-taking for S^T/dP^T, with no predicated
// barrier (one made ptxas serialise every wgmma, C7520: bench/NOTES.md
// section 24). Off by default; misuse is refused.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1 dq-buffers=1" --canonicalize --cse | FileCheck %s --check-prefix=SPLIT
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1 wg-turns=1 dq-buffers=1" --canonicalize --cse | FileCheck %s --check-prefix=TURNS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1" 2>&1 | FileCheck %s --check-prefix=SPLITD128
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1 ds-buffers=2" 2>&1 | FileCheck %s --check-prefix=SPLITDS2
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=2" 2>&1 | FileCheck %s --check-prefix=SPLITBAD
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1 wg-turns=2 dq-buffers=1" --canonicalize --cse | FileCheck %s --check-prefix=TURNS2
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=wg-turns=1" 2>&1 | FileCheck %s --check-prefix=TURNSNOSPLIT
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dq-kv-split=1 wg-turns=3" 2>&1 | FileCheck %s --check-prefix=TURNSBAD
// setmaxnreg split: mma-regs=240 overrides the deterministic D = 128 default
// of 232; other counts are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma-regs=240" --canonicalize --cse | FileCheck %s --check-prefix=REGS240
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma-regs=248" 2>&1 | FileCheck %s --check-prefix=REGSBAD
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync mma-regs=232" 2>&1 | FileCheck %s --check-prefix=REGSSYNC
// early-kv=1: the item's last step frees K and V (EMPTY_KV) once its dQ is
// done (dK reads Q and registers), before its hand-off and the dK/dV
// epilogue; after the walk only an empty one arrives. The default for causal
// masks (d = 64 causal det +0.5..+1.0%, d = 128 causal nondet +0.9..+1.9%:
// bench/NOTES.md section 32), off for full masks (det -1.8..+0.5%) and with
// early-st=1; bad values and cp.async kernels are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu | FileCheck %s --check-prefix=KVDEFCAUSAL
// RUN: sed 's/mask = causal align = bottom_right/mask = full/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu | FileCheck %s --check-prefix=KVDEFFULL
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-st=1" | FileCheck %s --check-prefix=KVDEFST
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-kv=1" --canonicalize --cse | FileCheck %s --check-prefix=EARLYKV
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-kv=2" 2>&1 | FileCheck %s --check-prefix=EARLYKVBAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async early-kv=1" 2>&1 | FileCheck %s --check-prefix=EARLYKVCPASYNC
// q-before-kv=0: the producer waits for K/V to be free and issues them before
// the item's first step (the order before section 19 of bench/NOTES.md; the
// MMA warps waited 2-3.5k cycles on that step's tiles); bad values and
// cp.async kernels are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=q-before-kv=0" --canonicalize --cse | FileCheck %s --check-prefix=QKV0
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=q-before-kv=2" 2>&1 | FileCheck %s --check-prefix=QKVBAD
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=cp-async q-before-kv=1" 2>&1 | FileCheck %s --check-prefix=QKVCPASYNC
// ds-stmatrix=0: dS^T as 4-byte bf16 pairs (16 stores per thread at D = 128,
// each with its swizzled address); bad values and non-wgmma kernels are
// refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-stmatrix=0" --canonicalize --cse | FileCheck %s --check-prefix=DSPAIRS
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-stmatrix=2" 2>&1 | FileCheck %s --check-prefix=DSSTMBAD
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync ds-stmatrix=1" 2>&1 | FileCheck %s --check-prefix=DSSTMSYNC
// uniform-wg=1: the MMA threads' warpgroup index is the role branch's lane-0
// broadcast, moved opaquely inside the walk (so ptxas keeps the descriptors
// built from it in uniform registers); the default divides the thread id.
// Bad values and non-wgmma kernels are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=uniform-wg=1" --canonicalize --cse | FileCheck %s --check-prefix=UWG
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=UWG0
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=uniform-wg=2" 2>&1 | FileCheck %s --check-prefix=UWGBAD
// RUN: not dash-opt %s --dash-tile="block-m=64 block-n=64" --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=mma=sync uniform-wg=1" 2>&1 | FileCheck %s --check-prefix=UWGSYNC
// ds-trans=1: each warpgroup's dS^T fragment goes out by stmatrix .trans
// (layout col), so the buffer holds dS and dQ's eight wgmmas read it as a
// K-major A (layout row; FlashAttention-3's order); the default stores dS^T
// and reads an M-major A (layout col) at D = 64 and with ds-trans=0. At
// D = 64 (128-row Q tiles) each warpgroup's dQ starts at its 64 Q rows of
// both panels. Bad values, dq-kv-split and ds-stmatrix=0 are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=1" --canonicalize --cse | FileCheck %s --check-prefix=DST
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=0" --canonicalize --cse | FileCheck %s --check-prefix=DST0
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DST064
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=2" 2>&1 | FileCheck %s --check-prefix=DSTBAD
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=1" --canonicalize --cse | FileCheck %s --check-prefix=DST64
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=1 dq-kv-split=1" 2>&1 | FileCheck %s --check-prefix=DSTSPLIT
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=ds-trans=1 ds-stmatrix=0" 2>&1 | FileCheck %s --check-prefix=DSTPAIRS
// dv-before-fence=1: dV's four register-A wgmmas go out right after the dS^T
// stores, ahead of their proxy fence (FlashAttention-3's order; the default
// at D = 128); 0 fences first. early-dv=1 kernels and bad values are refused.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule --convert-dash-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=DVBF
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dv-before-fence=0" --canonicalize --cse | FileCheck %s --check-prefix=DVBF0
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dv-before-fence=1 early-dv=1" 2>&1 | FileCheck %s --check-prefix=DVBFEARLY
// RUN: not dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=dv-before-fence=3" 2>&1 | FileCheck %s --check-prefix=DVBFBAD
// early-dv=1 at D = 64 (128-row Q tiles): dV's eight register-A wgmmas go out
// right after P is packed, before dP^T is waited for, and the dS pass widens
// P back from those bf16 pairs (a shift for the low half, a mask for the
// high one) before the stmatrix stores; the default issues dV after them.
// Bad values are refused.
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-dv=1" --canonicalize --cse | FileCheck %s --check-prefix=EDV
// RUN: sed 's/x128xbf16/x64xbf16/' %s | dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-dv=0" --canonicalize --cse | FileCheck %s --check-prefix=EDV0
// At D = 128 (64-row Q tiles; here the unfused pass) early-dv=0, the default, issues dV's four
// register-A wgmmas after the dS^T stores (here with dv-before-fence=0:
// after their proxy fence), ahead of the dS^T barrier; early-dv=1 issues
// them inside the exp2 pass, before dP^T is waited for (P's f32 values
// still in registers).
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-dv=0 dv-before-fence=0 ds-in-pass=0 exp2-chunks=1" --canonicalize --cse | FileCheck %s --check-prefix=LATEDV
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-dv=1" --canonicalize --cse | FileCheck %s --check-prefix=EDVD128
// RUN: sed 's/x128xbf16/x64xbf16/' %s | not dash-opt --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=early-dv=2" 2>&1 | FileCheck %s --check-prefix=EDVBAD
// The debug record and the tensor maps together: maps stay last.
// RUN: dash-opt %s --dash-tile=kernels=wgmma --dash-schedule=policy=descending --dash-materialize-schedule "--convert-dash-to-gpu=loads=tma debug-spin-limit=100" | FileCheck %s --check-prefix=DEBUG
// And through the whole pipeline to PTX (raised to ISA 8.3 for
// fence.proxy.tensormap), assembled by ptxas.
// RUN: %if ptxas %{ rm -rf %t && mkdir -p %t %}
// RUN: %if ptxas %{ dash-opt %s "--dash-pipeline=policy=descending loads=tma format=isa" -o %t/out.mlir %}
// RUN: %if ptxas %{ python3 %dash_src_root/scripts/extract-binary %t/out.mlir %t/k.ptx %}
// RUN: %if ptxas %{ FileCheck %s --check-prefix=PTX --input-file=%t/k.ptx %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/k.ptx -o %t/k.cubin %}

// CHECK: dash.config = {{{.*}}dq_accum_map = "tiles"{{.*}}ds_buffers = 2 : i64{{.*}}loads = "tma"{{.*}}mma_regs = 232 : i64{{.*}}q_before_kv = true{{.*}}shared_bytes = 230480 : i64
// The shared window: a zero-size shared global declared 1024-byte aligned,
// whose address (a constant) is every buffer's base; thread 0 traps should
// a loader ever place it otherwise.
// CHECK: llvm.mlir.global internal @__dash_shared_window() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: gpu.func @dash_bwd_main(
// CHECK-SAME: %arg16: memref<112xi64> {dash.name = "tensor_maps"}
// CHECK: %[[WIN:.*]] = llvm.mlir.addressof @__dash_shared_window : !llvm.ptr<3>
// CHECK: %[[WIN64:.*]] = llvm.ptrtoint %[[WIN]] : !llvm.ptr<3> to i64
// CHECK: %[[WINI:.*]] = arith.index_cast %[[WIN64]] : i64 to index
// CHECK: %[[LOW:.*]] = arith.andi %[[WINI]], %c1023 : index
// CHECK-NEXT: %[[OFF:.*]] = arith.cmpi sgt, %[[LOW]], %c0 : index
// CHECK-NEXT: %[[BAD:.*]] = arith.andi %{{.*}}, %[[OFF]] : i1
// CHECK-NEXT: scf.if %[[BAD]] {
// CHECK-NEXT: llvm.intr.trap
// Thread 0: FULL_Q (the producer's expect-tx arrival), EMPTY_Q (256 MMA
// threads) per stage, FULL_KV, EMPTY_KV; then the whole CTA syncs.
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK-NEXT: arith.addi
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c1_i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// MMA threads: no cp.async; wait for K/V (FULL_KV), per step for the stage
// (FULL_Q), whose Q tile index they read from shared memory (the producer
// evaluates the schedule), then S^T and dP^T go to the tensor cores with no
// barrier in between; with two dS^T buffers (the D = 128 default) the
// warpgroups meet only before dQ. The stage is released after the step's last wgmma wait, K/V
// after the walk.
// CHECK: nvvm.setmaxregister  increase 232
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.for
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: barrier.sync
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// This thread's 16 lse_log2 values (8 pairs) are read before S^T goes out.
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// CHECK-NOT: barrier.sync
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// CHECK-NOT: barrier.sync
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT: barrier.sync
// CHECK: llvm.intr.fma
// The dPsum pairs are read while dP^T finishes; no wgmma goes out before
// dP^T is waited for.
// CHECK-NOT: wgmma.mma_async
// CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: barrier.sync
// dS to shared memory: 64 Q columns = 8 column blocks, two per stmatrix
// of four 8x8 bf16 matrices (ds-stmatrix), each matrix of the dS^T fragment
// stored transposed (ds-trans, the default at D = 128), so the buffer holds
// dS for dQ's K-major A.
// CHECK-COUNT-4: nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// CHECK-NOT: nvvm.stmatrix
// dV (register A = P^T) right after the stores, ahead of their proxy fence
// and the dS barrier (dv-before-fence, the default at D = 128, with
// early-dv=0: bench/NOTES.md sections 24, 43).
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// CHECK-NOT: nvvm.cp.async.shared.global
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// The dQ partial goes to the staging buffer in unswizzled 8-column panels
// (no chunk permutation: one per-thread offset plus constants).
// CHECK-NOT: arith.xori
// CHECK-COUNT-16: llvm.store %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// CHECK-NOT: arith.xori
// MMA thread 0 copies the step's Q tile and rank to the hand-off (relaxed
// CTA atomics: racecheck does not model the named barrier's ordering), then
// FULL.
// CHECK: arith.cmpi eq, %{{.*}}, %c0 : index
// CHECK-NEXT: scf.if
// CHECK: llvm.atomicrmw xchg %{{.*}} syncscope("block") monotonic : !llvm.ptr<3>, i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK: llvm.atomicrmw xchg %{{.*}} syncscope("block") monotonic : !llvm.ptr<3>, i32
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;"
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: scf.yield
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// The producer (lane 0 of warp 10, thread 320): per item K and V (2 x 2
// panels of 64 columns x 128 rows, 64 KiB) once EMPTY_KV allows; per step Q
// and dO (2 x 2 panels x 64 rows, 32 KiB) and the 64 lse_log2 and dPsum
// values (maps 5 and 6, 3-D), 33280 bytes in all, no cp.async.
// The reducers (warps 8 and 9), per hand-off of their buffer: FULL of
// warpgroup 0's part (barrier 3 + 6 buf), the rank spin, one 1-D bulk
// reduce-add of that part (for rank 0 a plain bulk copy, predicated: the
// preprocess does not zero dq_accum in deterministic mode; 16 KiB: 64 rows x
// 64 columns of f32, contiguous in the staging tile and, "tiles" layout, in
// dq_accum from the tile's row qt * 64); the warp reconverges, FULL of warpgroup 1's part (5 + 6 buf), its add
// at row qt * 64 + 32 (its 16 KiB) from 16 KiB into the staging tile, the
// read wait; the warp reconverges before its EMPTY arrivals (a warp's arrival
// counts all its lanes); lane 0 waits for the adds and releases the row. No
// tensor map: the dq_accum map is neither fenced nor read.
// The hand-off's Q tile and rank come with it (no schedule evaluated here).
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK-NOT: nvvm.fence.proxy.acquire
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK-NEXT: arith.addi
// CHECK-NEXT: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK-NOT: nvvm.fence.proxy.acquire
// CHECK-NOT: arith.divui
// CHECK: %[[P0:.*]] = arith.addi %{{.*}}, %c3_i32 : i32
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%[[P0]], %c160_i32
// CHECK-NOT: arith.divui
// Lane 0 alone reads the two fields; the other lanes take zeros.
// CHECK: %[[FIELDS:.*]]:2 = scf.if %{{.*}} -> (i32, i32)
// CHECK: llvm.atomicrmw add %{{.*}}, %c0_i32 syncscope("block") monotonic : !llvm.ptr<3>, i32
// CHECK-NOT: arith.divui
// CHECK: llvm.atomicrmw add %{{.*}}, %c0_i32 syncscope("block") monotonic : !llvm.ptr<3>, i32
// CHECK: } else {
// CHECK-NEXT: scf.yield %c0_i32, %c0_i32
// The row's tile, (b * H + h) * ceil(S_q / 64) + Q tile in 32 bits, numbers
// its semaphore (4 B each) and its dq_accum tile (32 KiB each).
// CHECK: %[[M:.*]] = memref.dim %arg14, %c2
// CHECK-NEXT: %[[M32:.*]] = arith.index_cast %[[M]] : index to i32
// CHECK-NEXT: %[[BHM:.*]] = arith.muli %{{.*}}, %[[M32]] : i32
// CHECK-NEXT: %[[TILE:.*]] = arith.addi %[[BHM]], %{{.*}}#0 : i32
// CHECK: %[[T64:.*]] = arith.extui %[[TILE]] : i32 to i64
// CHECK-NEXT: arith.muli %[[T64]], %c4_i64 : i64
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %arg9
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: arith.muli %[[T64]], %c32768_i64 : i64
// CHECK: nvvm.inline_ptx "{\0A.reg .pred p;\0Asetp.eq.b32 p, $3, 0;\0A@p cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\0A@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;\0A}" ro(%{{.*}}, %{{.*}}, %c16384_i32, %[[FIELDS]]#1 : !llvm.ptr<1>, !llvm.ptr<3>, i32, i32)
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK-NEXT: %[[P1:.*]] = arith.addi %{{.*}}, %c5_i32 : i32
// CHECK-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%[[P1]], %c160_i32
// CHECK-NEXT: scf.if
// CHECK: arith.muli %[[T64]], %c32768_i64 : i64
// CHECK: llvm.getelementptr %{{.*}}[4096] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// CHECK-NEXT: arith.addi %{{.*}}, %c16384 : index
// CHECK: nvvm.inline_ptx "{\0A.reg .pred p;\0Asetp.eq.b32 p, $3, 0;\0A@p cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;\0A@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;\0A}" ro(%{{.*}}, %{{.*}}, %c16384_i32, %[[FIELDS]]#1 : !llvm.ptr<1>, !llvm.ptr<3>, i32, i32)
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NOT: nvvm.cp.async.bulk.tensor.reduce
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK: nvvm.inline_ptx "barrier.arrive $0, $1;" ro(%{{.*}}, %c160_i32
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: llvm.fence syncscope("device") release
// CHECK-NEXT: llvm.atomicrmw add
// CHECK: } else {
// CHECK-NEXT: arith.cmpi slt, %thread_id_x, %c352 : index
// CHECK-NEXT: scf.if
// The producer is the whole of warp 10 (warp-producer, the default for
// deterministic kernels): one lane, elected here, issues each copy and
// expect-tx arrival as a predicated instruction (warp-producer.mlir).
// CHECK-NEXT: %[[ELECT:.*]] = nvvm.elect.sync -> i1
// CHECK-NOT: scf.if
// CHECK-COUNT-6: nvvm.fence.proxy.acquire <gpu> %{{.*}}, %c128_i32
// Per item, its first step's tiles (descending: Q tile nq - 1) before the
// wait for K/V (q-before-kv, the default): that stage was freed by the
// previous item's step before last, so the copies land while its last step
// and dK/dV epilogue run.
// CHECK: scf.for
// CHECK: scf.if
// CHECK: %[[FIRSTQ:.*]] = arith.subi %{{.*}}, %c1_i32 : i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.inline_ptx "st.shared.v2.b32 [$0], {$1, $2};" ro(%{{.*}}, %[[FIRSTQ]], %{{.*}} : !llvm.ptr<3>, i32, i32), predicate = %[[ELECT]]
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c33280_i32, predicate = %[[ELECT]]
// CHECK-COUNT-6: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} predicate = %[[ELECT]]
// CHECK-NEXT: }
// Then the item's K and V once the previous item is done with theirs.
// CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32, predicate = %[[ELECT]]
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] predicate = %[[ELECT]] : !llvm.ptr<7>, !llvm.ptr
// Then, unless this is the unit's last item, the next item's K and V (two
// panels each at D = 128) into L2, before the item's steps (the prefetch
// has no predicate operand: a branch on the elected lane).
// CHECK: scf.if
// CHECK: scf.if %[[ELECT]]
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.prefetch %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr
// CHECK-NOT: nvvm.cp.async.bulk.tensor.prefetch
// The walk in 32-bit arithmetic (schedule regions narrowed to i32: no 64-bit
// division subroutine with 24 registers); descending: nq - 1 - step.
// The item's other steps.
// CHECK: scf.for %[[STEP:.*]] = %c1 to
// CHECK-NOT: arith.floordivsi {{.*}} : index
// CHECK: %[[STEP32:.*]] = arith.index_cast %[[STEP]] : index to i32
// CHECK-NEXT: arith.subi %{{.*}}, %[[STEP32]] : i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.cp.async.shared.global
// The step's Q tile index and rank go into the stage before the arrival (a
// release), one 8-byte store of the elected lane.
// CHECK: nvvm.inline_ptx "st.shared.v2.b32 [$0], {$1, $2};" {{.*}} predicate = %[[ELECT]]
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c33280_i32, predicate = %[[ELECT]]
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] predicate = %[[ELECT]] : !llvm.ptr<7>, !llvm.ptr
// CHECK-COUNT-2: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}] predicate = %[[ELECT]] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NOT: nvvm.cp.async
// CHECK: gpu.func @dash_bwd_postprocess(
// CHECK-SAME: memref<112xi64> {dash.name = "tensor_maps"}

// DS2: ds_buffers = 2 : i64{{.*}}shared_bytes = 230480 : i64
// DS2: nvvm.setmaxregister  increase 232
// DS2: scf.for
// S^T waited for, then dP^T: the dS^T stores follow with no barrier (step
// n's buffer was last read by step n - 2's dQ).
// DS2: nvvm.wgmma.wait.group.sync.aligned 1
// DS2: nvvm.wgmma.wait.group.sync.aligned 0
// DS2-NOT: barrier.sync
// DS2: nvvm.stmatrix
// The one barrier between the warpgroups: both halves of dS^T before dQ.
// DS2: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// DS2-NOT: ro(%c1_i32, %c256_i32
// DS2: scf.yield
// DS3: error: 'dash.scheduled_attention_bwd' op ds-buffers must be 1 or 2, or 0 for the default (got 3)
// DS1: ds_buffers = 1 : i64{{.*}}shared_bytes = 214096 : i64
// DS1: scf.for
// One buffer: the dS^T stores wait for the other warpgroup's dQ reads.
// DS1: nvvm.wgmma.wait.group.sync.aligned 1
// DS1: nvvm.wgmma.wait.group.sync.aligned 0
// DS1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// DS1: nvvm.stmatrix
// DS1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// DQ1: block_m = 128 : i64{{.*}}dq_buffers = 1 : i64{{.*}}ds_buffers = 2 : i64{{.*}}shared_bytes = 199240 : i64
// DQ1: gpu.func @dash_bwd_main(
// One barrier between the MMA warpgroups per step (two dS^T buffers).
// DQ1: scf.for
// DQ1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// DQ1-NOT: ro(%c1_i32, %c256_i32
// DQ1: scf.yield
// The MMA side's final wait on its part of the one staging buffer (last,
// without dq-in-main's tail), then one reducer warp, which waits for each part (FULL barriers 3 and 5, constant
// ids), adds it, and frees both (EMPTY 2 and 4).
// DQ1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%{{.*}}, %c160_i32
// DQ1-NEXT: } else {
// DQ1: arith.cmpi slt, %thread_id_x, %c288 : index
// DQ1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c3_i32, %c160_i32
// Part 0 (rows 0-63 of the 128-row tile: the first 16 KiB), then part 1.
// DQ1: "{{.*}}@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;\0A}" ro(%{{.*}}, %{{.*}}, %c16384_i32
// DQ1: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c5_i32, %c160_i32
// DQ1: llvm.getelementptr %{{.*}}[4096] : (!llvm.ptr<1>) -> !llvm.ptr<1>, i32
// DQ1: "{{.*}}@!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;\0A}" ro(%{{.*}}, %{{.*}}, %c16384_i32
// DQ2D64: block_m = 128 : i64{{.*}}dq_buffers = 2 : i64{{.*}}ds_buffers = 2 : i64{{.*}}shared_bytes = 232016 : i64
// DQ3: error: 'dash.scheduled_attention_bwd' op dq-buffers must be 1 or 2, or 0 for the default (got 3)
// DQ1CPASYNC: error: 'dash.scheduled_attention_bwd' op dq-buffers=1 needs mma=wgmma with loads=tma
// STATS1: stats_in_acc = 1 : i64
// STATS1: gpu.func @dash_bwd_main(
// S^T from zero; then the dPsum pairs into dP^T's accumulator; then dP^T,
// subtracting its products onto them.
// STATS1: D[<f32>, <zero>], A[<bf16>, <one>, <row>]
// STATS1: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<2xf32>
// STATS1: llvm.insertvalue
// STATS1-NOT: D[<f32>, <zero>]
// STATS1: D[<f32>, <one>], A[<bf16>, <neg>, <row>]
// dS = P * -acc, after the exp2 pass and dP^T's completion.
// STATS1: nvvm.wgmma.wait.group.sync.aligned 0
// STATS1: %[[NEG:.*]] = arith.negf %{{.*}} : f32
// STATS1-NEXT: arith.mulf %{{.*}}, %[[NEG]] : f32
// STATS0: stats_in_acc = 0 : i64
// STATS0-NOT: <neg>
// STATS2: stats_in_acc = 2 : i64
// STATS2: gpu.func @dash_bwd_main(
// STATS2: nvvm.setmaxregister  increase
// STATS2: arith.divf %cst{{.*}} : f32
// STATS2: scf.for
// Both accumulators start at their statistics; S^T adds, dP^T subtracts.
// STATS2: llvm.insertvalue
// STATS2-NOT: D[<f32>, <zero>], A[<bf16>, <one>, <row>]
// STATS2: D[<f32>, <one>], A[<bf16>, <one>, <row>]
// STATS2: D[<f32>, <one>], A[<bf16>, <neg>, <row>]
// STATSBAD: error: 'dash.scheduled_attention_bwd' op stats-in-acc must be 0, 1 or 2, or -1 for the default (got 3)
// STATSCPASYNC: error: 'dash.scheduled_attention_bwd' op stats-in-acc=1 needs mma=wgmma with loads=tma

// SPLIT: dq_buffers = 1 : i64{{.*}}dq_kv_split = true{{.*}}ds_buffers = 1 : i64{{.*}}shared_bytes = 166472 : i64
// SPLIT: gpu.func @dash_bwd_main(
// SPLIT: scf.for
// SPLIT-NOT: ro(%c1_i32, %c256_i32
// Each warpgroup's own dS^T rows (a 128-thread barrier, 12 + w), then both
// 64-row halves of the tile from zero (M-major A).
// SPLIT: "barrier.sync $0, $1;" ro(%{{.*}}, %c128_i32
// SPLIT: D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// SPLIT: D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// Warpgroup 0 waits for the buffer (EMPTY 2), stores and hands over (4,
// 256 threads); warpgroup 1 adds onto it and passes it on (FULL 5).
// SPLIT: ro(%c2_i32, %c160_i32
// SPLIT: "barrier.arrive $0, $1;" ro(%c4_i32, %c256_i32
// SPLIT: "barrier.sync $0, $1;" ro(%c4_i32, %c256_i32
// SPLIT: arith.addf %{{.*}} : vector<2xf32>
// SPLIT: "barrier.arrive $0, $1;" ro(%c5_i32, %c160_i32
// SPLIT: scf.yield
// The reducer: warpgroup 1's FULL only, one add of the whole tile,
// warpgroup 0's EMPTY only.
// SPLIT: nvvm.setmaxregister  decrease
// SPLIT: "barrier.sync $0, $1;" ro(%c5_i32, %c160_i32
// SPLIT-NOT: ro(%c3_i32
// SPLIT: cp.reduce.async.bulk{{.*}}%c32768_i32
// SPLIT-NOT: cp.reduce.async.bulk
// SPLIT: "barrier.arrive $0, $1;" ro(%c2_i32, %c160_i32
// SPLIT-NOT: ro(%c4_i32, %c160_i32
// TURNS: wg_turns = 1
// TURNS: gpu.func @dash_bwd_main(
// TURNS: nvvm.setmaxregister  increase 232
// Before S^T warpgroup 1 waits for warpgroup 0's issue (turn barrier 15,
// 256 threads) while warpgroup 0 syncs its own 128 (barrier 12); each
// passes the turn once its S^T is done; at the step's end warpgroup 0 waits
// for warpgroup 1's issue (barrier 14) while warpgroup 1 syncs its own
// (13). Ids and counts are selected, never predicated.
// TURNS-NOT: @p barrier
// TURNS: %[[W0:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// TURNS: %[[TOP:.*]] = arith.select %[[W0]], %c12_i32, %c15_i32 : i32
// TURNS: %[[TOPN:.*]] = arith.select %[[W0]], %c128_i32, %c256_i32 : i32
// TURNS: "barrier.sync $0, $1;" ro(%[[TOP]], %[[TOPN]] : i32, i32)
// TURNS-NEXT: nvvm.wgmma.fence.aligned
// TURNS: D[<f32>, <zero>], A[<bf16>, <one>, <row>]
// TURNS: nvvm.wgmma.wait.group.sync.aligned 1
// TURNS: "barrier.arrive $0, $1;" ro(%{{.*}}, %c256_i32
// TURNS: nvvm.mbarrier.arrive
// TURNS: %[[END:.*]] = arith.select %[[W0]], %c14_i32, %c13_i32 : i32
// TURNS: %[[ENDN:.*]] = arith.select %[[W0]], %c256_i32, %c128_i32 : i32
// TURNS: "barrier.sync $0, $1;" ro(%[[END]], %[[ENDN]] : i32, i32)
// TURNS-NEXT: scf.yield
// TURNS-NOT: @p barrier
// TURNS: nvvm.setmaxregister  decrease
// SPLITD128: error: 'dash.scheduled_attention_bwd' op dq-kv-split=1 needs mma=wgmma with loads=tma and 128-row Q tiles (D = 64; got 64 rows at D = 128)
// SPLITDS2: error: 'dash.scheduled_attention_bwd' op ds-buffers=2 has no use with dq-kv-split=1 (a warpgroup reads only its own dS^T rows)
// SPLITBAD: error: 'dash.scheduled_attention_bwd' op dq-kv-split must be 0 or 1, or -1 for the default (got 2)
// wg-turns=2: the turn passes after the exp2 pass (the scf.if of its masked
// and unmasked forms), not once S^T is done.
// TURNS2: wg_turns = 2
// TURNS2: "barrier.sync $0, $1;" ro(%{{.*}}, %{{.*}} : i32, i32)
// TURNS2-NEXT: nvvm.wgmma.fence.aligned
// TURNS2: nvvm.wgmma.wait.group.sync.aligned 1
// TURNS2-NOT: barrier.arrive
// TURNS2: scf.if
// TURNS2-NOT: mma_async
// TURNS2: "barrier.arrive $0, $1;" ro(%{{.*}}, %c256_i32
// TURNS2-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// TURNSNOSPLIT: error: 'dash.scheduled_attention_bwd' op wg-turns=1 needs dq-kv-split=1
// TURNSBAD: error: 'dash.scheduled_attention_bwd' op wg-turns must be 0, 1 or 2, or -1 for the default (got 3)
// REGS240: mma_regs = 240 : i64
// REGS240-DAG: nvvm.setmaxregister  decrease 24
// REGS240-DAG: nvvm.setmaxregister  increase 240
// REGSSYNC: error: 'dash.scheduled_attention_bwd' op mma-regs needs mma=wgmma (the sync kernels do not split registers by role)
// REGSBAD: error: 'dash.scheduled_attention_bwd' op mma-regs must be 240 or 232, or 0 for the default (got 248)
// DS2CPASYNC: error: 'dash.scheduled_attention_bwd' op ds-buffers=2 needs mma=wgmma with loads=tma
// DS2D64: block_m = 128 : i64{{.*}}dq_buffers = 2 : i64{{.*}}ds_buffers = 2 : i64{{.*}}shared_bytes = 232016 : i64

// EARLYKV: dash.config = {{{.*}}early_kv = true
// EARLYKV: nvvm.setmaxregister  increase 232
// After the dQ wait of the step (dV, dQ done; dK in flight), EMPTY_KV when
// this is the item's last step (step + 1 == len), then the hand-off.
// The step's second wait_group 1 (after S^T; wait_group 0 after dP^T;
// after dQ, dK in flight):
// EARLYKV: nvvm.wgmma.wait.group.sync.aligned 1
// EARLYKV: nvvm.wgmma.wait.group.sync.aligned 0
// EARLYKV: nvvm.wgmma.wait.group.sync.aligned 1
// EARLYKV-NEXT: %[[NEXT:.*]] = arith.addi %{{.*}}, %c1 : index
// EARLYKV-NEXT: %[[LAST:.*]] = arith.cmpi eq, %[[NEXT]], %[[LEN:.*]] : index
// EARLYKV-NEXT: scf.if %[[LAST]] {
// EARLYKV: nvvm.mbarrier.arrive
// EARLYKV-NEXT: }
// EARLYKV: nvvm.inline_ptx "barrier.sync $0, $1;"
// After the walk: EMPTY_Q was the last arrival of the step; K/V only for an
// empty walk.
// EARLYKV: nvvm.wgmma.wait.group.sync.aligned 0
// EARLYKV: nvvm.mbarrier.arrive
// EARLYKV-NEXT: scf.yield
// EARLYKV-NEXT: }
// EARLYKV-NEXT: %[[EMPTY:.*]] = arith.cmpi eq, %[[LEN]], %c0 : index
// EARLYKV-NEXT: scf.if %[[EMPTY]] {
// EARLYKV: nvvm.mbarrier.arrive
// KVDEFCAUSAL: dash.config = {{{.*}}early_kv = true{{.*}}mask = "causal"
// KVDEFFULL: dash.config = {{{.*}}early_kv = false{{.*}}mask = "full"
// KVDEFST: dash.config = {{{.*}}early_kv = false{{.*}}early_st = true
// EARLYKVBAD: error: 'dash.scheduled_attention_bwd' op early-kv must be 0 or 1, or -1 for the default (got 2)
// EARLYKVCPASYNC: error: 'dash.scheduled_attention_bwd' op early-kv=1 needs mma=wgmma with loads=tma (K/V come from the producer)
// BADLOADS: error: 'dash.scheduled_attention_bwd' op unknown loads mode 'bulk'; expected cp-async or tma
// NOTWGMMA: error: 'dash.scheduled_attention_bwd' op loads=tma needs mma=wgmma (got mma=sync)
// DEBUG: gpu.func @dash_bwd_main(
// DEBUG-SAME: %arg16: memref<?xi64> {dash.name = "debug"}, %arg17: memref<112xi64> {dash.name = "tensor_maps"}
// Debug kernels bound the mbarrier waits too: one try_wait per poll, give up
// after the limit, record (rank = -1 - barrier index) and trap.
// DEBUG: scf.while
// DEBUG: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\0Aselp.b32 $0, 1, 0, p;\0A}", "=r,l,r"
// DEBUG: arith.cmpi slt, %{{.*}}, %c100_i64 : i64
// DEBUG: llvm.atomicrmw xchg
// DEBUG: llvm.intr.trap
// DEBUG-NOT: nvvm.mbarrier.try_wait.parity

// PTX: .version 8.3
// PTX: .visible .entry dash_bwd_main(
// PTX-DAG: elect.sync
// PTX-DAG: @%p{{[0-9]+}} cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX-DAG: mbarrier.try_wait.parity
// PTX-DAG: @%p{{[0-9]+}} mbarrier.arrive.expect_tx
// PTX-DAG: @%p{{[0-9]+}} cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX-DAG: fence.proxy.tensormap::generic.acquire.gpu
// PTX-DAG: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// PTX-NOT: cp.reduce.async.bulk.tensor
!act = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1], offset: ?>>
!lse = memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
func.func @bwd(%q: !act, %k: !act, %v: !act, %o: !act, %do: !act, %lse: !lse,
               %dq: !act, %dk: !act, %dv: !act) {
  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv : !act, !act, !act)
      mask = causal align = bottom_right scale = 1.0 deterministic = true
      : !act, !act, !act, !act, !act, !lse
  return
}
// QKV0: dash.config = {{{.*}}q_before_kv = false
// QKV0: nvvm.setmaxregister  decrease
// QKV0-COUNT-6: nvvm.fence.proxy.acquire <gpu> %{{.*}}, %c128_i32
// QKV0: scf.for
// QKV0-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// QKV0: nvvm.mbarrier.try_wait.parity
// QKV0: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c65536_i32
// QKV0-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global
// QKV0: scf.for %{{.*}} = %c0 to
// QKV0: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c33280_i32
// QKVBAD: error: 'dash.scheduled_attention_bwd' op q-before-kv must be 0 or 1, or -1 for the default (got 2)
// QKVCPASYNC: error: 'dash.scheduled_attention_bwd' op q-before-kv=1 needs mma=wgmma with loads=tma (Q/dO come from the producer)
// DSPAIRS: dash.config = {{{.*}}ds_stmatrix = false
// DSPAIRS: gpu.func @dash_bwd_main(
// DSPAIRS-NOT: nvvm.stmatrix
// DSPAIRS-COUNT-16: llvm.store %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// DSPAIRS-NOT: nvvm.stmatrix
// DSPAIRS: gpu.func @dash_bwd_postprocess(
// DSSTMBAD: error: 'dash.scheduled_attention_bwd' op ds-stmatrix must be 0 or 1, or -1 for the default (got 2)
// DSSTMSYNC: error: 'dash.scheduled_attention_bwd' op ds-stmatrix=1 needs mma=wgmma (the sync kernels keep dS elsewhere)
// UWG: dash.config = {{{.*}}uniform_wg = true
// UWG: gpu.func @dash_bwd_main(
// UWG: %[[WG:.*]] = nvvm.shfl.sync  idx %c-1_i32, %{{.*}}, %c0_i32, %c31_i32
// UWG: scf.for
// UWG: llvm.inline_asm has_side_effects "mov.b32 $0, $1;", "=r,r" %[[WG]] : (i32) -> i32
// UWG: nvvm.wgmma.mma_async
// UWG0-NOT: uniform_wg
// UWG0: %[[WG:.*]] = nvvm.shfl.sync  idx %c-1_i32, %{{.*}}, %c0_i32, %c31_i32
// UWG0-NOT: "=r,r" %[[WG]] :
// UWG0: gpu.func @dash_bwd_postprocess(
// UWGBAD: error: 'dash.scheduled_attention_bwd' op uniform-wg must be 0 or 1, or -1 for the default (got 2)
// UWGSYNC: error: 'dash.scheduled_attention_bwd' op uniform-wg=1 needs mma=wgmma (the sync kernels build no wgmma descriptors)
// DST: dash.config = {{{.*}}ds_trans = true
// DST: gpu.func @dash_bwd_main(
// DST-NOT: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<row>
// DST: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<col>
// DST-NOT: A[<bf16>, <one>, <col>]
// DST-COUNT-8: A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// DST-NOT: A[<bf16>, <one>, <col>]
// DST: gpu.func @dash_bwd_postprocess(
// DST0: dash.config = {{{.*}}ds_trans = false
// DST0: gpu.func @dash_bwd_main(
// DST0-NOT: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<col>
// DST0: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<row>
// DST0-NOT: A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// DST0-COUNT-8: A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// DST0: gpu.func @dash_bwd_postprocess(
// DST064: dash.config = {{{.*}}block_m = 128 : i64{{.*}}ds_trans = false{{.*}}dv_before_fence = false
// DST064: gpu.func @dash_bwd_main(
// DST064-NOT: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<col>
// DST064-COUNT-8: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<row>
// DST064-NOT: A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// DST064: gpu.func @dash_bwd_postprocess(
// DSTBAD: error: 'dash.scheduled_attention_bwd' op ds-trans must be 0 or 1, or -1 for the default (got 2)
// DST64: dash.config = {{{.*}}block_m = 128 : i64{{.*}}ds_trans = true
// DST64: gpu.func @dash_bwd_main(
// DST64-NOT: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<row>
// DST64-COUNT-8: nvvm.stmatrix {{.*}}layout = #nvvm.mma_layout<col>
// DST64-NOT: A[<bf16>, <one>, <col>]
// DST64-COUNT-8: A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// DST64-NOT: A[<bf16>, <one>, <col>]
// DST64: gpu.func @dash_bwd_postprocess(
// DSTSPLIT: error: 'dash.scheduled_attention_bwd' op ds-trans=1 needs mma=wgmma with ds-stmatrix and without dq-kv-split
// DSTPAIRS: error: 'dash.scheduled_attention_bwd' op ds-trans=1 needs mma=wgmma with ds-stmatrix and without dq-kv-split
// DVBF: dash.config = {{{.*}}dv_before_fence = true
// DVBF: gpu.func @dash_bwd_main(
// DVBF: nvvm.stmatrix
// DVBF-NOT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// DVBF-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16
// DVBF-NEXT: nvvm.wgmma.commit.group.sync.aligned
// DVBF-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// DVBF0: dash.config = {{{.*}}dv_before_fence = false
// DVBF0: gpu.func @dash_bwd_main(
// DVBF0: nvvm.stmatrix
// DVBF0-NOT: wgmma.mma_async.sync.aligned.m64n128k16
// DVBF0: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// DVBF0-NEXT: nvvm.wgmma.fence.aligned
// DVBF0-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16
// DVBFEARLY: error: 'dash.scheduled_attention_bwd' op dv-before-fence=1 needs mma=wgmma with early-dv=0 (dV after the dS^T stores)
// DVBFBAD: error: 'dash.scheduled_attention_bwd' op dv-before-fence must be 0 or 1, or -1 for the default (got 3)
// EDV: dash.config = {{{.*}}early_dv = true
// EDV: gpu.func @dash_bwd_main(
// EDV: scf.for
// EDV: nvvm.wgmma.wait.group.sync.aligned 1
// EDV: ex2.approx
// EDV-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// EDV-NEXT: nvvm.wgmma.commit.group.sync.aligned
// EDV-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// EDV: arith.shli %{{.*}}, %c16_i32 : i32
// EDV: arith.andi %{{.*}}, %c-65536_i32 : i32
// EDV: nvvm.stmatrix
// EDV: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// EDV0: dash.config = {{{.*}}early_dv = false
// EDV0: gpu.func @dash_bwd_main(
// EDV0: nvvm.wgmma.wait.group.sync.aligned 0
// EDV0-NOT: arith.shli %{{.*}}, %c16_i32 : i32
// EDV0: nvvm.stmatrix
// EDV0: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// EDV0: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// LATEDV: dash.config = {{{.*}}early_dv = false
// LATEDV: gpu.func @dash_bwd_main(
// LATEDV: nvvm.wgmma.wait.group.sync.aligned 1
// LATEDV-NOT: wgmma.mma_async.sync.aligned.m64n128k16
// LATEDV: nvvm.wgmma.wait.group.sync.aligned 0
// LATEDV-COUNT-4: nvvm.stmatrix
// LATEDV-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// LATEDV-NOT: barrier.sync
// LATEDV-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// LATEDV: nvvm.wgmma.commit.group.sync.aligned
// LATEDV-NEXT: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// EDVD128: dash.config = {{{.*}}early_dv = true
// EDVD128: gpu.func @dash_bwd_main(
// EDVD128: nvvm.wgmma.wait.group.sync.aligned 1
// EDVD128: llvm.intr.fma
// EDVD128-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// EDVD128-NEXT: nvvm.wgmma.commit.group.sync.aligned
// EDVD128: nvvm.wgmma.wait.group.sync.aligned 1
// EDVD128-NOT: arith.shli %{{.*}}, %c16_i32 : i32
// EDVD128: nvvm.stmatrix
// EDVD128-NOT: wgmma.mma_async.sync.aligned.m64n128k16
// EDVD128: nvvm.inline_ptx "barrier.sync $0, $1;" ro(%c1_i32, %c256_i32
// EDVBAD: error: 'dash.scheduled_attention_bwd' op early-dv must be 0 or 1, or -1 for the default (got 2)
