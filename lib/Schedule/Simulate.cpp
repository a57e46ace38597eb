//===- Simulate.cpp - Model results for one schedule ----------------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Simulate.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/TaskGraph.h"

#include "Engine.h"

#include <algorithm>
#include <limits>

namespace dash::sched {

static constexpr double kInf = std::numeric_limits<double>::infinity();

ModelResult simulate(const Problem &p, Policy policy) {
  return simulate(p, policy, nullptr);
}

ModelResult simulate(const Problem &p, Policy policy, Trace *trace) {
  ModelResult out;
  out.makespan = out.criticalPath = kInf;
  std::string err = validate(p);
  if (err.empty()) {
    policy = resolvePolicy(p, policy);
    err = shapeReasonForEngine(p, policy);
  }
  if (err.empty() && p.numHeadSlots() * tasksPerHead(p) > kMaxSimulatedTasks)
    err = "too large to simulate (more than 2^26 tasks)";
  if (!err.empty()) {
    out.note = err;
    return out;
  }
  std::vector<std::vector<WorkItem>> ctas = launchList(p, policy);
  const int64_t sms = p.numSMs();
  EngineResult run = runEngine(p, policy, ctas, sms, trace);
  out.deadlock = run.deadlock;
  out.note = run.note;
  out.workBound = std::max(run.busy / static_cast<double>(sms), run.maxCtaWork);
  if (run.deadlock || !run.note.empty())
    return out;
  out.makespan = run.makespan;
  // Clamped: a fully busy SM set rounds to -1e-16 ("-0.0%" in the table).
  out.idleFraction =
      run.makespan > 0
          ? std::max(0.0, 1.0 - run.busy / (run.makespan *
                                            static_cast<double>(sms)))
          : 0.0;
  // The DAG over the simulated SM lanes, evaluated on its own: equal to the
  // makespan unless the event loop is wrong (the gtests check it).
  // No rank edges (the DAG is the lanes alone), or the staged model, whose
  // overlapped compute and reduces the serial task DAG does not describe.
  if (!p.ordered || p.stagingBuffers > 0) {
    out.criticalPath = run.makespan;
    return out;
  }
  TaskGraph graph = buildTaskGraph(p, policy, lanesFromRun(ctas, run, sms));
  out.criticalPath = graph.error.empty() ? longestPath(graph, p.c, p.r) : kInf;
  if (!graph.error.empty())
    out.note = graph.error;
  return out;
}

double criticalPath(const Problem &p, Policy policy) {
  return simulate(p, policy).criticalPath;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::optional<double> closedForm(const Problem &p, Policy policy) {
  // The closed forms are for the ordered (deterministic) adds of the serial
  // model.
  if (!validate(p).empty() || !p.ordered || p.stagingBuffers > 0)
    return std::nullopt;
  policy = resolvePolicy(p, policy);
  if (!checkLegal(p, policy).legal || p.numSMs() != p.numUnits)
    return std::nullopt;
  const int64_t n = p.numKVTiles(), m = p.numQTiles(), g = p.numUnits;
  const int64_t heads = p.numHeadSlots(), s = stride(p);
  const double t = p.c + p.r;
  // Ascending-like causal geometry: KV tile j covers rows s*j .. M-1.
  const bool diagonal =
      p.mask == Mask::Causal && p.seqQ == p.seqK && s > 0 && m == n * s;
  switch (policy) {
  case Policy::Shift:
    // Every tile takes M*(c+r) and ranks follow visit steps: no waits, so
    // each unit runs its ceil(tiles/G) tiles back to back.
    return static_cast<double>(ceilDiv(heads * n, g) * m) * t;
  case Policy::SymmetricShift:
    // Every pair is s*(N+1) tasks, again without waits.
    return static_cast<double>(ceilDiv(heads * n / 2, g) * s * (n + 1)) * t;
  case Policy::Ascending: {
    // Tile j lags tile j-1 by r on every shared row and ends at M*(c+r)+j*r.
    // With G == N the next head's tile j reuses SM j, as long as the head's
    // last tile frees its SM before the next head's first tile ends
    // ((N-1)*r <= M*(c+r); found by the gtest sweep). One wave is one chain.
    bool staggered = g == n && static_cast<double>(n - 1) * p.r <=
                                   static_cast<double>(m) * t;
    if ((p.mask == Mask::Full || diagonal) && (staggered || heads * n <= g))
      return static_cast<double>(ceilDiv(heads * n, g) * m) * t +
             static_cast<double>(n - 1) * p.r;
    return std::nullopt;
  }
  case Policy::Descending:
    // SCHEDULES.md section 3: m*(n+1)*(c+r)/2 + (n-1)*r. The brute-force
    // sweep shows it needs an even head count (heads pair up: one head's
    // long tiles fill the SMs freed by the other's short ones) and r <= c
    // (a larger r makes the ordered reduces, not the SMs, the bottleneck).
    if (diagonal && s == 1 && g == n && heads % 2 == 0 && p.r <= p.c)
      return static_cast<double>(heads * (n + 1)) * t / 2 +
             static_cast<double>(n - 1) * p.r;
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

} // namespace dash::sched
