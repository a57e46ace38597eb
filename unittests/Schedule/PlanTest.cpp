//===- PlanTest.cpp - Plans agree with the integer formulas ---------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "Sweep.h"

#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using namespace dash::sched;

namespace {

// Every (b, h, kv) item appears exactly once, its qTiles are the formula's
// walk, and reductionOrder is the rank order.
TEST(Plan, AgreesWithVisitAndRankFormulas) {
  std::vector<Problem> all = sweep::randomProblems(700, 21);
  for (const Problem &p : sweep::symmetricProblems(300, 22))
    all.push_back(p);
  int64_t items = 0;
  for (const Problem &p : all)
    for (Policy policy : kConcretePolicies) {
      Plan plan = buildPlan(p, policy);
      if (!checkLegal(p, policy).legal) {
        EXPECT_FALSE(plan.reason.empty());
        EXPECT_TRUE(plan.units.empty());
        continue;
      }
      ASSERT_EQ(plan.reason, "");
      ASSERT_EQ(plan.policy, policy);
      std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
      for (const auto &unit : plan.units)
        for (const WorkItem &it : unit) {
          ASSERT_TRUE(seen.insert({it.b, it.h, it.kvTile}).second);
          ASSERT_EQ(static_cast<int64_t>(it.qTiles.size()),
                    walkLength(p, it.kvTile));
          for (size_t s = 0; s < it.qTiles.size(); ++s)
            ASSERT_EQ(it.qTiles[s],
                      visitQTile(p, policy, it.b, it.h, it.kvTile, s));
          ++items;
        }
      ASSERT_EQ(static_cast<int64_t>(seen.size()),
                p.numHeadSlots() * p.numKVTiles());
      if (isPersistent(policy))
        for (size_t u = 0; u < plan.units.size(); ++u)
          for (const WorkItem &it : plan.units[u]) {
            int64_t hb = it.h + p.headsQ * it.b, n = p.numKVTiles();
            int64_t idx = policy == Policy::Shift
                              ? it.kvTile
                              : std::min(it.kvTile, n - 1 - it.kvTile);
            int64_t perHead = policy == Policy::Shift ? n : n / 2;
            ASSERT_EQ(wavePosition(idx, perHead, hb, p.numUnits).unit,
                      static_cast<int64_t>(u));
          }
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.headsQ; ++h)
          for (int64_t q = 0; q < p.numQTiles(); ++q) {
            std::vector<int64_t> order = plan.reductionOrder(b, h, q);
            ASSERT_EQ(static_cast<int64_t>(order.size()), coveringCount(p, q));
            for (size_t r = 0; r < order.size(); ++r)
              ASSERT_EQ(plan.rank(b, h, order[r], q), static_cast<int64_t>(r));
          }
    }
  EXPECT_GT(items, 10000);
}

TEST(Plan, AutoResolvesToAConcretePolicy) {
  Problem p;
  p.seqQ = p.seqK = 2048;
  p.mask = Mask::Causal;
  p.headsQ = p.headsKV = 4;
  Plan plan = buildPlan(p, Policy::Auto);
  EXPECT_NE(plan.policy, Policy::Auto);
  EXPECT_EQ(plan.reason, "");
}

TEST(Plan, FA3LaunchOrder) {
  Problem p;
  p.headsQ = p.headsKV = 2;
  p.seqQ = p.seqK = 3 * 128;
  std::vector<std::vector<WorkItem>> asc = launchList(p, Policy::Ascending);
  std::vector<std::vector<WorkItem>> spt = launchList(p, Policy::Spt);
  ASSERT_EQ(asc.size(), 6u);
  EXPECT_EQ(asc[1][0].kvTile, 1);
  EXPECT_EQ(asc[3][0].h, 1);
  EXPECT_EQ(spt[0][0].kvTile, 2); // shortest first
  EXPECT_EQ(spt[2][0].kvTile, 0);
}

} // namespace
