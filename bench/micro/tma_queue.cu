// Probe: how long one 32 KiB bulk load (global -> shared, mbarrier
// completion: the walk boundary's K/V) takes on all 132 SMs at once, issued
// alone or right behind other traffic of the same SM. MODE 0: alone; 1:
// behind two 16 KiB f32 bulk reduce-adds (a dQ hand-off) issued by the same
// thread; 2: behind the same reduce-adds issued by another warp; 3: with
// 256 threads storing 32 KiB by st.global.v4 meanwhile (the dK/dV epilogue);
// 4: behind a 32 KiB bulk load (a Q/dO stage). The loaded bytes come from a
// 512 MiB array read once (cold in L2, as an item's K/V are) or, with a
// second argument 1, from a 4 MiB array every CTA reads again (hot).
// Prints the median and p90 cycles from issue to the mbarrier's completion.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kBytes = 32768, kIters = 64, kThreads = 384;

__device__ __forceinline__ uint32_t sa(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

__global__ void __launch_bounds__(kThreads, 1)
    probe(int mode, int hot, const char *src, size_t srcBytes, float *red,
          int4 *out, long long *cycles) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char *stage = smem, *dst = smem + kBytes, *other = smem + 2 * kBytes;
  __shared__ __align__(8) uint64_t bar[2];
  for (int i = threadIdx.x; i < 3 * kBytes / 4; i += blockDim.x)
    reinterpret_cast<float *>(smem)[i] = 1.0f;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sa(&bar[0])));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sa(&bar[1])));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  float *myRed = red + (size_t)blockIdx.x * (kBytes / 4);
  int4 *myOut = out + (size_t)blockIdx.x * (kBytes / 16);
  for (int it = 0; it < kIters; ++it) {
    size_t off = hot ? ((size_t)(blockIdx.x * 7 + it) * kBytes) % (4u << 20)
                     : ((size_t)(it * gridDim.x + blockIdx.x) * kBytes) % srcBytes;
    __syncthreads();
    // Warp 1 (mode 2): the reduce-adds from another warp, just before.
    if (mode == 2 && threadIdx.x == 32) {
      for (int h = 0; h < 2; ++h)
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                     ::"l"(myRed + h * kBytes / 8), "r"(sa(stage + h * kBytes / 2)), "r"(kBytes / 2)
                     : "memory");
      asm volatile("cp.async.bulk.commit_group;");
    }
    if (mode == 2)
      __syncthreads();
    long long t0 = 0;
    if (threadIdx.x == 0) {
      if (mode == 1) {
        for (int h = 0; h < 2; ++h)
          asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                       ::"l"(myRed + h * kBytes / 8), "r"(sa(stage + h * kBytes / 2)), "r"(kBytes / 2)
                       : "memory");
        asm volatile("cp.async.bulk.commit_group;");
      }
      if (mode == 4) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(&bar[1])), "r"(kBytes));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(sa(other)), "l"(src + (off + srcBytes / 2) % srcBytes), "r"(kBytes), "r"(sa(&bar[1]))
                     : "memory");
      }
      t0 = clock64();
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(&bar[0])), "r"(kBytes));
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(sa(dst)), "l"(src + off), "r"(kBytes), "r"(sa(&bar[0]))
                   : "memory");
    }
    if (mode == 3 && threadIdx.x < 256) {
      const int4 *s = reinterpret_cast<const int4 *>(stage);
      for (int j = 0; j < kBytes / 16 / 256; ++j)
        myOut[j * 256 + threadIdx.x] = s[j * 256 + threadIdx.x];
    }
    if (threadIdx.x == 0) {
      uint32_t parity = it & 1;
      asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}"
                   ::"r"(sa(&bar[0])), "r"(parity));
      cycles[(size_t)blockIdx.x * kIters + it] = clock64() - t0;
      if (mode == 4)
        asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}"
                     ::"r"(sa(&bar[1])), "r"(parity));
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (threadIdx.x == 32)
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

int main(int argc, char **argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 0, hot = argc > 2 ? atoi(argv[2]) : 0;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  size_t srcBytes = size_t(512) << 20;
  char *src;
  float *red;
  int4 *out;
  long long *cycles;
  cudaMalloc(&src, srcBytes);
  cudaMemset(src, 1, srcBytes);
  cudaMalloc(&red, (size_t)sms * kBytes);
  cudaMemset(red, 0, (size_t)sms * kBytes);
  cudaMalloc(&out, (size_t)sms * kBytes);
  cudaMalloc(&cycles, (size_t)sms * kIters * 8);
  int shared = 3 * kBytes;
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  std::vector<long long> c((size_t)sms * kIters);
  for (int rep = 0; rep < 3; ++rep) { // the last of three (first ones warm up)
    probe<<<sms, kThreads, shared>>>(mode, hot, src, srcBytes, red, out, cycles);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      printf("mode %d: %s\n", mode, cudaGetErrorString(e));
      return 1;
    }
  }
  cudaMemcpy(c.data(), cycles, c.size() * 8, cudaMemcpyDeviceToHost);
  std::sort(c.begin(), c.end());
  printf("mode %d %s: 32 KiB bulk load, median %lld cycles, p10 %lld, p90 %lld (%d SMs x %d)\n", mode,
         hot ? "hot" : "cold", c[c.size() / 2], c[c.size() / 10], c[c.size() * 9 / 10], sms, kIters);
  return 0;
}
