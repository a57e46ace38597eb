//===- Simulate.h - Discrete-event model of the backward kernel -*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Every (KV tile, Q tile) task is compute (cost c) then an ordered reduce
// (cost r) that may start only when the dQ row's semaphore equals the task's
// rank. A CTA holds its SM while it waits. CTAs are dispatched in launch
// order to the first free SM. The event loop is O(tasks log tasks) and stops
// after a bounded number of events.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_SIMULATE_H
#define DASH_SCHEDULE_SIMULATE_H

#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dash::sched {

struct ModelResult {
  double makespan = 0, criticalPath = 0, idleFraction = 0;
  bool deadlock = false;
  std::string note;
  /// max(total work / SMs, longest single chain): no schedule beats it.
  double workBound = 0;
};

/// One task as it ran in the simulation.
struct TaskSpan {
  int64_t lane, cta, b, h, kvTile, qTile, rank;
  // Waiting on the dQ semaphore is [computeEnd, reduceStart).
  double computeStart, computeEnd, reduceStart, reduceEnd;
};

struct Trace {
  int64_t lanes = 0;              // SMs
  std::vector<TaskSpan> tasks;    // in launch-list order
  std::vector<int64_t> ctaLane;   // SM of each CTA (-1: never dispatched)
  std::vector<int64_t> laneOrder; // CTAs in dispatch order
  int64_t events = 0;
};

/// Simulates the policy (Auto: the chosen one). makespan = +inf and
/// deadlock = true when some reduce can never start. Shape-illegal policies
/// return makespan = +inf with the reason in `note`.
ModelResult simulate(const Problem &, Policy);
ModelResult simulate(const Problem &, Policy, Trace *trace);

/// Longest path of the task DAG (compute c / reduce r per task, chain edges
/// along each SM's work in the simulated order, zero-weight order edges per
/// dQ row). +inf when the policy is illegal.
double criticalPath(const Problem &, Policy);

/// Closed forms (SCHEDULES.md section 3, generalised and checked in the
/// gtests) where they apply, else nullopt. See docs/Scheduling.md.
std::optional<double> closedForm(const Problem &, Policy);

} // namespace dash::sched

#endif // DASH_SCHEDULE_SIMULATE_H
