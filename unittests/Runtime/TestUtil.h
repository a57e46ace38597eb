//===- TestUtil.h - Shared helpers for the runtime tests --------*- C++ -*-===//
#ifndef DASH_UNITTESTS_RUNTIME_TESTUTIL_H
#define DASH_UNITTESTS_RUNTIME_TESTUTIL_H

#include "dash/Runtime/Runtime.h"

#include <cstdint>
#include <string>

namespace dash_test {

inline std::string kernelDir() { return std::string(DASH_TEST_INPUTS) + "/kernels"; }

/// Contiguous tensor with a fake, 16-byte aligned device address (check()
/// never dereferences it).
inline dash_tensor tensor(uintptr_t addr, int rank, const int64_t *shape,
                          dash_dtype dt) {
  dash_tensor t{};
  t.data = reinterpret_cast<void *>(addr);
  t.rank = rank;
  t.dtype = dt;
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = s;
    s *= shape[i];
  }
  return t;
}

/// Valid arguments for the fixture kernels: d128 causal descending det.
inline dash_bwd_args makeArgs(int64_t B = 2, int64_t Sq = 256, int64_t Sk = 256,
                              int64_t Hq = 4, int64_t Hkv = 2, int64_t D = 128,
                              dash_dtype dt = DASH_DTYPE_BF16) {
  dash_bwd_args a{};
  const int64_t qs[4] = {B, Sq, Hq, D}, ks[4] = {B, Sk, Hkv, D}, ls[3] = {B, Hq, Sq};
  uintptr_t base = 0x100000000ull;
  auto next = [&] { return base += 0x10000000ull; };
  a.q = tensor(next(), 4, qs, dt);
  a.k = tensor(next(), 4, ks, dt);
  a.v = tensor(next(), 4, ks, dt);
  a.o = tensor(next(), 4, qs, dt);
  a.dO = tensor(next(), 4, qs, dt);
  a.lse = tensor(next(), 3, ls, DASH_DTYPE_F32);
  a.dq = tensor(next(), 4, qs, dt);
  a.dk = tensor(next(), 4, ks, dt);
  a.dv = tensor(next(), 4, ks, dt);
  a.causal = 1;
  a.align = DASH_ALIGN_DEFAULT;
  a.scale = 0.088f;
  a.deterministic = 1;
  a.policy = DASH_POLICY_DESCENDING;
  a.num_units = 0;
  return a;
}

} // namespace dash_test

#endif
