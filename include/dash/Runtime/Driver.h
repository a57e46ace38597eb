//===- Driver.h - CUDA driver API loaded at run time -------------*- C++ -*-===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// The runtime and dash-bench never link libcuda: they dlopen libcuda.so.1 and
// look up the entry points they use, so both build (and the runtime's
// validation runs) on machines without a driver. cuda.h provides the types
// only. Symbols are looked up under the versioned names cuda.h maps to
// (cuMemAlloc -> cuMemAlloc_v2, ...), legacy default-stream flavour.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_RUNTIME_DRIVER_H
#define DASH_RUNTIME_DRIVER_H

#include <cuda.h>

#include <string>

namespace dash::rt {

#define DASH_DRIVER_FUNCTIONS(X)                                               \
  X(cuInit, "cuInit")                                                          \
  X(cuDriverGetVersion, "cuDriverGetVersion")                                  \
  X(cuGetErrorString, "cuGetErrorString")                                      \
  X(cuGetErrorName, "cuGetErrorName")                                          \
  X(cuDeviceGet, "cuDeviceGet")                                                \
  X(cuDeviceGetCount, "cuDeviceGetCount")                                      \
  X(cuDeviceGetName, "cuDeviceGetName")                                        \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")                              \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")                 \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                                        \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                                        \
  X(cuCtxGetDevice, "cuCtxGetDevice")                                          \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")                                   \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")                                     \
  X(cuCtxSynchronize, "cuCtxSynchronize")                                      \
  X(cuModuleLoadData, "cuModuleLoadData")                                      \
  X(cuModuleUnload, "cuModuleUnload")                                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                                \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")                                  \
  X(cuFuncGetAttribute, "cuFuncGetAttribute")                                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor")                             \
  X(cuMemAlloc, "cuMemAlloc_v2")                                               \
  X(cuMemFree, "cuMemFree_v2")                                                 \
  X(cuMemAllocAsync, "cuMemAllocAsync")                                        \
  X(cuMemFreeAsync, "cuMemFreeAsync")                                          \
  X(cuMemsetD8Async, "cuMemsetD8Async")                                        \
  X(cuMemsetD16Async, "cuMemsetD16Async")                                      \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                                 \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")                          \
  X(cuMemHostAlloc, "cuMemHostAlloc")                                          \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2")                 \
  X(cuMemFreeHost, "cuMemFreeHost")                                            \
  X(cuLaunchKernel, "cuLaunchKernel")                                          \
  X(cuLaunchKernelEx, "cuLaunchKernelEx")                                      \
  X(cuStreamCreate, "cuStreamCreate")                                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                                     \
  X(cuStreamQuery, "cuStreamQuery")                                            \
  X(cuStreamIsCapturing, "cuStreamIsCapturing")                                \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode")    \
  X(cuStreamSynchronize, "cuStreamSynchronize")                                \
  X(cuEventCreate, "cuEventCreate")                                            \
  X(cuEventDestroy, "cuEventDestroy_v2")                                       \
  X(cuEventRecord, "cuEventRecord")                                            \
  X(cuEventSynchronize, "cuEventSynchronize")                                  \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2")

struct Driver {
#define DASH_DRIVER_MEMBER(fn, sym) decltype(&::fn) fn = nullptr;
  DASH_DRIVER_FUNCTIONS(DASH_DRIVER_MEMBER)
#undef DASH_DRIVER_MEMBER

  void *handle = nullptr;

  /// dlopen(path or $DASH_LIBCUDA or "libcuda.so.1"), resolve every entry
  /// point and cuInit(0). Idempotent: later calls return the first outcome.
  /// Returns "" on success, else why not.
  std::string load(const char *path = nullptr);
  bool loaded() const { return handle != nullptr && initError.empty() && tried; }
  ~Driver();

  /// "cuFoo failed: CUDA_ERROR_X (description)".
  std::string describe(const char *call, CUresult r) const;

private:
  bool tried = false;
  std::string initError;
};

} // namespace dash::rt

#endif // DASH_RUNTIME_DRIVER_H
