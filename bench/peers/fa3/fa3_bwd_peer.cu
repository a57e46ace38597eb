// FlashAttention-3's backward as a benchmark peer: a C entry point over its
// hopper/ launch template, so bench/attention_bwd.py can time FA3 in the same
// process as DASH and cuDNN (bench/peers/fa3/README.md says how it is built;
// FA3's sources are not part of this repository).
//
// Only what the benchmark measures is instantiated: bf16, head dims 64 and
// 128, causal or full, deterministic or not, no GQA, varlen, local window or
// softcap. The tile configurations are FA3's own choices for sm90 (its
// run_mha_bwd_hdim64 / run_mha_bwd_hdim128), so the peer runs the kernels a
// flash_attn_interface user gets. Compiled once per head dim
// (-DFA3_PEER_HDIM=64 / 128: the two halves build in parallel) and once for
// the entry points (-DFA3_PEER_HDIM=0).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

#if FA3_PEER_HDIM != 0
#include "flash_bwd_launch_template.h"
#else
#include "flash.h"
#endif

namespace {

// FA3's sm90 tile sizes (its mha_bwd computes them the same way to size the
// workspace): a row block of kBlockM queries, 128 keys.
int blockM(int d, bool causal) { return d <= 64 ? 128 : (causal ? 64 : 80); }
constexpr int kBlockN = 128;

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct Workspace {
  size_t dsoftmaxSum, lseLog2, dqAccum, dqSemaphore, total;
};

// One buffer, four 256-byte aligned parts: dPsum and lse_log2 [b, h,
// s_rounded] f32, dq_accum [b, h, s_rounded * d] f32, the dQ semaphores
// [ceil(s / kBlockM), b, h] i32 (the preprocess clears dq_accum and the
// semaphores, as in FA3's own call).
Workspace workspaceOf(int d, bool causal, int b, int h, int s) {
  int64_t bm = blockM(d, causal), sr = roundUp(s, bm);
  Workspace w;
  size_t at = 0;
  auto take = [&](int64_t bytes) {
    size_t here = at;
    at = roundUp(at + bytes, 256);
    return here;
  };
  w.dsoftmaxSum = take(int64_t(b) * h * sr * 4);
  w.lseLog2 = take(int64_t(b) * h * sr * 4);
  w.dqAccum = take(int64_t(b) * h * sr * d * 4);
  w.dqSemaphore = take((s + bm - 1) / bm * int64_t(b) * h * 4);
  w.total = at;
  return w;
}

} // namespace

#if FA3_PEER_HDIM != 0

using bf16 = cutlass::bfloat16_t;

// run_flash_bwd<Arch, kHeadDim, kBlockM, kBlockN, T, Is_causal, Is_local,
// Has_softcap, Varlen, Deterministic, GQA, Stages_dO, Stages_dS, SdP_swapAB,
// dKV_swapAB, dQ_swapAB, NumMmaWarpGroups, AtomLayoutMSdP, AtomLayoutNdKV,
// AtomLayoutMdQ, V_in_regs>, with FA3's sm90 choices per head dim and mask.
template <bool Causal, bool Det>
static void runHdim(Flash_bwd_params &p, cudaStream_t st) {
#if FA3_PEER_HDIM == 64
  run_flash_bwd<90, 64, 128, kBlockN, bf16, Causal, false, false, false, Det,
                false, 2, 2, true, false, false, 2, 1, 2, 2, false>(p, st);
#else
  if constexpr (Causal)
    run_flash_bwd<90, 128, 64, kBlockN, bf16, true, false, false, false, Det,
                  false, 2, 2, true, false, false, 2, 1, 2, 1, false>(p, st);
  else
    run_flash_bwd<90, 128, 80, kBlockN, bf16, false, false, false, false, Det,
                  false, 2, 2, true, false, true, 2, 1, 2, 1, false>(p, st);
#endif
}

#define PEER_FN_(d) fa3PeerRun##d
#define PEER_FN(d) PEER_FN_(d)
void PEER_FN(FA3_PEER_HDIM)(Flash_bwd_params &p, cudaStream_t st) {
  if (p.is_causal)
    p.deterministic ? runHdim<true, true>(p, st) : runHdim<true, false>(p, st);
  else
    p.deterministic ? runHdim<false, true>(p, st) : runHdim<false, false>(p, st);
}

#else // the entry points

void fa3PeerRun64(Flash_bwd_params &, cudaStream_t);
void fa3PeerRun128(Flash_bwd_params &, cudaStream_t);

extern "C" {

// Bytes of workspace a call needs (the buffer dash_fa3_bwd carves), 0 for a
// shape the peer does not cover.
size_t dash_fa3_bwd_workspace_bytes(int d, int causal, int b, int h, int s) {
  if ((d != 64 && d != 128) || b <= 0 || h <= 0 || s <= 0)
    return 0;
  return workspaceOf(d, causal != 0, b, h, s).total;
}

// dQ, dK, dV of softmax(scale Q K^T) V for bf16 [b, s, h, d] tensors given by
// element strides (batch, row, head; the last dimension contiguous, the same
// strides for all eight), lse: f32 [b, h, s] contiguous, natural log. Returns
// 0, or -1 for a shape the peer does not cover, or the CUDA error after the
// launches (FA3's own checks exit the process on a launch error).
int dash_fa3_bwd(int d, int causal, int deterministic, int b, int h, int s,
                 const void *q, const void *k, const void *v, const void *o,
                 const void *dout, const float *lse, void *dq, void *dk,
                 void *dv, int64_t batchStride, int64_t rowStride,
                 int64_t headStride, float scale, void *workspace,
                 size_t workspaceBytes, int numSms, void *stream) {
  if ((d != 64 && d != 128) || b <= 0 || h <= 0 || s <= 0)
    return -1;
  Workspace w = workspaceOf(d, causal != 0, b, h, s);
  if (workspaceBytes < w.total || !workspace)
    return -1;
  int bm = blockM(d, causal != 0);
  auto *ws = static_cast<char *>(workspace);

  Flash_bwd_params p;
  std::memset(&p, 0, sizeof p);
  p.is_bf16 = true;
  p.q_ptr = const_cast<void *>(q);
  p.k_ptr = const_cast<void *>(k);
  p.v_ptr = const_cast<void *>(v);
  p.o_ptr = const_cast<void *>(o);
  p.do_ptr = const_cast<void *>(dout);
  p.dq_ptr = dq;
  p.dk_ptr = dk;
  p.dv_ptr = dv;
  p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = p.o_batch_stride =
      p.do_batch_stride = p.dq_batch_stride = p.dk_batch_stride =
          p.dv_batch_stride = batchStride;
  p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride =
      p.do_row_stride = p.dq_row_stride = p.dk_row_stride = p.dv_row_stride =
          rowStride;
  p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride =
      p.do_head_stride = p.dq_head_stride = p.dk_head_stride =
          p.dv_head_stride = headStride;
  p.v_dim_stride = 1;
  p.softmax_lse_ptr = const_cast<float *>(lse);
  p.b = b;
  p.h = p.h_k = h;
  p.seqlen_q = p.seqlen_k = s;
  p.seqlen_q_rounded = int(roundUp(s, bm));
  p.seqlen_k_rounded = int(roundUp(s, kBlockN));
  p.total_q = p.total_k = b * s;
  p.d = p.d_rounded = p.dv = p.dv_rounded = d;
  p.scale_softmax = scale;
  p.p_dropout = 1.f;
  p.rp_dropout = 1.f;
  p.is_causal = causal != 0;
  // FA3's mha_bwd: causal is the window (s - 1, 0), full (-1, -1).
  p.window_size_left = causal ? s - 1 : -1;
  p.window_size_right = causal ? 0 : -1;
  p.arch = 90;
  p.num_sm = numSms;
  p.dsoftmax_sum = ws + w.dsoftmaxSum;
  p.softmax_lse_log2_ptr = ws + w.lseLog2;
  p.dq_accum_ptr = ws + w.dqAccum;
  p.dq_semaphore = reinterpret_cast<int *>(ws + w.dqSemaphore);
  p.deterministic = deterministic != 0;

  auto st = static_cast<cudaStream_t>(stream);
  if (d == 64)
    fa3PeerRun64(p, st);
  else
    fa3PeerRun128(p, st);
  return int(cudaGetLastError());
}

} // extern "C"

#endif
