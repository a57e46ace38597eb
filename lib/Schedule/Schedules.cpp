//===- Schedules.cpp - Visit orders and ranks as integer formulas ---------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Plan.h"

#include "Engine.h"

#include <algorithm>
#include <numeric>

namespace dash::sched {

const char *policyName(Policy p) {
  switch (p) {
  case Policy::Ascending:
    return "ascending";
  case Policy::Spt:
    return "spt";
  case Policy::Descending:
    return "descending";
  case Policy::Shift:
    return "shift";
  case Policy::SymmetricShift:
    return "symmetric-shift";
  case Policy::Auto:
    return "auto";
  }
  return "?";
}

std::optional<Policy> parsePolicy(std::string_view s) {
  for (Policy p : {Policy::Ascending, Policy::Spt, Policy::Descending,
                   Policy::Shift, Policy::SymmetricShift, Policy::Auto})
    if (s == policyName(p))
      return p;
  return std::nullopt;
}

bool orderDependsOnG(Policy p) {
  return p == Policy::Shift || p == Policy::SymmetricShift || p == Policy::Auto;
}

bool isPersistent(Policy p) {
  return p == Policy::Shift || p == Policy::SymmetricShift;
}

bool runsPersistent(const Problem &p, Policy policy) {
  return isPersistent(policy) || p.persistentLaunch;
}

// Non-negative remainder: (x mod m) for negative x too.
static int64_t mod(int64_t x, int64_t m) {
  int64_t v = x % m;
  return v < 0 ? v + m : v;
}

WavePosition wavePosition(int64_t idx, int64_t perHead, int64_t headSlot,
                          int64_t G) {
  WavePosition w;
  int64_t headStart = perHead * headSlot;
  int64_t t = idx + headStart;
  w.unit = t % G;
  w.wave = t / G;
  int64_t waveStart = w.wave * G;
  w.F = std::max<int64_t>(0, waveStart - headStart);
  w.R = std::min(headStart + perHead, waveStart + G) -
        std::max(headStart, waveStart);
  w.a = idx - w.F;
  return w;
}

int64_t stride(const Problem &p) {
  return (p.blockM > 0 && p.blockN % p.blockM == 0) ? p.blockN / p.blockM : 0;
}

int64_t walkLength(const Problem &p, int64_t j) {
  if (j < 0 || j >= p.numKVTiles())
    return 0;
  return p.numQTiles() - firstCoveredQTile(p, j);
}

Policy resolvePolicy(const Problem &p, Policy policy) {
  return policy == Policy::Auto ? choose(p).policy : policy;
}

static int64_t headSlot(const Problem &p, int64_t b, int64_t h) {
  return h + p.headsQ * b;
}

int64_t visitQTile(const Problem &p, Policy policy, int64_t b, int64_t h,
                   int64_t j, int64_t step) {
  policy = resolvePolicy(p, policy);
  int64_t len = walkLength(p, j);
  if (step < 0 || step >= len)
    return -1;
  int64_t m = p.numQTiles(), n = p.numKVTiles();
  switch (policy) {
  case Policy::Ascending:
  case Policy::Spt:
    return m - len + step;
  case Policy::Descending:
    return m - 1 - step;
  case Policy::Shift: {
    WavePosition w = wavePosition(j, n, headSlot(p, b, h), p.numUnits);
    return mod(w.a + step, m);
  }
  case Policy::SymmetricShift: {
    int64_t s = stride(p);
    if (j >= n / 2) // short tile N-1-p: rows descending from M-1
      return m - 1 - step;
    WavePosition w = wavePosition(j, n / 2, headSlot(p, b, h), p.numUnits);
    int64_t i = j - w.F;
    int64_t rs = s * (w.F + w.R - 1); // rectangle [rs, M): every long tile
    int64_t rect = m - rs;
    // Long tile i starts s*i rows in, so a row's visits are s steps apart
    // here as in the triangle (s*i < rect: docs/Scheduling.md §3).
    if (step < rect)
      return rs + mod(s * i + step, rect);
    return s * j + (step - rect); // own triangle [s*p, rs), ascending
  }
  case Policy::Auto:
    break;
  }
  return -1;
}

int64_t rankOf(const Problem &p, Policy policy, int64_t b, int64_t h, int64_t j,
               int64_t q) {
  policy = resolvePolicy(p, policy);
  if (j < 0 || q < 0 || q >= p.numQTiles() || j > lastCoveringKVTile(p, q))
    return -1;
  int64_t m = p.numQTiles(), n = p.numKVTiles();
  switch (policy) {
  case Policy::Ascending:
  case Policy::Descending:
    return j; // covering sets are prefixes 0..last(q): position == j
  case Policy::Spt:
    return coveringCount(p, q) - 1 - j;
  case Policy::Shift: {
    WavePosition w = wavePosition(j, n, headSlot(p, b, h), p.numUnits);
    return w.F + mod(std::min(q, w.R - 1) - w.a, w.R);
  }
  case Policy::SymmetricShift: {
    int64_t s = stride(p);
    bool isLong = j < n / 2;
    int64_t pair = isLong ? j : n - 1 - j;
    WavePosition w = wavePosition(pair, n / 2, headSlot(p, b, h), p.numUnits);
    int64_t i = pair - w.F;
    // Earlier waves: all F long tiles cover any row this wave touches, and
    // short tile N-1-p' (p' < F) covers q iff p' >= N-1-floor(q/s).
    int64_t e = w.F + std::max<int64_t>(0, w.F - (m - q - 1) / s);
    if (!isLong)
      return e + w.R + (w.R - 1 - i);
    int64_t rs = s * (w.F + w.R - 1);
    // Rectangle rows: tile i = min(floor((q-rs)/s), R-1) arrives first,
    // then each lower i (mod R), at least s steps apart.
    if (q >= rs)
      return e + mod(std::min((q - rs) / s, w.R - 1) - i, w.R);
    return e + q / s - pair;
  }
  case Policy::Auto:
    break;
  }
  return -1;
}

// Shape requirements only (no permutation or deadlock check).
static std::string shapeReason(const Problem &p, Policy policy) {
  std::string err = validate(p);
  if (!err.empty())
    return err;
  int64_t m = p.numQTiles(), n = p.numKVTiles(), g = p.numUnits;
  if (policy == Policy::Shift) {
    if (p.mask != Mask::Full)
      return "shift needs a full mask (use symmetric-shift for causal)";
    // Tiles of one wave visit a row at distinct steps only if M >= R.
    // Walk each head's wave segments (a segment starts where F jumps); stop
    // early once R hits its ceiling min(N, G).
    int64_t maxR = 0;
    for (int64_t hb = 0, e = p.numHeadSlots(); hb < e && maxR < std::min(n, g);
         ++hb)
      for (int64_t j = 0; j < n;) {
        int64_t segment = wavePosition(j, n, hb, g).R;
        maxR = std::max(maxR, segment);
        j += segment;
      }
    if (m < maxR)
      return "shift needs Q tiles M >= tiles of one head in one wave R (M = " +
             std::to_string(m) + ", R = " + std::to_string(maxR) + ")";
  }
  if (policy == Policy::SymmetricShift) {
    if (p.mask != Mask::Causal)
      return "symmetric-shift needs a causal mask (use shift for full)";
    if (p.seqQ != p.seqK)
      return "symmetric-shift needs seqlen == seqlen-k (got " +
             std::to_string(p.seqQ) + " vs " + std::to_string(p.seqK) + ")";
    if (p.blockN % p.blockM != 0)
      return "symmetric-shift needs block-n % block-m == 0 (got " +
             std::to_string(p.blockN) + " % " + std::to_string(p.blockM) + ")";
    if (n % 2 != 0)
      return "symmetric-shift needs an even number of KV tiles (N = " +
             std::to_string(n) + ")";
    if (m != n * stride(p))
      return "symmetric-shift needs M == N * block-n/block-m (M = " +
             std::to_string(m) + ", N*s = " + std::to_string(n * stride(p)) +
             "): seqlen must be a multiple of block-n";
  }
  return "";
}

std::string shapeReasonForEngine(const Problem &p, Policy policy) {
  return shapeReason(p, policy);
}

Legality checkLegal(const Problem &p, Policy policy) {
  if (policy == Policy::Auto) {
    std::string err = validate(p);
    if (!err.empty() || !p.persistentLaunch)
      return {err.empty(), err}; // FA3-launched ascending is always legal
    // A persistent grid that does not fit (residentUnits < G) can leave no
    // legal schedule at all (fuzz/regressions persistent-auto-no-legal).
    Legality fallback = checkLegal(p, Policy::Ascending);
    if (fallback.legal || checkLegal(p, choose(p).policy).legal)
      return {true, ""};
    return {false, "auto: no schedule is legal (" + fallback.reason + ")"};
  }
  std::string err = shapeReason(p, policy);
  if (!err.empty())
    return {false, err};
  int64_t m = p.numQTiles(), n = p.numKVTiles();
  // Heads with the same schedule: ascending/spt/descending formulas ignore
  // the head; the shift formulas see it only through where the head starts
  // inside a wave, headStart mod G. One representative per class keeps this
  // check O(min(heads, G) * tasks per head) instead of O(heads * ...), which
  // the runtime runs on real shapes (fuzz/regressions
  // schedule-checklegal-cost).
  // Head slot hb starts at offset (per * hb) mod G of a wave; those offsets
  // repeat with period G / gcd(per, G), so the first min(heads, period)
  // slots are one of each class.
  std::vector<int64_t> reps;
  if (!isPersistent(policy)) {
    reps.push_back(0);
  } else {
    int64_t per = policy == Policy::SymmetricShift ? n / 2 : n;
    int64_t period = p.numUnits / std::gcd(per, p.numUnits);
    for (int64_t hb = 0, e = std::min(p.numHeadSlots(), period); hb < e; ++hb)
      reps.push_back(hb);
  }
  // Ranks must be a permutation 0..k-1 on every dQ row, else a reducer waits
  // for a semaphore value that never comes (or two add at once).
  std::vector<int64_t> seen(static_cast<size_t>(n), -1);
  for (int64_t hb : reps) {
    int64_t b = hb / p.headsQ, h = hb % p.headsQ;
    for (int64_t q = 0; q < m; ++q) {
      int64_t k = coveringCount(p, q);
      int64_t stamp = q + m * hb;
      for (int64_t j = 0; j < k; ++j) {
        int64_t rk = rankOf(p, policy, b, h, j, q);
        if (rk < 0 || rk >= k || seen[rk] == stamp)
          return {false, std::string(policyName(policy)) +
                             ": ranks on dQ row (b=" + std::to_string(b) +
                             ", h=" + std::to_string(h) +
                             ", q=" + std::to_string(q) +
                             ") are not a permutation of 0.." +
                             std::to_string(k - 1)};
        seen[rk] = stamp;
      }
    }
  }
  // Each KV tile must visit exactly its covering set.
  std::vector<int64_t> hit(static_cast<size_t>(m), -1);
  for (int64_t hb : reps)
    for (int64_t j = 0; j < n; ++j) {
      int64_t first = firstCoveredQTile(p, j), len = walkLength(p, j);
      int64_t stamp = j + n * hb;
      for (int64_t step = 0; step < len; ++step) {
        int64_t q = visitQTile(p, policy, hb / p.headsQ, hb % p.headsQ, j, step);
        if (q < first || q >= m || hit[q] == stamp)
          return {false, std::string(policyName(policy)) + ": KV tile " +
                             std::to_string(j) +
                             " does not visit its covering set exactly once"};
        hit[q] = stamp;
      }
    }
  // With the whole grid co-resident, ranks only wait on the same or earlier
  // waves, so there is no cycle (docs/Scheduling.md). Otherwise a unit may
  // spin on one that never gets an SM: decide it by running the model, whose
  // outcome does not depend on c and r.
  if (runsPersistent(p, policy) && p.numSMs() < p.numUnits) {
    EngineResult res =
        runEngine(p, policy, launchList(p, policy), p.numSMs(), nullptr);
    if (res.deadlock)
      return {false, std::string(policyName(policy)) +
                         " deadlocks: its rank "
                         "formulas assume G = " +
                         std::to_string(p.numUnits) +
                         " co-resident units but only " +
                         std::to_string(p.numSMs()) +
                         " fit; units wait on units of the same wave that "
                         "never get an SM (size G from the occupancy query)"};
  }
  return {true, ""};
}

} // namespace dash::sched
