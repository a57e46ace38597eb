//===- SimulateTest.cpp - Event model, DAG and closed forms agree ---------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "Sweep.h"

#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"
#include "dash/Schedule/TaskGraph.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

using namespace dash::sched;

namespace {

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// SCHEDULES.md section 4: n = 8 KV tiles = SMs, m = 4 heads, causal,
// BlockM == BlockN, c = 1, r = 0.25. Reproduced with the FA3 launch model:
// one CTA per KV tile, launched head after head, each to the first free SM,
// holding it while it waits.
Problem workedExample() {
  Problem p;
  p.headsQ = p.headsKV = 4;
  p.seqQ = p.seqK = 8 * 64;
  p.blockM = p.blockN = 64;
  p.mask = Mask::Causal;
  p.numUnits = 8;
  p.c = 1;
  p.r = 0.25;
  return p;
}

TEST(WorkedExample, SptDescendingAscending) {
  Problem p = workedExample();
  EXPECT_DOUBLE_EQ(simulate(p, Policy::Spt).makespan, 27.5);
  EXPECT_DOUBLE_EQ(simulate(p, Policy::Descending).makespan, 24.25);
  EXPECT_DOUBLE_EQ(simulate(p, Policy::Ascending).makespan, 41.75);
  // Section 3: symmetric shift is optimal, m*(n+1)*(c+r)/2 = 22.5.
  EXPECT_DOUBLE_EQ(simulate(p, Policy::SymmetricShift).makespan, 22.5);
  EXPECT_DOUBLE_EQ(criticalPath(p, Policy::Spt), 27.5);
}

TEST(WorkedExample, SectionThreeClosedForms) {
  Problem p = workedExample();
  EXPECT_DOUBLE_EQ(*closedForm(p, Policy::Ascending), 4 * 8 * 1.25 + 7 * 0.25);
  EXPECT_DOUBLE_EQ(*closedForm(p, Policy::Descending),
                   4 * 9 * 1.25 / 2 + 7 * 0.25);
  EXPECT_DOUBLE_EQ(*closedForm(p, Policy::SymmetricShift), 4 * 9 * 1.25 / 2);
  EXPECT_FALSE(closedForm(p, Policy::Spt).has_value());
  Problem full = p;
  full.mask = Mask::Full;
  EXPECT_DOUBLE_EQ(*closedForm(full, Policy::Shift), 4 * 8 * 1.25);
  EXPECT_DOUBLE_EQ(simulate(full, Policy::Shift).makespan, 4 * 8 * 1.25);
  EXPECT_DOUBLE_EQ(simulate(full, Policy::Ascending).makespan,
                   4 * 8 * 1.25 + 7 * 0.25);
}

// The property the brief asks for: closed form == DAG longest path ==
// simulated makespan wherever the closed form applies; and the DAG always
// equals the simulation (two independent evaluations of one model).
TEST(Model, ClosedFormEqualsLongestPathEqualsSimulation) {
  std::vector<Problem> all = sweep::randomProblems(2500, 7);
  for (const Problem &p : sweep::symmetricProblems(600, 8))
    all.push_back(p);
  // The section 3 regime: n = G, sq == sk, BlockM == BlockN.
  for (int64_t n = 1; n <= 12; ++n)
    for (int64_t heads = 1; heads <= 6; ++heads)
      for (Mask mask : {Mask::Full, Mask::Causal})
        for (double r : {0.0, 0.25, 1.0}) {
          Problem p;
          p.headsQ = p.headsKV = heads;
          p.seqQ = p.seqK = n * 64;
          p.blockM = p.blockN = 64;
          p.mask = mask;
          p.numUnits = n;
          p.r = r;
          all.push_back(p);
        }
  int64_t withClosedForm = 0, simulated = 0;
  for (const Problem &p : all)
    for (Policy policy : kConcretePolicies) {
      if (!checkLegal(p, policy).legal)
        continue;
      ModelResult m = simulate(p, policy);
      ASSERT_FALSE(m.deadlock) << policyName(policy);
      ASSERT_TRUE(std::isfinite(m.makespan)) << m.note;
      ASSERT_TRUE(near(m.makespan, m.criticalPath))
          << policyName(policy) << " sim " << m.makespan << " dag "
          << m.criticalPath;
      ASSERT_GE(m.makespan + 1e-9, m.workBound);
      ++simulated;
      if (std::optional<double> cf = closedForm(p, policy)) {
        ++withClosedForm;
        ASSERT_TRUE(near(*cf, m.makespan))
            << policyName(policy) << " N=" << p.numKVTiles()
            << " M=" << p.numQTiles() << " heads=" << p.numHeadSlots()
            << " G=" << p.numUnits << " r=" << p.r
            << " mask=" << maskName(p.mask) << " sq=" << p.seqQ
            << " sk=" << p.seqK << " bm=" << p.blockM << " bn=" << p.blockN
            << ": closed form " << *cf << " vs " << m.makespan;
      }
    }
  EXPECT_GT(simulated, 8000);
  EXPECT_GT(withClosedForm, 1500);
}

// Shift and symmetric shift never wait when the whole grid is resident: no
// two reduces into one dQ row share a depth (SCHEDULES.md section 3 lemma).
TEST(Model, PersistentSchedulesNeverWait) {
  std::vector<Problem> all = sweep::randomProblems(800, 9);
  for (const Problem &p : sweep::symmetricProblems(400, 10))
    all.push_back(p);
  for (const Problem &p : all)
    for (Policy policy : {Policy::Shift, Policy::SymmetricShift}) {
      if (!checkLegal(p, policy).legal)
        continue;
      Trace trace;
      simulate(p, policy, &trace);
      for (const TaskSpan &t : trace.tasks)
        ASSERT_TRUE(near(t.reduceStart, t.computeEnd)) << policyName(policy);
    }
}

// Non-deterministic kernels add dQ partials as they come: no task waits for
// a rank, so no schedule deadlocks, none is slower than its ordered
// counterpart, and the causal ascending walk (whose chains stall) gains.
TEST(Model, UnorderedReducesNeverWait) {
  for (const Problem &base : sweep::randomProblems(300, 11)) {
    Problem p = base;
    p.persistentLaunch = true;
    for (Policy policy : {Policy::Ascending, Policy::Descending, Policy::Spt}) {
      ModelResult ord = simulate(p, policy);
      Problem u = p;
      u.ordered = false;
      Trace trace;
      ModelResult un = simulate(u, policy, &trace);
      if (!ord.note.empty() && ord.note.rfind("deadlock", 0) != 0)
        continue; // not simulated at all (shape, size)
      ASSERT_FALSE(un.deadlock) << policyName(policy);
      for (const TaskSpan &t : trace.tasks)
        ASSERT_TRUE(near(t.reduceStart, t.computeEnd)) << policyName(policy);
      if (!ord.deadlock)
        EXPECT_LE(un.makespan, ord.makespan * (1 + 1e-12)) << policyName(policy);
      EXPECT_TRUE(near(un.criticalPath, un.makespan));
    }
  }
  Problem p = workedExample();
  p.persistentLaunch = true;
  double ordered = simulate(p, Policy::Ascending).makespan;
  p.ordered = false;
  EXPECT_LT(simulate(p, Policy::Ascending).makespan, ordered);
}

// Shift ranks make unit u wait on higher units of the same wave: with fewer
// SMs than one wave's units it must deadlock, and checkLegal must say so.
TEST(Deadlock, ShiftNeedsItsWaveCoResident) {
  for (int64_t n = 2; n <= 10; ++n)
    for (int64_t resident = 1; resident < n; ++resident)
      for (Policy policy : {Policy::Shift, Policy::SymmetricShift}) {
        Problem p;
        p.seqQ = p.seqK = n * 128;
        p.blockM = 64;
        p.blockN = 128;
        p.mask = policy == Policy::Shift ? Mask::Full : Mask::Causal;
        p.numUnits = policy == Policy::Shift ? n : std::max<int64_t>(1, n / 2);
        if (policy == Policy::SymmetricShift && (n % 2 || resident >= n / 2))
          continue;
        p.residentUnits = resident;
        ModelResult m = simulate(p, policy);
        EXPECT_TRUE(m.deadlock)
            << policyName(policy) << " n=" << n << " resident=" << resident;
        EXPECT_TRUE(std::isinf(m.makespan));
        Legality l = checkLegal(p, policy);
        EXPECT_FALSE(l.legal);
        EXPECT_NE(l.reason.find("deadlock"), std::string::npos) << l.reason;
        p.residentUnits = 0;
        EXPECT_FALSE(simulate(p, policy).deadlock);
        EXPECT_TRUE(checkLegal(p, policy).legal);
      }
}

// Over a sweep of grids smaller than G: checkLegal's verdict matches the
// model, the one-CTA-per-tile schedules never deadlock (their ranks only
// wait on earlier-launched CTAs), and the whole grid resident never does.
TEST(Deadlock, LegalityMatchesSimulation) {
  int64_t deadlocks = 0;
  sweep::Rng rng(11);
  std::vector<Problem> all = sweep::randomProblems(1200, 12);
  for (const Problem &p : sweep::symmetricProblems(600, 13))
    all.push_back(p);
  for (Problem p : all) {
    p.residentUnits = rng.in(0, 1) ? rng.in(1, p.numUnits) : 0;
    for (Policy policy : kConcretePolicies) {
      Problem whole = p;
      whole.residentUnits = 0;
      if (!checkLegal(whole, policy).legal)
        continue; // shape-illegal whatever the residency
      ModelResult m = simulate(p, policy);
      bool legal = checkLegal(p, policy).legal;
      ASSERT_EQ(legal, !m.deadlock) << policyName(policy) << " " << m.note;
      if (!isPersistent(policy) || p.numSMs() >= p.numUnits)
        ASSERT_FALSE(m.deadlock) << policyName(policy);
      deadlocks += m.deadlock;
      if (!m.deadlock)
        ASSERT_TRUE(near(m.makespan, m.criticalPath));
    }
  }
  EXPECT_GT(deadlocks, 50);
}

TEST(Simulation, EventCountIsBounded) {
  for (const Problem &p : sweep::randomProblems(300, 14))
    for (Policy policy : kConcretePolicies) {
      if (!checkLegal(p, policy).legal)
        continue;
      Trace trace;
      ModelResult m = simulate(p, policy, &trace);
      ASSERT_EQ(trace.events, 2 * static_cast<int64_t>(trace.tasks.size()));
      ASSERT_EQ(static_cast<int64_t>(trace.tasks.size()),
                p.numHeadSlots() * tasksPerHead(p));
      for (const TaskSpan &t : trace.tasks) {
        ASSERT_GE(t.lane, 0);
        ASSERT_LE(t.computeEnd, t.reduceStart);
        ASSERT_LE(t.reduceEnd, m.makespan);
      }
    }
}

TEST(Simulation, IllegalShapesAreReportedNotSimulated) {
  Problem p = workedExample();
  ModelResult m = simulate(p, Policy::Shift);
  EXPECT_TRUE(std::isinf(m.makespan));
  EXPECT_FALSE(m.deadlock);
  EXPECT_NE(m.note.find("full mask"), std::string::npos);
  EXPECT_TRUE(std::isinf(criticalPath(p, Policy::Shift)));
}

// The paper's largest setting must be cheap: O(tasks log tasks).
TEST(Simulation, PaperScaleIsFast) {
  Problem p;
  p.batch = 1;
  p.headsQ = p.headsKV = 16;
  p.seqQ = p.seqK = 16384;
  p.headDim = 128;
  p.blockM = 80;
  p.blockN = 128;
  auto start = std::chrono::steady_clock::now();
  for (Policy policy : {Policy::Ascending, Policy::Descending, Policy::Shift}) {
    ModelResult m = simulate(p, policy);
    EXPECT_TRUE(std::isfinite(m.makespan));
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 20.0); // ~0.5 s in Release; guards against quadratic loops
}

TEST(TaskGraph, DetectsCycles) {
  TaskGraph g;
  g.nodes.push_back({0, 0, 0, 0, 0, 0, -1, 1});
  g.nodes.push_back({1, 0, 0, 1, 0, 1, -1, 0});
  EXPECT_TRUE(std::isinf(longestPath(g, 1, 1)));
  g.nodes[0].rankPred = -1;
  EXPECT_DOUBLE_EQ(longestPath(g, 1, 1), 3);
}

} // namespace
