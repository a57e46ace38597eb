//===- EngineStaged.cpp - Event loop with dQ staging buffers -------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// The model as DASH's WGMMA kernels run it (Problem::stagingBuffers = B > 0):
// a unit's compute and its reduces overlap. Task k of a CTA is computed (c),
// then handed to staging buffer k % B once that buffer's previous hand-off
// (task k - B) has been read (readFraction * r after its reduce started); the
// compute of task k + 1 starts with the hand-off. Buffer j's reducer takes
// its tasks in order: a reduce starts once the task is handed off, the
// reducer is free and (deterministic) the row's semaphore equals the rank;
// it ends r later and bumps the semaphore. A CTA leaves its SM when all its
// reduces are done. B = 0 is Engine.cpp's serial model (c + r per task).
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "dash/Schedule/Schedules.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>

namespace dash::sched {

namespace {
enum class Kind { ComputeDone, ReadDone, ReduceDone };
struct Event {
  double time;
  int64_t seq;
  int64_t sm;
  int64_t task;
  Kind kind;
};
struct Later {
  bool operator()(const Event &x, const Event &y) const {
    return x.time != y.time ? x.time > y.time : x.seq > y.seq;
  }
};
struct Unit {
  int64_t cta = -1, base = 0, end = 0;
  int64_t computeNext = 0;   // next task to compute
  int64_t waitingTask = -1;  // computed, waiting for its staging buffer
  int64_t reduced = 0;       // reduces done in this CTA
  std::vector<int64_t> reduceNext; // per buffer: its reducer's next task
  std::vector<bool> reducing;      // per buffer: a reduce in flight
};
} // namespace

EngineResult runStagedEngine(const Problem &p, Policy policy,
                             const std::vector<std::vector<WorkItem>> &ctas,
                             int64_t sms, Trace *trace) {
  EngineResult res;
  const int64_t m = p.numQTiles(), buffers = p.stagingBuffers;
  const int64_t numCtas = static_cast<int64_t>(ctas.size());
  // The compute lane's work: the reduces overlap it.
  const FlatTasks flat = startRun(p, policy, ctas, p.c, res, trace);
  const std::vector<FlatTask> &tasks = flat.tasks;
  const std::vector<int64_t> &ctaBase = flat.ctaBase;
  const int64_t perHead = flat.perHead;
  const int64_t total = static_cast<int64_t>(tasks.size());
  // Per task: handed to its staging buffer; that buffer read by the add.
  std::vector<char> handedOff(static_cast<size_t>(total), 0),
      read(static_cast<size_t>(total), 0);

  std::vector<int64_t> sem(static_cast<size_t>(p.numHeadSlots() * m), 0);
  // Per (row, rank) slot: the parked reducer as unit * buffers + buffer.
  std::vector<int64_t> parked(static_cast<size_t>(p.numHeadSlots() * perHead),
                              -1);
  const int64_t usedSms = std::max<int64_t>(0, std::min(sms, numCtas));
  std::vector<Unit> unit(static_cast<size_t>(usedSms));
  std::priority_queue<Event, std::vector<Event>, Later> heap;
  int64_t seq = 0, nextCta = 0, done = 0;
  const double readTime = p.readFraction * p.r;

  auto startCompute = [&](int64_t s, double now) {
    Unit &u = unit[s];
    if (u.computeNext >= u.end)
      return;
    if (trace) {
      trace->tasks[u.computeNext].lane = s;
      trace->tasks[u.computeNext].computeStart = now;
    }
    heap.push({now + p.c, seq++, s, u.computeNext, Kind::ComputeDone});
  };
  // Hand the SM to the next CTA (a loop: CTAs without tasks end at once).
  auto takeCta = [&](int64_t s, double now) {
    while (true) {
      Unit &u = unit[s];
      if (nextCta >= numCtas) {
        u.cta = -1;
        return;
      }
      u.cta = nextCta++;
      u.base = u.computeNext = ctaBase[u.cta];
      u.end = ctaBase[u.cta + 1];
      u.waitingTask = -1;
      u.reduced = 0;
      u.reduceNext.assign(static_cast<size_t>(buffers), 0);
      u.reducing.assign(static_cast<size_t>(buffers), false);
      for (int64_t j = 0; j < buffers; ++j)
        u.reduceNext[j] = u.base + j;
      res.ctaLane[u.cta] = s;
      res.laneOrder.push_back(u.cta);
      if (u.base < u.end) {
        startCompute(s, now);
        return;
      }
    }
  };
  // Starts buffer j's next reduce if it is handed off, the reducer is free
  // and its rank is due; parks it on the (row, rank) slot otherwise.
  auto tryReduce = [&](int64_t s, int64_t j, double now) {
    Unit &u = unit[s];
    int64_t k = u.reduceNext[j];
    if (u.reducing[j] || k >= u.end || !handedOff[k])
      return;
    const FlatTask &t = tasks[k];
    if (p.ordered && sem[t.row] != t.rank) {
      parked[t.slot] = s * buffers + j;
      return;
    }
    u.reducing[j] = true;
    if (trace)
      trace->tasks[k].reduceStart = now;
    heap.push({now + readTime, seq++, s, k, Kind::ReadDone});
    heap.push({now + p.r, seq++, s, k, Kind::ReduceDone});
  };
  auto handOff = [&](int64_t s, int64_t k, double now) {
    Unit &u = unit[s];
    handedOff[k] = 1;
    u.computeNext = k + 1;
    startCompute(s, now);
    tryReduce(s, (k - u.base) % buffers, now);
  };

  for (int64_t s = 0; s < usedSms && nextCta < numCtas; ++s)
    takeCta(s, 0.0);

  const int64_t maxEvents = 3 * total;
  while (!heap.empty()) {
    if (res.events >= maxEvents) {
      res.note = "event bound exceeded (internal error)";
      break;
    }
    Event ev = heap.top();
    heap.pop();
    ++res.events;
    const int64_t s = ev.sm, k = ev.task;
    Unit &u = unit[s];
    switch (ev.kind) {
    case Kind::ComputeDone:
      if (trace)
        trace->tasks[k].computeEnd = ev.time;
      // Buffer k % B holds task k - B until that one has been read.
      if (k - u.base < buffers || read[k - buffers])
        handOff(s, k, ev.time);
      else
        u.waitingTask = k;
      break;
    case Kind::ReadDone:
      read[k] = 1;
      if (u.waitingTask == k + buffers) {
        u.waitingTask = -1;
        handOff(s, k + buffers, ev.time);
      }
      break;
    case Kind::ReduceDone: {
      res.makespan = std::max(res.makespan, ev.time);
      if (trace)
        trace->tasks[k].reduceEnd = ev.time;
      ++done;
      const FlatTask &t = tasks[k];
      int64_t v = ++sem[t.row];
      int64_t j = (k - u.base) % buffers;
      u.reducing[j] = false;
      u.reduceNext[j] += buffers;
      ++u.reduced;
      // The row's next rank, if parked, may start now.
      int64_t nextSlot = t.slot + 1;
      if (nextSlot < static_cast<int64_t>(parked.size()) &&
          parked[nextSlot] >= 0) {
        int64_t w = parked[nextSlot];
        int64_t ws = w / buffers, wj = w % buffers;
        const FlatTask &wt = tasks[unit[ws].reduceNext[wj]];
        if (wt.row == t.row && wt.rank == v) {
          parked[nextSlot] = -1;
          tryReduce(ws, wj, ev.time);
        }
      }
      if (u.reduced == u.end - u.base)
        takeCta(s, ev.time);
      else
        tryReduce(s, j, ev.time);
      break;
    }
    }
  }

  finishRun(res, done, total, sms, trace);
  return res;
}

} // namespace dash::sched
