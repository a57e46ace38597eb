// Reproducer (open bug, lib/Runtime/Runtime.cpp, owner: runtime): an
// out-of-range enum value from a C/ctypes caller is loaded through a C++
// enum lvalue before it is range-checked, which is undefined behaviour.
// UBSan (scripts/test-sanitizers, gtest RuntimeTest.EveryValidationRuleNamesItsArgument
// with dtype = 42) reports:
//   Runtime.cpp:83:21: runtime error: load of value 42, which is not a valid
//   value for type 'dash_dtype'
// and the same for dash_bwd_args::align (line ~248) and ::policy (~251).
// Expected: DASH_ERROR_INVALID_ARGUMENT and no sanitizer report.
// Build + run (sanitizer build dir, e.g. build-asan):
//   clang++-22 -std=c++17 -fsanitize=address,undefined -fno-sanitize-recover=all \
//     -Iinclude fuzz/regressions/runtime-enum-ub.cpp build-asan/lib/libDashRuntime.a \
//     build-asan/lib/libDashSchedule.a -ldl -lpthread -o /tmp/repro && /tmp/repro
#include "dash/Runtime/Runtime.h"

#include <cstdio>
#include <cstring>

int main() {
  dash_runtime *rt = nullptr;
  if (dash_runtime_create("unittests/Runtime/Inputs/kernels", &rt) != DASH_SUCCESS)
    return 2;
  dash_bwd_args a;
  std::memset(&a, 0, sizeof a);
  a.q.data = reinterpret_cast<void *>(0x100000000ull);
  a.q.rank = 4;
  const int bad = 42; // what a C caller may pass
  std::memcpy(&a.q.dtype, &bad, sizeof bad);
  dash_status st = dash_attention_bwd_check(rt, &a, nullptr);
  std::printf("%s: %s\n", dash_status_name(st), dash_runtime_last_error(rt));
  dash_runtime_destroy(rt);
  return st == DASH_ERROR_INVALID_ARGUMENT ? 0 : 1;
}
