//===- RuntimeImpl.h - The runtime's state and its internal steps ---------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// What the runtime's pieces share: the runtime object behind the C API's
// opaque handle, the plan of one call, and the steps of a call, each in a
// file of its own:
//   Args.cpp       argument validation (no manifests, no driver)
//   Workspace.cpp  the workspace layout a kernel needs for a shape
//   Plan.cpp       kernel selection, co-residency, legality and auto
//   Context.cpp    driver, context, modules, workspace and pinned memory
//   TensorMaps.cpp the TMA descriptors of a call
//   Launch.cpp     kernel parameters, the three launches, the hang record
//   Runtime.cpp    the C API, in that order of work
// Private to lib/Runtime: nothing here is exported (hidden visibility and
// dash_runtime.map).
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_RUNTIME_RUNTIMEIMPL_H
#define DASH_LIB_RUNTIME_RUNTIMEIMPL_H

#include "dash/Runtime/Driver.h"
#include "dash/Runtime/Manifest.h"
#include "dash/Runtime/Runtime.h"

#include "dash/Schedule/Schedules.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dash::rt::impl {

namespace sched = dash::sched;

/// The calling thread's last error (dash_runtime_last_error).
extern thread_local std::string tlsError;

/// Records `msg` as the thread's last error and returns `s`.
dash_status fail(dash_status s, const std::string &msg);

inline std::string str(int64_t v) { return std::to_string(v); }

constexpr int64_t kInt32Max = INT32_MAX;

/// The raw integer of a C enum field. Callers may pass any int; loading an
/// out-of-range value as the C++ enum type is undefined behaviour (UBSan's
/// -fsanitize=enum; fuzz/regressions/runtime-enum-ub.cpp), so every range
/// check reads the bits as an int first.
template <typename E> int32_t rawEnum(const E &e) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized here");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

//===----------------------------------------------------------------------===//
// Arguments (Args.cpp)
//===----------------------------------------------------------------------===//

struct Shape {
  int64_t B, Sq, Sk, Hq, Hkv, D;
  dash_dtype dtype;
};

/// Every rule on `a` that needs no manifest; fills `s` from q and k.
dash_status validateArgs(const dash_bwd_args *a, Shape &s);

sched::Policy toSched(dash_policy p);
dash_policy fromSched(sched::Policy p);

//===----------------------------------------------------------------------===//
// Workspace layout (Workspace.cpp)
//===----------------------------------------------------------------------===//

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
WsKernel wsKernel(const Manifest &m);
WsLayout workspaceLayout(const Shape &s, const WsKernel &k);

/// The seven maps (q, k, v, dO loads; dq_accum reduce-adds; lse_log2, dPsum
/// loads) and, for "dkdv_bulk" kernels, dk and dv (stores), 128 bytes each.
constexpr int64_t kTensorMaps = 7, kTensorMapsDkdvBulk = 9;
inline int64_t tensorMapCount(bool dkdvBulk) {
  return dkdvBulk ? kTensorMapsDkdvBulk : kTensorMaps;
}

//===----------------------------------------------------------------------===//
// The runtime object and a call's plan
//===----------------------------------------------------------------------===//

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

/// The record layout debug kernels write (convert-dash-to-gpu DebugWord):
/// magic, unit, b, h, q, expected rank, seen value, polls.
constexpr int64_t kDebugWords = 8;
constexpr int64_t kDebugMagic = 0xDA5400DE;

} // namespace dash::rt::impl

struct dash_runtime {
  std::string dir, libcuda;
  std::vector<dash::rt::Manifest> kernels;
  std::vector<std::string> descriptions;
  dash::rt::Driver drv;
  std::mutex mu;
  bool hasOverride = false;
  dash_device_props props{};
  bool debug = false;
  std::vector<dash::rt::impl::CtxState> ctxs;
  CUcontext primary = nullptr;
  CUdevice primaryDev = 0;
  dash::rt::impl::DeviceView lastSeen; // from the last launch, for check()
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

namespace dash::rt::impl {

//===----------------------------------------------------------------------===//
// Selection (Plan.cpp)
//===----------------------------------------------------------------------===//

/// Validation and selection, no driver: the shape, every candidate kernel
/// (all policies for auto) and a workspace layout that serves them all.
dash_status prepare(dash_runtime *rt, const dash_bwd_args *a, Plan &plan);

/// The G-dependent part: co-residency, legality, auto. `view` says what is
/// known about the device; unknown G skips what needs it (check() only).
dash_status resolvePlan(dash_runtime *rt, const dash_bwd_args *a,
                        const DeviceView &view, Plan &plan);

void fillInfo(dash_runtime *rt, const Plan &plan, dash_bwd_info *info);

//===----------------------------------------------------------------------===//
// Driver side (Context.cpp, TensorMaps.cpp, Launch.cpp)
//===----------------------------------------------------------------------===//

/// A failed driver call as the runtime's error: out of memory or a driver
/// error, the call and `what` in the message.
#define DASH_DRV(call, what)                                                   \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS)                                                    \
      return ::dash::rt::impl::fail(r_ == CUDA_ERROR_OUT_OF_MEMORY             \
                                        ? DASH_ERROR_OUT_OF_MEMORY             \
                                        : DASH_ERROR_DRIVER,                   \
                                    rt->drv.describe(#call, r_) + what);       \
  } while (0)

dash_status ensureDriver(dash_runtime *rt);

/// The calling thread's context (device 0's primary one if none, as the
/// CUDA runtime does) and its state.
dash_status currentContext(dash_runtime *rt, CtxState *&out);

/// Loads every candidate's module in `c` (relaxed under capture) and records
/// its occupancy in `view`.
dash_status loadCandidates(dash_runtime *rt, CtxState &c, const Plan &plan,
                           bool capturing, DeviceView &view);

/// This stream's cached workspace, grown to at least `bytes`.
dash_status ensureWorkspace(dash_runtime *rt, CtxState &c, CUstream stream,
                            int64_t bytes, CUdeviceptr &out);

/// A pinned host slot of `bytes` that no later call reuses (pinnedChunks).
dash_status pinnedSlot(dash_runtime *rt, size_t bytes, void *&out);

/// Under CUDA-graph capture the thread's capture mode may forbid
/// "potentially unsafe" calls (cuMemHostAlloc, a module load): PyTorch
/// captures in the global mode. Libraries make such calls in the relaxed
/// mode for the duration of the call (cuThreadExchangeStreamCaptureMode),
/// then restore it.
struct RelaxedCapture {
  dash_runtime *rt = nullptr;
  CUstreamCaptureMode saved = CU_STREAM_CAPTURE_MODE_RELAXED;
  RelaxedCapture(dash_runtime *r, bool capturing) {
    if (capturing &&
        r->drv.cuThreadExchangeStreamCaptureMode(&saved) == CUDA_SUCCESS)
      rt = r;
  }
  ~RelaxedCapture() {
    if (rt)
      rt->drv.cuThreadExchangeStreamCaptureMode(&saved);
  }
};

/// The tensor maps of `m` for this call into `out` (kTensorMapsDkdvBulk
/// entries of room).
dash_status encodeTensorMaps(dash_runtime *rt, const Manifest &m,
                             const dash_bwd_args *a, const WsLayout &ws,
                             CUdeviceptr wsBase, CUtensorMap *out);

/// The resolved plan's workspace, tensor maps and three launches on
/// `stream` (and, for debug kernels, the wait and the hang record);
/// `wsBytes` is the workspace the kernel used.
dash_status launchPlan(dash_runtime *rt, CtxState &ctx, const Plan &plan,
                       const dash_bwd_args *a, CUstream stream, bool capturing,
                       int64_t &wsBytes);

} // namespace dash::rt::impl

#endif // DASH_LIB_RUNTIME_RUNTIMEIMPL_H
