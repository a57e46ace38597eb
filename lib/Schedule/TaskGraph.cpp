//===- TaskGraph.cpp - The task DAG and its longest path ------------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/TaskGraph.h"
#include "dash/Schedule/Schedules.h"

#include <algorithm>
#include <limits>

namespace dash::sched {

TaskGraph buildTaskGraph(const Problem &p, Policy policy,
                         const std::vector<std::vector<WorkItem>> &lanes) {
  TaskGraph g;
  policy = resolvePolicy(p, policy);
  const int64_t m = p.numQTiles();
  std::vector<int64_t> prefix(static_cast<size_t>(m) + 1, 0);
  for (int64_t q = 0; q < m; ++q)
    prefix[q + 1] = prefix[q] + coveringCount(p, q);
  // bySlot[(row, rank)] = node: the reduce order of each dQ row.
  std::vector<int64_t> bySlot(static_cast<size_t>(p.numHeadSlots() * prefix[m]),
                              -1);
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    int64_t prev = -1;
    for (const WorkItem &it : lanes[lane])
      for (int64_t q : it.qTiles) {
        int64_t rk = rankOf(p, policy, it.b, it.h, it.kvTile, q);
        int64_t hb = it.h + p.headsQ * it.b;
        int64_t id = static_cast<int64_t>(g.nodes.size());
        if (rk < 0 || rk >= coveringCount(p, q)) {
          g.error = "task without a valid rank";
          return g;
        }
        int64_t slot = hb * prefix[m] + prefix[q] + rk;
        if (bySlot[slot] >= 0) {
          g.error = "two tasks share a rank on one dQ row";
          return g;
        }
        bySlot[slot] = id;
        g.nodes.push_back({static_cast<int64_t>(lane), it.b, it.h, it.kvTile, q,
                           rk, prev, -1});
        prev = id;
      }
  }
  for (TaskNode &t : g.nodes) {
    if (t.rank == 0)
      continue;
    int64_t hb = t.h + p.headsQ * t.b;
    t.rankPred = bySlot[hb * prefix[m] + prefix[t.qTile] + t.rank - 1];
    if (t.rankPred < 0) {
      g.error = "a dQ row misses a rank";
      return g;
    }
  }
  return g;
}

double longestPath(const TaskGraph &g, double c, double r) {
  const int64_t n = static_cast<int64_t>(g.nodes.size());
  // Every node has at most one chain and one order successor: Kahn's
  // algorithm over two successor arrays, O(nodes).
  std::vector<int64_t> chainSucc(n, -1), rankSucc(n, -1), indeg(n, 0);
  for (int64_t v = 0; v < n; ++v) {
    const TaskNode &t = g.nodes[v];
    if (t.chainPred >= 0)
      chainSucc[t.chainPred] = v, ++indeg[v];
    if (t.rankPred >= 0)
      rankSucc[t.rankPred] = v, ++indeg[v];
  }
  std::vector<double> finish(n, 0);
  std::vector<int64_t> ready;
  for (int64_t v = 0; v < n; ++v)
    if (indeg[v] == 0)
      ready.push_back(v);
  int64_t seen = 0;
  double longest = 0;
  while (!ready.empty()) {
    int64_t v = ready.back();
    ready.pop_back();
    ++seen;
    const TaskNode &t = g.nodes[v];
    double start = t.chainPred >= 0 ? finish[t.chainPred] : 0.0;
    double reduceStart = start + c;
    if (t.rankPred >= 0)
      reduceStart = std::max(reduceStart, finish[t.rankPred]);
    finish[v] = reduceStart + r;
    longest = std::max(longest, finish[v]);
    for (int64_t w : {chainSucc[v], rankSucc[v]})
      if (w >= 0 && --indeg[w] == 0)
        ready.push_back(w);
  }
  return seen == n ? longest : std::numeric_limits<double>::infinity();
}

std::string taskGraphDot(const TaskGraph &g, const std::string &title) {
  std::string out = "digraph \"" + title +
                    "\" {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n";
  auto name = [&](char kind, size_t v) {
    return std::string(1, kind) + std::to_string(v);
  };
  int64_t lane = -1;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const TaskNode &t = g.nodes[v];
    if (t.lane != lane) {
      if (lane >= 0)
        out += "  }\n";
      lane = t.lane;
      out += "  subgraph cluster_sm" + std::to_string(lane) +
             " {\n    label=\"SM " + std::to_string(lane) + "\";\n";
    }
    std::string where = "b" + std::to_string(t.b) + " h" + std::to_string(t.h) +
                        " kv" + std::to_string(t.kvTile) + " q" +
                        std::to_string(t.qTile);
    out += "    " + name('C', v) + " [label=\"C " + where + "\"];\n";
    out += "    " + name('R', v) + " [label=\"R " + where + " rank " +
           std::to_string(t.rank) +
           "\", style=filled, fillcolor=\"#eeeeee\"];\n";
    out += "    " + name('C', v) + " -> " + name('R', v) + ";\n";
    if (t.chainPred >= 0)
      out += "    " + name('R', t.chainPred) + " -> " + name('C', v) + ";\n";
  }
  if (lane >= 0)
    out += "  }\n";
  for (size_t v = 0; v < g.nodes.size(); ++v)
    if (g.nodes[v].rankPred >= 0)
      out += "  " + name('R', g.nodes[v].rankPred) + " -> " + name('R', v) +
             " [style=dashed, color=\"#c0392b\"];\n";
  out += "}\n";
  return out;
}

} // namespace dash::sched
