//===- Sweep.h - Problem generators for the schedule property tests -------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_UNITTESTS_SCHEDULE_SWEEP_H
#define DASH_UNITTESTS_SCHEDULE_SWEEP_H

#include "dash/Schedule/Problem.h"

#include <cstdint>
#include <vector>

namespace dash::sched::sweep {

/// Deterministic xorshift so failures reproduce.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 2654435761u + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  int64_t in(int64_t lo, int64_t hi) { // inclusive
    return lo +
           static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

/// `count` small random problems: sq != sk, tails, both masks and
/// alignments, GQA, G below / at / above one head's tiles.
inline std::vector<Problem> randomProblems(int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<Problem> out;
  const double costs[][2] = {{1, 0.25}, {1, 1}, {1, 3}, {0.7, 0.05}, {1, 0}};
  for (int k = 0; k < count; ++k) {
    Problem p;
    p.blockM = rng.in(1, 4);
    p.blockN = p.blockM * rng.in(1, 3);
    if (rng.in(0, 3) == 0)
      p.blockN = rng.in(1, 8); // not a multiple of blockM
    p.seqK = rng.in(1, 12) * p.blockN -
             (rng.in(0, 2) == 0 ? rng.in(0, p.blockN - 1) : 0);
    p.seqQ = rng.in(0, 2) == 0 ? p.seqK : rng.in(1, 12 * p.blockM);
    p.mask = rng.in(0, 1) ? Mask::Causal : Mask::Full;
    p.align = rng.in(0, 1) ? CausalAlign::TopLeft : CausalAlign::BottomRight;
    p.batch = rng.in(1, 2);
    p.headsKV = rng.in(1, 3);
    p.headsQ = p.headsKV * rng.in(1, 2);
    int64_t n = p.numKVTiles();
    switch (rng.in(0, 3)) {
    case 0:
      p.numUnits = n;
      break;
    case 1:
      p.numUnits = rng.in(1, 4);
      break;
    case 2:
      p.numUnits = n * rng.in(1, 4) + rng.in(0, 3);
      break;
    default:
      p.numUnits = rng.in(1, 40);
      break;
    }
    const double *cr = costs[rng.in(0, 4)];
    p.c = cr[0];
    p.r = cr[1];
    out.push_back(p);
  }
  return out;
}

/// Shapes where symmetric-shift applies (causal, sq == sk, M == N*s).
inline std::vector<Problem> symmetricProblems(int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<Problem> out;
  for (int k = 0; k < count; ++k) {
    Problem p;
    p.blockM = rng.in(1, 3);
    p.blockN = p.blockM * rng.in(1, 3);
    p.seqQ = p.seqK = 2 * rng.in(1, 8) * p.blockN;
    p.mask = Mask::Causal;
    p.align = rng.in(0, 1) ? CausalAlign::TopLeft : CausalAlign::BottomRight;
    p.batch = rng.in(1, 2);
    p.headsQ = p.headsKV = rng.in(1, 4);
    p.numUnits = rng.in(1, 3 * p.numKVTiles());
    p.r = rng.in(0, 1) ? 0.25 : 2.0;
    out.push_back(p);
  }
  return out;
}

} // namespace dash::sched::sweep

#endif // DASH_UNITTESTS_SCHEDULE_SWEEP_H
