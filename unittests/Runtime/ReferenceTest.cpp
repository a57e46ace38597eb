//===- ReferenceTest.cpp - dash-bench's CPU reference vs finite differences ===//
//
// Part of the DASH project. The GPU harness judges kernels against this
// reference, so it gets its own check: dq, dk, dv equal the finite-difference
// gradient of L = sum(dO * o), float and double paths agree, GQA and both
// causal alignments (including rows with no visible key).
//
//===----------------------------------------------------------------------===//

#include "../../tools/dash-bench/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace dash::bench;

namespace {

double loss(const RefProblem &p, const std::vector<float> &q, const std::vector<float> &k,
            const std::vector<float> &v, const std::vector<float> &dO) {
  std::vector<float> o, lse;
  RefProblem pd = p;
  pd.useDouble = true;
  referenceForward(pd, q, k, v, o, lse);
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i)
    l += double(o[i]) * dO[i];
  return l;
}

void checkGradients(RefProblem p) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  auto fill = [&](std::vector<float> &x, size_t n) {
    x.resize(n);
    for (float &f : x) f = u(rng);
  };
  std::vector<float> q, k, v, dO, o, lse, dq, dk, dv;
  fill(q, size_t(p.B * p.Hq * p.Sq * p.D));
  fill(k, size_t(p.B * p.Hkv * p.Sk * p.D));
  fill(v, size_t(p.B * p.Hkv * p.Sk * p.D));
  fill(dO, q.size());
  p.useDouble = true;
  referenceForward(p, q, k, v, o, lse);
  referenceBackward(p, q, k, v, o, dO, lse, dq, dk, dv);
  const double eps = 1e-3;
  auto fd = [&](std::vector<float> &x, size_t i) {
    float keep = x[i];
    x[i] = float(keep + eps);
    double lp = loss(p, q, k, v, dO);
    x[i] = float(keep - eps);
    double lm = loss(p, q, k, v, dO);
    x[i] = keep;
    return (lp - lm) / (double(float(keep + eps)) - double(float(keep - eps)));
  };
  for (size_t i = 0; i < q.size(); i += 7)
    EXPECT_NEAR(dq[i], fd(q, i), 2e-3) << "dq[" << i << "]";
  for (size_t i = 0; i < k.size(); i += 5) {
    EXPECT_NEAR(dk[i], fd(k, i), 2e-3) << "dk[" << i << "]";
    EXPECT_NEAR(dv[i], fd(v, i), 2e-3) << "dv[" << i << "]";
  }
  // float accumulation agrees with double.
  std::vector<float> o2, lse2, dq2, dk2, dv2;
  p.useDouble = false;
  referenceForward(p, q, k, v, o2, lse2);
  referenceBackward(p, q, k, v, o, dO, lse, dq2, dk2, dv2);
  for (size_t i = 0; i < dq.size(); ++i)
    ASSERT_NEAR(dq[i], dq2[i], 1e-4);
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isinf(lse[i]))
      EXPECT_TRUE(std::isinf(lse2[i]));
    else
      ASSERT_NEAR(lse[i], lse2[i], 1e-4);
}

TEST(Reference, FullMaskGqa) { checkGradients({1, 4, 2, 7, 9, 8, false, true, 0.35f, true, 3}); }
TEST(Reference, CausalBottomRightWithEmptyRows) {
  checkGradients({2, 2, 1, 9, 5, 8, true, true, 0.35f, true, 2});
}
TEST(Reference, CausalTopLeft) { checkGradients({1, 2, 2, 6, 10, 8, true, false, 0.35f, true, 2}); }

} // namespace
