//===- CAPI.cpp - C API of the DASH schedule model -----------------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Produces the same JSON as `dash-sched --json` (tools/dash-sched) and the
// same Gantt SVG as `--svg`; the field names and rules mirror that tool so a
// script can switch between the two. Kept as a copy rather than a shared
// helper so dash-sched stays a single file that needs nothing but the
// library.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/CAPI.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Gantt.h"
#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace dash::sched;

namespace {

std::string num(double v) {
  if (!std::isfinite(v))
    return "inf";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string jsonNum(double v) { return std::isfinite(v) ? num(v) : "null"; }

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

// malloc'ed copy: the caller frees with dash_sched_free (free()), so the
// allocator never crosses a C++ runtime boundary.
char *dup(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// dash-sched's option rules; "" or the message.
std::string toProblem(const dash_sched_options &o, Problem &p,
                      std::optional<Policy> &policy) {
  struct Pos {
    const char *name;
    int64_t v;
  };
  const Pos positive[] = {{"batch", o.batch}, {"heads", o.heads},
                          {"seqlen", o.seqlen}, {"hdim", o.hdim},
                          {"sms", o.sms}};
  for (const Pos &f : positive)
    if (f.v <= 0)
      return std::string(f.name) + " must be positive, got " +
             std::to_string(f.v);
  const Pos optional[] = {{"heads_kv", o.heads_kv},
                          {"seqlen_k", o.seqlen_k},
                          {"block_m", o.block_m},
                          {"block_n", o.block_n},
                          {"resident_sms", o.resident_sms}};
  for (const Pos &f : optional)
    if (f.v < 0)
      return std::string(f.name) + " must be positive (0 = default), got " +
             std::to_string(f.v);
  if (!std::isfinite(o.c) || o.c <= 0)
    return "c must be positive, got " + num(o.c);
  if (!std::isfinite(o.r) || o.r < 0)
    return "r must be non-negative, got " + num(o.r);
  if (o.causal != 0 && o.causal != 1)
    return "causal must be 0 or 1, got " + std::to_string(o.causal);
  if (o.top_left != 0 && o.top_left != 1)
    return "top_left must be 0 or 1, got " + std::to_string(o.top_left);
  if (o.hdim != 64 && o.hdim != 128)
    return "hdim " + std::to_string(o.hdim) +
           " is not supported (FA3 backward tiles exist for 64 and 128)";
  policy.reset();
  if (o.policy && *o.policy) {
    std::string name = o.policy;
    for (char &ch : name)
      if (ch == '_')
        ch = '-';
    policy = parsePolicy(name);
    if (!policy)
      return std::string("unknown policy '") + o.policy +
             "' (ascending, spt, descending, shift, symmetric-shift, auto)";
  }
  p = Problem();
  p.batch = o.batch;
  p.headsQ = o.heads;
  p.headsKV = o.heads_kv ? o.heads_kv : o.heads;
  p.seqQ = o.seqlen;
  p.seqK = o.seqlen_k ? o.seqlen_k : o.seqlen;
  p.headDim = o.hdim;
  p.mask = o.causal ? Mask::Causal : Mask::Full;
  p.align = o.top_left ? CausalAlign::TopLeft : CausalAlign::BottomRight;
  // FA3 (dash-tile) tiles: d=64 128x128; d=128 64x128 causal, 80x128 full.
  p.blockM = o.block_m ? o.block_m
                       : (p.headDim == 64 ? 128 : (o.causal ? 64 : 80));
  p.blockN = o.block_n ? o.block_n : 128;
  p.numUnits = o.sms;
  p.residentUnits = o.resident_sms;
  p.c = o.c;
  p.r = o.r;
  return validate(p);
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
  s += ",\"c\":" + num(p.c) + ",\"r\":" + num(p.r);
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

struct Row {
  Policy policy;
  Legality legal;
  ModelResult model;
};

} // namespace

extern "C" {

void dash_sched_options_init(dash_sched_options *o) {
  if (!o)
    return;
  std::memset(o, 0, sizeof(*o));
  o->batch = 1;
  o->heads = 16;
  o->seqlen = 4096;
  o->hdim = 128;
  o->sms = 132;
  o->c = 1.0;
  o->r = 0.25;
}

int32_t dash_sched_report(const dash_sched_options *opts, char **out_json,
                          char **out_svg, char **out_error) {
  if (out_json)
    *out_json = nullptr;
  if (out_svg)
    *out_svg = nullptr;
  if (out_error)
    *out_error = nullptr;
  auto failWith = [&](const std::string &msg) {
    if (out_error)
      *out_error = dup(msg);
    return int32_t(2);
  };
  if (!opts)
    return failWith("opts is NULL");
  if (!out_json)
    return failWith("out_json is NULL");
  Problem p;
  std::optional<Policy> only;
  std::string err = toProblem(*opts, p, only);
  if (!err.empty())
    return failWith(err);

  // Every schedule is evaluated once; auto picks among them (dash-sched).
  std::vector<Row> rows;
  std::vector<Choice> candidates;
  for (Policy policy : kConcretePolicies) {
    Row row{policy, checkLegal(p, policy), {}};
    if (row.legal.legal) {
      row.model = simulate(p, policy);
      candidates.push_back({policy, row.model});
    }
    rows.push_back(row);
  }
  Choice choice = pickBest(candidates);
  if (only && *only != Policy::Auto) {
    std::vector<Row> kept;
    for (const Row &row : rows)
      if (row.policy == *only)
        kept.push_back(row);
    rows = kept;
  }

  std::string s = "{\"problem\":" + problemJson(p) + ",\"schedules\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &row = rows[i];
    s += i ? ",{" : "{";
    s += "\"name\":" + jsonStr(policyName(row.policy));
    s += ",\"model\":" +
         jsonStr(isPersistent(row.policy) ? "persistent" : "fa3-launch");
    s += std::string(",\"legal\":") + (row.legal.legal ? "true" : "false");
    s += ",\"reason\":" + jsonStr(row.legal.reason);
    if (row.legal.legal) {
      s += ",\"makespan\":" + jsonNum(row.model.makespan);
      s += ",\"critical_path\":" + jsonNum(row.model.criticalPath);
      s += ",\"idle\":" + jsonNum(row.model.idleFraction);
      s += ",\"work_bound\":" + jsonNum(row.model.workBound);
      std::optional<double> cf = closedForm(p, row.policy);
      s += ",\"closed_form\":" + (cf ? jsonNum(*cf) : std::string("null"));
      if (opts->detail)
        s += detailJson(p, row.policy);
    } else {
      s += ",\"makespan\":null,\"critical_path\":null,\"idle\":null";
    }
    s += "}";
  }
  s += "],\"auto\":" + jsonStr(policyName(choice.policy)) + "}";

  std::string svg;
  if (opts->svg && out_svg) {
    std::vector<GanttPanel> panels;
    for (const Row &row : rows) {
      if (!row.legal.legal)
        continue;
      GanttPanel panel;
      simulate(p, row.policy, &panel.trace);
      panel.numQTiles = p.numQTiles();
      panel.makespan = row.model.makespan;
      panel.title = std::string(policyName(row.policy)) + ": makespan " +
                    num(row.model.makespan) + ", idle " +
                    num(std::round(row.model.idleFraction * 1000) / 10) + "%";
      panels.push_back(std::move(panel));
    }
    svg = ganttSvg(panels);
  }

  *out_json = dup(s);
  if (!*out_json)
    return failWith("out of memory");
  if (opts->svg && out_svg) {
    *out_svg = dup(svg);
    if (!*out_svg) {
      dash_sched_free(*out_json);
      *out_json = nullptr;
      return failWith("out of memory");
    }
  }
  return 0;
}

void dash_sched_free(char *s) { std::free(s); }

int32_t dash_sched_abi_version(void) { return DASH_SCHED_ABI_VERSION; }

} // extern "C"
