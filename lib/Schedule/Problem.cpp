//===- Problem.cpp - Attention-backward scheduling problem ----------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Problem.h"

#include <algorithm>
#include <cmath>

namespace dash::sched {

static int64_t ceilDiv(int64_t a, int64_t b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

// Division rounding toward -inf: causal offsets can be negative.
static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

const char *maskName(Mask m) { return m == Mask::Full ? "full" : "causal"; }
const char *alignName(CausalAlign a) {
  return a == CausalAlign::BottomRight ? "bottom-right" : "top-left";
}

std::pair<int64_t, int64_t> defaultTiles(int64_t headDim, Mask mask) {
  if (headDim == 64)
    return {128, 128};
  return {mask == Mask::Causal ? 64 : 80, 128};
}

int64_t Problem::numQTiles() const { return ceilDiv(seqQ, blockM); }
int64_t Problem::numKVTiles() const { return ceilDiv(seqK, blockN); }
int64_t Problem::maskOffset() const {
  return align == CausalAlign::BottomRight ? seqK - seqQ : 0;
}

std::string validate(const Problem &p) {
  struct Field {
    const char *name;
    int64_t value;
  };
  const Field positive[] = {
      {"batch", p.batch},    {"heads", p.headsQ},   {"heads-kv", p.headsKV},
      {"seqlen", p.seqQ},    {"seqlen-k", p.seqK},  {"hdim", p.headDim},
      {"block-m", p.blockM}, {"block-n", p.blockN}, {"sms", p.numUnits}};
  // 2^31 per dimension keeps every product below (products of three such
  // dimensions are formed only after dividing by the block sizes).
  const int64_t kMax = int64_t(1) << 31;
  for (const Field &f : positive) {
    if (f.value <= 0)
      return std::string(f.name) + " must be positive, got " +
             std::to_string(f.value);
    if (f.value > kMax)
      return std::string(f.name) + " must be at most 2^31, got " +
             std::to_string(f.value);
  }
  if (p.residentUnits < 0 || p.residentUnits > kMax)
    return "resident-sms must be in [0, 2^31], got " +
           std::to_string(p.residentUnits);
  if (p.headsQ % p.headsKV != 0)
    return "heads (" + std::to_string(p.headsQ) +
           ") must be a multiple of heads-kv (" + std::to_string(p.headsKV) +
           ")";
  // Costs are relative units; bounding them keeps every makespan (at most
  // 2^62 tasks x (c + r)) finite (fuzz/regressions schedule-cost-overflow).
  if (!std::isfinite(p.c) || p.c <= 0 || p.c > 1e12)
    return "c (compute cost per task) must be in (0, 1e12]";
  if (!std::isfinite(p.r) || p.r < 0 || p.r > 1e12)
    return "r (reduce cost per task) must be in [0, 1e12]";
  if (p.stagingBuffers < 0 || p.stagingBuffers > 8)
    return "staging buffers must be in [0, 8], got " +
           std::to_string(p.stagingBuffers);
  if (!std::isfinite(p.readFraction) || p.readFraction <= 0 ||
      p.readFraction > 1)
    return "read fraction must be in (0, 1]";
  // Tile ids are int64 everywhere; the DAG is bounded separately by callers.
  if (p.numHeadSlots() > kMax)
    return "batch * heads must be at most 2^31";
  return "";
}

int64_t lastCoveringKVTile(const Problem &p, int64_t q) {
  int64_t n = p.numKVTiles();
  if (p.mask == Mask::Full)
    return n - 1;
  // The tile's last query sees keys up to lastQuery + off; the first key of
  // KV tile j is j*blockN.
  int64_t lastQuery = std::min((q + 1) * p.blockM, p.seqQ) - 1;
  int64_t lastKey = lastQuery + p.maskOffset();
  if (lastKey < 0)
    return -1;
  return std::min(n - 1, floorDiv(lastKey, p.blockN));
}

int64_t coveringCount(const Problem &p, int64_t q) {
  return lastCoveringKVTile(p, q) + 1;
}

int64_t firstCoveredQTile(const Problem &p, int64_t j) {
  // lastCoveringKVTile is non-decreasing in q: binary search the first q with
  // last(q) >= j.
  int64_t lo = 0, hi = p.numQTiles();
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (lastCoveringKVTile(p, mid) >= j)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

std::vector<int64_t> coveredQTiles(const Problem &p, int64_t j) {
  std::vector<int64_t> out;
  if (j < 0 || j >= p.numKVTiles())
    return out;
  for (int64_t q = firstCoveredQTile(p, j), m = p.numQTiles(); q < m; ++q)
    out.push_back(q);
  return out;
}

int64_t tasksPerHead(const Problem &p) {
  int64_t total = 0;
  for (int64_t q = 0, m = p.numQTiles(); q < m; ++q)
    total += coveringCount(p, q);
  return total;
}

} // namespace dash::sched
