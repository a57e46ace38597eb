//===- TaskGraph.h - The task DAG and its longest path ----------*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// SCHEDULES.md section 3: task (j, i) is C(i,j) -> R(i,j); all tasks on one
// SM form a chain; zero-weight edges order the reduces into each dQ row.
// Built independently of the event simulation so each checks the other.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_TASKGRAPH_H
#define DASH_SCHEDULE_TASKGRAPH_H

#include "dash/Schedule/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dash::sched {

struct TaskNode {
  int64_t lane, b, h, kvTile, qTile, rank;
  int64_t chainPred; // previous task on the same lane, -1 if first
  int64_t rankPred;  // task with rank-1 on the same dQ row, -1 if rank 0
};

struct TaskGraph {
  std::vector<TaskNode> nodes;
  std::string error; // non-empty if a rank is missing or duplicated
};

/// `lanes[k]` are the items SM k runs, in order (Plan::units or the
/// simulated SM lanes).
TaskGraph buildTaskGraph(const Problem &, Policy,
                         const std::vector<std::vector<WorkItem>> &lanes);

/// Longest path with compute cost c and reduce cost r; +inf on a cycle
/// (a deadlock) or a malformed graph.
double longestPath(const TaskGraph &, double c, double r);

/// Graphviz text: one cluster per lane, C/R nodes, dashed order edges.
std::string taskGraphDot(const TaskGraph &, const std::string &title);

} // namespace dash::sched

#endif // DASH_SCHEDULE_TASKGRAPH_H
