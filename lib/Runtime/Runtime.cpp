//===- Runtime.cpp - DASH attention-backward runtime (C API) -------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// Order of work for a launch: validate every argument and select the kernel
// without the driver (Args.cpp, Plan.cpp); then load the driver, module(s)
// and the occupancy (Context.cpp); then the G-dependent checks
// (co-residency, checkLegal, auto: Plan.cpp); then workspace, tensor maps
// and the three launches (Launch.cpp, TensorMaps.cpp). check() runs the
// same code with the driver parts replaced by injected or cached device
// properties.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include "dash/Schedule/Schedules.h"

#include <algorithm>
#include <cstdlib>

using namespace dash::rt;
using namespace dash::rt::impl;

namespace dash::rt::impl {

thread_local std::string tlsError;

dash_status fail(dash_status s, const std::string &msg) {
  tlsError = msg;
  return s;
}

} // namespace dash::rt::impl

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
  // workspace is a graph allocation: launchPlan).
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  DASH_DRV(rt->drv.cuStreamIsCapturing(stream, &capture), " (capture query)");
  const bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  DeviceView view;
  view.known = true;
  view.numSMs = ctx->numSMs;
  if (dash_status st = loadCandidates(rt, *ctx, plan, capturing, view))
    return st;
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
  // 4. Workspace, tensor maps, the launches.
  int64_t wsBytes = 0;
  if (dash_status st =
          launchPlan(rt, *ctx, plan, args, stream, capturing, wsBytes))
    return st;
  fillInfo(rt, plan, out_info);
  if (out_info)
    out_info->workspace_bytes = wsBytes;
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
