//===- Launch.cpp - A resolved call's workspace, maps and launches -------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// The last steps of a call: the workspace (cached per stream, or a graph
// allocation under capture), the tensor maps copied into it, the kernel
// parameters as MLIR's memref ABI lays them out, the preprocess, main and
// postprocess launches, and, for debug kernels, the wait and the hang
// record turned into a message.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include <algorithm>
#include <iterator>

namespace dash::rt::impl {

namespace {

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

/// TMA kernels read their tensor maps from the workspace (stream-ordered
/// before the launches). Eager calls copy from this frame (pageable: the
/// driver stages it before returning); a captured copy is a graph node that
/// reads its source at every replay, so it reads a pinned slot of its own.
dash_status uploadTensorMaps(dash_runtime *rt, const Manifest &m,
                             const dash_bwd_args *args, const WsLayout &ws,
                             CUdeviceptr wsBase, CUstream stream,
                             bool capturing) {
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
  DASH_DRV(rt->drv.cuMemcpyHtoDAsync(
               wsBase + CUdeviceptr(ws.offset[int(Role::TensorMaps)]), src,
               bytes, stream),
           " (tensor maps)");
  return DASH_SUCCESS;
}

/// The host-mapped record debug kernels write before they trap, zeroed.
dash_status clearDebugRecord(dash_runtime *rt) {
  if (!rt->debugHost) {
    void *host = nullptr;
    DASH_DRV(rt->drv.cuMemHostAlloc(&host, kDebugWords * sizeof(int64_t),
                                    CU_MEMHOSTALLOC_DEVICEMAP),
             " (debug record)");
    CUdeviceptr dev = 0;
    DASH_DRV(rt->drv.cuMemHostGetDevicePointer(&dev, host, 0),
             " (debug record)");
    rt->debugHost = static_cast<int64_t *>(host);
    rt->debugDev = dev;
  }
  std::memset(rt->debugHost, 0, kDebugWords * sizeof(int64_t));
  return DASH_SUCCESS;
}

/// What a debug kernel's record `w` says it waited on.
std::string hangMessage(const int64_t *w, const Manifest &m) {
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
  return "hang detected by debug kernel " + m.name + ": unit " + str(w[1]) +
         " waited on " + wait + " (the CUDA context is lost after the trap)";
}

/// The captured call's workspace: a graph allocation, freed stream-ordered
/// after the call's kernels (or when the call fails).
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
};

} // namespace

dash_status launchPlan(dash_runtime *rt, CtxState &ctx, const Plan &plan,
                       const dash_bwd_args *args, CUstream stream,
                       bool capturing, int64_t &wsBytes) {
  const Manifest &m = rt->kernels[plan.kernel];
  const CtxKernel &ck = ctx.kernels[plan.kernel];
  WsLayout ws = workspaceLayout(plan.shape, wsKernel(m));
  wsBytes = ws.total;
  // Debug kernels synchronize after the launch to read their hang record,
  // debug mode after every launch: neither can be captured.
  const bool debugKernel = m.hasDebugRecord();
  if (capturing && (debugKernel || rt->debug))
    return fail(DASH_ERROR_UNSUPPORTED,
                std::string(debugKernel ? "kernel " + m.name + " is a debug kernel"
                                        : "the runtime is in debug mode") +
                    ": it synchronizes after the launches, which a CUDA graph "
                    "cannot capture; capture release kernels with debug mode off");
  // The workspace (the preprocess kernel zeroes what it needs). Captured: a
  // graph allocation per call (its address is the same at every replay),
  // because the per-stream cache may be freed or regrown by later calls the
  // graph knows nothing of.
  CUdeviceptr wsBase = 0;
  GraphWorkspace graphWs{rt, stream};
  if (capturing) {
    DASH_DRV(rt->drv.cuMemAllocAsync(&wsBase, size_t(ws.total), stream),
             ": workspace of " + str(ws.total) +
                 " bytes under CUDA-graph capture");
    graphWs.ptr = wsBase;
  } else if (dash_status st =
                 ensureWorkspace(rt, ctx, stream, ws.total, wsBase)) {
    return st;
  }
  if (rt->debug)
    DASH_DRV(rt->drv.cuMemsetD8Async(wsBase, 0, size_t(ws.total), stream), "");
  if (m.usesTensorMaps())
    if (dash_status st =
            uploadTensorMaps(rt, m, args, ws, wsBase, stream, capturing))
      return st;
  if (debugKernel)
    if (dash_status st = clearDebugRecord(rt))
      return st;
  ParamPack pp;
  packParams(m, args, ws, wsBase, rt->debugDev, pp);
  void **params = pp.finish();
  const Shape &s = plan.shape;
  int sms = ctx.numSMs;
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
    if (rt->debugHost[0] == kDebugMagic)
      return fail(DASH_ERROR_HANG, hangMessage(rt->debugHost, m));
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
  return DASH_SUCCESS;
}

} // namespace dash::rt::impl
