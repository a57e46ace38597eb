//===- Driver.cpp - CUDA driver API loaded at run time -------------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "dash/Runtime/Driver.h"

#include <cstdlib>
#include <dlfcn.h>

namespace dash::rt {

std::string Driver::load(const char *path) {
  if (tried)
    return initError;
  tried = true;
  const char *lib = path && *path ? path : std::getenv("DASH_LIBCUDA");
  if (!lib || !*lib)
    lib = "libcuda.so.1";
  handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    initError = std::string("cannot load the CUDA driver (") + lib + "): " +
                (why ? why : "unknown dlopen error") +
                "; is an NVIDIA driver installed?";
    return initError;
  }
#define DASH_DRIVER_RESOLVE(fn, sym)                                           \
  fn = reinterpret_cast<decltype(fn)>(dlsym(handle, sym));                     \
  if (!fn) {                                                                   \
    initError = std::string("the CUDA driver (") + lib +                       \
                ") lacks entry point " + sym + "; driver too old?";            \
    return initError;                                                          \
  }
  DASH_DRIVER_FUNCTIONS(DASH_DRIVER_RESOLVE)
#undef DASH_DRIVER_RESOLVE
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS)
    initError = describe("cuInit", r);
  return initError;
}

Driver::~Driver() {
  // Deliberately no dlclose: CUDA registers atexit handlers inside libcuda.
}

std::string Driver::describe(const char *call, CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &name);
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  std::string s = std::string(call) + " failed: ";
  s += name ? name : ("CUresult " + std::to_string(int(r)));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

} // namespace dash::rt
