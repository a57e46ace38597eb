//===- PlanTest.cpp - Plans agree with the integer formulas ---------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "Sweep.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"

#include <gtest/gtest.h>

#include <cmath>
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

// persistentLaunch: every policy as DASH's kernels run it, unit u walking
// launch slots u, u+G, ... of the same launch order (what
// dash-materialize-schedule's items/work regions compute).
TEST(Plan, PersistentLaunchMatchesTheKernelsSlots) {
  for (Policy policy : {Policy::Ascending, Policy::Spt, Policy::Descending}) {
    Problem p;
    p.batch = 2;
    p.headsQ = p.headsKV = 3;
    p.seqQ = p.seqK = 5 * 128;
    p.mask = Mask::Causal;
    p.numUnits = 7;
    p.persistentLaunch = true;
    std::vector<std::vector<WorkItem>> fa3 = [&] {
      Problem q = p;
      q.persistentLaunch = false;
      return launchList(q, policy);
    }();
    std::vector<std::vector<WorkItem>> units = launchList(p, policy);
    ASSERT_EQ(units.size(), 7u) << policyName(policy);
    // Slot t of the FA3 order is item t / G of unit t % G.
    for (size_t t = 0; t < fa3.size(); ++t) {
      const WorkItem &want = fa3[t][0], &got = units[t % 7][t / 7];
      EXPECT_EQ(std::tie(got.b, got.h, got.kvTile, got.qTiles),
                std::tie(want.b, want.h, want.kvTile, want.qTiles))
          << policyName(policy) << " slot " << t;
    }
    // Same tasks, same ranks: legality does not change, and the model runs
    // (no deadlock: a slot only waits on smaller slots).
    EXPECT_TRUE(checkLegal(p, policy).legal);
    ModelResult m = simulate(p, policy);
    EXPECT_FALSE(m.deadlock) << policyName(policy);
    EXPECT_TRUE(std::isfinite(m.makespan));
  }
}

// fuzz/regressions/dash-fuzz-schedule/persistent-auto-no-legal: a
// persistent grid of G = 2 units on 1 SM deadlocks under every schedule, so
// `auto` must be illegal there (FA3-launched ascending would still run).
TEST(Plan, PersistentLaunchCanLeaveNoLegalSchedule) {
  Problem p;
  p.batch = 2;
  p.headsQ = 16;
  p.headsKV = 4;
  p.seqQ = p.seqK = 4096;
  p.blockM = 128;
  p.blockN = 256;
  p.mask = Mask::Causal;
  p.numUnits = 2;
  p.residentUnits = 1;
  p.c = p.r = 0.5;
  EXPECT_TRUE(checkLegal(p, Policy::Auto).legal);
  p.persistentLaunch = true;
  Legality autoLegal = checkLegal(p, Policy::Auto);
  EXPECT_FALSE(autoLegal.legal);
  EXPECT_NE(autoLegal.reason.find("auto: no schedule is legal"),
            std::string::npos)
      << autoLegal.reason;
  for (Policy pol : {Policy::Ascending, Policy::Spt, Policy::Descending,
                     Policy::SymmetricShift})
    EXPECT_FALSE(checkLegal(p, pol).legal) << policyName(pol);
  EXPECT_FALSE(std::isfinite(simulate(p, Policy::Auto).makespan));
}

// The two launch models differ where it matters for `auto`: causal walks of
// unequal length packed statically into G units vs. handed to the first free
// SM.
TEST(Plan, PersistentLaunchChangesTheModel) {
  Problem p;
  p.batch = 4;
  p.headsQ = p.headsKV = 32;
  p.seqQ = p.seqK = 4096;
  p.headDim = 64;
  p.blockM = p.blockN = 128;
  p.mask = Mask::Causal;
  p.r = 0.75;
  double fa3 = simulate(p, Policy::Ascending).makespan;
  p.persistentLaunch = true;
  double persistent = simulate(p, Policy::Ascending).makespan;
  double sym = simulate(p, Policy::SymmetricShift).makespan;
  EXPECT_GT(persistent, fa3); // long walks land on the same units
  EXPECT_LT(sym, persistent);
  EXPECT_EQ(choose(p).policy, Policy::SymmetricShift);
}

} // namespace
