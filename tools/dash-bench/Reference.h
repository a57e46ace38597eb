//===- Reference.h - CPU reference attention forward/backward ---*- C++ -*-===//
//
// Part of the DASH project. Multi-threaded, in double (small shapes) or float
// accumulation (large shapes); inputs are the bf16 values the GPU sees.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_BENCH_REFERENCE_H
#define DASH_BENCH_REFERENCE_H

#include <cstdint>
#include <vector>

namespace dash::bench {

struct RefProblem {
  int64_t B, Hq, Hkv, Sq, Sk, D;
  bool causal;
  bool bottomRight; // causal offset = Sk - Sq, else 0
  float scale;
  bool useDouble;
  int threads;
};

/// All arrays BHSD contiguous: q/dO/o/dq [B,Hq,Sq,D], k/v/dk/dv [B,Hkv,Sk,D],
/// lse [B,Hq,Sq]. Rows with no visible key get o = 0 and lse = +inf (the
/// FlashAttention convention, so exp(s - lse) = 0 in the backward).
void referenceForward(const RefProblem &, const std::vector<float> &q,
                      const std::vector<float> &k, const std::vector<float> &v,
                      std::vector<float> &o, std::vector<float> &lse);

/// dq, dk, dv for the given o (as the kernel sees it, bf16-rounded) and lse.
void referenceBackward(const RefProblem &, const std::vector<float> &q,
                       const std::vector<float> &k, const std::vector<float> &v,
                       const std::vector<float> &o, const std::vector<float> &dO,
                       const std::vector<float> &lse, std::vector<float> &dq,
                       std::vector<float> &dk, std::vector<float> &dv);

} // namespace dash::bench

#endif
