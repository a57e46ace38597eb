// Throughput of exp2 forms on one SM's special-function units (H200):
// ex2.approx.ftz.f32 against the packed ex2.approx.f16x2 / ex2.approx.ftz.bf16x2
// (two results per instruction). Each thread runs 8 independent chains; the
// kernel reports results per clock per SM (clock64 around the loop).
//   nvcc -O3 -arch=sm_90a bench/micro/mufu_ex2.cu -o /tmp/mufu && /tmp/mufu
#include <cstdio>
#include <cstdint>

template <int Kind>
__global__ void bench(float *out, long long *cycles, int iters) {
  uint32_t v[8];
  for (int i = 0; i < 8; ++i)
    v[i] = Kind == 0 ? __float_as_uint(-0.001f * (threadIdx.x + i))
                     : 0xBC00BC00u ^ (threadIdx.x + i); // small negative halves
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (Kind == 0)
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+r"(v[i]));
      else if (Kind == 1)
        asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(v[i]));
      else
        asm volatile("ex2.approx.ftz.bf16x2 %0, %0;" : "+r"(v[i]));
    }
  }
  __syncthreads();
  long long t1 = clock64();
  uint32_t s = 0;
  for (int i = 0; i < 8; ++i) s ^= v[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = __uint_as_float(s);
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

int main() {
  const int blocks = 132, iters = 4096;
  float *out; long long *cyc;
  cudaMalloc(&out, blocks * 1024 * sizeof(float));
  cudaMalloc(&cyc, blocks * sizeof(long long));
  const char *names[3] = {"ex2.approx.ftz.f32", "ex2.approx.f16x2", "ex2.approx.ftz.bf16x2"};
  for (int threads : {256, 1024}) {
    for (int kind = 0; kind < 3; ++kind) {
      for (int rep = 0; rep < 2; ++rep) {
        if (kind == 0) bench<0><<<blocks, threads>>>(out, cyc, iters);
        if (kind == 1) bench<1><<<blocks, threads>>>(out, cyc, iters);
        if (kind == 2) bench<2><<<blocks, threads>>>(out, cyc, iters);
      }
      cudaDeviceSynchronize();
      long long c;
      cudaMemcpy(&c, cyc, sizeof c, cudaMemcpyDeviceToHost);
      double instr = double(threads) * iters * 8;  // per SM (one block per SM)
      double results = instr * (kind == 0 ? 1 : 2);
      printf("%-24s threads %4d: %6.2f instr/clk/SM, %6.2f results/clk/SM\n", names[kind],
             threads, instr / c, results / c);
    }
  }
  return cudaGetLastError() != cudaSuccess;
}
