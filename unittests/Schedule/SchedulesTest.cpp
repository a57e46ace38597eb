//===- SchedulesTest.cpp - Visit orders and ranks -------------------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "Sweep.h"

#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

using namespace dash::sched;

namespace {

std::vector<int64_t> walk(const Problem &p, Policy policy, int64_t b, int64_t h,
                          int64_t j) {
  std::vector<int64_t> out;
  for (int64_t step = 0; step < walkLength(p, j); ++step)
    out.push_back(visitQTile(p, policy, b, h, j, step));
  return out;
}

std::vector<int64_t> order(const Problem &p, Policy policy, int64_t q) {
  std::vector<int64_t> out(coveringCount(p, q), -1);
  for (int64_t j = 0; j < coveringCount(p, q); ++j)
    out[rankOf(p, policy, 0, 0, j, q)] = j;
  return out;
}

TEST(Policy, NamesRoundTrip) {
  for (Policy p : {Policy::Ascending, Policy::Spt, Policy::Descending,
                   Policy::Shift, Policy::SymmetricShift, Policy::Auto})
    EXPECT_EQ(parsePolicy(policyName(p)), p);
  EXPECT_EQ(parsePolicy("sym-shift"), std::nullopt);
  EXPECT_FALSE(orderDependsOnG(Policy::Descending));
  EXPECT_TRUE(orderDependsOnG(Policy::Shift));
}

// SCHEDULES.md section 4, shift example: N=4, M=6.
TEST(WorkedExample, ShiftN4M6) {
  Problem p;
  p.seqK = 4 * 128;
  p.seqQ = 6 * 64;
  p.blockM = 64;
  p.blockN = 128;
  p.numUnits = 4;
  ASSERT_TRUE(checkLegal(p, Policy::Shift).legal);
  EXPECT_EQ(walk(p, Policy::Shift, 0, 0, 0),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(walk(p, Policy::Shift, 0, 0, 1),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 0}));
  EXPECT_EQ(walk(p, Policy::Shift, 0, 0, 2),
            (std::vector<int64_t>{2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(walk(p, Policy::Shift, 0, 0, 3),
            (std::vector<int64_t>{3, 4, 5, 0, 1, 2}));
  // Row 0 receives kv0, kv3, kv2, kv1 (at steps 0, 3, 4, 5).
  EXPECT_EQ(order(p, Policy::Shift, 0), (std::vector<int64_t>{0, 3, 2, 1}));
}

// SCHEDULES.md section 4, symmetric-shift example: N=8, s=1, R=4.
TEST(WorkedExample, SymmetricShiftN8) {
  Problem p;
  p.mask = Mask::Causal;
  p.seqQ = p.seqK = 8 * 64;
  p.blockM = p.blockN = 64;
  p.numUnits = 4;
  ASSERT_TRUE(checkLegal(p, Policy::SymmetricShift).legal);
  std::vector<std::vector<WorkItem>> units =
      launchList(p, Policy::SymmetricShift);
  ASSERT_EQ(units.size(), 4u);
  ASSERT_EQ(units[0].size(), 2u);
  EXPECT_EQ(units[0][0].kvTile, 0);
  EXPECT_EQ(units[0][0].qTiles, (std::vector<int64_t>{3, 4, 5, 6, 7, 0, 1, 2}));
  EXPECT_EQ(units[0][1].kvTile, 7);
  EXPECT_EQ(units[0][1].qTiles, (std::vector<int64_t>{7}));
  for (const auto &u : units)
    EXPECT_EQ(u[0].qTiles.size() + u[1].qTiles.size(), 9u); // N + 1 tasks
  EXPECT_EQ(order(p, Policy::SymmetricShift, 7),
            (std::vector<int64_t>{3, 2, 1, 0, 4, 5, 6, 7}));
}

// Definitions from SCHEDULES.md section 4, checked on every row of a sweep:
// ascending/descending reduce in ascending KV order, spt in descending.
TEST(Ranks, FixedOrderPolicies) {
  for (const Problem &p : sweep::randomProblems(500, 2))
    for (int64_t q = 0; q < p.numQTiles(); ++q) {
      int64_t k = coveringCount(p, q);
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ(rankOf(p, Policy::Ascending, 0, 0, j, q), j);
        EXPECT_EQ(rankOf(p, Policy::Descending, 0, 0, j, q), j);
        EXPECT_EQ(rankOf(p, Policy::Spt, 0, 0, j, q), k - 1 - j);
      }
      EXPECT_EQ(rankOf(p, Policy::Ascending, 0, 0, k, q), -1);
    }
}

// Ranks are permutations 0..k-1 on every (b, h, q) row, for every legal
// policy, and every KV tile visits its covering set exactly once.
TEST(Ranks, PermutationOnEveryRow) {
  int64_t rows = 0;
  std::vector<Problem> all = sweep::randomProblems(1500, 3);
  for (const Problem &p : sweep::symmetricProblems(400, 4))
    all.push_back(p);
  for (const Problem &p : all)
    for (Policy policy : kConcretePolicies) {
      if (!checkLegal(p, policy).legal)
        continue;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.headsQ; ++h) {
          for (int64_t q = 0; q < p.numQTiles(); ++q, ++rows) {
            int64_t k = coveringCount(p, q);
            std::vector<int64_t> ranks;
            for (int64_t j = 0; j < k; ++j)
              ranks.push_back(rankOf(p, policy, b, h, j, q));
            std::sort(ranks.begin(), ranks.end());
            for (int64_t i = 0; i < k; ++i)
              ASSERT_EQ(ranks[i], i) << policyName(policy) << " q=" << q;
          }
          for (int64_t j = 0; j < p.numKVTiles(); ++j) {
            std::vector<int64_t> w = walk(p, policy, b, h, j);
            std::sort(w.begin(), w.end());
            ASSERT_EQ(w, coveredQTiles(p, j))
                << policyName(policy) << " j=" << j;
          }
        }
    }
  EXPECT_GT(rows, 10000);
}

// The persistent schedules' ranks, re-derived by brute force: within one
// head, order the covering KV tiles of a row by (wave, step at which the
// unit reaches the row). That is the zero-wait order of the DAG lemma. For
// symmetric-shift also the spacing of a row's long-tile visits.
TEST(Ranks, ShiftRanksFollowWaveAndStep) {
  std::vector<Problem> all = sweep::randomProblems(1500, 5);
  for (const Problem &p : sweep::symmetricProblems(600, 6))
    all.push_back(p);
  int64_t checked = 0;
  for (const Problem &p : all)
    for (Policy policy : {Policy::Shift, Policy::SymmetricShift}) {
      if (!checkLegal(p, policy).legal)
        continue;
      int64_t n = p.numKVTiles();
      int64_t perHead = policy == Policy::Shift ? n : n / 2;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.headsQ; ++h) {
          int64_t hb = h + p.headsQ * b;
          // key[j][q] = (wave, step within the unit's item).
          std::vector<std::vector<std::pair<int64_t, int64_t>>> key(
              n, std::vector<std::pair<int64_t, int64_t>>(p.numQTiles()));
          for (int64_t idx = 0; idx < perHead; ++idx) {
            int64_t wave = (idx + perHead * hb) / p.numUnits;
            std::vector<int64_t> tiles = {idx};
            if (policy == Policy::SymmetricShift)
              tiles.push_back(n - 1 - idx);
            int64_t step = 0;
            for (int64_t j : tiles)
              for (int64_t q : walk(p, policy, b, h, j))
                key[j][q] = {wave, step++};
          }
          for (int64_t q = 0; q < p.numQTiles(); ++q) {
            std::vector<int64_t> js;
            for (int64_t j = 0; j < coveringCount(p, q); ++j)
              js.push_back(j);
            std::sort(js.begin(), js.end(), [&](int64_t x, int64_t y) {
              return key[x][q] < key[y][q];
            });
            for (size_t r = 0; r < js.size(); ++r, ++checked) {
              ASSERT_EQ(rankOf(p, policy, b, h, js[r], q),
                        static_cast<int64_t>(r))
                  << policyName(policy) << " N=" << n << " G=" << p.numUnits
                  << " q=" << q;
              // symmetric-shift: a row's long-tile visits within a wave
              // are at least s steps apart (the rectangle starts tile i
              // s*i rows in), so each rank waits on an add issued at least
              // s steps before.
              if (policy == Policy::SymmetricShift && r > 0 &&
                  js[r] < n / 2 && js[r - 1] < n / 2 &&
                  key[js[r]][q].first == key[js[r - 1]][q].first)
                ASSERT_GE(key[js[r]][q].second - key[js[r - 1]][q].second,
                          stride(p))
                    << "N=" << n << " G=" << p.numUnits << " q=" << q;
            }
          }
        }
    }
  EXPECT_GT(checked, 5000);
}

TEST(Legality, ShapeRequirements) {
  Problem p;
  p.seqQ = p.seqK = 1024;
  p.blockM = 64;
  p.blockN = 128;
  p.numUnits = 132;
  EXPECT_TRUE(checkLegal(p, Policy::Shift).legal);
  EXPECT_FALSE(checkLegal(p, Policy::SymmetricShift).legal); // full mask
  p.mask = Mask::Causal;
  EXPECT_FALSE(checkLegal(p, Policy::Shift).legal);
  EXPECT_TRUE(checkLegal(p, Policy::SymmetricShift).legal);
  Problem odd = p;
  odd.seqQ = odd.seqK = 3 * 128;
  EXPECT_NE(checkLegal(odd, Policy::SymmetricShift).reason.find("even"),
            std::string::npos);
  Problem ragged = p;
  ragged.blockM = 80;
  EXPECT_NE(checkLegal(ragged, Policy::SymmetricShift)
                .reason.find("block-n % block-m"),
            std::string::npos);
  Problem rect = p;
  rect.seqK = 2048;
  EXPECT_NE(checkLegal(rect, Policy::SymmetricShift)
                .reason.find("seqlen == seqlen-k"),
            std::string::npos);
  EXPECT_TRUE(checkLegal(rect, Policy::Spt).legal);
  Problem wide;
  wide.seqQ = 64; // M = 1 < R = 8
  wide.seqK = 1024;
  wide.numUnits = 132;
  EXPECT_NE(checkLegal(wide, Policy::Shift).reason.find("M >= "),
            std::string::npos);
  Problem invalid;
  EXPECT_FALSE(checkLegal(invalid, Policy::Ascending).legal);
}

TEST(WavePosition, SplitsHeadsAcrossWaves) {
  // N = 5 tiles per head, G = 7: head 1 has tiles 5,6 in wave 0, 7..9 in 1.
  WavePosition w = wavePosition(3, 5, 1, 7);
  EXPECT_EQ(w.wave, 1);
  EXPECT_EQ(w.unit, 1);
  EXPECT_EQ(w.F, 2);
  EXPECT_EQ(w.R, 3);
  EXPECT_EQ(w.a, 1);
}

} // namespace

// Regressions of fuzz findings (fuzz/regressions/README.md).
namespace dash::sched {
namespace {

// Brute force over every head: what checkLegal decided before it grouped
// heads into classes.
bool legalAllHeads(const Problem &p, Policy policy) {
  int64_t m = p.numQTiles(), n = p.numKVTiles();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.headsQ; ++h) {
      for (int64_t q = 0; q < m; ++q) {
        int64_t k = coveringCount(p, q);
        std::vector<int> seen(static_cast<size_t>(std::max<int64_t>(k, 1)), 0);
        for (int64_t j = 0; j < k; ++j) {
          int64_t r = rankOf(p, policy, b, h, j, q);
          if (r < 0 || r >= k || seen[r]++)
            return false;
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        std::vector<int> hit(static_cast<size_t>(m), 0);
        for (int64_t s = 0; s < walkLength(p, j); ++s) {
          int64_t q = visitQTile(p, policy, b, h, j, s);
          if (q < firstCoveredQTile(p, j) || q >= m || hit[q]++)
            return false;
        }
      }
    }
  return true;
}

TEST(FuzzRegressions, HeadClassesAgreeWithEveryHead) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int it = 0; it < 400; ++it) {
    Problem p;
    p.batch = 1 + rng() % 3;
    p.headsQ = p.headsKV = 1 + rng() % 7;
    p.blockM = 16 * (1 + rng() % 2);
    p.blockN = p.blockM * (1 + rng() % 2);
    p.seqQ = p.seqK = p.blockN * (1 + rng() % 8);
    p.mask = rng() % 2 ? Mask::Causal : Mask::Full;
    p.numUnits = 1 + rng() % 40;
    for (Policy policy : kConcretePolicies) {
      Legality l = checkLegal(p, policy);
      if (!l.legal && l.reason.find("deadlock") == std::string::npos &&
          l.reason.find("permutation") == std::string::npos &&
          l.reason.find("covering") == std::string::npos)
        continue; // a shape rule, decided before the per-head checks
      EXPECT_EQ(l.legal, legalAllHeads(p, policy))
          << policyName(policy) << ": " << l.reason;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(FuzzRegressions, HugeGridDoesNotAllocatePerUnit) {
  // G = 2^31 - 1 used to allocate per-SM state for every unit (48 GB).
  Problem p;
  p.seqQ = p.seqK = 1024;
  p.blockM = p.blockN = 128;
  p.numUnits = (int64_t(1) << 31) - 1;
  ModelResult r = simulate(p, Policy::Shift);
  EXPECT_FALSE(r.deadlock);
  EXPECT_GT(r.makespan, 0);
  EXPECT_TRUE(checkLegal(p, Policy::Shift).legal);
}

TEST(FuzzRegressions, LegalityOfManyHeadsIsCheapToDecide) {
  // B=8, H=32, S=131072 at 64x64 tiles: 2^16 x 2^11 x 2^11 tasks if every
  // head is checked; the head classes make it one (or G) heads.
  Problem p;
  p.batch = 8;
  p.headsQ = p.headsKV = 32;
  p.seqQ = p.seqK = 131072;
  p.blockM = p.blockN = 64;
  p.mask = Mask::Causal;
  EXPECT_TRUE(checkLegal(p, Policy::Descending).legal);
  EXPECT_TRUE(checkLegal(p, Policy::Spt).legal);
}

TEST(FuzzRegressions, HugeCostsAreRejected) {
  Problem p;
  p.seqQ = p.seqK = 4096;
  p.c = 1.7e308;
  EXPECT_NE(validate(p).find("c (compute cost per task)"), std::string::npos);
  p.c = 1;
  p.r = 1e300;
  EXPECT_NE(validate(p).find("r (reduce cost per task)"), std::string::npos);
}

} // namespace
} // namespace dash::sched
