//===- Report.cpp - The model's report: every schedule, JSON, Gantt -------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Report.h"
#include "dash/Schedule/Gantt.h"
#include "dash/Schedule/Plan.h"

#include <cmath>
#include <cstdio>

namespace dash::sched {

namespace {

std::string numText(double v) {
  if (!std::isfinite(v))
    return "inf";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string jsonNum(double v) { return std::isfinite(v) ? numText(v) : "null"; }

std::string jsonStr(const std::string &s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
      out += buf;
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

std::string jsonInts(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}


std::string problemJson(const Problem &p) {
  std::string s = "{";
  s += "\"batch\":" + std::to_string(p.batch);
  s += ",\"heads\":" + std::to_string(p.headsQ);
  s += ",\"heads_kv\":" + std::to_string(p.headsKV);
  s += ",\"seqlen\":" + std::to_string(p.seqQ);
  s += ",\"seqlen_k\":" + std::to_string(p.seqK);
  s += ",\"hdim\":" + std::to_string(p.headDim);
  s += ",\"mask\":" + jsonStr(maskName(p.mask));
  s += ",\"align\":" + jsonStr(alignName(p.align));
  s += ",\"block_m\":" + std::to_string(p.blockM);
  s += ",\"block_n\":" + std::to_string(p.blockN);
  s += ",\"sms\":" + std::to_string(p.numUnits);
  s += ",\"resident_sms\":" + std::to_string(p.numSMs());
  s += ",\"c\":" + numText(p.c) + ",\"r\":" + numText(p.r);
  s += ",\"staging_buffers\":" + std::to_string(p.stagingBuffers) +
       ",\"read_fraction\":" + numText(p.readFraction);
  s += ",\"q_tiles\":" + std::to_string(p.numQTiles());
  s += ",\"kv_tiles\":" + std::to_string(p.numKVTiles());
  s += ",\"tasks\":" + std::to_string(p.numHeadSlots() * tasksPerHead(p));
  return s + "}";
}

std::string detailJson(const Problem &p, Policy policy) {
  Plan plan = buildPlan(p, policy);
  std::string s = ",\"units\":[";
  for (size_t u = 0; u < plan.units.size(); ++u) {
    s += u ? ",[" : "[";
    for (size_t k = 0; k < plan.units[u].size(); ++k) {
      const WorkItem &it = plan.units[u][k];
      s += std::string(k ? "," : "") + "{\"b\":" + std::to_string(it.b) +
           ",\"h\":" + std::to_string(it.h) +
           ",\"kv_tile\":" + std::to_string(it.kvTile) +
           ",\"q_tiles\":" + jsonInts(it.qTiles) + "}";
    }
    s += "]";
  }
  s += "],\"ranks\":[";
  bool first = true;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.headsQ; ++h)
      for (int64_t q = 0; q < p.numQTiles(); ++q) {
        s += std::string(first ? "" : ",") + "{\"b\":" + std::to_string(b) +
             ",\"h\":" + std::to_string(h) +
             ",\"q_tile\":" + std::to_string(q) +
             ",\"kv_order\":" + jsonInts(plan.reductionOrder(b, h, q)) + "}";
        first = false;
      }
  return s + "]";
}

} // namespace

std::string formatNumber(double v) { return numText(v); }

Report buildReport(const Problem &p, std::optional<Policy> only) {
  Report r;
  std::vector<Choice> candidates;
  for (Policy policy : kConcretePolicies) {
    ReportRow row{policy, checkLegal(p, policy), {}};
    if (row.legal.legal) {
      row.model = simulate(p, policy);
      candidates.push_back({policy, row.model});
    }
    r.rows.push_back(row);
  }
  r.choice = pickBest(candidates, p.tieTolerance, p.ordered);
  if (only && *only != Policy::Auto) {
    std::vector<ReportRow> kept;
    for (const ReportRow &row : r.rows)
      if (row.policy == *only)
        kept.push_back(row);
    r.rows = kept;
  }
  return r;
}

std::string reportJson(const Problem &p, const Report &r, bool detail) {
  std::string s = "{\"problem\":" + problemJson(p) + ",\"schedules\":[";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ReportRow &row = r.rows[i];
    s += i ? ",{" : "{";
    s += "\"name\":" + jsonStr(policyName(row.policy));
    s += ",\"model\":" +
         jsonStr(runsPersistent(p, row.policy) ? "persistent" : "fa3-launch");
    s += std::string(",\"legal\":") + (row.legal.legal ? "true" : "false");
    s += ",\"reason\":" + jsonStr(row.legal.reason);
    if (row.legal.legal) {
      s += ",\"makespan\":" + jsonNum(row.model.makespan);
      s += ",\"critical_path\":" + jsonNum(row.model.criticalPath);
      s += ",\"idle\":" + jsonNum(row.model.idleFraction);
      s += ",\"work_bound\":" + jsonNum(row.model.workBound);
      std::optional<double> cf = closedForm(p, row.policy);
      s += ",\"closed_form\":" + (cf ? jsonNum(*cf) : std::string("null"));
      if (detail)
        s += detailJson(p, row.policy);
    } else {
      s += ",\"makespan\":null,\"critical_path\":null,\"idle\":null";
    }
    s += "}";
  }
  return s + "],\"auto\":" + jsonStr(policyName(r.choice.policy)) + "}";
}

std::string reportSvg(const Problem &p, const Report &r) {
  std::vector<GanttPanel> panels;
  for (const ReportRow &row : r.rows) {
    if (!row.legal.legal)
      continue;
    GanttPanel panel;
    simulate(p, row.policy, &panel.trace);
    panel.numQTiles = p.numQTiles();
    panel.makespan = row.model.makespan;
    panel.title = std::string(policyName(row.policy)) + ": makespan " +
                  numText(row.model.makespan) + ", idle " +
                  numText(std::round(row.model.idleFraction * 1000) / 10) + "%";
    panels.push_back(std::move(panel));
  }
  return ganttSvg(panels);
}

} // namespace dash::sched
