//===- Report.h - The model's report: every schedule, JSON, Gantt -*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
// One implementation behind `dash-sched` and the C API the Python front end
// loads, so the two can never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_REPORT_H
#define DASH_SCHEDULE_REPORT_H

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <optional>
#include <string>
#include <vector>

namespace dash::sched {

struct ReportRow {
  Policy policy;
  Legality legal;
  ModelResult model; // only if legal
};

struct Report {
  std::vector<ReportRow> rows; // every concrete schedule, or just `only`
  Choice choice;               // auto: picked among all legal schedules
};

/// Evaluates every schedule once (auto picks among all of them); keeps only
/// the row of `only` when given (and not Auto).
Report buildReport(const Problem &p, std::optional<Policy> only);

/// `{"problem": {...}, "schedules": [...], "auto": "<name>"}`; with `detail`
/// each legal schedule also lists `units` and `ranks`.
std::string reportJson(const Problem &p, const Report &r, bool detail);

/// Gantt chart of every legal row, side by side.
std::string reportSvg(const Problem &p, const Report &r);

/// "%.10g", "inf" for non-finite values.
std::string formatNumber(double v);

} // namespace dash::sched

#endif // DASH_SCHEDULE_REPORT_H
