//===- Engine.cpp - Discrete-event loop of the backward kernel model ------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Two events per task (compute done, reduce done), so the loop is
// O(tasks log tasks) and is cut off after exactly that many events. A task
// whose rank is not yet due parks in a per-(row, rank) slot; the reduce that
// bumps the row's semaphore to that rank wakes it.
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
struct Event {
  double time;
  int64_t seq;
  int64_t sm;
  bool reduceDone;
};
struct Later {
  bool operator()(const Event &x, const Event &y) const {
    return x.time != y.time ? x.time > y.time : x.seq > y.seq;
  }
};
struct SmState {
  int64_t cta = -1;
  int64_t next = 0, end = 0; // task range [next, end) left in the CTA
};
} // namespace

FlatTasks startRun(const Problem &p, Policy policy,
                   const std::vector<std::vector<WorkItem>> &ctas,
                   double taskCost, EngineResult &res, Trace *trace) {
  FlatTasks out;
  const int64_t m = p.numQTiles();
  // Row geometry: prefix[q] = tasks of one head on rows < q.
  std::vector<int64_t> prefix(static_cast<size_t>(m) + 1, 0);
  for (int64_t q = 0; q < m; ++q)
    prefix[q + 1] = prefix[q] + coveringCount(p, q);
  out.perHead = prefix[m];
  out.ctaBase.assign(ctas.size() + 1, 0);
  for (size_t k = 0; k < ctas.size(); ++k) {
    out.ctaBase[k] = static_cast<int64_t>(out.tasks.size());
    for (const WorkItem &it : ctas[k]) {
      int64_t hb = it.h + p.headsQ * it.b;
      for (int64_t q : it.qTiles) {
        int64_t rk = rankOf(p, policy, it.b, it.h, it.kvTile, q);
        out.tasks.push_back({hb * m + q, hb * out.perHead + prefix[q] + rk, rk});
        if (trace)
          trace->tasks.push_back({-1, static_cast<int64_t>(k), it.b, it.h,
                                  it.kvTile, q, rk, 0, 0, 0, 0});
      }
    }
    out.maxCtaTasks =
        std::max(out.maxCtaTasks,
                 static_cast<int64_t>(out.tasks.size()) - out.ctaBase[k]);
  }
  out.ctaBase[ctas.size()] = static_cast<int64_t>(out.tasks.size());
  res.ctaLane.assign(ctas.size(), -1);
  res.maxCtaWork = static_cast<double>(out.maxCtaTasks) * taskCost;
  res.busy = static_cast<double>(out.tasks.size()) * taskCost;
  return out;
}

void finishRun(EngineResult &res, int64_t done, int64_t total, int64_t sms,
               Trace *trace) {
  if (done < total && res.note.empty()) {
    res.deadlock = true;
    res.makespan = std::numeric_limits<double>::infinity();
    res.note = "deadlock: " + std::to_string(total - done) + " of " +
               std::to_string(total) + " tasks never reduce";
    for (size_t k = 0; k < res.ctaLane.size(); ++k)
      if (res.ctaLane[k] < 0) {
        res.note += "; CTA " + std::to_string(k) + " never got an SM";
        break;
      }
  }
  if (trace) {
    trace->lanes = sms;
    trace->ctaLane = res.ctaLane;
    trace->laneOrder = res.laneOrder;
    trace->events = res.events;
  }
}

EngineResult runEngine(const Problem &p, Policy policy,
                       const std::vector<std::vector<WorkItem>> &ctas,
                       int64_t sms, Trace *trace) {
  if (p.stagingBuffers > 0)
    return runStagedEngine(p, policy, ctas, sms, trace);
  EngineResult res;
  const int64_t m = p.numQTiles();
  const int64_t numCtas = static_cast<int64_t>(ctas.size());
  const FlatTasks flat = startRun(p, policy, ctas, p.c + p.r, res, trace);
  const std::vector<FlatTask> &tasks = flat.tasks;
  const std::vector<int64_t> &ctaBase = flat.ctaBase;
  const int64_t perHead = flat.perHead;
  const int64_t total = static_cast<int64_t>(tasks.size());

  std::vector<int64_t> sem(static_cast<size_t>(p.numHeadSlots() * m), 0);
  std::vector<int64_t> parked(static_cast<size_t>(p.numHeadSlots() * perHead),
                              -1);
  // Only the first numCtas SMs can ever hold a CTA: size the per-SM state by
  // that, not by G (which may be 2^31; fuzz/regressions engine-huge-grid).
  const int64_t usedSms = std::max<int64_t>(0, std::min(sms, numCtas));
  std::vector<SmState> sm(static_cast<size_t>(usedSms));
  std::priority_queue<Event, std::vector<Event>, Later> heap;
  int64_t seq = 0, nextCta = 0, done = 0;

  auto startReduce = [&](int64_t s, double now) {
    int64_t t = sm[s].next;
    if (trace)
      trace->tasks[t].reduceStart = now;
    heap.push({now + p.r, seq++, s, true});
  };
  // Start the SM's next task; hand the SM to the next CTA when it runs dry
  // (a loop, since CTAs with no covered Q tile finish at once).
  auto advance = [&](int64_t s, double now) {
    while (true) {
      SmState &st = sm[s];
      if (st.cta >= 0 && st.next < st.end) {
        if (trace) {
          trace->tasks[st.next].lane = s;
          trace->tasks[st.next].computeStart = now;
        }
        heap.push({now + p.c, seq++, s, false});
        return;
      }
      if (nextCta >= numCtas) {
        st.cta = -1;
        return;
      }
      st.cta = nextCta++;
      st.next = ctaBase[st.cta];
      st.end = ctaBase[st.cta + 1];
      res.ctaLane[st.cta] = s;
      res.laneOrder.push_back(st.cta);
    }
  };

  for (int64_t s = 0; s < usedSms && nextCta < numCtas; ++s)
    advance(s, 0.0);

  const int64_t maxEvents = 2 * total;
  while (!heap.empty()) {
    if (res.events >= maxEvents) {
      res.note = "event bound exceeded (internal error)";
      break;
    }
    Event ev = heap.top();
    heap.pop();
    ++res.events;
    int64_t s = ev.sm;
    const FlatTask &t = tasks[sm[s].next];
    if (!ev.reduceDone) {
      if (trace)
        trace->tasks[sm[s].next].computeEnd = ev.time;
      if (!p.ordered || sem[t.row] == t.rank)
        startReduce(s, ev.time);
      else
        parked[t.slot] = s; // woken by the reduce that makes sem == rank
      continue;
    }
    res.makespan = std::max(res.makespan, ev.time);
    if (trace)
      trace->tasks[sm[s].next].reduceEnd = ev.time;
    ++done;
    int64_t row = t.row, nextSlot = t.slot + 1;
    int64_t v = ++sem[row];
    ++sm[s].next;
    // Rank v = t.rank + 1 of this row parks in slot t.slot + 1 (if the row
    // has that many ranks; the row/rank test rejects the next row's slot).
    if (nextSlot < static_cast<int64_t>(parked.size()) &&
        parked[nextSlot] >= 0 && tasks[sm[parked[nextSlot]].next].row == row &&
        tasks[sm[parked[nextSlot]].next].rank == v) {
      int64_t w = parked[nextSlot];
      parked[nextSlot] = -1;
      startReduce(w, ev.time);
    }
    advance(s, ev.time);
  }

  finishRun(res, done, total, sms, trace);
  return res;
}

std::vector<std::vector<WorkItem>>
lanesFromRun(const std::vector<std::vector<WorkItem>> &ctas,
             const EngineResult &run, int64_t sms) {
  // Lanes past the last CTA stay empty: allocate only those that can be
  // used (G may be huge).
  std::vector<std::vector<WorkItem>> lanes(static_cast<size_t>(
      std::max<int64_t>(0, std::min<int64_t>(sms, ctas.size()))));
  for (int64_t k : run.laneOrder)
    for (const WorkItem &it : ctas[k])
      lanes[run.ctaLane[k]].push_back(it);
  return lanes;
}

} // namespace dash::sched
