//===- Context.cpp - Driver, context, modules and device memory ----------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// What a call needs from the driver before it can launch, each cached for
// the runtime's life: libcuda (dlopen'ed), the thread's context, each
// kernel's module, entry points and occupancy per context, a workspace per
// stream, and the pinned slots captured calls copy their tensor maps from.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include <algorithm>

namespace dash::rt::impl {

namespace {

constexpr size_t kPinnedChunk = 64 << 10;

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
  DASH_DRV(rt->drv.cuModuleLoadData(&ck.module, image.data()), where);
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

} // namespace

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
  DASH_DRV(rt->drv.cuCtxGetCurrent(&ctx), "");
  if (!ctx) {
    // Like the CUDA runtime (and PyTorch): use device 0's primary context.
    if (!rt->primary) {
      DASH_DRV(rt->drv.cuDeviceGet(&rt->primaryDev, 0), "");
      DASH_DRV(rt->drv.cuDevicePrimaryCtxRetain(&rt->primary, rt->primaryDev), "");
    }
    DASH_DRV(rt->drv.cuCtxSetCurrent(rt->primary), "");
    ctx = rt->primary;
  }
  for (CtxState &c : rt->ctxs)
    if (c.ctx == ctx) {
      out = &c;
      return DASH_SUCCESS;
    }
  CtxState c;
  c.ctx = ctx;
  DASH_DRV(rt->drv.cuCtxGetDevice(&c.dev), "");
  DASH_DRV(rt->drv.cuDeviceGetAttribute(&c.numSMs,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   c.dev), "");
  if (c.numSMs <= 0)
    return fail(DASH_ERROR_DRIVER, "device reports " + str(c.numSMs) + " SMs");
  rt->ctxs.push_back(std::move(c));
  out = &rt->ctxs.back();
  return DASH_SUCCESS;
}

dash_status loadCandidates(dash_runtime *rt, CtxState &c, const Plan &plan,
                           bool capturing, DeviceView &view) {
  RelaxedCapture relax(rt, capturing);
  for (int k : plan.candidates) {
    if (dash_status st = ensureKernel(rt, c, k))
      return st;
    view.blocksPerSM[k] = c.kernels[k].blocksPerSM;
  }
  return DASH_SUCCESS;
}

dash_status ensureWorkspace(dash_runtime *rt, CtxState &c, CUstream stream,
                            int64_t bytes, CUdeviceptr &out) {
  Workspace &w = c.workspace[stream];
  if (w.bytes < bytes) {
    if (w.ptr) {
      // Earlier calls on this stream may still read it.
      DASH_DRV(rt->drv.cuStreamSynchronize(stream), "");
      DASH_DRV(rt->drv.cuMemFree(w.ptr), "");
      w = Workspace();
    }
    // Grow geometrically so a sweep of sizes does not reallocate every call.
    int64_t want = std::max(bytes, w.bytes + w.bytes / 2);
    CUresult r = rt->drv.cuMemAlloc(&w.ptr, size_t(want));
    if (r != CUDA_SUCCESS) {
      want = bytes;
      DASH_DRV(rt->drv.cuMemAlloc(&w.ptr, size_t(want)),
          ": workspace of " + str(want) + " bytes");
    }
    w.bytes = want;
  }
  out = w.ptr;
  return DASH_SUCCESS;
}

dash_status pinnedSlot(dash_runtime *rt, size_t bytes, void *&out) {
  bytes = (bytes + 127) / 128 * 128;
  if (rt->pinnedChunks.empty() || rt->pinnedUsed + bytes > kPinnedChunk) {
    void *chunk = nullptr;
    DASH_DRV(rt->drv.cuMemHostAlloc(&chunk, std::max(kPinnedChunk, bytes),
                               CU_MEMHOSTALLOC_PORTABLE),
        " (pinned tensor-map slots for CUDA-graph capture)");
    rt->pinnedChunks.push_back(chunk);
    rt->pinnedUsed = 0;
  }
  out = static_cast<char *>(rt->pinnedChunks.back()) + rt->pinnedUsed;
  rt->pinnedUsed += bytes;
  return DASH_SUCCESS;
}

} // namespace dash::rt::impl
