//===- FuzzSchedule.cpp - libFuzzer target: lib/Schedule ------------------===//
//
// Part of the DASH project. Decodes a Problem and a policy from the fuzz
// bytes (bounded: at most kMaxTasks tasks, so one input runs in
// milliseconds) and checks that the model never crashes and that
// checkLegal() and simulate() agree:
//  - legal            => simulate() finds no deadlock, a finite makespan
//                        equal to its critical path, and the launch list
//                        runs every task once with ranks forming a
//                        permutation on every dQ row;
//  - illegal          => simulate() reports +inf (a shape note or a deadlock);
//  - persistent (shift, symmetric-shift, or any policy under
//    persistentLaunch) with residentUnits < numUnits:
//                        "deadlocks" from checkLegal <=> simulate deadlock.
// Invalid problems (validate() != "") are fed to every entry point too.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dash::sched;

namespace {

constexpr int64_t kMaxTasks = 20000;

[[noreturn]] void fail(const Problem &p, Policy pol, const char *what,
                       const std::string &detail) {
  std::fprintf(stderr,
               "dash-fuzz-schedule: %s (%s)\n  policy=%s batch=%lld heads=%lld "
               "heads-kv=%lld seqlen=%lld seqlen-k=%lld hdim=%lld block-m=%lld "
               "block-n=%lld mask=%s align=%s sms=%lld resident-sms=%lld "
               "c=%g r=%g staging=%lld read-fraction=%g\n",
               what, detail.c_str(), policyName(pol), (long long)p.batch,
               (long long)p.headsQ, (long long)p.headsKV, (long long)p.seqQ,
               (long long)p.seqK, (long long)p.headDim, (long long)p.blockM,
               (long long)p.blockN, maskName(p.mask), alignName(p.align),
               (long long)p.numUnits, (long long)p.residentUnits, p.c, p.r,
               (long long)p.stagingBuffers, p.readFraction);
  std::abort();
}

// A dimension: mostly small, sometimes a tile-size multiple, rarely wild
// (zero, negative, huge) so validate() is exercised.
int64_t dim(FuzzedDataProvider &fdp, int64_t small) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
  case 0:
    return fdp.ConsumeIntegral<int64_t>(); // anything: validate() must refuse
  case 1:
    return fdp.ConsumeIntegralInRange<int64_t>(-4, 0);
  default:
    return fdp.ConsumeIntegralInRange<int64_t>(1, small);
  }
}

bool boundedTasks(const Problem &p) {
  // Decide the bound without calling into the library on a huge problem.
  if (!validate(p).empty())
    return true; // every entry point returns early
  int64_t m = p.numQTiles(), n = p.numKVTiles(), hs = p.numHeadSlots();
  if (m > kMaxTasks || n > kMaxTasks || hs > kMaxTasks)
    return false;
  return m * n * hs <= kMaxTasks; // the full mask's count bounds causal
}

bool isDeadlockReason(const std::string &r) {
  return r.find("deadlocks") != std::string::npos;
}

// Independent of checkLegal(): walk the launch list.
void checkLaunchList(const Problem &p, Policy pol) {
  const int64_t m = p.numQTiles(), n = p.numKVTiles();
  const int64_t hs = p.numHeadSlots();
  std::vector<std::vector<WorkItem>> ctas = launchList(p, pol);
  std::vector<int> seen(static_cast<size_t>(hs * n * m), 0);
  int64_t count = 0;
  for (const auto &cta : ctas)
    for (const WorkItem &it : cta) {
      if (it.b < 0 || it.b >= p.batch || it.h < 0 || it.h >= p.headsQ ||
          it.kvTile < 0 || it.kvTile >= n)
        fail(p, pol, "launch list item out of range", "");
      int64_t hb = it.h + p.headsQ * it.b;
      for (int64_t q : it.qTiles) {
        if (q < 0 || q >= m || rankOf(p, pol, it.b, it.h, it.kvTile, q) < 0)
          fail(p, pol, "launch list visits a Q tile outside the covering set",
               "kv=" + std::to_string(it.kvTile) + " q=" + std::to_string(q));
        int &s = seen[static_cast<size_t>((hb * n + it.kvTile) * m + q)];
        if (s++)
          fail(p, pol, "launch list runs a task twice", "");
        ++count;
      }
    }
  if (count != hs * tasksPerHead(p))
    fail(p, pol, "launch list misses tasks",
         std::to_string(count) + " of " + std::to_string(hs * tasksPerHead(p)));
  // Ranks: a permutation 0..k-1 on every row.
  for (int64_t hb = 0; hb < hs; ++hb)
    for (int64_t q = 0; q < m; ++q) {
      int64_t k = coveringCount(p, q);
      std::vector<char> used(static_cast<size_t>(std::max<int64_t>(k, 0)), 0);
      for (int64_t j = 0; j < n; ++j) {
        int64_t r = rankOf(p, pol, hb / p.headsQ, hb % p.headsQ, j, q);
        if (r < 0)
          continue;
        if (r >= k || used[static_cast<size_t>(r)]++)
          fail(p, pol, "ranks are not a permutation", "");
      }
    }
}

void checkPolicy(const Problem &p, Policy pol) {
  Legality legal = checkLegal(p, pol);
  ModelResult sim = simulate(p, pol);
  bool valid = validate(p).empty();
  if (!valid) {
    if (legal.legal || std::isfinite(sim.makespan))
      fail(p, pol, "invalid problem accepted", legal.reason);
    return;
  }
  if (legal.legal != legal.reason.empty())
    fail(p, pol, "legal and reason disagree", legal.reason);
  if (legal.legal) {
    if (sim.deadlock || !std::isfinite(sim.makespan) || !sim.note.empty())
      fail(p, pol, "legal schedule does not simulate", sim.note);
    double tol = 1e-9 * std::max(1.0, sim.makespan);
    if (std::fabs(sim.makespan - sim.criticalPath) > tol)
      fail(p, pol, "makespan != critical path",
           std::to_string(sim.makespan) + " vs " +
               std::to_string(sim.criticalPath));
    if (sim.makespan + tol < sim.workBound)
      fail(p, pol, "makespan below the work bound", "");
    if (pol != Policy::Auto)
      checkLaunchList(p, pol);
    return;
  }
  if (std::isfinite(sim.makespan))
    fail(p, pol, "illegal schedule simulates to a finite makespan",
         legal.reason);
  if (runsPersistent(p, pol) && p.numSMs() < p.numUnits &&
      isDeadlockReason(legal.reason) != sim.deadlock)
    fail(p, pol, "checkLegal deadlock verdict != simulate",
         legal.reason + " | " + sim.note);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Problem p;
  p.batch = dim(fdp, 3);
  p.headsKV = dim(fdp, 4);
  // Usually a multiple of heads-kv (GQA), sometimes not.
  p.headsQ = fdp.ConsumeBool() && p.headsKV > 0 && p.headsKV < 64
                 ? p.headsKV * fdp.ConsumeIntegralInRange<int64_t>(1, 4)
                 : dim(fdp, 8);
  static const int64_t kBlocks[] = {16, 32, 64, 80, 96, 128, 176, 256};
  p.blockM = fdp.ConsumeBool() ? fdp.PickValueInArray(kBlocks) : dim(fdp, 300);
  p.blockN = fdp.ConsumeBool() ? fdp.PickValueInArray(kBlocks) : dim(fdp, 300);
  p.seqQ = fdp.ConsumeBool() && p.blockN > 0 && p.blockN < 4096
               ? p.blockN * fdp.ConsumeIntegralInRange<int64_t>(1, 24)
               : dim(fdp, 4096);
  p.seqK = fdp.ConsumeBool() ? p.seqQ : dim(fdp, 4096);
  p.headDim = fdp.ConsumeBool() ? 128 : dim(fdp, 256);
  p.mask = fdp.ConsumeBool() ? Mask::Causal : Mask::Full;
  p.align = fdp.ConsumeBool() ? CausalAlign::TopLeft : CausalAlign::BottomRight;
  p.numUnits = dim(fdp, 160);
  // Large grids too, up to 2^31 - 1 units (engine-huge-grid, fixed: the
  // engine sizes its state by the CTAs that can run, not by G).
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
    p.numUnits =
        fdp.ConsumeIntegralInRange<int64_t>(161, (int64_t(1) << 31) - 1);
  switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
  case 0:
    p.residentUnits = 0;
    break;
  case 1: // fewer SMs than G: the persistent schedules may deadlock
    p.residentUnits = p.numUnits > 1
                          ? fdp.ConsumeIntegralInRange<int64_t>(1, p.numUnits - 1)
                          : 1;
    break;
  default:
    p.residentUnits = dim(fdp, 200);
  }
  if (fdp.ConsumeBool()) {
    // Any double: NaN, inf, negative and huge costs must be refused by
    // validate() (schedule-cost-overflow, fixed: costs are bounded by 1e12).
    p.c = fdp.ConsumeFloatingPoint<double>();
    p.r = fdp.ConsumeFloatingPoint<double>();
  } else {
    p.c = 0.25 * fdp.ConsumeIntegralInRange<int>(1, 8);
    p.r = 0.125 * fdp.ConsumeIntegralInRange<int>(0, 8);
  }
  Policy pol = static_cast<Policy>(fdp.ConsumeIntegralInRange<int>(0, 5));
  // Last, so older corpus inputs decode as before: DASH's kernels' launch
  // model (every policy as a persistent grid).
  p.persistentLaunch = fdp.ConsumeBool();
  // After that, for the same reason: the staged model (EngineStaged.cpp),
  // sometimes out of range so validate() refuses it.
  if (fdp.remaining_bytes() > 0) {
    p.stagingBuffers = fdp.ConsumeIntegralInRange<int>(0, 15) == 0
                           ? fdp.ConsumeIntegralInRange<int64_t>(-2, 12)
                           : fdp.ConsumeIntegralInRange<int64_t>(0, 3);
    static const double kFractions[] = {0.25, 0.5, 1.0, 0.0, 1.5};
    p.readFraction = fdp.PickValueInArray(kFractions);
  }

  if (p.numUnits > (int64_t(1) << 16) && p.numUnits <= (int64_t(1) << 31))
    p.numUnits = int64_t(1) << 16; // engine-huge-grid, see above
  if (p.residentUnits > (int64_t(1) << 16) && p.residentUnits <= (int64_t(1) << 31))
    p.residentUnits = int64_t(1) << 16;
  if (!boundedTasks(p))
    return -1; // reject: keep every run fast
  (void)validate(p);
  checkPolicy(p, pol);
  if (pol == Policy::Auto) {
    Choice c = choose(p);
    // When auto is legal, choose() picks a legal policy (under
    // persistentLaunch with residentUnits < G there may be none: then auto
    // must say so).
    if (checkLegal(p, Policy::Auto).legal && !checkLegal(p, c.policy).legal)
      fail(p, c.policy, "choose() picked an illegal policy", "");
  }
  return 0;
}
