//===- Gantt.cpp - SVG Gantt chart of a simulated schedule ----------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Gantt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dash::sched {

static std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  std::string out = buf;
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".0") == 0)
    out.resize(out.size() - 2); // "12.0" -> "12": the files are large
  return out;
}

static std::string fmtNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// Q tile -> hue around the colour wheel (0..300 degrees, red to magenta).
static std::string colour(int64_t q, int64_t m) {
  double hue =
      m > 1 ? 300.0 * static_cast<double>(q) / static_cast<double>(m - 1) : 0;
  double s = 0.65, l = 0.55;
  double c = (1 - std::fabs(2 * l - 1)) * s;
  double hp = hue / 60.0;
  double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  double mm = l - c / 2;
  char buf[8];
  std::snprintf(
      buf, sizeof(buf), "#%02x%02x%02x", static_cast<int>((r + mm) * 255),
      static_cast<int>((g + mm) * 255), static_cast<int>((b + mm) * 255));
  return buf;
}

namespace {
constexpr int64_t kColourBuckets = 16;

struct Segment {
  double start, end;
  int64_t bucket;
};

// Appends, merging with the previous segment when it touches and matches.
void addSegment(std::vector<Segment> &out, Segment s) {
  if (s.end <= s.start)
    return;
  if (!out.empty() && out.back().bucket == s.bucket &&
      s.start <= out.back().end + 1e-9) {
    out.back().end = std::max(out.back().end, s.end);
    return;
  }
  out.push_back(s);
}
} // namespace

std::string ganttSvg(const std::vector<GanttPanel> &panels) {
  const double left = 70, right = 20, plotW = 1200, titleH = 28, axisH = 26;
  double tmax = 0;
  int64_t maxLanes = 1;
  for (const GanttPanel &p : panels) {
    for (const TaskSpan &t : p.trace.tasks)
      tmax = std::max(tmax, t.reduceEnd);
    maxLanes = std::max(maxLanes, p.trace.lanes);
  }
  if (tmax <= 0)
    tmax = 1;
  const double laneH =
      std::clamp(560.0 / static_cast<double>(maxLanes), 2.0, 16.0);
  const double scale = plotW / tmax;

  std::string body;
  double y = 0;
  for (const GanttPanel &p : panels) {
    double panelH = titleH + laneH * static_cast<double>(p.trace.lanes) + axisH;
    body += "<g transform=\"translate(0," + fmt(y) + ")\">\n";
    body += "<text x=\"" + fmt(left) + "\" y=\"18\" class=\"t\">" + p.title +
            "</text>\n";
    double top = titleH;
    // Lane labels every few lanes so they stay legible.
    int64_t every =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(12.0 / laneH)));
    for (int64_t l = 0; l < p.trace.lanes; l += every)
      body += "<text x=\"" + fmt(left - 4) + "\" y=\"" +
              fmt(top + laneH * static_cast<double>(l) + laneH * 0.8) +
              "\" class=\"l\">SM " + std::to_string(l) + "</text>\n";
    body += "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(top) + "\" width=\"" +
            fmt(plotW) + "\" height=\"" +
            fmt(laneH * static_cast<double>(p.trace.lanes)) +
            "\" fill=\"#f7f7f7\"/>\n";
    // Busy time of one SM lane is drawn in runs: adjacent tasks whose Q
    // tiles fall in the same colour bucket merge into one rect, so a
    // paper-size problem stays a few MB. Waits are drawn on top, hatched.
    const int64_t buckets =
        std::max<int64_t>(1, std::min<int64_t>(p.numQTiles, kColourBuckets));
    std::vector<std::vector<const TaskSpan *>> byLane(
        static_cast<size_t>(p.trace.lanes));
    for (const TaskSpan &t : p.trace.tasks)
      if (t.lane >= 0)
        byLane[t.lane].push_back(&t);
    for (size_t lane = 0; lane < byLane.size(); ++lane) {
      std::vector<const TaskSpan *> &ts = byLane[lane];
      std::stable_sort(ts.begin(), ts.end(),
                       [](const TaskSpan *a, const TaskSpan *b) {
                         return a->computeStart < b->computeStart;
                       });
      double ly = top + laneH * static_cast<double>(lane);
      std::vector<Segment> busy, wait;
      // Segments are snapped to half pixels, so slivers thinner than that
      // vanish into their neighbours instead of costing a rect each.
      auto px = [&](double t) { return std::round(t * scale * 2) / 2; };
      for (const TaskSpan *t : ts) {
        int64_t bucket = t->qTile * buckets / std::max<int64_t>(1, p.numQTiles);
        bool waits = t->reduceStart > t->computeEnd;
        addSegment(busy, {px(t->computeStart),
                          px(waits ? t->computeEnd : t->reduceEnd), bucket});
        if (waits) {
          addSegment(wait, {px(t->computeEnd), px(t->reduceStart), 0});
          addSegment(busy, {px(t->reduceStart), px(t->reduceEnd), bucket});
        }
      }
      // One path per colour per lane ("M x y h w v h h -w z" per run) keeps
      // the file small.
      std::vector<std::string> paths(static_cast<size_t>(buckets) + 1);
      auto box = [&](const Segment &sgm) {
        return "M" + fmt(left + sgm.start) + " " + fmt(ly) + "h" +
               fmt(sgm.end - sgm.start) + "v" + fmt(laneH) + "h-" +
               fmt(sgm.end - sgm.start) + "z";
      };
      for (const Segment &sgm : busy)
        paths[sgm.bucket] += box(sgm);
      for (const Segment &sgm : wait)
        paths[buckets] += box(sgm);
      for (int64_t k = 0; k < buckets; ++k)
        if (!paths[k].empty())
          body += "<path fill=\"" + colour(k, buckets) + "\" d=\"" + paths[k] +
                  "\"/>\n";
      if (!paths[buckets].empty())
        body += "<path class=\"w\" d=\"" + paths[buckets] + "\"/>\n";
    }
    // Time axis: a 1-2-5 step giving 5..10 ticks over the shared range.
    double axisY = top + laneH * static_cast<double>(p.trace.lanes);
    double step = std::pow(10.0, std::floor(std::log10(tmax / 5)));
    for (double mult : {1.0, 2.0, 5.0})
      if (tmax / (step * mult) <= 10) {
        step *= mult;
        break;
      }
    for (int k = 0; k * step <= tmax * (1 + 1e-12); ++k) {
      double tv = k * step, x = left + tv * scale;
      body += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(axisY) + "\" x2=\"" +
              fmt(x) + "\" y2=\"" + fmt(axisY + 4) + "\" stroke=\"#333\"/>\n";
      body += "<text x=\"" + fmt(x) + "\" y=\"" + fmt(axisY + 16) +
              "\" class=\"a\">" + fmtNum(tv) + "</text>\n";
    }
    if (p.makespan > 0 && std::isfinite(p.makespan)) {
      double x = left + p.makespan * scale;
      body += "<line x1=\"" + fmt(x) + "\" y1=\"" + fmt(top) + "\" x2=\"" +
              fmt(x) + "\" y2=\"" + fmt(axisY) +
              "\" stroke=\"#000\" stroke-dasharray=\"4 2\"/>\n";
    }
    body += "</g>\n";
    y += panelH + 10;
  }
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    fmt(left + plotW + right) + "\" height=\"" + fmt(y) +
                    "\" font-family=\"sans-serif\">\n";
  out += "<defs><pattern id=\"hatch\" width=\"4\" height=\"4\" "
         "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
         "<rect width=\"4\" height=\"4\" fill=\"#ffffff\"/><line x1=\"0\" "
         "y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#444\" stroke-width=\"1.6\"/>"
         "</pattern></defs>\n";
  out += "<style>.w{fill:url(#hatch)}.t{font-size:14px;font-weight:bold}"
         ".l{font-size:9px;text-anchor:end}.a{font-size:10px;"
         "text-anchor:middle}</style>\n";
  out += body + "</svg>\n";
  return out;
}

} // namespace dash::sched
