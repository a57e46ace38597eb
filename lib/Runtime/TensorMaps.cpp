//===- TensorMaps.cpp - The TMA descriptors of a call ---------------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// TMA kernels read their tensor maps from the workspace; the runtime
// encodes them per call (the tensors' addresses and strides are the
// call's), in the slots the kernels index by number.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

namespace dash::rt::impl {

// Q, K, V, dO as 4-D tiled TMA maps over their [B, S, H, D] views (the
// driver wants the innermost dimension first: D, S, H, B; strides of the
// outer three in bytes; the runtime's stride rules keep them multiples of
// 16). Box: 64 columns (one 128-byte panel of the 128B swizzle the kernels'
// shared tiles use) x the kernel's Q or KV tile rows; rows past S read as
// zeros. Map 4 is the workspace's f32 dq_accum [B, H, S_q, D] (contiguous),
// the destination of the dQ reduce-adds, seen as 5-D (column within an
// 8-column panel, row, panel, head, batch; the panel stride, 32 bytes, is
// below the row's): one box is a whole Q tile stored panel by panel, the
// kernels' unswizzled, bank-conflict-free staging layout; rows past S_q are
// not written.
// Kernels with the "tiles" dq_accum layout (Manifest::DqAccumMap::Tiles)
// add whole tiles with 1-D bulk reduce-adds and read no map 4: it stays
// zero.
dash_status encodeTensorMaps(dash_runtime *rt, const Manifest &m,
                             const dash_bwd_args *a, const WsLayout &ws,
                             CUdeviceptr wsBase, CUtensorMap *out) {
  const CUdeviceptr dqAccum = wsBase + CUdeviceptr(ws.offset[int(Role::DQAccum)]);
  // Maps 0-3 and, for "dkdv_bulk" kernels, 7 and 8 (the dK/dV stores):
  // the caller's tensors, 64-column boxes of the kernel's tile rows.
  const dash_tensor *ts[6] = {&a->q, &a->k, &a->v, &a->dO, &a->dk, &a->dv};
  const char *names[6] = {"q", "k", "v", "dO", "dk", "dv"};
  const int64_t rows[6] = {m.blockM, m.blockN, m.blockN, m.blockM, m.blockN,
                           m.blockN};
  const int slots[6] = {0, 1, 2, 3, 7, 8};
  const CUtensorMapDataType type = a->q.dtype == DASH_DTYPE_BF16
                                       ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint64_t eltBytes = 2;
  auto encode = [&](CUtensorMap *map, CUtensorMapDataType t, void *base,
                    cuuint32_t rank, const cuuint64_t *dims,
                    const cuuint64_t *strides, const cuuint32_t *box,
                    CUtensorMapSwizzle swizzle, const char *what) {
    cuuint32_t unit[5] = {1, 1, 1, 1, 1};
    CUresult r = rt->drv.cuTensorMapEncodeTiled(
        map, t, rank, base, dims, strides, box, unit,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      return fail(DASH_ERROR_DRIVER,
                  rt->drv.describe("cuTensorMapEncodeTiled", r) + " for '" +
                      what + "' of " + m.name);
    return DASH_SUCCESS;
  };
  for (int i = 0; i < (m.dkdvBulk ? 6 : 4); ++i) {
    const dash_tensor &t = *ts[i];
    cuuint64_t dims[4] = {cuuint64_t(t.shape[3]), cuuint64_t(t.shape[1]),
                          cuuint64_t(t.shape[2]), cuuint64_t(t.shape[0])};
    // A size-1 dimension's stride is never used and not validated (PyTorch
    // leaves any value there); the driver still wants a multiple of 16:
    // give it the tensor's byte extent, rounded up.
    cuuint64_t extent = cuuint64_t(t.shape[3]) * eltBytes;
    for (int d = 0; d < 3; ++d)
      if (t.shape[d] > 1)
        extent += cuuint64_t(t.shape[d] - 1) * cuuint64_t(t.strides[d]) * eltBytes;
    extent = (extent + 15) / 16 * 16;
    auto stride = [&](int d) {
      return t.shape[d] > 1 ? cuuint64_t(t.strides[d]) * eltBytes : extent;
    };
    cuuint64_t strides[3] = {stride(1), stride(2), stride(0)};
    cuuint32_t box[4] = {64, cuuint32_t(rows[i]), 1, 1};
    if (dash_status st = encode(&out[slots[i]], type, t.data, 4, dims, strides,
                                box, CU_TENSOR_MAP_SWIZZLE_128B, names[i]))
      return st;
  }
  const cuuint64_t D = cuuint64_t(a->q.shape[3]), Sq = cuuint64_t(a->q.shape[1]),
                   Hq = cuuint64_t(a->q.shape[2]), B = cuuint64_t(a->q.shape[0]);
  dash_status st;
  if (m.dqAccumMap == Manifest::DqAccumMap::Tiles) {
    // Bulk reduce-adds: map 4 is not read (left zero).
    std::memset(&out[4], 0, sizeof(CUtensorMap));
    st = DASH_SUCCESS;
  } else if (m.dqAccumMap == Manifest::DqAccumMap::Swizzle128x32) { // older kernels
    cuuint64_t dims[4] = {D, Sq, Hq, B};
    cuuint64_t strides[3] = {D * 4, Sq * D * 4, Hq * Sq * D * 4};
    cuuint32_t box[4] = {32, cuuint32_t(m.blockM), 1, 1};
    st = encode(&out[4], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                reinterpret_cast<void *>(dqAccum), 4, dims, strides, box,
                CU_TENSOR_MAP_SWIZZLE_128B, "dq_accum");
  } else {
    cuuint64_t dims[5] = {8, Sq, D / 8, Hq, B};
    cuuint64_t strides[4] = {D * 4, 32, Sq * D * 4, Hq * Sq * D * 4};
    cuuint32_t box[5] = {8, cuuint32_t(m.blockM), cuuint32_t(D / 8), 1, 1};
    st = encode(&out[4], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                reinterpret_cast<void *>(dqAccum), 5, dims, strides, box,
                CU_TENSOR_MAP_SWIZZLE_NONE, "dq_accum");
  }
  if (st)
    return st;
  // Maps 5, 6: lse_log2 and dPsum [B, H, S_q] of the workspace (rows padded
  // to 4 elements, workspaceLayout), boxes of one Q tile; zeros past S_q.
  const Role stats[2] = {Role::LseLog2, Role::DPSum};
  const char *statNames[2] = {"lse_log2", "dpsum"};
  for (int i = 0; i < 2; ++i) {
    const CUdeviceptr at = wsBase + CUdeviceptr(ws.offset[int(stats[i])]);
    const cuuint64_t rows = cuuint64_t(ws.sizes[int(stats[i])][2]);
    if (stats[i] == Role::DPSum && m.dpsFold) {
      // dps_fold: a head's f32 row of S holds bf16 rows hi and lo of S; a
      // box is both rows of block_m Q rows as they are, unswizzled.
      cuuint64_t dims[4] = {Sq, 2, Hq, B};
      cuuint64_t strides[3] = {rows * 2, rows * 4, Hq * rows * 4};
      cuuint32_t box[4] = {cuuint32_t(m.blockM), 2, 1, 1};
      if ((st = encode(&out[5 + i], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                       reinterpret_cast<void *>(at), 4, dims, strides, box,
                       CU_TENSOR_MAP_SWIZZLE_NONE, "dpsum (hi / lo)")))
        return st;
      continue;
    }
    cuuint64_t dims[3] = {Sq, Hq, B};
    cuuint64_t strides[2] = {rows * 4, Hq * rows * 4};
    cuuint32_t box[3] = {cuuint32_t(m.blockM), 1, 1};
    if ((st = encode(&out[5 + i], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                     reinterpret_cast<void *>(at), 3, dims, strides, box,
                     CU_TENSOR_MAP_SWIZZLE_NONE, statNames[i])))
      return st;
  }
  return DASH_SUCCESS;
}

} // namespace dash::rt::impl
