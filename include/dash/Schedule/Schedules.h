//===- Schedules.h - Visit orders and ranks as integer formulas -*- C++ -*-===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// The schedules of SCHEDULES.md section 4 as pure integer functions of
// (j, h, b, N, M, H, G, s). The GPU kernels (TMA producer, MMA warpgroups,
// dQ reducer) and the MLIR materialize pass must emit the same arithmetic,
// so each piece is exposed on its own. docs/Scheduling.md derives them.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_SCHEDULE_SCHEDULES_H
#define DASH_SCHEDULE_SCHEDULES_H

#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"

#include <cstdint>
#include <string>

namespace dash::sched {

/// Where a work item sits in the persistent grid. `perHead` items per head
/// (N tiles for shift, N/2 pairs for symmetric-shift), linear id
/// t = idx + perHead*(h + H*b), unit t mod G, wave t / G.
struct WavePosition {
  int64_t unit, wave;
  int64_t F; // this head's items in earlier waves
  int64_t R; // this head's items in this wave
  int64_t a; // idx - F: position inside this head's part of the wave
};
WavePosition wavePosition(int64_t idx, int64_t perHead, int64_t headSlot,
                          int64_t G);

/// s = BlockN / BlockM (symmetric-shift stride; 0 if it does not divide).
int64_t stride(const Problem &);

/// Q tiles that KV tile `kvTile` visits (its covering-set size).
int64_t walkLength(const Problem &, int64_t kvTile);

/// Q tile at `step` of KV tile `kvTile`'s walk, or -1 when step is outside
/// [0, walkLength). Policy::Auto is resolved with choose() on every call:
/// resolve once with resolvePolicy() in loops.
int64_t visitQTile(const Problem &, Policy, int64_t b, int64_t h,
                   int64_t kvTile, int64_t step);

/// Rank of KV tile `kvTile` on dQ row tile `qTile` of (b, h): the semaphore
/// value it waits for before adding. -1 if the KV tile does not cover qTile.
int64_t rankOf(const Problem &, Policy, int64_t b, int64_t h, int64_t kvTile,
               int64_t qTile);

struct Legality {
  bool legal;
  std::string reason; // empty iff legal
};

/// Problem validity, shape requirements of the policy, ranks forming a
/// permutation 0..k-1 on every dQ row, and deadlock-freedom when only
/// Problem::numSMs() of the G persistent units are co-resident.
Legality checkLegal(const Problem &, Policy);

/// Auto -> choose(p).policy; concrete policies are returned unchanged.
Policy resolvePolicy(const Problem &, Policy);

} // namespace dash::sched

#endif // DASH_SCHEDULE_SCHEDULES_H
