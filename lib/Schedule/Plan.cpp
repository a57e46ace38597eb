//===- Plan.cpp - Launch lists and materialized plans ---------------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"

#include "Engine.h"

#include <algorithm>

namespace dash::sched {

static WorkItem makeItem(const Problem &p, Policy policy, int64_t hb,
                         int64_t j) {
  WorkItem it{hb / p.headsQ, hb % p.headsQ, j, {}};
  int64_t len = walkLength(p, j);
  it.qTiles.reserve(static_cast<size_t>(len));
  for (int64_t step = 0; step < len; ++step)
    it.qTiles.push_back(visitQTile(p, policy, it.b, it.h, j, step));
  return it;
}

std::vector<std::vector<WorkItem>> launchList(const Problem &p, Policy policy) {
  policy = resolvePolicy(p, policy);
  std::vector<std::vector<WorkItem>> ctas;
  const int64_t n = p.numKVTiles(), heads = p.numHeadSlots(), g = p.numUnits;
  if (!runsPersistent(p, policy)) {
    // FA3's grid is (KV tiles, heads, batch) with the KV tile fastest; spt
    // launches a head's shortest tiles (highest j) first.
    ctas.reserve(static_cast<size_t>(n * heads));
    for (int64_t hb = 0; hb < heads; ++hb)
      for (int64_t k = 0; k < n; ++k)
        ctas.push_back(
            {makeItem(p, policy, hb, policy == Policy::Spt ? n - 1 - k : k)});
    return ctas;
  }
  // Persistent: unit u walks items t = u, u+G, ... (tiles for shift and,
  // under persistentLaunch, ascending/descending; highest tile first for
  // spt; pairs (p, N-1-p) for symmetric-shift, long tile first).
  const int64_t perHead = policy == Policy::SymmetricShift ? n / 2 : n;
  const int64_t items = perHead * heads;
  ctas.resize(static_cast<size_t>(std::min(g, items)));
  for (int64_t t = 0; t < items; ++t) {
    int64_t hb = t / perHead, idx = t % perHead;
    std::vector<WorkItem> &unit = ctas[t % g];
    unit.push_back(
        makeItem(p, policy, hb, policy == Policy::Spt ? n - 1 - idx : idx));
    if (policy == Policy::SymmetricShift)
      unit.push_back(makeItem(p, policy, hb, n - 1 - idx));
  }
  return ctas;
}

int64_t Plan::rank(int64_t b, int64_t h, int64_t kvTile, int64_t qTile) const {
  if (!reason.empty())
    return -1;
  return rankOf(problem, policy, b, h, kvTile, qTile);
}

std::vector<int64_t> Plan::reductionOrder(int64_t b, int64_t h,
                                          int64_t qTile) const {
  std::vector<int64_t> order;
  if (!reason.empty() || qTile < 0 || qTile >= problem.numQTiles())
    return order;
  int64_t k = coveringCount(problem, qTile);
  order.assign(static_cast<size_t>(k), -1);
  for (int64_t j = 0; j < k; ++j) {
    int64_t rk = rank(b, h, j, qTile);
    if (rk >= 0 && rk < k)
      order[rk] = j;
  }
  return order;
}

Plan buildPlan(const Problem &p, Policy policy) {
  Plan plan;
  plan.problem = p;
  if (!validate(p).empty()) {
    plan.reason = validate(p);
    return plan;
  }
  plan.policy = resolvePolicy(p, policy);
  Legality legal = checkLegal(p, plan.policy);
  if (!legal.legal) {
    plan.reason = legal.reason;
    return plan;
  }
  std::vector<std::vector<WorkItem>> ctas = launchList(p, plan.policy);
  if (runsPersistent(p, plan.policy)) {
    plan.units = std::move(ctas);
    return plan;
  }
  // Which SM a CTA lands on depends on when SMs free up: take it from the
  // model (launch order, first free SM).
  EngineResult run = runEngine(p, plan.policy, ctas, p.numSMs(), nullptr);
  plan.units = lanesFromRun(ctas, run, p.numSMs());
  return plan;
}

} // namespace dash::sched
