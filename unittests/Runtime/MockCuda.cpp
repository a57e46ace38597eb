//===- MockCuda.cpp - Fake libcuda.so.1 for the runtime tests -------------===//
//
// Part of the DASH project.
//
// Just enough of the driver API for the runtime's launch path: it records
// every launch (function, grid, block, shared memory and the first
// mock_param_slots 8-byte kernel parameters) so the tests can check the
// packed kernel ABI without a GPU. Knobs and records are reached through
// the mock_* functions (dlsym on the same handle the runtime dlopen'ed).
//
//===----------------------------------------------------------------------===//

#include "MockCuda.h"

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>


namespace {
int g_sms = 132, g_occupancy = 1, g_paramSlots = 0, g_initCalls = 0,
    g_memsets = 0, g_syncs = 0;
bool g_failLaunch = false;
// Debug-kernel hang simulation: the main launch writes this record into the
// last host-mapped allocation and the next stream sync fails like a trap.
std::vector<int64_t> g_hangRecord;
void *g_hostMapped = nullptr;
bool g_trapped = false;
CUcontext g_current = nullptr;
std::vector<std::string> g_functions; // CUfunction = index + 1
std::vector<MockLaunch> g_launches;
std::vector<std::pair<std::string, int>> g_smemAttr;
std::vector<MockTensorMap> g_tensorMaps;
bool g_capturing = false;
// Capture in the global mode (what PyTorch uses) refuses calls that are not
// stream operations unless the thread switched to the relaxed mode.
CUstreamCaptureMode g_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
std::vector<std::pair<CUdeviceptr, size_t>> g_copiesHtoD; // async, into device memory
std::vector<const void *> g_copySources;                   // their host sources
std::vector<std::pair<void *, size_t>> g_pinned;           // cuMemHostAlloc
std::vector<std::string> g_events; // stream operations in order: alloc, free, copy, launch
int g_refused = 0; // calls refused as the global capture mode refuses them
bool refusedUnderCapture() {
  bool refused = g_capturing && g_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
  g_refused += refused;
  return refused;
}
std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}
} // namespace

extern "C" {
// --- test hooks
__attribute__((visibility("default"))) void mock_reset(int sms, int occupancy, int paramSlots) {
  g_sms = sms;
  g_occupancy = occupancy;
  g_paramSlots = paramSlots;
  g_failLaunch = false;
  g_capturing = false;
  g_launches.clear();
  g_smemAttr.clear();
  g_tensorMaps.clear();
  g_copiesHtoD.clear();
  g_copySources.clear();
  g_events.clear();
  g_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  g_initCalls = g_memsets = g_syncs = g_refused = 0;
}
__attribute__((visibility("default"))) void mock_fail_launch(int fail) { g_failLaunch = fail != 0; }
__attribute__((visibility("default"))) void mock_capturing(int on) { g_capturing = on != 0; }
__attribute__((visibility("default"))) void mock_hang(const int64_t *record, int words) {
  g_hangRecord.assign(record, record + words);
  g_trapped = false;
}
__attribute__((visibility("default"))) int mock_init_calls() { return g_initCalls; }
__attribute__((visibility("default"))) int mock_memsets() { return g_memsets; }
__attribute__((visibility("default"))) int mock_syncs() { return g_syncs; }
__attribute__((visibility("default"))) const std::vector<MockLaunch> *mock_launches() { return &g_launches; }
__attribute__((visibility("default"))) const std::vector<std::pair<std::string, int>> *mock_smem_attrs() { return &g_smemAttr; }
__attribute__((visibility("default"))) const std::vector<MockTensorMap> *mock_tensor_maps() { return &g_tensorMaps; }
__attribute__((visibility("default"))) const std::vector<std::pair<CUdeviceptr, size_t>> *mock_copies_htod() { return &g_copiesHtoD; }
__attribute__((visibility("default"))) const std::vector<const void *> *mock_copy_sources() { return &g_copySources; }
__attribute__((visibility("default"))) const std::vector<std::string> *mock_events() { return &g_events; }
__attribute__((visibility("default"))) int mock_capture_mode() { return int(g_mode); }
__attribute__((visibility("default"))) int mock_refused() { return g_refused; }
__attribute__((visibility("default"))) int mock_is_pinned(const void *p, size_t n) {
  for (auto &c : g_pinned)
    if (p >= c.first && static_cast<const char *>(p) + n <= static_cast<const char *>(c.first) + c.second)
      return 1;
  return 0;
}

// --- driver API
CUresult cuInit(unsigned) { ++g_initCalls; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult, const char **s) { *s = "mock error"; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult, const char **s) { *s = "CUDA_ERROR_MOCK"; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int) { *d = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGetName(char *n, int len, CUdevice) { std::strncpy(n, "MOCK", len); return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice) {
  *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? g_sms : 1;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) { *c = reinterpret_cast<CUcontext>(0x1000); return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = g_current; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { g_current = c; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *c) { *c = g_current; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  ++g_syncs;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (std::strncmp(static_cast<const char *>(image), "FAKE CUBIN", 10) != 0)
    return CUDA_ERROR_INVALID_IMAGE;
  *m = reinterpret_cast<CUmodule>(0x2000);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule, const char *name) {
  g_functions.push_back(name);
  *f = reinterpret_cast<CUfunction>(uintptr_t(g_functions.size()));
  return CUDA_SUCCESS;
}
static std::string fname(CUfunction f) {
  size_t i = reinterpret_cast<uintptr_t>(f);
  return i >= 1 && i <= g_functions.size() ? g_functions[i - 1] : "?";
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    g_smemAttr.push_back({fname(f), v});
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute, CUfunction) { *v = 0; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction, int, size_t) {
  *n = g_occupancy;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  *p = reinterpret_cast<CUdeviceptr>(std::aligned_alloc(256, (n + 255) / 256 * 256));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr p) {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::free(reinterpret_cast<void *>(p));
  return CUDA_SUCCESS;
}
// Stream-ordered: legal under capture (a graph memory node).
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream) {
  *p = reinterpret_cast<CUdeviceptr>(std::aligned_alloc(256, (n + 255) / 256 * 256));
  if (!*p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  g_events.push_back("alloc " + hex(*p));
  return CUDA_SUCCESS;
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  g_events.push_back("free " + hex(p));
  std::free(reinterpret_cast<void *>(p));
  return CUDA_SUCCESS;
}
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  CUstreamCaptureMode old = g_mode;
  g_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream) {
  ++g_memsets;
  std::memset(reinterpret_cast<void *>(p), v, n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD16Async(CUdeviceptr, unsigned short, size_t, CUstream) { return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD(CUdeviceptr, const void *, size_t) { return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH(void *, CUdeviceptr, size_t) { return CUDA_SUCCESS; }
// Device memory is host memory here (cuMemAlloc above): the copy is real.
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream) {
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  g_copiesHtoD.push_back({dst, n});
  g_copySources.push_back(src);
  g_events.push_back("copy " + hex(dst));
  return CUDA_SUCCESS;
}
// Records the call; the "map" holds the global address and the call's index
// (words 0 and 1) so a test can find it in device memory.
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                                const cuuint32_t *box, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (rank < 1 || rank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  MockTensorMap t{};
  t.type = int(type);
  t.rank = rank;
  t.address = address;
  for (unsigned i = 0; i < rank; ++i) {
    t.dims[i] = dims[i];
    t.box[i] = box[i];
    t.elementStrides[i] = elementStrides[i];
    if (i + 1 < rank)
      t.strides[i] = strides[i];
  }
  t.interleave = int(interleave);
  t.swizzle = int(swizzle);
  t.l2 = int(l2);
  t.oob = int(oob);
  std::memset(map, 0, sizeof *map);
  uint64_t words[2] = {uint64_t(reinterpret_cast<uintptr_t>(address)), g_tensorMaps.size()};
  std::memcpy(map, words, sizeof words);
  g_tensorMaps.push_back(t);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned,
                        unsigned smem, CUstream s, void **params, void **) {
  if (g_failLaunch)
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  MockLaunch l{fname(f), gx, bx, smem, s, {}};
  for (int i = 0; i < g_paramSlots; ++i) {
    uint64_t v;
    std::memcpy(&v, params[i], sizeof v);
    l.params.push_back(v);
  }
  g_launches.push_back(l);
  g_events.push_back("launch " + l.function);
  if (!g_hangRecord.empty() && l.function == "dash_bwd_main" && g_hostMapped) {
    std::memcpy(g_hostMapped, g_hangRecord.data(),
                g_hangRecord.size() * sizeof(int64_t));
    g_hangRecord.clear();
    g_trapped = true;
  }
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                          void **extra) {
  bool programmatic = false;
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      programmatic = c->attrs[i].value.programmaticStreamSerializationAllowed != 0;
  CUresult r = cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                              c->blockDimY, c->blockDimZ, c->sharedMemBytes,
                              c->hStream, params, extra);
  if (r == CUDA_SUCCESS)
    g_launches.back().programmatic = programmatic;
  return r;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  *p = std::calloc(1, n);
  if (*p)
    g_pinned.push_back({*p, n});
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
    g_hostMapped = *p;
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned) {
  *d = CUdeviceptr(reinterpret_cast<uintptr_t>(p)); // mapped: same address
  return CUDA_SUCCESS;
}
CUresult cuMemFreeHost(void *p) {
  if (p == g_hostMapped)
    g_hostMapped = nullptr;
  for (size_t i = 0; i < g_pinned.size(); ++i)
    if (g_pinned[i].first == p) {
      g_pinned.erase(g_pinned.begin() + long(i));
      break;
    }
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *s, unsigned) { *s = nullptr; return CUDA_SUCCESS; }
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *status) {
  *status = g_capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) {
  if (refusedUnderCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  ++g_syncs;
  if (g_trapped) {
    g_trapped = false;
    return CUDA_ERROR_LAUNCH_FAILED; // what a trap looks like
  }
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *e, unsigned) { *e = nullptr; return CUDA_SUCCESS; }
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) { *ms = 1.0f; return CUDA_SUCCESS; }
}
