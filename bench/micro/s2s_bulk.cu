// Probe: a shared-to-shared bulk copy (cp.async.bulk.shared::cluster.shared::cta,
// completion on an mbarrier) inside one CTA, launched without a cluster and as a
// cluster of one. Usage: s2s_bulk MODE (0: plain launch, 1: cluster of one
// at launch, 2: plain launch, 32-bit shared::cta operands, 3: plain launch of a
// kernel with compile-time cluster dims 1 x 1 x 1 (.reqnctapercluster), 32-bit
// operands). Prints PASS/FAIL or the error.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

constexpr int kBytes = 32768;

__device__ void body(int mode, int *bad) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char *src = smem, *dst = smem + kBytes;
  __shared__ __align__(8) uint64_t bar;
  for (int i = threadIdx.x; i < kBytes / 4; i += blockDim.x) {
    reinterpret_cast<int *>(src)[i] = i * 7 + 1;
    reinterpret_cast<int *>(dst)[i] = 0;
  }
  uint32_t barA = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barA));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t s = (uint32_t)__cvta_generic_to_shared(src);
    uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barA), "r"(kBytes));
    if (mode >= 2) {
      asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(d), "r"(s), "r"(kBytes), "r"(barA) : "memory");
    } else {
      uint64_t dg = (uint64_t)dst, dc;
      asm volatile("cvta.to.shared::cluster.u64 %0, %1;" : "=l"(dc) : "l"(dg));
      asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"l"(dc), "r"(s), "r"(kBytes), "r"(barA) : "memory");
    }
  }
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}" ::"r"(barA));
  for (int i = threadIdx.x; i < kBytes / 4; i += blockDim.x)
    if (reinterpret_cast<int *>(dst)[i] != i * 7 + 1) atomicAdd(bad, 1);
}

__global__ void probe(int mode, int *bad) { body(mode, bad); }
__global__ void __cluster_dims__(1, 1, 1) probeCluster(int mode, int *bad) {
  body(mode, bad);
}

int main(int argc, char **argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  int *bad;
  cudaMalloc(&bad, 4);
  cudaMemset(bad, 0, 4);
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * kBytes);
  cudaFuncSetAttribute(probeCluster, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * kBytes);
  cudaError_t e;
  if (mode == 1) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = 2 * kBytes;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, probe, mode, bad);
  } else if (mode == 3) {
    probeCluster<<<1, 128, 2 * kBytes>>>(mode, bad);
    e = cudaGetLastError();
  } else {
    probe<<<1, 128, 2 * kBytes>>>(mode, bad);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  int h = -1;
  if (e == cudaSuccess) cudaMemcpy(&h, bad, 4, cudaMemcpyDeviceToHost);
  printf("mode %d: %s, mismatches %d -> %s\n", mode, cudaGetErrorString(e), h,
         e == cudaSuccess && h == 0 ? "PASS" : "FAIL");
  return 0;
}
