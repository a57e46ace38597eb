//===- Manifest.h - Kernel manifests written by the AOT step ----*- C++ -*-===//
//
// Part of the DASH project. Plain C++17, no MLIR, no CUDA.
//
//===----------------------------------------------------------------------===//
//
// One manifest per cubin: the configuration it was specialised for and the
// kernel parameter list, which is the single source of truth for how the
// runtime packs arguments (docs/Runtime.md, "Kernel ABI").
//
//===----------------------------------------------------------------------===//

#ifndef DASH_RUNTIME_MANIFEST_H
#define DASH_RUNTIME_MANIFEST_H

#include "dash/Schedule/Policy.h"
#include "dash/Schedule/Problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dash::rt {

/// What a kernel parameter is bound to. The manifest names them; the names
/// are fixed by the kernel ABI.
enum class Role {
  Q, K, V, O, DO, Lse, DQ, DK, DV,          // caller tensors
  DQAccum, DKAccum, DVAccum, DPSum, LseLog2, // workspace
  Semaphores,                                // workspace (i32)
  Scale,                                     // f32 scalar
  Debug,                                     // debug kernels: i64 record
  TensorMaps, // workspace: CUtensorMaps of q, k, v, dO, dq_accum (i64 x 16 each)
  NumRoles
};
const char *roleName(Role);
/// Rank the ABI fixes for a memref role (0 for scalars).
int roleRank(Role);

enum class Elt { BF16, F16, F32, I32, I64 };
const char *eltName(Elt);

struct Param {
  std::string name;
  Role role;
  bool memref;  // false: scalar passed by value
  int rank;     // memref only
  Elt elt;
};

struct KernelEntry {
  std::string entry;
  int64_t sharedBytes = 0; // dynamic shared memory for the launch
};

struct Manifest {
  /// True for debug kernels (a `debug` parameter: bounded semaphore spins
  /// that record where they stuck and trap instead of hanging).
  bool hasDebugRecord() const;
  /// True for kernels that load Q, K, V, dO with TMA: a `tensor_maps`
  /// parameter the runtime fills with their CUtensorMaps before the launch.
  bool usesTensorMaps() const;
  std::string path;      // the .json file
  std::string name;
  std::string cubinPath; // resolved against the manifest's directory
  int64_t headDim = 0;
  Elt dtype = Elt::BF16;
  sched::Mask mask = sched::Mask::Full;
  sched::CausalAlign align = sched::CausalAlign::BottomRight;
  sched::Policy policy = sched::Policy::Ascending;
  bool deterministic = true;
  int64_t blockM = 0, blockN = 0, threads = 0;
  /// Optional "dkdv_direct": the main kernel writes dk/dv itself when
  /// H_q == H_kv, so dk_accum/dv_accum need no rows then.
  bool dkdvDirect = false;
  /// Optional "dkdv_bulk": the main kernel stores dk/dv (when H_q == H_kv)
  /// by TMA through two more tensor maps, 7 and 8 (TMA kernels that write
  /// dk/dv themselves).
  bool dkdvBulk = false;
  /// Optional "dq_in_main": the main kernel writes dq itself (TMA kernels
  /// whose dQ adds are counted, from a ticket word after the semaphores),
  /// so the postprocess only runs for GQA's dk/dv.
  bool dqInMain = false;
  /// Optional "counted_adds": a non-deterministic TMA kernel whose dQ
  /// reducers count their adds on the semaphores as the deterministic ones
  /// do (rank 0 stores first, later ranks add in any order), so it can write
  /// dq itself (convert-dash-to-gpu counted-adds=1).
  bool countedAdds = false;
  /// Optional "stats_in_main": the main kernel computes dPsum and lse_log2
  /// itself (the preprocess only zeroes); the semaphore buffer then ends in
  /// a statistics ticket and a row count per query head (docs/Runtime.md).
  bool statsInMain = false;
  /// Optional "dps_fold": each head's dPsum row of the workspace holds two
  /// bf16 rows (hi, lo), loaded by a map of their own (TMA kernels;
  /// convert-dash-to-gpu dps-fold, docs/Runtime.md): "rows" (boxes of
  /// block_m Q rows, unswizzled), the only value.
  bool dpsFold = false;
  /// Optional "pdl": the main kernel is launched as a programmatic dependent
  /// of the preprocess (it waits for it with griddepcontrol.wait, the
  /// preprocess lets it launch early with griddepcontrol.launch_dependents).
  bool pdl = false;
  /// TMA kernels: the view of dq_accum their reduce-adds expect. Optional
  /// "dq_accum_map": "tiles" (each Q tile's block_m rows hold the tile in
  /// the kernel's staging order, added by 1-D bulk reduce-adds: rows padded
  /// to whole tiles, no tensor map), "panels8" (5-D map, one box per Q tile,
  /// unswizzled 8-column panels); absent: "swizzle128x32", the 4-D map with
  /// 128B-swizzled 32-column boxes of kernels built before either existed.
  enum class DqAccumMap { Swizzle128x32, Panels8, Tiles } dqAccumMap =
      DqAccumMap::Swizzle128x32;
  KernelEntry preprocess, main, postprocess;
  std::vector<Param> params;
  /// Optional calibrated model costs ("model": {"c":..,"r":..}); <= 0 keeps
  /// the schedule library's defaults.
  double modelC = 0, modelR = 0;
  double modelTie = 1e-9; // optional model.tie: choose()'s relative tie gap
  /// Optional model.staging / model.read_fraction: the staged model (the
  /// kernel's dQ staging buffers; Problem::stagingBuffers), 0 = serial.
  int64_t modelStaging = 0;
  double modelReadFraction = 0.5;

  /// "d128 bf16 causal bottom_right descending det" (for messages).
  std::string configString() const;
};

/// Parses manifest text. `path` is used for messages and to resolve the
/// cubin path. Returns "" on success, else the reason (naming the field).
std::string parseManifest(const std::string &text, const std::string &path,
                          Manifest &out);

/// Reads a whole file (manifests, cubins). False if it cannot be opened or
/// read.
bool readFile(const std::string &path, std::string &out);

/// Loads every *.json in `dir` (sorted by name). Each must be a valid
/// manifest; two manifests for the same configuration are an error.
/// Returns "" on success, else the reason naming the file.
std::string loadManifestDir(const std::string &dir, std::vector<Manifest> &out);

} // namespace dash::rt

#endif // DASH_RUNTIME_MANIFEST_H
