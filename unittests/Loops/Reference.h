//===- Reference.h - float64 attention forward/backward ---------*- C++ -*-===//
//
// The ground truth the CPU loops are checked against: plain float64 loops,
// no tiling, no schedule.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_UNITTESTS_LOOPS_REFERENCE_H
#define DASH_UNITTESTS_LOOPS_REFERENCE_H

#include <cstdint>
#include <vector>

namespace dash::test {

struct AttnShape {
  int64_t batch, seqQ, seqK, headsQ, headsKV, headDim;
  bool causal;
  int64_t maskOffset; // key j visible to query i iff j <= i + maskOffset
  double scale;
  bool visible(int64_t i, int64_t j) const {
    return !causal || j <= i + maskOffset;
  }
};

/// BSHD tensors as doubles (already rounded to the storage precision).
struct AttnInputs {
  std::vector<double> q, k, v, o, dO; // o filled by forward()
  std::vector<double> lse;            // [B, H_q, S_q]
};

/// O and lse of the forward pass (lse = -inf for a row that sees no key).
void forward(const AttnShape &s, AttnInputs &in);

/// dQ, dK, dV in float64 from the given (rounded) q, k, v, o, dO, lse.
void backward(const AttnShape &s, const AttnInputs &in, std::vector<double> &dq,
              std::vector<double> &dk, std::vector<double> &dv);

/// ||x - ref||_2 / ||ref||_2 (NaN anywhere gives +inf).
double relError(const std::vector<float> &x, const std::vector<double> &ref);

uint16_t toBF16(float x);   // round to nearest even
float fromBF16(uint16_t x);

} // namespace dash::test

#endif // DASH_UNITTESTS_LOOPS_REFERENCE_H
