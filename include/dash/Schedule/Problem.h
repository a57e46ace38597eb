//===- Problem.h - Attention-backward scheduling problem --------*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// The shape of one deterministic attention-backward call, seen as a grid of
// (KV tile, Q tile) tasks, and the mask geometry that decides which Q tiles
// each KV tile touches (its "covering set").
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_PROBLEM_H
#define DASH_SCHEDULE_PROBLEM_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dash::sched {

enum class Mask { Full, Causal };

/// Causal key j is visible to query i iff j <= i + off, with off = sk - sq
/// (BottomRight, FlashAttention) or 0 (TopLeft, PyTorch SDPA is_causal).
enum class CausalAlign { BottomRight, TopLeft };

const char *maskName(Mask);         // "full", "causal"
const char *alignName(CausalAlign); // "bottom-right", "top-left"

struct Problem {
  int64_t batch = 1, headsQ = 1, headsKV = 1, seqQ = 0, seqK = 0, headDim = 128;
  int64_t blockM = 64, blockN = 128;
  Mask mask = Mask::Full;
  CausalAlign align = CausalAlign::BottomRight;
  /// G: units of the persistent grid, also the SM count for the
  /// one-CTA-per-KV-tile schedules. The shift formulas are evaluated with G.
  int64_t numUnits = 132;
  /// SMs that can actually hold a unit at once; 0 means numUnits. Models a
  /// grid sized for G on a device with fewer free SMs (H100 PCIe, MIG,
  /// sm_margin): the persistent schedules can deadlock when this is < G.
  int64_t residentUnits = 0;
  double c = 1.0, r = 0.25; // compute / reduce cost per (KV tile, Q tile) task
  /// Relative gap under which choose() treats two makespans as equal (and
  /// prefers the G-independent order): the model's resolution. Kernels
  /// calibrate it with c and r in their manifests.
  double tieTolerance = 1e-9;
  /// How ascending/spt/descending run: false = as FA3 launches them (one CTA
  /// per KV tile, dispatched in launch order to the first free SM); true =
  /// as DASH's kernels run every schedule (a persistent grid of G units,
  /// unit u walking launch slots u, u+G, ...). shift and symmetric-shift are
  /// persistent either way.
  bool persistentLaunch = false;
  /// Deterministic kernels add a row's dQ partials in rank order (a task's
  /// reduce waits for the previous rank's); non-deterministic ones add them
  /// as they come, so only the units' loads matter.
  bool ordered = true;
  /// dQ staging buffers per unit, as the WGMMA kernels overlap the adds with
  /// the next tasks' products: 0 = the paper's serial model (a unit's reduce
  /// follows its compute, c + r per task, waiting for its rank in between);
  /// B >= 1 = a unit computes on while up to B hand-offs wait for their
  /// reducers (one per buffer), a buffer being free again readFraction * r
  /// after its reduce starts (the bulk add has read it). See EngineStaged.cpp.
  int64_t stagingBuffers = 0;
  double readFraction = 0.5;

  int64_t numQTiles() const;  // M = ceil(seqQ / blockM)
  int64_t numKVTiles() const; // N = ceil(seqK / blockN)
  int64_t numSMs() const {
    return residentUnits > 0 ? residentUnits : numUnits;
  }
  /// Work units are per Q head (dQ rows are per Q head); GQA shares K/V only.
  int64_t numHeadSlots() const { return batch * headsQ; }
  /// Causal offset: off = sk - sq (bottom-right) or 0 (top-left).
  int64_t maskOffset() const;
};

/// "" if the problem is well formed, else the reason.
std::string validate(const Problem &);

/// FlashAttention-3's Hopper backward tiles (BlockM, BlockN), the defaults of
/// dash-tile, dash-sched and the C API: d=64 -> 128x128; d=128 -> 64x128
/// causal (the diagonal tiles waste less) and 80x128 full.
std::pair<int64_t, int64_t> defaultTiles(int64_t headDim, Mask mask);

/// Last KV tile that touches Q tile q (-1 if none: fully masked rows, which
/// happen for sq > sk bottom-right). Covering sets are prefixes 0..last(q).
int64_t lastCoveringKVTile(const Problem &, int64_t qTile);
/// Number of KV tiles that reduce into dQ row tile q: last(q) + 1.
int64_t coveringCount(const Problem &, int64_t qTile);
/// First Q tile that KV tile j touches (numQTiles() if none). Covered Q tiles
/// are the suffix first..M-1 because last(q) is non-decreasing in q.
int64_t firstCoveredQTile(const Problem &, int64_t kvTile);
/// The covering set: Q tiles that KV tile j touches, ascending.
std::vector<int64_t> coveredQTiles(const Problem &, int64_t kvTile);
/// Tasks ((KV tile, Q tile) pairs with at least one visible element) per head.
int64_t tasksPerHead(const Problem &);

} // namespace dash::sched

#endif // DASH_SCHEDULE_PROBLEM_H
