//===- FuzzRuntime.cpp - libFuzzer target: runtime argument validation ---===//
//
// Part of the DASH project. Arbitrary shapes, strides, pointers, dtypes and
// flags go through dash_attention_bwd_check(), dash_workspace_bytes() and
// dash_attention_bwd() of a runtime loaded from the gtest fixture manifests
// (unittests/Runtime/Inputs/kernels, or $DASH_FUZZ_KERNEL_DIR) with a
// libcuda path that does not exist: no call may crash, none may launch
// (dash_attention_bwd must fail: validation error or NO_DRIVER), and every
// error must come with a message.
//
// Enum fields (dtype, align, policy) also get out-of-range ints, as a
// C/ctypes caller may pass them: the runtime reads them as integers before
// its range checks (runtime-enum-ub, fixed). DASH_FUZZ_WILD_ENUMS=0 limits
// them to valid values.
//
//===----------------------------------------------------------------------===//

#include "dash/Runtime/Runtime.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef DASH_FUZZ_KERNEL_DIR
#error "DASH_FUZZ_KERNEL_DIR must name the fixture kernel directory"
#endif

namespace {

dash_runtime *gRt = nullptr;
bool gWildEnums = false;

// The raw int of a C enum field (never loaded as the C++ enum type).
template <typename E> int rawInt(const E &field) {
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}
bool gPrint = false; // DASH_FUZZ_PRINT=1: print the decoded arguments

void printTensor(const char *name, const dash_tensor &t) {
  std::fprintf(stderr,
               "  %-3s data=%p rank=%d dtype=%d shape={%lld,%lld,%lld,%lld} "
               "strides={%lld,%lld,%lld,%lld}\n",
               name, t.data, t.rank, rawInt(t.dtype), (long long)t.shape[0],
               (long long)t.shape[1], (long long)t.shape[2],
               (long long)t.shape[3], (long long)t.strides[0],
               (long long)t.strides[1], (long long)t.strides[2],
               (long long)t.strides[3]);
}

[[noreturn]] void fail(const char *what, dash_status st) {
  std::fprintf(stderr, "dash-fuzz-runtime: %s (status %d %s: %s)\n", what,
               int(st), dash_status_name(st), dash_runtime_last_error(gRt));
  std::abort();
}

// Writes an enum field the way a C caller's bytes land in it: never through
// a C++ enum value (loading an out-of-range one would be UB in the harness).
template <typename E>
void setEnum(E &field, FuzzedDataProvider &fdp, int maxValid) {
  int v = gWildEnums && fdp.ConsumeIntegralInRange<int>(0, 7) == 0
              ? fdp.ConsumeIntegral<int32_t>()
              : fdp.ConsumeIntegralInRange<int>(0, maxValid);
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
  std::memcpy(&field, &v, sizeof v);
}

int64_t extent(FuzzedDataProvider &fdp, int64_t typical) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 9)) {
  case 0:
    return fdp.ConsumeIntegral<int64_t>();
  case 1:
    return fdp.ConsumeIntegralInRange<int64_t>(-2, 1);
  case 2:
    return (int64_t(1) << fdp.ConsumeIntegralInRange<int>(20, 62)) +
           fdp.ConsumeIntegralInRange<int64_t>(-1, 1);
  default:
    return typical;
  }
}

// Wrapping arithmetic: the harness builds nonsense on purpose.
int64_t wmul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wadd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

struct Dims {
  int64_t B, Sq, Sk, Hq, Hkv, D;
};

// Contiguous BSHD (or BHSD-permuted) strides, then maybe mutated.
void fillTensor(FuzzedDataProvider &fdp, dash_tensor &t, int rank,
                const int64_t *shape, dash_dtype dt, uintptr_t base) {
  t.rank = fdp.ConsumeIntegralInRange<int>(0, 15) == 0
               ? fdp.ConsumeIntegral<int32_t>()
               : rank;
  t.dtype = dt;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
    setEnum(t.dtype, fdp, 3);
  uintptr_t addr = base;
  switch (fdp.ConsumeIntegralInRange<int>(0, 15)) {
  case 0:
    addr = 0;
    break;
  case 1:
    addr += fdp.ConsumeIntegralInRange<int>(1, 15); // misaligned
    break;
  case 2:
    addr = fdp.ConsumeIntegral<uintptr_t>();
    break;
  case 3:
    addr = 0x100000000ull; // aliases another tensor
    break;
  default:
    break;
  }
  t.data = reinterpret_cast<void *>(addr);
  const bool permuted = rank == 4 && fdp.ConsumeBool();
  int64_t s = 1;
  for (int i = 0; i < 4; ++i)
    t.shape[i] = t.strides[i] = 0;
  for (int i = rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = s;
    s = wmul(s, shape[i]);
  }
  if (permuted) { // BHSD memory: strides {H*S*D, D, S*D, 1}
    t.strides[1] = shape[3];
    t.strides[2] = wmul(shape[1], shape[3]);
  }
  int mutations = fdp.ConsumeIntegralInRange<int>(0, 2);
  for (int k = 0; k < mutations; ++k) {
    int i = fdp.ConsumeIntegralInRange<int>(0, 3);
    if (fdp.ConsumeBool())
      t.shape[i] = extent(fdp, wadd(t.shape[i], 1));
    else
      t.strides[i] = extent(fdp, wmul(t.strides[i], 2));
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *dir = std::getenv("DASH_FUZZ_KERNEL_DIR");
  if (!dir)
    dir = DASH_FUZZ_KERNEL_DIR;
  const char *wild = std::getenv("DASH_FUZZ_WILD_ENUMS");
  // Out-of-range enum values are fed by default since runtime-enum-ub was
  // fixed; DASH_FUZZ_WILD_ENUMS=0 restricts them to valid values.
  gWildEnums = !(wild && std::strcmp(wild, "0") == 0);
  const char *print = std::getenv("DASH_FUZZ_PRINT");
  gPrint = print && std::strcmp(print, "1") == 0;
  dash_status st =
      dash_runtime_create_ex(dir, "/nonexistent/dash-fuzz/libcuda.so.1", &gRt);
  if (st != DASH_SUCCESS || dash_runtime_num_kernels(gRt) == 0) {
    std::fprintf(stderr, "dash-fuzz-runtime: cannot load %s: %s\n", dir,
                 dash_runtime_last_error(gRt));
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  static const int64_t kD[] = {64, 128, 64, 128, 96, 256, 1, 0};
  Dims d;
  d.B = fdp.ConsumeIntegralInRange<int64_t>(1, 4);
  d.Sq = fdp.ConsumeIntegralInRange<int64_t>(1, 4096);
  d.Sk = fdp.ConsumeBool() ? d.Sq : fdp.ConsumeIntegralInRange<int64_t>(1, 4096);
  d.Hkv = fdp.ConsumeIntegralInRange<int64_t>(1, 8);
  d.Hq = d.Hkv * fdp.ConsumeIntegralInRange<int64_t>(1, 4);
  d.D = fdp.PickValueInArray(kD);
  // Rare wild dimensions (huge, negative) before the tensors are built.
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
    int64_t *f[] = {&d.B, &d.Sq, &d.Sk, &d.Hq, &d.Hkv};
    *f[fdp.ConsumeIntegralInRange<int>(0, 4)] = extent(fdp, 1);
  }
  dash_dtype dt = fdp.ConsumeBool() ? DASH_DTYPE_BF16 : DASH_DTYPE_F16;

  dash_bwd_args a;
  std::memset(&a, 0, sizeof a);
  const int64_t qs[4] = {d.B, d.Sq, d.Hq, d.D}, ks[4] = {d.B, d.Sk, d.Hkv, d.D},
                ls[3] = {d.B, d.Hq, d.Sq};
  uintptr_t base = 0x100000000ull;
  auto next = [&] { return base += 0x10000000ull; };
  fillTensor(fdp, a.q, 4, qs, dt, next());
  fillTensor(fdp, a.k, 4, ks, dt, next());
  fillTensor(fdp, a.v, 4, ks, dt, next());
  fillTensor(fdp, a.o, 4, qs, dt, next());
  fillTensor(fdp, a.dO, 4, qs, dt, next());
  fillTensor(fdp, a.lse, 3, ls, DASH_DTYPE_F32, next());
  fillTensor(fdp, a.dq, 4, qs, dt, next());
  fillTensor(fdp, a.dk, 4, ks, dt, next());
  fillTensor(fdp, a.dv, 4, ks, dt, next());
  a.causal = fdp.ConsumeIntegralInRange<int>(0, 15) == 0
                 ? fdp.ConsumeIntegral<int32_t>()
                 : fdp.ConsumeIntegralInRange<int32_t>(0, 1);
  setEnum(a.align, fdp, 2);
  static const float kScales[] = {0.088f, 0.125f, 1.0f, 0.0f, -1.0f,
                                  1e-30f, 1e30f,  __builtin_inff(),
                                  __builtin_nanf("")};
  a.scale = fdp.PickValueInArray(kScales);
  a.deterministic = fdp.ConsumeIntegralInRange<int>(0, 15) == 0
                        ? fdp.ConsumeIntegral<int32_t>()
                        : fdp.ConsumeIntegralInRange<int32_t>(0, 1);
  setEnum(a.policy, fdp, 5);
  a.num_units = fdp.ConsumeBool() ? 0
                : fdp.ConsumeBool()
                    ? fdp.ConsumeIntegralInRange<int64_t>(1, 300)
                    : fdp.ConsumeIntegral<int64_t>();

  // Device limits: none (G checks skipped unless num_units), or injected.
  dash_device_props props{0, 0};
  const dash_device_props *gProps = nullptr;
  if (fdp.ConsumeBool()) {
    gProps = &props;
    props = dash_device_props{fdp.ConsumeIntegralInRange<int32_t>(-1, 200),
                            fdp.ConsumeIntegralInRange<int32_t>(-1, 4)};
    if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
      props.num_sms = fdp.ConsumeIntegral<int32_t>();
    if (gPrint)
      std::fprintf(stderr, "device props: num_sms=%d blocks_per_sm=%d\n",
                   props.num_sms, props.blocks_per_sm);
    dash_status st = dash_runtime_set_device_props(gRt, &props);
    if (st != DASH_SUCCESS) {
      if (*dash_runtime_last_error(gRt) == '\0')
        fail("set_device_props failed without a message", st);
      // Refused: make sure the previous input's props do not linger.
      dash_runtime_set_device_props(gRt, nullptr);
      gProps = nullptr;
    }
  } else {
    dash_runtime_set_device_props(gRt, nullptr);
  }

  // Known, reported: checkLegal() is O(B*Hq*M*N) and the runtime runs it on
  // the first call per shape, so B*Hq = 2^27 with Sq = 2458 takes hours
  // (fuzz/regressions/README.md, schedule-checklegal-cost). Keep the tasks
  // of a plausibly valid input below 2^20 so the fuzzer looks elsewhere.
  {
    auto tiles = [](int64_t s) { return s > 0 ? s / 64 + (s % 64 != 0) : 0; };
    int64_t t = 1, parts[4] = {a.q.shape[0], a.q.shape[2], tiles(a.q.shape[1]),
                               tiles(a.k.shape[1])};
    for (int64_t x : parts)
      if (x > 0 && __builtin_mul_overflow(t, x, &t))
        return -1;
    if (t > (int64_t(1) << 20))
      return -1;
  }
  if (gPrint) {
    std::fprintf(stderr, "dash_bwd_args:\n");
    printTensor("q", a.q), printTensor("k", a.k), printTensor("v", a.v);
    printTensor("o", a.o), printTensor("dO", a.dO), printTensor("lse", a.lse);
    printTensor("dq", a.dq), printTensor("dk", a.dk), printTensor("dv", a.dv);
    std::fprintf(stderr,
                 "  causal=%d align=%d scale=%g deterministic=%d policy=%d "
                 "num_units=%lld\n",
                 a.causal, rawInt(a.align), double(a.scale), a.deterministic,
                 rawInt(a.policy), (long long)a.num_units);
  }

  dash_bwd_info info;
  std::memset(&info, 0xAB, sizeof info);
  dash_status st = dash_attention_bwd_check(gRt, &a, &info);
  if (int(st) < DASH_SUCCESS || int(st) > DASH_ERROR_OUT_OF_MEMORY)
    fail("check returned an unknown status", st);
  if (st != DASH_SUCCESS) {
    if (*dash_runtime_last_error(gRt) == '\0')
      fail("check failed without a message", st);
  } else {
    if (std::memchr(info.kernel_name, 0, sizeof info.kernel_name) == nullptr)
      fail("check left kernel_name unterminated", st);
    // policy AUTO with G unknown: no kernel is selected yet (Runtime.h).
    const bool selected = info.policy != DASH_POLICY_AUTO;
    if (selected != (info.kernel_name[0] != '\0'))
      fail("kernel name present iff the policy is resolved", st);
    if (selected && (info.block_m <= 0 || info.block_n <= 0 || info.threads <= 0))
      fail("check selected a kernel with nonsense info", st);
    if (info.workspace_bytes <= 0 || info.num_units < 0 ||
        (info.policy == DASH_POLICY_AUTO && info.num_units != 0))
      fail("check succeeded with nonsense info", st);
    int64_t bytes = -1;
    dash_status ws = dash_workspace_bytes(gRt, &a, &bytes);
    if (ws != DASH_SUCCESS || bytes != info.workspace_bytes)
      fail("workspace_bytes disagrees with check", ws);
  }
  (void)dash_attention_bwd_check(gRt, &a, nullptr);

  // No driver: the launch path must refuse, never run.
  dash_status launch = dash_attention_bwd(gRt, &a, nullptr, nullptr);
  if (launch == DASH_SUCCESS)
    fail("dash_attention_bwd succeeded without a driver", launch);
  if (*dash_runtime_last_error(gRt) == '\0')
    fail("dash_attention_bwd failed without a message", launch);
  if (st != DASH_SUCCESS && launch != st && launch != DASH_ERROR_NO_DRIVER)
    fail("launch and check disagree", launch);

  // Misc C API entry points on fuzz bytes.
  std::string name = fdp.ConsumeRemainingBytesAsString();
  dash_policy pol;
  if (dash_policy_parse(name.c_str(), &pol) &&
      (int(pol) < 0 || int(pol) > DASH_POLICY_SYMMETRIC_SHIFT))
    fail("policy_parse returned an unknown policy", DASH_SUCCESS);
  (void)dash_runtime_kernel_description(gRt, int32_t(name.size()) - 3);
  return 0;
}
