//===- Runtime.cpp - DASH attention-backward runtime (C API) -------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// Order of work for a launch: validate every argument and select the kernel
// without the driver; then load the driver, module(s) and the occupancy;
// then the G-dependent checks (co-residency, checkLegal, auto); then
// workspace and the three launches. check() runs the same code with the
// driver parts replaced by injected or cached device properties.
//
//===----------------------------------------------------------------------===//

#include "dash/Runtime/Runtime.h"
#include "dash/Runtime/Driver.h"
#include "dash/Runtime/Manifest.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace dash::rt;
namespace sched = dash::sched;

namespace {

thread_local std::string tlsError;

dash_status fail(dash_status s, const std::string &msg) {
  tlsError = msg;
  return s;
}

constexpr int64_t kInt32Max = INT32_MAX;
// Workspace buffers start on this boundary (TMA / bulk copies want >= 128 B).
constexpr int64_t kWsAlign = 256;

std::string str(int64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------------------
// Argument validation (no manifests, no driver)
// ---------------------------------------------------------------------------

struct Shape {
  int64_t B, Sq, Sk, Hq, Hkv, D;
  dash_dtype dtype;
};

const char *dtypeName(dash_dtype d) {
  switch (d) {
  case DASH_DTYPE_BF16: return "bf16";
  case DASH_DTYPE_F16: return "f16";
  case DASH_DTYPE_F32: return "f32";
  }
  return "unknown";
}
int64_t dtypeBytes(dash_dtype d) { return d == DASH_DTYPE_F32 ? 4 : 2; }
// The raw integer of a C enum field. Callers may pass any int; loading an
// out-of-range value as the C++ enum type is undefined behaviour (UBSan's
// -fsanitize=enum; fuzz/regressions/runtime-enum-ub.cpp), so every range
// check reads the bits as an int first.
template <typename E> int32_t rawEnum(const E &e) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized here");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

bool dtypeValid(int32_t d) {
  return d == DASH_DTYPE_BF16 || d == DASH_DTYPE_F16 || d == DASH_DTYPE_F32;
}

// Per-tensor rules that need no other tensor.
dash_status checkTensor(const dash_tensor &t, const char *name, int rank,
                        bool output) {
  std::string n = name;
  if (!t.data)
    return fail(DASH_ERROR_INVALID_ARGUMENT, n + ".data is NULL");
  if (t.rank != rank)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".rank must be " + str(rank) + ", got " + str(t.rank));
  if (!dtypeValid(rawEnum(t.dtype)))
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".dtype has unknown value " + str(rawEnum(t.dtype)));
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                n + ".data must be 16-byte aligned (TMA/vector loads)");
  const int64_t elt = dtypeBytes(t.dtype);
  int64_t span = 0; // largest element offset
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] <= 0)
      return fail(DASH_ERROR_INVALID_ARGUMENT, n + ".shape[" + str(i) +
                                                   "] must be positive, got " +
                                                   str(t.shape[i]));
    if (t.shape[i] > kInt32Max)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".shape[" + str(i) + "] = " + str(t.shape[i]) +
                      " exceeds 2^31-1");
    if (t.shape[i] == 1)
      continue; // stride of a size-1 dim is never used (PyTorch leaves any value)
    if (t.strides[i] < 1)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".strides[" + str(i) + "] must be >= 1, got " +
                      str(t.strides[i]));
    int64_t term;
    if (__builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &term) ||
        __builtin_add_overflow(span, term, &span))
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ": shape x strides overflows int64");
  }
  if (span > (INT64_MAX / elt) - 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT, n + ": byte extent overflows int64");
  if (rank == 4) {
    if (t.shape[3] > 1 && t.strides[3] != 1)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  n + ".strides[3] (head dim) must be 1, got " +
                      str(t.strides[3]));
    // Rows are fetched in 16-byte pieces (TMA needs 16-byte global strides).
    for (int i = 0; i < 3; ++i)
      if (t.shape[i] > 1 && (t.strides[i] * elt) % 16 != 0)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    n + ".strides[" + str(i) + "] = " + str(t.strides[i]) +
                        " elements is not a multiple of 16 bytes");
  }
  if (output) {
    // Sufficient condition for no two indices sharing an address: sorted by
    // stride, each stride reaches past the previous dims' extent.
    int order[4] = {0, 1, 2, 3};
    for (int i = 1; i < rank; ++i) // insertion sort: rank <= 4
      for (int j = i; j > 0 && t.strides[order[j]] < t.strides[order[j - 1]]; --j)
        std::swap(order[j], order[j - 1]);
    int64_t need = 1;
    for (int k = 0; k < rank; ++k) {
      int d = order[k];
      if (t.shape[d] == 1)
        continue;
      if (t.strides[d] < need)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    n + ": strides make elements overlap (output must not "
                        "alias itself)");
      need = t.strides[d] * t.shape[d];
    }
  }
  return DASH_SUCCESS;
}

dash_status checkSame(const dash_tensor &t, const char *name, int dim,
                      const char *what, int64_t want, const char *ref) {
  if (t.shape[dim] != want)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                std::string(name) + ".shape[" + str(dim) + "] (" + what +
                    ") = " + str(t.shape[dim]) + " does not match " + ref +
                    " = " + str(want));
  return DASH_SUCCESS;
}

dash_status validateArgs(const dash_bwd_args *a, Shape &s) {
  if (!a)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "args is NULL");
  struct T {
    const dash_tensor *t;
    const char *name;
    int rank;
    bool output;
  };
  const T all[] = {{&a->q, "q", 4, false},   {&a->k, "k", 4, false},
                   {&a->v, "v", 4, false},   {&a->o, "o", 4, false},
                   {&a->dO, "dO", 4, false}, {&a->lse, "lse", 3, false},
                   {&a->dq, "dq", 4, true},  {&a->dk, "dk", 4, true},
                   {&a->dv, "dv", 4, true}};
  for (const T &t : all)
    if (dash_status st = checkTensor(*t.t, t.name, t.rank, t.output))
      return st;

  s.B = a->q.shape[0];
  s.Sq = a->q.shape[1];
  s.Hq = a->q.shape[2];
  s.D = a->q.shape[3];
  s.Sk = a->k.shape[1];
  s.Hkv = a->k.shape[2];
  s.dtype = a->q.dtype;
  dash_status st;
  for (const T &t : all) {
    if (t.t == &a->q)
      continue;
    if ((st = checkSame(*t.t, t.name, 0, "batch", s.B, "q.shape[0]")))
      return st;
    if (t.t == &a->lse) {
      if ((st = checkSame(*t.t, t.name, 1, "heads", s.Hq, "q.shape[2]")) ||
          (st = checkSame(*t.t, t.name, 2, "seqlen", s.Sq, "q.shape[1]")))
        return st;
      continue;
    }
    bool isKV = t.t == &a->k || t.t == &a->v || t.t == &a->dk || t.t == &a->dv;
    if (isKV) {
      if ((st = checkSame(*t.t, t.name, 1, "seqlen_k", s.Sk, "k.shape[1]")) ||
          (st = checkSame(*t.t, t.name, 2, "heads_kv", s.Hkv, "k.shape[2]")))
        return st;
    } else {
      if ((st = checkSame(*t.t, t.name, 1, "seqlen", s.Sq, "q.shape[1]")) ||
          (st = checkSame(*t.t, t.name, 2, "heads", s.Hq, "q.shape[2]")))
        return st;
    }
    if ((st = checkSame(*t.t, t.name, 3, "head_dim", s.D, "q.shape[3]")))
      return st;
  }
  if (s.Hq % s.Hkv != 0)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "heads of q (" + str(s.Hq) + ") must be a multiple of heads of k (" +
                    str(s.Hkv) + ")");
  // dtypes: one element type for the 8 attention tensors, f32 lse.
  if (s.dtype == DASH_DTYPE_F32)
    return fail(DASH_ERROR_UNSUPPORTED,
                "q.dtype f32 is not supported (bf16 or f16)");
  for (const T &t : all) {
    if (t.t == &a->lse)
      continue;
    if (t.t->dtype != s.dtype)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  std::string(t.name) + ".dtype " + dtypeName(t.t->dtype) +
                      " differs from q.dtype " + dtypeName(s.dtype));
  }
  if (a->lse.dtype != DASH_DTYPE_F32)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                std::string("lse.dtype must be f32, got ") + dtypeName(a->lse.dtype));
  if (s.D != 64 && s.D != 128)
    return fail(DASH_ERROR_UNSUPPORTED,
                "head_dim " + str(s.D) + " is not supported (64 or 128)");
  // Outputs must not share a base address with each other or the inputs.
  for (const T &o : all) {
    if (!o.output)
      continue;
    for (const T &t : all)
      if (t.t != o.t && t.t->data == o.t->data)
        return fail(DASH_ERROR_INVALID_ARGUMENT,
                    std::string(o.name) + ".data aliases " + t.name + ".data");
  }
  if (!std::isfinite(a->scale) || !(a->scale > 0))
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "scale must be finite and > 0, got " + std::to_string(a->scale));
  if (a->causal != 0 && a->causal != 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "causal must be 0 or 1, got " + str(a->causal));
  if (a->deterministic != 0 && a->deterministic != 1)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "deterministic must be 0 or 1, got " + str(a->deterministic));
  if (int32_t al = rawEnum(a->align);
      al < DASH_ALIGN_DEFAULT || al > DASH_ALIGN_TOP_LEFT)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "align has unknown value " + str(al));
  if (int32_t po = rawEnum(a->policy);
      po < DASH_POLICY_AUTO || po > DASH_POLICY_SYMMETRIC_SHIFT)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "policy has unknown value " + str(po));
  if (a->num_units < 0 || a->num_units > kInt32Max)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "num_units must be in [0, 2^31-1] (0 = occupancy), got " +
                    str(a->num_units));
  // Work items must fit the schedule library's 2^31 limits and int32 grids.
  int64_t slots;
  if (__builtin_mul_overflow(s.B, s.Hq, &slots) || slots > kInt32Max)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "batch * heads = " + str(s.B) + " * " + str(s.Hq) +
                    " exceeds 2^31-1");
  return DASH_SUCCESS;
}

sched::Policy toSched(dash_policy p) {
  switch (p) {
  case DASH_POLICY_ASCENDING: return sched::Policy::Ascending;
  case DASH_POLICY_SPT: return sched::Policy::Spt;
  case DASH_POLICY_DESCENDING: return sched::Policy::Descending;
  case DASH_POLICY_SHIFT: return sched::Policy::Shift;
  case DASH_POLICY_SYMMETRIC_SHIFT: return sched::Policy::SymmetricShift;
  case DASH_POLICY_AUTO: break;
  }
  return sched::Policy::Auto;
}
dash_policy fromSched(sched::Policy p) {
  switch (p) {
  case sched::Policy::Ascending: return DASH_POLICY_ASCENDING;
  case sched::Policy::Spt: return DASH_POLICY_SPT;
  case sched::Policy::Descending: return DASH_POLICY_DESCENDING;
  case sched::Policy::Shift: return DASH_POLICY_SHIFT;
  case sched::Policy::SymmetricShift: return DASH_POLICY_SYMMETRIC_SHIFT;
  case sched::Policy::Auto: break;
  }
  return DASH_POLICY_AUTO;
}

// ---------------------------------------------------------------------------
// Workspace layout
// ---------------------------------------------------------------------------

struct WsLayout {
  // Byte offsets by Role (only workspace roles used) and total size.
  int64_t offset[size_t(Role::NumRoles)] = {};
  int64_t sizes[size_t(Role::NumRoles)][4] = {};
  int64_t total = 0;
  bool ok = false;
};

/// What a kernel (or the union of the candidate kernels) needs from the
/// workspace beyond the shape.
struct WsKernel {
  int64_t blockM = 1, blockN = 1;
  bool dkdvDirect = false; // dk/dv written by the kernel when Hq == Hkv
  bool tensorMaps = false; // TMA kernels: room for their tensor maps,
                           // stats rows padded for them
  bool dqTiles = false;    // dq_accum in the "tiles" layout: rows padded to
                           // whole Q tiles
  bool dqTicket = false;   // dq_in_main: an i32 ticket after the semaphores
  bool dkdvMaps = false;   // dkdv_bulk: room for the dk and dv maps too
  bool statsInMain = false; // stats_in_main: a ticket and B * H_q row counts
                            // after the dQ ticket
  bool dpsFold = false;     // dps_fold: dPsum's f32 rows hold bf16 hi / lo
                            // rows, padded for their map's 16-byte strides
};
WsKernel wsKernel(const Manifest &m) {
  return {m.blockM, m.blockN, m.dkdvDirect, m.usesTensorMaps(),
          m.dqAccumMap == Manifest::DqAccumMap::Tiles, m.dqInMain, m.dkdvBulk,
          m.statsInMain, m.dpsFold != Manifest::DpsFold::None};
}

/// The seven maps (q, k, v, dO loads; dq_accum reduce-adds; lse_log2, dPsum
/// loads) and, for "dkdv_bulk" kernels, dk and dv (stores), 128 bytes each,
/// in i64 words.
constexpr int64_t kTensorMaps = 7, kTensorMapsDkdvBulk = 9;
int64_t tensorMapCount(bool dkdvBulk) {
  return dkdvBulk ? kTensorMapsDkdvBulk : kTensorMaps;
}
constexpr int64_t kTensorMapWords = sizeof(CUtensorMap) / sizeof(int64_t);
static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");

/// Words after the B * H_q * M semaphores: the dQ ticket (dq_in_main), then
/// (stats_in_main) the statistics ticket and each query head's count of
/// finished rows, at fixed places (word 0 unused without dq_in_main).
int64_t semaphoreSlack(const Shape &s, const WsKernel &k) {
  if (k.statsInMain)
    return 2 + s.B * s.Hq;
  return k.dqTicket ? 1 : 0;
}

// Buffers per query head (GQA reduces dk/dv over the group in postprocess).
// Each buffer gets one extra tile of slack so a full-tile access at a ragged
// end stays inside the allocation. dkdvDirect (the kernel writes dk/dv when
// H_q == H_kv): dk_accum/dv_accum get no rows then.
WsLayout workspaceLayout(const Shape &s, const WsKernel &k) {
  WsLayout w;
  int64_t M = (s.Sq + k.blockM - 1) / k.blockM;
  // TMA kernels load dPsum/lse_log2 rows through tensor maps, whose row
  // stride must be a multiple of 16 bytes: their rows get S_q rounded up to
  // 4 elements (every kernel addresses them through the descriptor's
  // strides, built from these sizes; the map clips at S_q).
  // dps_fold: its bf16 rows' stride (S rows * 2 bytes) too: 8 elements.
  const int64_t statPad = k.dpsFold ? 8 : k.tensorMaps ? 4 : 1;
  const int64_t statRows = (s.Sq + statPad - 1) / statPad * statPad;
  const bool noDkDv = k.dkdvDirect && s.Hq == s.Hkv;
  // "tiles": each Q tile's block_m rows hold the whole tile (its last one
  // too), added with 1-D bulk reduce-adds that nothing clips.
  const int64_t dqRows = k.dqTiles ? M * k.blockM : s.Sq;
  const int64_t kvRows = noDkDv ? 0 : s.Sk,
                kvSlack = noDkDv ? 0 : k.blockN * s.D;
  struct Buf {
    Role role;
    int64_t dims[4];
    int rank;
    int64_t slack; // elements
    int64_t eltBytes;
  };
  std::vector<Buf> bufs = {
      {Role::DQAccum, {s.B, s.Hq, dqRows, s.D}, 4, k.blockM * s.D, 4},
      {Role::DKAccum, {s.B, s.Hq, kvRows, s.D}, 4, kvSlack, 4},
      {Role::DVAccum, {s.B, s.Hq, kvRows, s.D}, 4, kvSlack, 4},
      {Role::DPSum, {s.B, s.Hq, statRows, 0}, 3, k.blockM, 4},
      {Role::LseLog2, {s.B, s.Hq, statRows, 0}, 3, k.blockM, 4},
      {Role::Semaphores, {s.B, s.Hq, M, 0}, 3, semaphoreSlack(s, k), 4},
  };
  if (k.tensorMaps)
    bufs.push_back({Role::TensorMaps,
                    {tensorMapCount(k.dkdvMaps) * kTensorMapWords, 0, 0, 0},
                    1, 0, 8});
  int64_t off = 0;
  for (const Buf &b : bufs) {
    int64_t n = 1;
    for (int i = 0; i < b.rank; ++i) {
      if (__builtin_mul_overflow(n, b.dims[i], &n))
        return w;
      w.sizes[int(b.role)][i] = b.dims[i];
    }
    int64_t bytes;
    if (__builtin_add_overflow(n, b.slack, &n) ||
        __builtin_mul_overflow(n, b.eltBytes, &bytes) ||
        bytes > (int64_t(1) << 50))
      return w;
    w.offset[int(b.role)] = off;
    off += (bytes + kWsAlign - 1) / kWsAlign * kWsAlign;
  }
  w.total = off;
  w.ok = true;
  return w;
}

} // namespace

// ---------------------------------------------------------------------------
// Runtime object
// ---------------------------------------------------------------------------

namespace {
struct CtxKernel {
  CUmodule module = nullptr;
  CUfunction pre = nullptr, main = nullptr, post = nullptr;
  int blocksPerSM = 0;
};
struct Workspace {
  CUdeviceptr ptr = 0;
  int64_t bytes = 0;
};
struct CtxState {
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  int numSMs = 0;
  std::map<int, CtxKernel> kernels;       // by manifest index
  std::map<CUstream, Workspace> workspace; // one per stream: calls on
                                           // different streams may overlap
};

// What the G-dependent checks know about the device.
struct DeviceView {
  bool known = false;
  int numSMs = 0;
  std::map<int, int> blocksPerSM; // by manifest index; missing = unknown
  int overrideBlocks = 0;         // > 0: same for every kernel
  int blocksFor(int k) const {
    if (overrideBlocks > 0)
      return overrideBlocks;
    auto it = blocksPerSM.find(k);
    return it == blocksPerSM.end() ? 0 : it->second;
  }
};

struct Plan {
  Shape shape{};
  int kernel = -1;
  sched::Policy policy = sched::Policy::Auto;
  int64_t G = 0, maxUnits = 0;
  int blocksPerSM = 0, numSMs = 0;
  WsLayout ws;
  std::vector<int> candidates;
};
} // namespace

struct dash_runtime {
  std::string dir, libcuda;
  std::vector<Manifest> kernels;
  std::vector<std::string> descriptions;
  Driver drv;
  std::mutex mu;
  bool hasOverride = false;
  dash_device_props props{};
  bool debug = false;
  std::vector<CtxState> ctxs;
  CUcontext primary = nullptr;
  CUdevice primaryDev = 0;
  DeviceView lastSeen; // from the last launch, for check()
  std::map<std::string, std::string> legalCache; // key -> "" or reason
  std::map<std::string, int> autoCache;          // key -> manifest index
  // Debug kernels' hang record: host memory mapped into the device, so the
  // host can read it even after the kernel trapped (context lost).
  int64_t *debugHost = nullptr;
  CUdeviceptr debugDev = 0;
  // Pinned host slots holding the tensor maps of calls made under CUDA-graph
  // capture: the captured copy reads its slot at every replay, so a slot is
  // never reused while the runtime lives (freed by dash_runtime_destroy).
  std::vector<void *> pinnedChunks;
  size_t pinnedUsed = 0; // bytes taken from the last chunk
};

namespace {

/// The record layout debug kernels write (convert-dash-to-gpu DebugWord):
/// magic, unit, b, h, q, expected rank, seen value, polls.
constexpr int64_t kDebugWords = 8;
constexpr int64_t kDebugMagic = 0xDA5400DE;

std::string problemKey(const sched::Problem &p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%d,%lld,%g,%g",
                (long long)p.batch, (long long)p.headsQ, (long long)p.headsKV,
                (long long)p.seqQ, (long long)p.seqK, (long long)p.headDim,
                (long long)p.blockM, (long long)p.blockN, int(p.mask),
                int(p.align), (long long)p.numUnits, p.c, p.r);
  return buf + std::string(p.persistentLaunch ? "/P" : "/L") +
         (p.ordered ? "/O/" : "/U/") + std::to_string(p.tieTolerance) + "/S" +
         std::to_string(p.stagingBuffers) + "/" +
         std::to_string(p.readFraction);
}

sched::Problem makeProblem(const Shape &s, const Manifest &m, int64_t G) {
  sched::Problem p;
  p.batch = s.B;
  p.headsQ = s.Hq;
  p.headsKV = s.Hkv;
  p.seqQ = s.Sq;
  p.seqK = s.Sk;
  p.headDim = s.D;
  p.blockM = m.blockM;
  p.blockN = m.blockN;
  p.mask = m.mask;
  p.align = m.align;
  p.numUnits = G;
  // DASH's kernels run every schedule as a persistent grid of G units.
  p.persistentLaunch = true;
  p.ordered = m.deterministic; // non-deterministic kernels add unordered
  if (m.modelC > 0) {
    p.c = m.modelC;
    p.r = m.modelR;
    p.tieTolerance = m.modelTie;
    p.stagingBuffers = m.modelStaging;
    p.readFraction = m.modelReadFraction;
  }
  return p;
}

// The kernels walk the schedule in 32-bit arithmetic (the schedule regions
// are narrowed to i32 in convert-dash-to-gpu): its largest values are the
// work-item count plus two grids, B * Hq * ceil(Sk / bn) + 2 G, and the
// rounded-up sequence lengths. Empty when they fit.
std::string walkFitsInt32(const Shape &s, const Manifest &m, int64_t G) {
  int64_t items;
  int64_t kvTiles = (s.Sk + m.blockN - 1) / m.blockN;
  if (__builtin_mul_overflow(s.B * s.Hq, kvTiles, &items) ||
      items > kInt32Max - 2 * G)
    return "batch * heads * KV tiles (" + str(s.B) + " * " + str(s.Hq) +
           " * " + str(kvTiles) + ") + 2 * num_units exceeds the kernels' " +
           "32-bit schedule walk (2^31-1)";
  if (std::max(s.Sq + m.blockM, s.Sk + m.blockN) > kInt32Max)
    return "sequence length + tile exceeds the kernels' 32-bit schedule "
           "walk (2^31-1)";
  return "";
}

std::string legalReason(dash_runtime *rt, const sched::Problem &p,
                        sched::Policy pol) {
  std::string key = problemKey(p) + "|" + sched::policyName(pol);
  auto it = rt->legalCache.find(key);
  if (it != rt->legalCache.end())
    return it->second;
  sched::Legality l = sched::checkLegal(p, pol);
  if (rt->legalCache.size() > 1024)
    rt->legalCache.clear();
  return rt->legalCache[key] = l.legal ? std::string() : l.reason;
}

// Kernel selection: every manifest matching the configuration (all policies
// for auto). No driver.
dash_status selectCandidates(dash_runtime *rt, const dash_bwd_args *a,
                             const Shape &s, std::vector<int> &out) {
  out.clear();
  Elt dtype = s.dtype == DASH_DTYPE_F16 ? Elt::F16 : Elt::BF16;
  sched::Mask mask = a->causal ? sched::Mask::Causal : sched::Mask::Full;
  sched::CausalAlign align = a->align == DASH_ALIGN_TOP_LEFT
                                 ? sched::CausalAlign::TopLeft
                                 : sched::CausalAlign::BottomRight;
  sched::Policy pol = toSched(a->policy);
  auto matches = [&](const Manifest &m, sched::CausalAlign al) {
    return m.headDim == s.D && m.dtype == dtype && m.mask == mask &&
           (mask == sched::Mask::Full || m.align == al) &&
           m.deterministic == bool(a->deterministic) &&
           (pol == sched::Policy::Auto || m.policy == pol);
  };
  for (size_t i = 0; i < rt->kernels.size(); ++i)
    if (matches(rt->kernels[i], align))
      out.push_back(int(i));
  // With Sq == Sk both alignments give the same mask: use either kernel.
  if (out.empty() && mask == sched::Mask::Causal && s.Sq == s.Sk) {
    sched::CausalAlign other = align == sched::CausalAlign::TopLeft
                                   ? sched::CausalAlign::BottomRight
                                   : sched::CausalAlign::TopLeft;
    for (size_t i = 0; i < rt->kernels.size(); ++i)
      if (matches(rt->kernels[i], other))
        out.push_back(int(i));
  }
  if (!out.empty())
    return DASH_SUCCESS;
  std::string want = "d" + str(s.D) + " " + eltName(dtype) + " " +
                     sched::maskName(mask);
  if (mask == sched::Mask::Causal)
    want += align == sched::CausalAlign::TopLeft ? " top_left" : " bottom_right";
  want += std::string(" ") + sched::policyName(pol) +
          (a->deterministic ? " det" : " nondet");
  std::string avail;
  for (size_t i = 0; i < rt->kernels.size() && i < 64; ++i)
    avail += (i ? "; " : "") + rt->kernels[i].configString();
  if (rt->kernels.size() > 64)
    avail += "; ...";
  return fail(DASH_ERROR_NO_KERNEL,
              "no kernel for configuration \"" + want + "\" in \"" + rt->dir +
                  "\"; available: " + (avail.empty() ? "(none)" : avail));
}

// G-dependent part: co-residency, legality, auto. `view` says what is known
// about the device; unknown G skips what needs it (check() only).
dash_status resolvePlan(dash_runtime *rt, const dash_bwd_args *a,
                        const DeviceView &view, Plan &plan) {
  struct Cand {
    int k;
    int64_t G, maxUnits;
    int blocks;
  };
  std::vector<Cand> legal;
  std::string reasons, tooMany;
  bool unknownG = false;
  for (int k : plan.candidates) {
    const Manifest &m = rt->kernels[k];
    Cand c{k, a->num_units, 0, view.known ? view.blocksFor(k) : 0};
    if (view.known && c.blocks > 0) {
      c.maxUnits = int64_t(c.blocks) * view.numSMs;
      if (c.G == 0)
        c.G = c.maxUnits;
      if (c.G > c.maxUnits) {
        tooMany = "num_units = " + str(c.G) + " exceeds the " +
                  str(c.maxUnits) + " co-resident CTAs of kernel " + m.name +
                  " (" + str(c.blocks) + " per SM x " + str(view.numSMs) +
                  " SMs); the persistent schedules need the whole grid "
                  "resident";
        continue;
      }
      if (c.G > kInt32Max)
        return fail(DASH_ERROR_INVALID_ARGUMENT, "grid of " + str(c.G) +
                                                     " CTAs exceeds 2^31-1");
    }
    // Unknown G: check the G-independent rules with G = 1.
    bool gKnown = c.G > 0;
    if (std::string why = walkFitsInt32(plan.shape, m, gKnown ? c.G : 1);
        !why.empty())
      return fail(DASH_ERROR_INVALID_ARGUMENT, why);
    unknownG |= !gKnown;
    sched::Problem p = makeProblem(plan.shape, m, gKnown ? c.G : 1);
    std::string why = legalReason(rt, p, m.policy);
    if (!why.empty()) {
      reasons += (reasons.empty() ? "" : "; ") + m.name + ": " + why;
      continue;
    }
    legal.push_back(c);
  }
  if (legal.empty()) {
    if (!tooMany.empty() && reasons.empty())
      return fail(DASH_ERROR_TOO_MANY_UNITS, tooMany);
    return fail(DASH_ERROR_ILLEGAL_SCHEDULE,
                "schedule refused for B=" + str(plan.shape.B) + " Hq=" +
                    str(plan.shape.Hq) + " Hkv=" + str(plan.shape.Hkv) +
                    " Sq=" + str(plan.shape.Sq) + " Sk=" + str(plan.shape.Sk) +
                    ": " + reasons + (tooMany.empty() ? "" : "; " + tooMany));
  }
  const Cand *pick = &legal[0];
  if (a->policy == DASH_POLICY_AUTO) {
    if (unknownG) {
      // Cannot model without G: report the configuration, not a kernel.
      plan.kernel = -1;
      plan.policy = sched::Policy::Auto;
      return DASH_SUCCESS;
    }
    std::string key;
    for (const Cand &c : legal)
      key += str(c.k) + ":" + str(c.G) + ",";
    key += problemKey(makeProblem(plan.shape, rt->kernels[legal[0].k], 0));
    auto it = rt->autoCache.find(key);
    int chosen = -1;
    if (it != rt->autoCache.end()) {
      chosen = it->second;
    } else {
      std::vector<sched::Choice> choices;
      std::vector<int> owner;
      for (const Cand &c : legal) {
        const Manifest &m = rt->kernels[c.k];
        sched::ModelResult r =
            sched::simulate(makeProblem(plan.shape, m, c.G), m.policy);
        if (r.deadlock || !std::isfinite(r.makespan))
          continue;
        choices.push_back({m.policy, r});
        owner.push_back(c.k);
      }
      if (choices.empty())
        return fail(DASH_ERROR_ILLEGAL_SCHEDULE,
                    "auto: the schedule model deadlocks for every compiled policy");
      // The tie gap of the kernels' calibration (the first candidate's
      // manifest; AOT writes the same model into every manifest); it
      // favours G-independent orders for deterministic kernels only (every
      // candidate has the call's `deterministic`).
      const Manifest &first = rt->kernels[owner.front()];
      sched::Choice best =
          sched::pickBest(choices, first.modelTie, first.deterministic);
      for (size_t i = 0; i < choices.size(); ++i)
        if (choices[i].policy == best.policy)
          chosen = owner[i];
      if (rt->autoCache.size() > 1024)
        rt->autoCache.clear();
      rt->autoCache[key] = chosen;
    }
    for (const Cand &c : legal)
      if (c.k == chosen)
        pick = &c;
  }
  plan.kernel = pick->k;
  plan.policy = rt->kernels[pick->k].policy;
  plan.G = pick->G;
  plan.maxUnits = pick->maxUnits;
  plan.blocksPerSM = pick->blocks;
  plan.numSMs = view.known ? view.numSMs : 0;
  return DASH_SUCCESS;
}

// Validation + selection; no driver.
dash_status prepare(dash_runtime *rt, const dash_bwd_args *a, Plan &plan) {
  if (dash_status st = validateArgs(a, plan.shape))
    return st;
  if (dash_status st = selectCandidates(rt, a, plan.shape, plan.candidates))
    return st;
  // The workspace must serve every candidate: the largest of their layouts.
  // (A layout for the candidates' largest block sizes is not that: with a
  // larger block_m a kernel needs fewer semaphores, so a smaller-block
  // candidate could need more than it.)
  plan.ws = WsLayout();
  for (int k : plan.candidates) {
    WsLayout one = workspaceLayout(plan.shape, wsKernel(rt->kernels[k]));
    if (!one.ok)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  "problem too large: workspace size overflows");
    if (!plan.ws.ok || one.total > plan.ws.total)
      plan.ws = one;
  }
  // Validate the problem itself once more through the schedule library (same
  // limits the kernels' index math was written for).
  sched::Problem p = makeProblem(plan.shape, rt->kernels[plan.candidates[0]], 1);
  std::string err = sched::validate(p);
  if (!err.empty())
    return fail(DASH_ERROR_INVALID_ARGUMENT, err);
  return DASH_SUCCESS;
}

void fillInfo(dash_runtime *rt, const Plan &plan, dash_bwd_info *info) {
  if (!info)
    return;
  std::memset(info, 0, sizeof *info);
  info->policy = fromSched(plan.policy);
  info->num_units = plan.G;
  info->max_units = plan.maxUnits;
  info->blocks_per_sm = plan.blocksPerSM;
  info->num_sms = plan.numSMs;
  if (plan.kernel >= 0) {
    const Manifest &m = rt->kernels[plan.kernel];
    WsLayout ws = workspaceLayout(plan.shape, wsKernel(m));
    info->workspace_bytes = ws.total;
    info->block_m = int32_t(m.blockM);
    info->block_n = int32_t(m.blockN);
    info->threads = int32_t(m.threads);
    info->main_shared_bytes = m.main.sharedBytes;
    std::snprintf(info->kernel_name, sizeof info->kernel_name, "%s",
                  m.name.c_str());
  } else {
    info->workspace_bytes = plan.ws.total;
  }
}

// ---------------------------------------------------------------------------
// Driver side
// ---------------------------------------------------------------------------

#define DRV(call, what)                                                        \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      return fail(r_ == CUDA_ERROR_OUT_OF_MEMORY ? DASH_ERROR_OUT_OF_MEMORY    \
                                                 : DASH_ERROR_DRIVER,          \
                  rt->drv.describe(#call, r_) + what);                         \
  } while (0)

dash_status ensureDriver(dash_runtime *rt) {
  std::string err = rt->drv.load(rt->libcuda.empty() ? nullptr : rt->libcuda.c_str());
  if (!err.empty())
    return fail(rt->drv.handle && rt->drv.cuInit ? DASH_ERROR_DRIVER
                                                 : DASH_ERROR_NO_DRIVER,
                err);
  return DASH_SUCCESS;
}

dash_status currentContext(dash_runtime *rt, CtxState *&out) {
  CUcontext ctx = nullptr;
  DRV(rt->drv.cuCtxGetCurrent(&ctx), "");
  if (!ctx) {
    // Like the CUDA runtime (and PyTorch): use device 0's primary context.
    if (!rt->primary) {
      DRV(rt->drv.cuDeviceGet(&rt->primaryDev, 0), "");
      DRV(rt->drv.cuDevicePrimaryCtxRetain(&rt->primary, rt->primaryDev), "");
    }
    DRV(rt->drv.cuCtxSetCurrent(rt->primary), "");
    ctx = rt->primary;
  }
  for (CtxState &c : rt->ctxs)
    if (c.ctx == ctx) {
      out = &c;
      return DASH_SUCCESS;
    }
  CtxState c;
  c.ctx = ctx;
  DRV(rt->drv.cuCtxGetDevice(&c.dev), "");
  DRV(rt->drv.cuDeviceGetAttribute(&c.numSMs,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   c.dev), "");
  if (c.numSMs <= 0)
    return fail(DASH_ERROR_DRIVER, "device reports " + str(c.numSMs) + " SMs");
  rt->ctxs.push_back(std::move(c));
  out = &rt->ctxs.back();
  return DASH_SUCCESS;
}

dash_status ensureKernel(dash_runtime *rt, CtxState &c, int k) {
  if (c.kernels.count(k))
    return DASH_SUCCESS;
  const Manifest &m = rt->kernels[k];
  std::string image;
  if (!readFile(m.cubinPath, image) || image.empty())
    return fail(DASH_ERROR_MANIFEST, "cannot read cubin \"" + m.cubinPath +
                                         "\" named by " + m.path);
  CtxKernel ck;
  std::string where = " (kernel " + m.name + ", " + m.cubinPath + ")";
  DRV(rt->drv.cuModuleLoadData(&ck.module, image.data()), where);
  struct E {
    const KernelEntry &e;
    CUfunction *f;
  };
  for (E e : {E{m.preprocess, &ck.pre}, E{m.main, &ck.main},
              E{m.postprocess, &ck.post}}) {
    CUresult r = rt->drv.cuModuleGetFunction(e.f, ck.module, e.e.entry.c_str());
    if (r != CUDA_SUCCESS) {
      rt->drv.cuModuleUnload(ck.module);
      return fail(DASH_ERROR_DRIVER, rt->drv.describe("cuModuleGetFunction", r) +
                                         ": entry \"" + e.e.entry + "\"" + where);
    }
    // Opt in whenever dynamic shared memory is used: the kernel's own static
    // shared memory (the dynamic-smem symbol takes 1 B, HOPPER.md P4) counts
    // against the 48 KiB default too, so exactly 48 KiB dynamic would fail.
    if (e.e.sharedBytes > 0) {
      r = rt->drv.cuFuncSetAttribute(
          *e.f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          int(e.e.sharedBytes));
      if (r != CUDA_SUCCESS) {
        rt->drv.cuModuleUnload(ck.module);
        return fail(DASH_ERROR_DRIVER,
                    rt->drv.describe("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r) +
                        ": " + str(e.e.sharedBytes) + " bytes for \"" +
                        e.e.entry + "\"" + where);
      }
    }
  }
  CUresult r = rt->drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &ck.blocksPerSM, ck.main, int(m.threads), size_t(m.main.sharedBytes));
  if (r != CUDA_SUCCESS || ck.blocksPerSM <= 0) {
    rt->drv.cuModuleUnload(ck.module);
    if (r != CUDA_SUCCESS)
      return fail(DASH_ERROR_DRIVER,
                  rt->drv.describe("cuOccupancyMaxActiveBlocksPerMultiprocessor", r) + where);
    return fail(DASH_ERROR_DRIVER, "main kernel cannot be resident on this device "
                                   "(occupancy 0 with " + str(m.threads) +
                                       " threads, " + str(m.main.sharedBytes) +
                                       " B shared)" + where);
  }
  c.kernels[k] = ck;
  return DASH_SUCCESS;
}

dash_status ensureWorkspace(dash_runtime *rt, CtxState &c, CUstream stream,
                            int64_t bytes, CUdeviceptr &out) {
  Workspace &w = c.workspace[stream];
  if (w.bytes < bytes) {
    if (w.ptr) {
      // Earlier calls on this stream may still read it.
      DRV(rt->drv.cuStreamSynchronize(stream), "");
      DRV(rt->drv.cuMemFree(w.ptr), "");
      w = Workspace();
    }
    // Grow geometrically so a sweep of sizes does not reallocate every call.
    int64_t want = std::max(bytes, w.bytes + w.bytes / 2);
    CUresult r = rt->drv.cuMemAlloc(&w.ptr, size_t(want));
    if (r != CUDA_SUCCESS) {
      want = bytes;
      DRV(rt->drv.cuMemAlloc(&w.ptr, size_t(want)),
          ": workspace of " + str(want) + " bytes");
    }
    w.bytes = want;
  }
  out = w.ptr;
  return DASH_SUCCESS;
}

// Under CUDA-graph capture the thread's capture mode may forbid "potentially
// unsafe" calls (cuMemHostAlloc, a module load): PyTorch captures in the
// global mode. Libraries make such calls in the relaxed mode for the
// duration of the call (cuThreadExchangeStreamCaptureMode), then restore it.
struct RelaxedCapture {
  dash_runtime *rt = nullptr;
  CUstreamCaptureMode saved = CU_STREAM_CAPTURE_MODE_RELAXED;
  RelaxedCapture(dash_runtime *r, bool capturing) {
    if (capturing && r->drv.cuThreadExchangeStreamCaptureMode(&saved) == CUDA_SUCCESS)
      rt = r;
  }
  ~RelaxedCapture() {
    if (rt)
      rt->drv.cuThreadExchangeStreamCaptureMode(&saved);
  }
};

constexpr size_t kPinnedChunk = 64 << 10;

/// A pinned host slot of `bytes` that no later call reuses (see pinnedChunks).
dash_status pinnedSlot(dash_runtime *rt, size_t bytes, void *&out) {
  bytes = (bytes + 127) / 128 * 128;
  if (rt->pinnedChunks.empty() || rt->pinnedUsed + bytes > kPinnedChunk) {
    void *chunk = nullptr;
    DRV(rt->drv.cuMemHostAlloc(&chunk, std::max(kPinnedChunk, bytes),
                               CU_MEMHOSTALLOC_PORTABLE),
        " (pinned tensor-map slots for CUDA-graph capture)");
    rt->pinnedChunks.push_back(chunk);
    rt->pinnedUsed = 0;
  }
  out = static_cast<char *>(rt->pinnedChunks.back()) + rt->pinnedUsed;
  rt->pinnedUsed += bytes;
  return DASH_SUCCESS;
}

// Argument storage: every kernel parameter in its own 8-byte slot so the
// void* array can point into it.
struct ParamPack {
  std::vector<uint64_t> slots;
  std::vector<void *> ptrs;
  void reserve(size_t n) { slots.reserve(n); }
  void push64(uint64_t v) { slots.push_back(v); }
  void pushF32(float f) {
    uint64_t v = 0;
    std::memcpy(&v, &f, sizeof f);
    slots.push_back(v);
  }
  void **finish() {
    ptrs.clear();
    for (uint64_t &s : slots)
      ptrs.push_back(&s);
    return ptrs.data();
  }
};

void pushMemref(ParamPack &pp, uint64_t ptr, int rank, const int64_t *sizes,
                const int64_t *strides) {
  pp.push64(ptr); // allocated
  pp.push64(ptr); // aligned
  pp.push64(0);   // offset
  for (int i = 0; i < rank; ++i)
    pp.push64(uint64_t(sizes[i]));
  for (int i = 0; i < rank; ++i)
    pp.push64(uint64_t(strides[i]));
}

void packParams(const Manifest &m, const dash_bwd_args *a, const WsLayout &ws,
                CUdeviceptr wsBase, CUdeviceptr debugRecord, ParamPack &pp) {
  pp.reserve(m.params.size() * 11);
  for (const Param &p : m.params) {
    const dash_tensor *t = nullptr;
    switch (p.role) {
    case Role::Q: t = &a->q; break;
    case Role::K: t = &a->k; break;
    case Role::V: t = &a->v; break;
    case Role::O: t = &a->o; break;
    case Role::DO: t = &a->dO; break;
    case Role::Lse: t = &a->lse; break;
    case Role::DQ: t = &a->dq; break;
    case Role::DK: t = &a->dk; break;
    case Role::DV: t = &a->dv; break;
    case Role::Scale: pp.pushF32(a->scale); continue;
    case Role::Debug: {
      const int64_t words = kDebugWords, unit = 1;
      pushMemref(pp, uint64_t(debugRecord), 1, &words, &unit);
      continue;
    }
    default: break;
    }
    if (t) {
      pushMemref(pp, uint64_t(reinterpret_cast<uintptr_t>(t->data)), p.rank,
                 t->shape, t->strides);
      continue;
    }
    // Workspace: contiguous row-major.
    const int64_t *sz = ws.sizes[int(p.role)];
    int64_t strides[4];
    int64_t st = 1;
    for (int i = p.rank - 1; i >= 0; --i) {
      strides[i] = st;
      st *= sz[i];
    }
    pushMemref(pp, uint64_t(wsBase + CUdeviceptr(ws.offset[int(p.role)])),
               p.rank, sz, strides);
  }
}

// Q, K, V, dO as 4-D tiled TMA maps over their [B, S, H, D] views (the
// driver wants the innermost dimension first: D, S, H, B; strides of the
// outer three in bytes; the runtime's stride rules keep them multiples of
// 16). Box: 64 columns (one 128-byte panel of the 128B swizzle the kernels'
// shared tiles use) x the kernel's Q or KV tile rows; rows past S read as
// zeros. Map 4 is the workspace's f32 dq_accum [B, H, S_q, D] (contiguous),
// the destination of the dQ reduce-adds, seen as 5-D (column within an
// 8-column panel, row, panel, head, batch; the panel stride, 32 bytes, is
// below the row's): one box is a whole Q tile stored panel by panel, the
// kernels' unswizzled, bank-conflict-free staging layout; rows past S_q are
// not written.
// Kernels with the "tiles" dq_accum layout (Manifest::DqAccumMap::Tiles)
// add whole tiles with 1-D bulk reduce-adds and read no map 4: it stays
// zero.
dash_status encodeTensorMaps(dash_runtime *rt, const Manifest &m,
                             const dash_bwd_args *a, const WsLayout &ws,
                             CUdeviceptr wsBase, CUtensorMap *out) {
  const CUdeviceptr dqAccum = wsBase + CUdeviceptr(ws.offset[int(Role::DQAccum)]);
  // Maps 0-3 and, for "dkdv_bulk" kernels, 7 and 8 (the dK/dV stores):
  // the caller's tensors, 64-column boxes of the kernel's tile rows.
  const dash_tensor *ts[6] = {&a->q, &a->k, &a->v, &a->dO, &a->dk, &a->dv};
  const char *names[6] = {"q", "k", "v", "dO", "dk", "dv"};
  const int64_t rows[6] = {m.blockM, m.blockN, m.blockN, m.blockM, m.blockN,
                           m.blockN};
  const int slots[6] = {0, 1, 2, 3, 7, 8};
  const CUtensorMapDataType type = a->q.dtype == DASH_DTYPE_BF16
                                       ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint64_t eltBytes = 2;
  auto encode = [&](CUtensorMap *map, CUtensorMapDataType t, void *base,
                    cuuint32_t rank, const cuuint64_t *dims,
                    const cuuint64_t *strides, const cuuint32_t *box,
                    CUtensorMapSwizzle swizzle, const char *what) {
    cuuint32_t unit[5] = {1, 1, 1, 1, 1};
    CUresult r = rt->drv.cuTensorMapEncodeTiled(
        map, t, rank, base, dims, strides, box, unit,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      return fail(DASH_ERROR_DRIVER,
                  rt->drv.describe("cuTensorMapEncodeTiled", r) + " for '" +
                      what + "' of " + m.name);
    return DASH_SUCCESS;
  };
  for (int i = 0; i < (m.dkdvBulk ? 6 : 4); ++i) {
    const dash_tensor &t = *ts[i];
    cuuint64_t dims[4] = {cuuint64_t(t.shape[3]), cuuint64_t(t.shape[1]),
                          cuuint64_t(t.shape[2]), cuuint64_t(t.shape[0])};
    // A size-1 dimension's stride is never used and not validated (PyTorch
    // leaves any value there); the driver still wants a multiple of 16:
    // give it the tensor's byte extent, rounded up.
    cuuint64_t extent = cuuint64_t(t.shape[3]) * eltBytes;
    for (int d = 0; d < 3; ++d)
      if (t.shape[d] > 1)
        extent += cuuint64_t(t.shape[d] - 1) * cuuint64_t(t.strides[d]) * eltBytes;
    extent = (extent + 15) / 16 * 16;
    auto stride = [&](int d) {
      return t.shape[d] > 1 ? cuuint64_t(t.strides[d]) * eltBytes : extent;
    };
    cuuint64_t strides[3] = {stride(1), stride(2), stride(0)};
    cuuint32_t box[4] = {64, cuuint32_t(rows[i]), 1, 1};
    if (dash_status st = encode(&out[slots[i]], type, t.data, 4, dims, strides,
                                box, CU_TENSOR_MAP_SWIZZLE_128B, names[i]))
      return st;
  }
  const cuuint64_t D = cuuint64_t(a->q.shape[3]), Sq = cuuint64_t(a->q.shape[1]),
                   Hq = cuuint64_t(a->q.shape[2]), B = cuuint64_t(a->q.shape[0]);
  dash_status st;
  if (m.dqAccumMap == Manifest::DqAccumMap::Tiles) {
    // Bulk reduce-adds: map 4 is not read (left zero).
    std::memset(&out[4], 0, sizeof(CUtensorMap));
    st = DASH_SUCCESS;
  } else if (m.dqAccumMap == Manifest::DqAccumMap::Swizzle128x32) { // older kernels
    cuuint64_t dims[4] = {D, Sq, Hq, B};
    cuuint64_t strides[3] = {D * 4, Sq * D * 4, Hq * Sq * D * 4};
    cuuint32_t box[4] = {32, cuuint32_t(m.blockM), 1, 1};
    st = encode(&out[4], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                reinterpret_cast<void *>(dqAccum), 4, dims, strides, box,
                CU_TENSOR_MAP_SWIZZLE_128B, "dq_accum");
  } else {
    cuuint64_t dims[5] = {8, Sq, D / 8, Hq, B};
    cuuint64_t strides[4] = {D * 4, 32, Sq * D * 4, Hq * Sq * D * 4};
    cuuint32_t box[5] = {8, cuuint32_t(m.blockM), cuuint32_t(D / 8), 1, 1};
    st = encode(&out[4], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                reinterpret_cast<void *>(dqAccum), 5, dims, strides, box,
                CU_TENSOR_MAP_SWIZZLE_NONE, "dq_accum");
  }
  if (st)
    return st;
  // Maps 5, 6: lse_log2 and dPsum [B, H, S_q] of the workspace (rows padded
  // to 4 elements, workspaceLayout), boxes of one Q tile; zeros past S_q.
  const Role stats[2] = {Role::LseLog2, Role::DPSum};
  const char *statNames[2] = {"lse_log2", "dpsum"};
  for (int i = 0; i < 2; ++i) {
    const CUdeviceptr at = wsBase + CUdeviceptr(ws.offset[int(stats[i])]);
    const cuuint64_t rows = cuuint64_t(ws.sizes[int(stats[i])][2]);
    if (stats[i] == Role::DPSum && m.dpsFold != Manifest::DpsFold::None) {
      // dps_fold: a head's f32 row of S holds bf16 rows hi and lo of S; a
      // box is both rows of 64 Q rows (2 x 128 B), 128B-swizzled as the
      // kernel's atoms read them ("atoms"), or of block_m Q rows as they
      // are ("rows").
      const bool atoms = m.dpsFold == Manifest::DpsFold::Atoms;
      cuuint64_t dims[4] = {Sq, 2, Hq, B};
      cuuint64_t strides[3] = {rows * 2, rows * 4, Hq * rows * 4};
      cuuint32_t box[4] = {atoms ? 64u : cuuint32_t(m.blockM), 2, 1, 1};
      if ((st = encode(&out[5 + i], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                       reinterpret_cast<void *>(at), 4, dims, strides, box,
                       atoms ? CU_TENSOR_MAP_SWIZZLE_128B
                             : CU_TENSOR_MAP_SWIZZLE_NONE,
                       "dpsum (hi / lo)")))
        return st;
      continue;
    }
    cuuint64_t dims[3] = {Sq, Hq, B};
    cuuint64_t strides[2] = {rows * 4, Hq * rows * 4};
    cuuint32_t box[3] = {cuuint32_t(m.blockM), 1, 1};
    if ((st = encode(&out[5 + i], CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                     reinterpret_cast<void *>(at), 3, dims, strides, box,
                     CU_TENSOR_MAP_SWIZZLE_NONE, statNames[i])))
      return st;
  }
  return DASH_SUCCESS;
}

int64_t gridStride(int64_t work, int64_t threads, int numSMs) {
  int64_t g = (work + threads - 1) / threads;
  return std::max<int64_t>(1, std::min<int64_t>(g, int64_t(4) * numSMs));
}

/// `programmatic`: a programmatic dependent launch (PDL) of a kernel that
/// waits for the previous one itself (griddepcontrol.wait), so its CTAs may
/// start while that one's last CTAs still run.
dash_status launchOne(dash_runtime *rt, CUfunction f, const char *which,
                      const Manifest &m, int64_t grid, int64_t smem,
                      CUstream stream, void **params,
                      bool programmatic = false) {
  CUresult r;
  if (programmatic) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = unsigned(grid);
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = unsigned(m.threads);
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = unsigned(smem);
    config.hStream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    r = rt->drv.cuLaunchKernelEx(&config, f, params, nullptr);
  } else {
    r = rt->drv.cuLaunchKernel(f, unsigned(grid), 1, 1, unsigned(m.threads), 1,
                               1, unsigned(smem), stream, params, nullptr);
  }
  if (r != CUDA_SUCCESS)
    return fail(DASH_ERROR_DRIVER,
                rt->drv.describe(programmatic ? "cuLaunchKernelEx"
                                              : "cuLaunchKernel",
                                 r) +
                    " (" + which + " of " +
                    m.name + ", grid " + str(grid) + ", block " +
                    str(m.threads) + ", smem " + str(smem) + ")");
  if (rt->debug) {
    r = rt->drv.cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS)
      return fail(DASH_ERROR_DRIVER, rt->drv.describe("cuStreamSynchronize", r) +
                                         " after " + which + " of " + m.name);
  }
  return DASH_SUCCESS;
}

} // namespace

// ---------------------------------------------------------------------------
// C API
// ---------------------------------------------------------------------------

extern "C" {

dash_status dash_runtime_create(const char *kernel_dir, dash_runtime **out) {
  return dash_runtime_create_ex(kernel_dir, nullptr, out);
}

dash_status dash_runtime_create_ex(const char *kernel_dir,
                                   const char *libcuda_path,
                                   dash_runtime **out) {
  tlsError.clear();
  if (!out)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  const char *dir = kernel_dir && *kernel_dir ? kernel_dir : std::getenv("DASH_KERNEL_DIR");
  if (!dir || !*dir)
    dir = "build/kernels";
  auto *rt = new dash_runtime;
  rt->dir = dir;
  rt->libcuda = libcuda_path ? libcuda_path : "";
  std::string err = loadManifestDir(rt->dir, rt->kernels);
  if (!err.empty()) {
    delete rt;
    return fail(DASH_ERROR_MANIFEST, err);
  }
  for (const Manifest &m : rt->kernels)
    rt->descriptions.push_back(m.name + ": " + m.configString());
  *out = rt;
  return DASH_SUCCESS;
}

void dash_runtime_destroy(dash_runtime *rt) {
  if (!rt)
    return;
  if (rt->drv.loaded() && rt->debugHost)
    rt->drv.cuMemFreeHost(rt->debugHost);
  if (rt->drv.loaded()) {
    for (CtxState &c : rt->ctxs) {
      // The context may be gone already (user destroyed it): then skip.
      if (rt->drv.cuCtxPushCurrent(c.ctx) != CUDA_SUCCESS)
        continue;
      // Captured calls' tensor-map slots are read by every replay: wait for
      // the context's work (a replay in flight included) before freeing them.
      if (!rt->pinnedChunks.empty())
        rt->drv.cuCtxSynchronize();
      for (auto &w : c.workspace)
        if (w.second.ptr) {
          rt->drv.cuStreamSynchronize(w.first);
          rt->drv.cuMemFree(w.second.ptr);
        }
      for (auto &k : c.kernels)
        rt->drv.cuModuleUnload(k.second.module);
      CUcontext popped;
      rt->drv.cuCtxPopCurrent(&popped);
    }
    // The slots are portable pinned memory: freed with any live context current.
    for (CtxState &c : rt->ctxs) {
      if (rt->pinnedChunks.empty() || rt->drv.cuCtxPushCurrent(c.ctx) != CUDA_SUCCESS)
        continue;
      for (void *chunk : rt->pinnedChunks)
        rt->drv.cuMemFreeHost(chunk);
      rt->pinnedChunks.clear();
      CUcontext popped;
      rt->drv.cuCtxPopCurrent(&popped);
    }
    if (rt->primary)
      rt->drv.cuDevicePrimaryCtxRelease(rt->primaryDev);
  }
  delete rt;
}

const char *dash_runtime_last_error(const dash_runtime *) {
  return tlsError.c_str();
}

const char *dash_status_name(dash_status s) {
  switch (s) {
  case DASH_SUCCESS: return "DASH_SUCCESS";
  case DASH_ERROR_INVALID_ARGUMENT: return "DASH_ERROR_INVALID_ARGUMENT";
  case DASH_ERROR_UNSUPPORTED: return "DASH_ERROR_UNSUPPORTED";
  case DASH_ERROR_NO_KERNEL: return "DASH_ERROR_NO_KERNEL";
  case DASH_ERROR_ILLEGAL_SCHEDULE: return "DASH_ERROR_ILLEGAL_SCHEDULE";
  case DASH_ERROR_TOO_MANY_UNITS: return "DASH_ERROR_TOO_MANY_UNITS";
  case DASH_ERROR_MANIFEST: return "DASH_ERROR_MANIFEST";
  case DASH_ERROR_NO_DRIVER: return "DASH_ERROR_NO_DRIVER";
  case DASH_ERROR_DRIVER: return "DASH_ERROR_DRIVER";
  case DASH_ERROR_OUT_OF_MEMORY: return "DASH_ERROR_OUT_OF_MEMORY";
  case DASH_ERROR_HANG: return "DASH_ERROR_HANG";
  }
  return "DASH_ERROR_UNKNOWN";
}

dash_status dash_runtime_set_device_props(dash_runtime *rt,
                                          const dash_device_props *props) {
  tlsError.clear();
  if (!rt)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "rt is NULL");
  std::lock_guard<std::mutex> lock(rt->mu);
  if (!props) {
    rt->hasOverride = false;
    return DASH_SUCCESS;
  }
  if (props->num_sms <= 0 || props->blocks_per_sm <= 0)
    return fail(DASH_ERROR_INVALID_ARGUMENT,
                "props.num_sms and props.blocks_per_sm must be > 0, got " +
                    str(props->num_sms) + " and " + str(props->blocks_per_sm));
  int64_t units = int64_t(props->num_sms) * props->blocks_per_sm;
  if (units > kInt32Max)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "props: num_sms * blocks_per_sm exceeds 2^31-1");
  rt->hasOverride = true;
  rt->props = *props;
  return DASH_SUCCESS;
}

dash_status dash_runtime_set_debug(dash_runtime *rt, int32_t enable) {
  tlsError.clear();
  if (!rt)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "rt is NULL");
  std::lock_guard<std::mutex> lock(rt->mu);
  rt->debug = enable != 0;
  return DASH_SUCCESS;
}

int32_t dash_runtime_num_kernels(const dash_runtime *rt) {
  return rt ? int32_t(rt->kernels.size()) : 0;
}

const char *dash_runtime_kernel_description(const dash_runtime *rt,
                                            int32_t index) {
  if (!rt || index < 0 || size_t(index) >= rt->descriptions.size())
    return nullptr;
  return rt->descriptions[size_t(index)].c_str();
}

dash_status dash_attention_bwd_check(dash_runtime *rt,
                                     const dash_bwd_args *args,
                                     dash_bwd_info *out_info) {
  tlsError.clear();
  if (!rt)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "rt is NULL");
  std::lock_guard<std::mutex> lock(rt->mu);
  Plan plan;
  if (dash_status st = prepare(rt, args, plan))
    return st;
  DeviceView view = rt->lastSeen;
  if (rt->hasOverride) {
    view.known = true;
    view.numSMs = rt->props.num_sms;
    view.overrideBlocks = rt->props.blocks_per_sm;
  }
  if (dash_status st = resolvePlan(rt, args, view, plan))
    return st;
  fillInfo(rt, plan, out_info);
  return DASH_SUCCESS;
}

dash_status dash_workspace_bytes(dash_runtime *rt, const dash_bwd_args *args,
                                 int64_t *out_bytes) {
  tlsError.clear();
  if (!rt)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "rt is NULL");
  if (!out_bytes)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "out_bytes is NULL");
  std::lock_guard<std::mutex> lock(rt->mu);
  Plan plan;
  if (dash_status st = prepare(rt, args, plan))
    return st;
  *out_bytes = plan.ws.total; // the largest candidate kernel's layout
  return DASH_SUCCESS;
}

dash_status dash_attention_bwd(dash_runtime *rt, const dash_bwd_args *args,
                               void *stream_, dash_bwd_info *out_info) {
  tlsError.clear();
  if (!rt)
    return fail(DASH_ERROR_INVALID_ARGUMENT, "rt is NULL");
  std::lock_guard<std::mutex> lock(rt->mu);
  CUstream stream = static_cast<CUstream>(stream_);
  // 1. Everything that needs no driver.
  Plan plan;
  if (dash_status st = prepare(rt, args, plan))
    return st;
  // 2. Driver, context, modules and occupancy of every candidate.
  if (dash_status st = ensureDriver(rt))
    return st;
  CtxState *ctx = nullptr;
  if (dash_status st = currentContext(rt, ctx))
    return st;
  // Under CUDA-graph capture nothing below may synchronize or allocate
  // outside the stream (module loads and pinned slots run relaxed; the
  // workspace is a graph allocation: step 4).
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  DRV(rt->drv.cuStreamIsCapturing(stream, &capture), " (capture query)");
  const bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  DeviceView view;
  view.known = true;
  view.numSMs = ctx->numSMs;
  {
    RelaxedCapture relax(rt, capturing);
    for (int k : plan.candidates) {
      if (dash_status st = ensureKernel(rt, *ctx, k))
        return st;
      view.blocksPerSM[k] = ctx->kernels[k].blocksPerSM;
    }
  }
  if (rt->hasOverride) {
    view.numSMs = rt->props.num_sms;
    view.overrideBlocks = rt->props.blocks_per_sm;
  } else {
    rt->lastSeen.known = true;
    rt->lastSeen.numSMs = view.numSMs;
    for (auto &kv : view.blocksPerSM)
      rt->lastSeen.blocksPerSM[kv.first] = kv.second;
  }
  // 3. G-dependent checks and auto.
  if (dash_status st = resolvePlan(rt, args, view, plan))
    return st;
  const Manifest &m = rt->kernels[plan.kernel];
  const CtxKernel &ck = ctx->kernels[plan.kernel];
  WsLayout ws = workspaceLayout(plan.shape, wsKernel(m));
  // Debug kernels synchronize after the launch to read their hang record,
  // debug mode after every launch: neither can be captured.
  const bool debugKernel = m.hasDebugRecord();
  if (capturing && (debugKernel || rt->debug))
    return fail(DASH_ERROR_UNSUPPORTED,
                std::string(debugKernel ? "kernel " + m.name + " is a debug kernel"
                                        : "the runtime is in debug mode") +
                    ": it synchronizes after the launches, which a CUDA graph "
                    "cannot capture; capture release kernels with debug mode off");
  // 4. Workspace (the preprocess kernel zeroes what it needs). Captured: a
  // graph allocation per call (its address is the same at every replay;
  // freed after the call's kernels), because the per-stream cache may be
  // freed or regrown by later calls the graph knows nothing of.
  CUdeviceptr wsBase = 0;
  struct GraphWorkspace {
    dash_runtime *rt;
    CUstream stream;
    CUdeviceptr ptr = 0;
    CUresult release() {
      CUresult r = ptr ? rt->drv.cuMemFreeAsync(ptr, stream) : CUDA_SUCCESS;
      ptr = 0;
      return r;
    }
    ~GraphWorkspace() { release(); }
  } graphWs{rt, stream};
  if (capturing) {
    DRV(rt->drv.cuMemAllocAsync(&wsBase, size_t(ws.total), stream),
        ": workspace of " + str(ws.total) + " bytes under CUDA-graph capture");
    graphWs.ptr = wsBase;
  } else if (dash_status st =
                 ensureWorkspace(rt, *ctx, stream, ws.total, wsBase)) {
    return st;
  }
  if (rt->debug)
    DRV(rt->drv.cuMemsetD8Async(wsBase, 0, size_t(ws.total), stream), "");
  // TMA kernels read their tensor maps from the workspace (stream-ordered
  // before the launches). Eager calls copy from this frame (pageable: the
  // driver stages it before returning); a captured copy is a graph node that
  // reads its source at every replay, so it reads a pinned slot of its own.
  if (m.usesTensorMaps()) {
    CUtensorMap maps[kTensorMapsDkdvBulk];
    if (dash_status st = encodeTensorMaps(rt, m, args, ws, wsBase, maps))
      return st;
    const size_t bytes = tensorMapCount(m.dkdvBulk) * sizeof(CUtensorMap);
    const void *src = maps;
    if (capturing) {
      void *slot = nullptr;
      RelaxedCapture relax(rt, true);
      if (dash_status st = pinnedSlot(rt, bytes, slot))
        return st;
      std::memcpy(slot, maps, bytes);
      src = slot;
    }
    DRV(rt->drv.cuMemcpyHtoDAsync(
            wsBase + CUdeviceptr(ws.offset[int(Role::TensorMaps)]), src,
            bytes, stream),
        " (tensor maps)");
  }
  // 5. Launch.
  if (debugKernel) {
    if (!rt->debugHost) {
      void *host = nullptr;
      DRV(rt->drv.cuMemHostAlloc(&host, kDebugWords * sizeof(int64_t),
                                 CU_MEMHOSTALLOC_DEVICEMAP),
          " (debug record)");
      CUdeviceptr dev = 0;
      DRV(rt->drv.cuMemHostGetDevicePointer(&dev, host, 0), " (debug record)");
      rt->debugHost = static_cast<int64_t *>(host);
      rt->debugDev = dev;
    }
    std::memset(rt->debugHost, 0, kDebugWords * sizeof(int64_t));
  }
  ParamPack pp;
  packParams(m, args, ws, wsBase, rt->debugDev, pp);
  void **params = pp.finish();
  const Shape &s = plan.shape;
  int sms = ctx->numSMs;
  int64_t preWork = std::max(s.B * s.Hq * s.Sq * s.D, s.B * s.Hq * s.Sk * s.D);
  int64_t postWork = std::max(s.B * s.Sq * s.Hq * s.D, s.B * s.Hq * s.Sk * s.D);
  dash_status launched =
      launchOne(rt, ck.pre, "preprocess", m, gridStride(preWork, m.threads, sms),
                m.preprocess.sharedBytes, stream, params);
  if (launched == DASH_SUCCESS)
    launched = launchOne(rt, ck.main, "main", m, plan.G, m.main.sharedBytes,
                         stream, params, /*programmatic=*/m.pdl);
  // dq_in_main kernels (dkdv_direct, the manifest checks) wrote dq; their
  // postprocess only sums GQA's dk/dv.
  const bool post = !(m.dqInMain && s.Hq == s.Hkv);
  if (launched == DASH_SUCCESS && post)
    launched = launchOne(rt, ck.post, "postprocess", m,
                         gridStride(postWork, m.threads, sms),
                         m.postprocess.sharedBytes, stream, params);
  // Debug kernels: wait, then turn a trapped wait into a message (a failed
  // launch or sync after a trap is reported as the hang it is).
  if (debugKernel) {
    CUresult r = rt->drv.cuStreamSynchronize(stream);
    if (rt->debugHost[0] == kDebugMagic) {
      const int64_t *w = rt->debugHost;
      std::string wait;
      if (w[5] < 0) { // a TMA kernel's mbarrier (rank = -1 - barrier index)
        static const char *const kBarriers[] = {"FULL_Q[0]", "FULL_Q[1]",
                                                "EMPTY_Q[0]", "EMPTY_Q[1]",
                                                "FULL_KV", "EMPTY_KV",
                                                "EMPTY_DS", "FULL_DS",
                                                "EPI_FULL", "EPI_EMPTY"};
        const int64_t which = -1 - w[5];
        wait = std::string("mbarrier ") +
               (which < int64_t(std::size(kBarriers)) ? kBarriers[which]
                                                      : "#" + str(which)) +
               " (phase parity " + str(w[6]) + ") at b=" + str(w[2]) +
               ", h=" + str(w[3]) + ", hand-off " + str(w[4]) + " for " +
               str(w[7]) + " polls: a load or a release never arrived";
      } else {
        wait = "dQ row tile (b=" + str(w[2]) + ", h=" + str(w[3]) +
               ", q=" + str(w[4]) + ") for rank " + str(w[5]) +
               " but its semaphore stayed at " + str(w[6]) + " after " +
               str(w[7]) + " polls: the rank order cannot complete";
      }
      return fail(DASH_ERROR_HANG, "hang detected by debug kernel " + m.name +
                                       ": unit " + str(w[1]) + " waited on " +
                                       wait +
                                       " (the CUDA context is lost after "
                                       "the trap)");
    }
    if (launched != DASH_SUCCESS)
      return launched;
    if (r != CUDA_SUCCESS)
      return fail(DASH_ERROR_DRIVER, rt->drv.describe("cuStreamSynchronize", r) +
                                         " after the debug kernels of " +
                                         m.name);
  }
  if (launched != DASH_SUCCESS)
    return launched;
  if (CUresult r = graphWs.release(); r != CUDA_SUCCESS)
    return fail(DASH_ERROR_DRIVER, rt->drv.describe("cuMemFreeAsync", r) +
                                       " (the captured workspace)");
  fillInfo(rt, plan, out_info);
  if (out_info)
    out_info->workspace_bytes = ws.total;
  return DASH_SUCCESS;
}

const char *dash_policy_name(dash_policy p) {
  int32_t raw = rawEnum(p);
  if (raw == DASH_POLICY_AUTO)
    return "auto";
  if (raw < DASH_POLICY_AUTO || raw > DASH_POLICY_SYMMETRIC_SHIFT)
    return "unknown";
  return sched::policyName(toSched(p));
}

int32_t dash_policy_parse(const char *name, dash_policy *out) {
  if (!name || !out)
    return 0;
  std::string s = name;
  std::replace(s.begin(), s.end(), '_', '-');
  auto p = sched::parsePolicy(s);
  if (!p)
    return 0;
  *out = fromSched(*p);
  return 1;
}

} // extern "C"
