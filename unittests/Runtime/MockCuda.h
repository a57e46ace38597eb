//===- MockCuda.h - What the fake libcuda.so.1 records ----------*- C++ -*-===//
//
// Part of the DASH project. Shared by MockCuda.cpp (which fills these) and
// the tests (which read them through the mock_* hooks).
//
//===----------------------------------------------------------------------===//

#ifndef DASH_UNITTESTS_RUNTIME_MOCKCUDA_H
#define DASH_UNITTESTS_RUNTIME_MOCKCUDA_H

#include <cstdint>
#include <string>
#include <vector>

/// One cuLaunchKernel: the first mock_param_slots 8-byte parameters.
struct MockLaunch {
  std::string function;
  unsigned grid, block, smem;
  void *stream;
  std::vector<uint64_t> params;
  /// cuLaunchKernelEx with programmatic stream serialization (PDL).
  bool programmatic = false;
};

/// One cuTensorMapEncodeTiled call (rank <= 5, as the driver allows).
struct MockTensorMap {
  int type;
  unsigned rank;
  void *address;
  uint64_t dims[5], strides[4];
  unsigned box[5], elementStrides[5];
  int interleave, swizzle, l2, oob;
};

#endif // DASH_UNITTESTS_RUNTIME_MOCKCUDA_H
