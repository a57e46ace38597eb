//===- Workspace.cpp - The workspace a kernel needs for a shape ----------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// One device buffer per call holds what FlashAttention-3 also allocates
// beside its outputs: the f32 dQ accumulator, dPsum, lse_log2, the dQ
// semaphores and (TMA kernels) the tensor maps; dK / dV accumulators only
// where the kernel cannot write dk / dv itself (GQA).
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

namespace dash::rt::impl {

namespace {

// Workspace buffers start on this boundary (TMA / bulk copies want >= 128 B).
constexpr int64_t kWsAlign = 256;

constexpr int64_t kTensorMapWords = sizeof(CUtensorMap) / sizeof(int64_t);
static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");

/// Words after the B * H_q * M semaphores: the dQ ticket (dq_in_main), then
/// (stats_in_main) the statistics ticket and each query head's count of
/// finished rows, at fixed places (word 0 unused without dq_in_main).
int64_t semaphoreSlack(const Shape &s, const WsKernel &k) {
  if (k.statsInMain)
    return 2 + s.B * s.Hq;
  return k.dqTicket ? 1 : 0;
}

} // namespace

WsKernel wsKernel(const Manifest &m) {
  return {m.blockM, m.blockN, m.dkdvDirect, m.usesTensorMaps(),
          m.dqAccumMap == Manifest::DqAccumMap::Tiles, m.dqInMain, m.dkdvBulk,
          m.statsInMain, m.dpsFold};
}

// Buffers per query head (GQA reduces dk/dv over the group in postprocess).
// Each buffer gets one extra tile of slack so a full-tile access at a ragged
// end stays inside the allocation. dkdvDirect (the kernel writes dk/dv when
// H_q == H_kv): dk_accum/dv_accum get no rows then.
WsLayout workspaceLayout(const Shape &s, const WsKernel &k) {
  WsLayout w;
  int64_t M = (s.Sq + k.blockM - 1) / k.blockM;
  // TMA kernels load dPsum/lse_log2 rows through tensor maps, whose row
  // stride must be a multiple of 16 bytes: their rows get S_q rounded up to
  // 4 elements (every kernel addresses them through the descriptor's
  // strides, built from these sizes; the map clips at S_q).
  // dps_fold: its bf16 rows' stride (S rows * 2 bytes) too: 8 elements.
  const int64_t statPad = k.dpsFold ? 8 : k.tensorMaps ? 4 : 1;
  const int64_t statRows = (s.Sq + statPad - 1) / statPad * statPad;
  const bool noDkDv = k.dkdvDirect && s.Hq == s.Hkv;
  // "tiles": each Q tile's block_m rows hold the whole tile (its last one
  // too), added with 1-D bulk reduce-adds that nothing clips.
  const int64_t dqRows = k.dqTiles ? M * k.blockM : s.Sq;
  const int64_t kvRows = noDkDv ? 0 : s.Sk,
                kvSlack = noDkDv ? 0 : k.blockN * s.D;
  struct Buf {
    Role role;
    int64_t dims[4];
    int rank;
    int64_t slack; // elements
    int64_t eltBytes;
  };
  std::vector<Buf> bufs = {
      {Role::DQAccum, {s.B, s.Hq, dqRows, s.D}, 4, k.blockM * s.D, 4},
      {Role::DKAccum, {s.B, s.Hq, kvRows, s.D}, 4, kvSlack, 4},
      {Role::DVAccum, {s.B, s.Hq, kvRows, s.D}, 4, kvSlack, 4},
      {Role::DPSum, {s.B, s.Hq, statRows, 0}, 3, k.blockM, 4},
      {Role::LseLog2, {s.B, s.Hq, statRows, 0}, 3, k.blockM, 4},
      {Role::Semaphores, {s.B, s.Hq, M, 0}, 3, semaphoreSlack(s, k), 4},
  };
  if (k.tensorMaps)
    bufs.push_back({Role::TensorMaps,
                    {tensorMapCount(k.dkdvMaps) * kTensorMapWords, 0, 0, 0},
                    1, 0, 8});
  int64_t off = 0;
  for (const Buf &b : bufs) {
    int64_t n = 1;
    for (int i = 0; i < b.rank; ++i) {
      if (__builtin_mul_overflow(n, b.dims[i], &n))
        return w;
      w.sizes[int(b.role)][i] = b.dims[i];
    }
    int64_t bytes;
    if (__builtin_add_overflow(n, b.slack, &n) ||
        __builtin_mul_overflow(n, b.eltBytes, &bytes) ||
        bytes > (int64_t(1) << 50))
      return w;
    w.offset[int(b.role)] = off;
    off += (bytes + kWsAlign - 1) / kWsAlign * kWsAlign;
  }
  w.total = off;
  w.ok = true;
  return w;
}

} // namespace dash::rt::impl
