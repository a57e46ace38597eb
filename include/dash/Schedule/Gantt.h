//===- Gantt.h - SVG Gantt chart of a simulated schedule --------*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_GANTT_H
#define DASH_SCHEDULE_GANTT_H

#include "dash/Schedule/Simulate.h"

#include <string>
#include <vector>

namespace dash::sched {

struct GanttPanel {
  std::string title;
  int64_t numQTiles = 1; // colour scale
  double makespan = 0;
  Trace trace;
};

/// One panel per schedule, stacked on a shared time axis; one lane per SM,
/// fill colour = Q tile (24 hue buckets, red = first rows, magenta = last),
/// hatched = waiting for the dQ row's semaphore.
std::string ganttSvg(const std::vector<GanttPanel> &panels);

} // namespace dash::sched

#endif // DASH_SCHEDULE_GANTT_H
