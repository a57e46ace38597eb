//===- Plan.h - Materialized schedule: work units and ranks -----*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_PLAN_H
#define DASH_SCHEDULE_PLAN_H

#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dash::sched {

/// One KV tile of one (b, h): dK/dV stay in its registers while it walks
/// qTiles (in visit order).
struct WorkItem {
  int64_t b, h, kvTile;
  std::vector<int64_t> qTiles;
};

/// What the kernel launches, in launch order: one entry per CTA. For
/// ascending/spt/descending a CTA is one WorkItem (FA3: one CTA per KV tile;
/// heads and batches after each other); for shift/symmetric-shift CTA u is
/// persistent unit u with all its items (tiles t = u, u+G, ...).
std::vector<std::vector<WorkItem>> launchList(const Problem &, Policy);

struct Plan {
  Policy policy = Policy::Ascending; // resolved (never Auto)
  std::string reason;                // empty if legal
  Problem problem;
  /// Per unit id, items in processing order. Persistent schedules: unit u of
  /// the grid. One-CTA-per-KV-tile schedules: the SM each CTA lands on in
  /// simulate() (launch order, first free SM), so `units` is what the
  /// Gantt chart and the critical-path DAG show.
  std::vector<std::vector<WorkItem>> units;

  /// -1 if the KV tile does not cover the Q tile.
  int64_t rank(int64_t b, int64_t h, int64_t kvTile, int64_t qTile) const;
  /// KV tiles that reduce into dQ row tile q, in rank order.
  std::vector<int64_t> reductionOrder(int64_t b, int64_t h,
                                      int64_t qTile) const;
};

/// Policy::Auto resolves via choose(). An illegal policy gives a Plan with a
/// non-empty reason and no units.
Plan buildPlan(const Problem &, Policy);

} // namespace dash::sched

#endif // DASH_SCHEDULE_PLAN_H
