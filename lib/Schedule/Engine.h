//===- Engine.h - Event loop behind simulate() and checkLegal() -*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Library-internal. The event loop runs whatever launch list it is given,
// with no legality check, so checkLegal() can use it to find deadlocks.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_SCHEDULE_ENGINE_H
#define DASH_LIB_SCHEDULE_ENGINE_H

#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Simulate.h"

#include <string>
#include <vector>

namespace dash::sched {

struct EngineResult {
  double makespan = 0, busy = 0, maxCtaWork = 0;
  bool deadlock = false;
  std::string note;
  std::vector<int64_t> ctaLane;   // SM each CTA ran on, -1 if never
  std::vector<int64_t> laneOrder; // CTAs in dispatch order
  int64_t events = 0;
};

/// Tasks above which simulate() refuses (memory is a few words per task).
constexpr int64_t kMaxSimulatedTasks = int64_t(1) << 26;

/// A task of the flattened launch list: its dQ row (hb * M + q), its
/// (row, rank) slot (hb * tasksPerHead + prefix[q] + rank) and rank.
struct FlatTask {
  int64_t row, slot, rank;
};
struct FlatTasks {
  std::vector<FlatTask> tasks;  // launch-list order
  std::vector<int64_t> ctaBase; // first task of each CTA, + total
  int64_t perHead = 0;          // tasks of one head
  int64_t maxCtaTasks = 0;
};
/// Flattens `ctas` (and starts the trace's task list) and starts `res`:
/// no CTA on a lane yet, work bounds for `taskCost` per task on its SM
/// (serial model c + r, staged model c).
FlatTasks startRun(const Problem &, Policy,
                   const std::vector<std::vector<WorkItem>> &ctas,
                   double taskCost, EngineResult &res, Trace *trace);
/// Deadlock verdict (`done` of `total` tasks reduced) and the trace's tail.
void finishRun(EngineResult &res, int64_t done, int64_t total, int64_t sms,
               Trace *trace);

/// Runs `ctas` (launch order) on `sms` SMs. `trace` may be null.
EngineResult runEngine(const Problem &, Policy,
                       const std::vector<std::vector<WorkItem>> &ctas,
                       int64_t sms, Trace *trace);

/// The same with Problem::stagingBuffers > 0 (runEngine dispatches to it):
/// compute and reduces overlap through the staging buffers.
EngineResult runStagedEngine(const Problem &, Policy,
                             const std::vector<std::vector<WorkItem>> &ctas,
                             int64_t sms, Trace *trace);

/// Shape requirements of a concrete policy ("" if met); no permutation or
/// deadlock check.
std::string shapeReasonForEngine(const Problem &, Policy);

/// Items per SM lane, in the order the simulation ran them.
std::vector<std::vector<WorkItem>>
lanesFromRun(const std::vector<std::vector<WorkItem>> &ctas,
             const EngineResult &run, int64_t sms);

} // namespace dash::sched

#endif // DASH_LIB_SCHEDULE_ENGINE_H
