//===- ProblemTest.cpp - Covering sets and problem validation -------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "Sweep.h"

#include "dash/Schedule/Problem.h"

#include <gtest/gtest.h>

using namespace dash::sched;

namespace {

// Element-wise definition: some query i of Q tile q sees some key k of KV
// tile j (k <= i + off for causal).
bool touches(const Problem &p, int64_t j, int64_t q) {
  for (int64_t i = q * p.blockM; i < std::min((q + 1) * p.blockM, p.seqQ); ++i)
    for (int64_t k = j * p.blockN; k < std::min((j + 1) * p.blockN, p.seqK);
         ++k)
      if (p.mask == Mask::Full || k <= i + p.maskOffset())
        return true;
  return false;
}

TEST(Problem, TileCountsAreCeilDiv) {
  Problem p;
  p.seqQ = 8192;
  p.seqK = 8193;
  p.blockM = 80;
  p.blockN = 128;
  EXPECT_EQ(p.numQTiles(), 103);
  EXPECT_EQ(p.numKVTiles(), 65);
}

TEST(Problem, CoveringSetsMatchElementwiseMask) {
  int64_t checked = 0;
  for (const Problem &p : sweep::randomProblems(600, 1)) {
    ASSERT_EQ(validate(p), "");
    for (int64_t j = 0; j < p.numKVTiles(); ++j) {
      std::vector<int64_t> want;
      for (int64_t q = 0; q < p.numQTiles(); ++q)
        if (touches(p, j, q))
          want.push_back(q);
      EXPECT_EQ(coveredQTiles(p, j), want) << "j=" << j;
      ++checked;
    }
    for (int64_t q = 0; q < p.numQTiles(); ++q) {
      int64_t count = 0;
      for (int64_t j = 0; j < p.numKVTiles(); ++j)
        count += touches(p, j, q);
      EXPECT_EQ(coveringCount(p, q), count) << "q=" << q;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Problem, BottomRightWithLongerQueriesLeavesRowsUncovered) {
  Problem p;
  p.mask = Mask::Causal;
  p.seqQ = 512;
  p.seqK = 128;
  p.blockM = p.blockN = 64;
  // off = -384: queries 0..383 see no key at all.
  EXPECT_EQ(lastCoveringKVTile(p, 5), -1);
  EXPECT_EQ(coveringCount(p, 6), 1);
  EXPECT_EQ(coveredQTiles(p, 0), (std::vector<int64_t>{6, 7}));
  p.align = CausalAlign::TopLeft;
  EXPECT_EQ(coveringCount(p, 0), 1);
  EXPECT_EQ(coveredQTiles(p, 1).front(), 1);
}

TEST(Problem, ValidateNamesTheBadField) {
  Problem p;
  p.seqQ = p.seqK = 128;
  EXPECT_EQ(validate(p), "");
  Problem bad = p;
  bad.seqQ = 0;
  EXPECT_NE(validate(bad).find("seqlen"), std::string::npos);
  bad = p;
  bad.headsQ = 6;
  bad.headsKV = 4;
  EXPECT_NE(validate(bad).find("multiple of heads-kv"), std::string::npos);
  bad = p;
  bad.blockM = -1;
  EXPECT_NE(validate(bad).find("block-m"), std::string::npos);
  bad = p;
  bad.c = 0;
  EXPECT_NE(validate(bad).find("c "), std::string::npos);
  bad = p;
  bad.r = -1;
  EXPECT_NE(validate(bad).find("r "), std::string::npos);
  bad = p;
  bad.numUnits = 0;
  EXPECT_NE(validate(bad).find("sms"), std::string::npos);
}

TEST(Problem, TileIdsBeyondSixteenBits) {
  // 40000 KV tiles overflowed the public 16-bit tile ids.
  Problem p;
  p.seqQ = 64;
  p.seqK = 40000 * 128;
  EXPECT_EQ(p.numKVTiles(), 40000);
  EXPECT_EQ(coveringCount(p, 0), 40000);
}

} // namespace
