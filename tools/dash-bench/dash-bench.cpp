//===- dash-bench.cpp - GPU harness for the DASH attention backward ------===//
//
// Part of the DASH project. Runs the AOT kernels through the runtime's C API
// on real data: correctness against a CPU reference, bitwise determinism
// over repeats, G sweeps, a hang watchdog and timing. Builds without a GPU
// and without nvcc (the driver is dlopen'ed); see docs/Runtime.md.
//
// Exit codes: 0 all passed (skips allowed), 1 a case failed, 2 usage or
// setup error, 3 a launch hung (watchdog).
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "dash/Runtime/Driver.h"
#include "dash/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using dash::rt::Driver;
using namespace dash::bench;

namespace {

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

struct Options {
  std::string kernels = "build/kernels", json, policy = "all", mask = "causal",
              align = "bottom_right", det = "on", layout = "bshd";
  int64_t hdim = 128, batch = 2, heads = 4, headsKV = 0, seqlen = 1024,
          seqlenK = 0, units = 0;
  int repeats = 10, timing = 0, threads = 0;
  double timeoutS = 30;
  bool matrix = false, debug = false;
  int64_t matrixMaxSeqlen = 0; // > 0: leave out matrix shapes longer than this
  uint64_t seed = 1234;
};

void usage() {
  std::printf(
      "usage: dash-bench [options]\n"
      "  --kernels DIR       AOT kernels (default build/kernels)\n"
      "  --hdim 64|128       --mask full|causal   --align bottom_right|top_left\n"
      "  --policy NAME|all|auto  (all: every compiled policy; illegal ones SKIP)\n"
      "  --det on|off|both   --batch B --heads H --heads-kv HKV\n"
      "  --seqlen SQ --seqlen-k SK   --layout bshd|bhsd\n"
      "  --units G           persistent units (0 = occupancy)\n"
      "  --repeats N         runs for the bitwise check (default 10)\n"
      "  --timing N          median of N timed runs after warm-up\n"
      "  --matrix            the full test matrix (+ G sweep)\n"
      "  --matrix-max-seqlen N  leave out matrix shapes with S_q or S_k > N\n"
      "                      (the G sweep's 1024-token cases stay)\n"
      "  --json FILE         machine-readable results\n"
      "  --timeout-s S       watchdog per launch (default 30): HANG, exit 3\n"
      "  --threads N         CPU reference threads (default: all cores)\n"
      "  --seed N --debug\n");
}

bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "dash-bench: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    auto num = [&](const char *name) {
      const char *v = val(name);
      char *end;
      long long x = std::strtoll(v, &end, 10);
      if (*end || x < 0) {
        std::fprintf(stderr, "dash-bench: %s needs a non-negative integer, got '%s'\n", name, v);
        std::exit(2);
      }
      return int64_t(x);
    };
    if (a == "--kernels") o.kernels = val("--kernels");
    else if (a == "--json") o.json = val("--json");
    else if (a == "--policy") o.policy = val("--policy");
    else if (a == "--mask") o.mask = val("--mask");
    else if (a == "--align") o.align = val("--align");
    else if (a == "--det") o.det = val("--det");
    else if (a == "--layout") o.layout = val("--layout");
    else if (a == "--hdim") o.hdim = num("--hdim");
    else if (a == "--batch") o.batch = num("--batch");
    else if (a == "--heads") o.heads = num("--heads");
    else if (a == "--heads-kv") o.headsKV = num("--heads-kv");
    else if (a == "--seqlen") o.seqlen = num("--seqlen");
    else if (a == "--seqlen-k") o.seqlenK = num("--seqlen-k");
    else if (a == "--units") o.units = num("--units");
    else if (a == "--repeats") o.repeats = int(std::max<int64_t>(1, num("--repeats")));
    else if (a == "--timing") o.timing = int(num("--timing"));
    else if (a == "--threads") o.threads = int(num("--threads"));
    else if (a == "--seed") o.seed = uint64_t(num("--seed"));
    else if (a == "--timeout-s") o.timeoutS = double(std::max<int64_t>(1, num("--timeout-s")));
    else if (a == "--matrix") o.matrix = true;
    else if (a == "--matrix-max-seqlen") o.matrixMaxSeqlen = num("--matrix-max-seqlen");
    else if (a == "--debug") o.debug = true;
    else if (a == "-h" || a == "--help") { usage(); std::exit(0); }
    else {
      std::fprintf(stderr, "dash-bench: unknown option '%s'\n", a.c_str());
      usage();
      return false;
    }
  }
  if (o.mask != "full" && o.mask != "causal") {
    std::fprintf(stderr, "dash-bench: --mask must be full or causal\n");
    return false;
  }
  if (o.align == "br" || o.align == "bottom-right") o.align = "bottom_right";
  if (o.align == "tl" || o.align == "top-left") o.align = "top_left";
  if (o.align != "bottom_right" && o.align != "top_left") {
    std::fprintf(stderr, "dash-bench: --align must be bottom_right or top_left\n");
    return false;
  }
  if (o.det != "on" && o.det != "off" && o.det != "both") {
    std::fprintf(stderr, "dash-bench: --det must be on, off or both\n");
    return false;
  }
  dash_policy pol;
  if (o.policy != "all" && !dash_policy_parse(o.policy.c_str(), &pol)) {
    std::fprintf(stderr, "dash-bench: unknown --policy '%s'\n", o.policy.c_str());
    return false;
  }
  if (o.layout != "bshd" && o.layout != "bhsd") {
    std::fprintf(stderr, "dash-bench: --layout must be bshd or bhsd\n");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0; // NaN
  x += 0x7fffu + ((x >> 16) & 1u); // round to nearest even
  return uint16_t(x >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint64_t fnv1a(const void *p, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  // Uniform in [-1, 1), never zero after bf16 rounding.
  float value() {
    float f = float(int64_t(next() >> 11) - (int64_t(1) << 52)) / float(int64_t(1) << 52);
    float r = fromBf16(toBf16(f));
    return r == 0.f ? 0.0078125f : r;
  }
};

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Cases and results
// ---------------------------------------------------------------------------

struct Case {
  int64_t d, B, Hq, Hkv, Sq, Sk;
  bool causal, bottomRight, det;
  std::string policy; // name or "auto"
  int64_t units;
  std::string group;  // "matrix", "gsweep", "single"
};

struct Result {
  Case c;
  std::string status = "FAIL"; // PASS, FAIL, SKIP, HANG
  std::string reason, kernel, resolvedPolicy;
  double errDq = NAN, errDk = NAN, errDv = NAN;
  bool hashesEqual = false;
  int distinct = 0, runs = 0;
  uint64_t hash = 0;
  int64_t G = 0, workspace = 0;
  double ms = NAN, tflops = NAN;
};

std::string caseName(const Case &c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "d%lld %s%s %s %s b%lld h%lld/%lld sq%lld sk%lld%s",
                (long long)c.d, c.causal ? "causal" : "full",
                c.causal ? (c.bottomRight ? "-br" : "-tl") : "", c.policy.c_str(),
                c.det ? "det" : "nondet", (long long)c.B, (long long)c.Hq,
                (long long)c.Hkv, (long long)c.Sq, (long long)c.Sk,
                c.units ? (" G=" + std::to_string(c.units)).c_str() : "");
  return buf;
}

// Visible (query, key) pairs per head; the usual "half" for causal Sq == Sk.
double visiblePairs(const Case &c) {
  if (!c.causal)
    return double(c.Sq) * double(c.Sk);
  if (c.Sq == c.Sk)
    return double(c.Sq) * double(c.Sk) / 2;
  int64_t off = c.bottomRight ? c.Sk - c.Sq : 0;
  double n = 0;
  for (int64_t i = 0; i < c.Sq; ++i)
    n += double(std::clamp<int64_t>(i + off + 1, 0, c.Sk));
  return n;
}

// ---------------------------------------------------------------------------
// Inputs, reference and device buffers (cached across cases of one shape)
// ---------------------------------------------------------------------------

struct Data {
  // key of what is cached
  int64_t d = 0, B = 0, Hq = 0, Hkv = 0, Sq = 0, Sk = 0;
  bool causal = false, bottomRight = false, valid = false;
  // host, BHSD float (bf16 values)
  std::vector<float> q, k, v, dO, o, lse, dq, dk, dv;
  // device
  CUdeviceptr dQ = 0, dK = 0, dV = 0, dOut = 0, dDO = 0, dLse = 0, dDq = 0, dDk = 0, dDv = 0;
};

class Bench {
public:
  Options opt;
  Driver drv;
  dash_runtime *rt = nullptr;
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  CUstream stream = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  std::string deviceName;
  int driverVersion = 0;
  Data data;

  bool ck(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS)
      return true;
    std::fprintf(stderr, "dash-bench: %s\n", drv.describe(what, r).c_str());
    return false;
  }

  bool setup() {
    std::string err = drv.load();
    if (!err.empty()) {
      std::fprintf(stderr, "dash-bench: %s\n", err.c_str());
      return false;
    }
    if (!ck(drv.cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        !ck(drv.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !ck(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
        !ck(drv.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        !ck(drv.cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate") ||
        !ck(drv.cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate"))
      return false;
    char name[256] = {};
    drv.cuDeviceGetName(name, sizeof name, dev);
    deviceName = name;
    drv.cuDriverGetVersion(&driverVersion);
    if (dash_runtime_create(opt.kernels.c_str(), &rt) != DASH_SUCCESS) {
      std::fprintf(stderr, "dash-bench: %s\n", dash_runtime_last_error(nullptr));
      return false;
    }
    dash_runtime_set_debug(rt, opt.debug);
    std::printf("device: %s, driver %d; %d kernels in %s\n", deviceName.c_str(),
                driverVersion, dash_runtime_num_kernels(rt), opt.kernels.c_str());
    for (int i = 0; i < dash_runtime_num_kernels(rt); ++i)
      std::printf("  %s\n", dash_runtime_kernel_description(rt, i));
    return true;
  }

  void freeDevice() {
    for (CUdeviceptr *p : {&data.dQ, &data.dK, &data.dV, &data.dOut, &data.dDO,
                           &data.dLse, &data.dDq, &data.dDk, &data.dDv})
      if (*p) {
        drv.cuMemFree(*p);
        *p = 0;
      }
  }

  // Calls f(host offset, device offset) for every (b, h, s) row: host
  // arrays are BHSD, the device tensor is in the chosen layout.
  template <typename F>
  void forEachRow(int64_t B, int64_t H, int64_t S, int64_t D, F f) const {
    bool bshd = opt.layout == "bshd";
    for (int64_t b = 0; b < B; ++b)
      for (int64_t hh = 0; hh < H; ++hh)
        for (int64_t s = 0; s < S; ++s) {
          size_t host = size_t(((b * H + hh) * S + s) * D);
          f(host, bshd ? size_t(((b * S + s) * H + hh) * D) : host);
        }
  }
  // Host BHSD floats -> device bf16 in the chosen layout.
  bool upload(CUdeviceptr &dst, const std::vector<float> &src, int64_t B,
              int64_t H, int64_t S, int64_t D) {
    std::vector<uint16_t> h(src.size());
    forEachRow(B, H, S, D, [&](size_t host, size_t dev) {
      for (int64_t d = 0; d < D; ++d)
        h[dev + size_t(d)] = toBf16(src[host + size_t(d)]);
    });
    return ck(drv.cuMemAlloc(&dst, h.size() * 2), "cuMemAlloc") &&
           ck(drv.cuMemcpyHtoD(dst, h.data(), h.size() * 2), "cuMemcpyHtoD");
  }
  bool download(std::vector<uint16_t> &raw, std::vector<float> &out, CUdeviceptr src,
                int64_t B, int64_t H, int64_t S, int64_t D) {
    raw.resize(size_t(B * H * S * D));
    if (!ck(drv.cuMemcpyDtoH(raw.data(), src, raw.size() * 2), "cuMemcpyDtoH"))
      return false;
    out.resize(raw.size());
    forEachRow(B, H, S, D, [&](size_t host, size_t dev) {
      for (int64_t d = 0; d < D; ++d)
        out[host + size_t(d)] = fromBf16(raw[dev + size_t(d)]);
    });
    return true;
  }

  dash_tensor tensor(CUdeviceptr p, int64_t B, int64_t S, int64_t H, int64_t D) {
    dash_tensor t{};
    t.data = reinterpret_cast<void *>(p);
    t.rank = 4;
    t.dtype = DASH_DTYPE_BF16;
    t.shape[0] = B; t.shape[1] = S; t.shape[2] = H; t.shape[3] = D;
    if (opt.layout == "bshd") {
      t.strides[0] = S * H * D; t.strides[1] = H * D; t.strides[2] = D;
    } else { // BHSD storage, BSHD logical order
      t.strides[0] = H * S * D; t.strides[1] = D; t.strides[2] = S * D;
    }
    t.strides[3] = 1;
    return t;
  }

  // Builds inputs, the forward (o, lse) and the reference backward.
  bool prepare(const Case &c) {
    if (data.valid && data.d == c.d && data.B == c.B && data.Hq == c.Hq &&
        data.Hkv == c.Hkv && data.Sq == c.Sq && data.Sk == c.Sk &&
        data.causal == c.causal && (!c.causal || data.bottomRight == c.bottomRight))
      return true;
    freeDevice();
    data = Data();
    data.d = c.d; data.B = c.B; data.Hq = c.Hq; data.Hkv = c.Hkv;
    data.Sq = c.Sq; data.Sk = c.Sk; data.causal = c.causal; data.bottomRight = c.bottomRight;
    auto t0 = std::chrono::steady_clock::now();
    Rng rng(opt.seed ^ uint64_t(c.d * 1000003 + c.Sq * 131 + c.Sk * 7 + c.Hq));
    auto fill = [&](std::vector<float> &x, size_t n) {
      x.resize(n);
      for (float &f : x)
        f = rng.value();
    };
    size_t nq = size_t(c.B * c.Hq * c.Sq * c.d), nk = size_t(c.B * c.Hkv * c.Sk * c.d);
    fill(data.q, nq);
    fill(data.k, nk);
    fill(data.v, nk);
    fill(data.dO, nq);
    RefProblem rp{c.B, c.Hq, c.Hkv, c.Sq, c.Sk, c.d, c.causal, c.bottomRight,
                  float(1.0 / std::sqrt(double(c.d))),
                  /*useDouble=*/std::max(c.Sq, c.Sk) < 4096,
                  opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()))};
    referenceForward(rp, data.q, data.k, data.v, data.o, data.lse);
    for (float &f : data.o) // the kernel gets bf16 o
      f = fromBf16(toBf16(f));
    referenceBackward(rp, data.q, data.k, data.v, data.o, data.dO, data.lse,
                      data.dq, data.dk, data.dv);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  reference (%s, %d threads) for b%lld h%lld/%lld sq%lld sk%lld d%lld %s: %.1f s\n",
                rp.useDouble ? "double" : "float", rp.threads, (long long)c.B,
                (long long)c.Hq, (long long)c.Hkv, (long long)c.Sq, (long long)c.Sk,
                (long long)c.d, c.causal ? (c.bottomRight ? "causal-br" : "causal-tl") : "full", secs);
    std::fflush(stdout);
    if (!upload(data.dQ, data.q, c.B, c.Hq, c.Sq, c.d) ||
        !upload(data.dK, data.k, c.B, c.Hkv, c.Sk, c.d) ||
        !upload(data.dV, data.v, c.B, c.Hkv, c.Sk, c.d) ||
        !upload(data.dOut, data.o, c.B, c.Hq, c.Sq, c.d) ||
        !upload(data.dDO, data.dO, c.B, c.Hq, c.Sq, c.d) ||
        !ck(drv.cuMemAlloc(&data.dLse, data.lse.size() * 4), "cuMemAlloc") ||
        !ck(drv.cuMemcpyHtoD(data.dLse, data.lse.data(), data.lse.size() * 4), "cuMemcpyHtoD") ||
        !ck(drv.cuMemAlloc(&data.dDq, nq * 2), "cuMemAlloc") ||
        !ck(drv.cuMemAlloc(&data.dDk, nk * 2), "cuMemAlloc") ||
        !ck(drv.cuMemAlloc(&data.dDv, nk * 2), "cuMemAlloc"))
      return false;
    data.valid = true;
    return true;
  }

  dash_bwd_args args(const Case &c, bool placeholders) {
    CUdeviceptr p[9] = {data.dQ, data.dK, data.dV, data.dOut, data.dDO,
                        data.dLse, data.dDq, data.dDk, data.dDv};
    if (placeholders) // distinct, aligned, never dereferenced by check()
      for (int i = 0; i < 9; ++i)
        p[i] = (CUdeviceptr(1) << 40) + (CUdeviceptr(i + 1) << 36);
    dash_bwd_args a{};
    a.q = tensor(p[0], c.B, c.Sq, c.Hq, c.d);
    a.k = tensor(p[1], c.B, c.Sk, c.Hkv, c.d);
    a.v = tensor(p[2], c.B, c.Sk, c.Hkv, c.d);
    a.o = tensor(p[3], c.B, c.Sq, c.Hq, c.d);
    a.dO = tensor(p[4], c.B, c.Sq, c.Hq, c.d);
    a.dq = tensor(p[6], c.B, c.Sq, c.Hq, c.d);
    a.dk = tensor(p[7], c.B, c.Sk, c.Hkv, c.d);
    a.dv = tensor(p[8], c.B, c.Sk, c.Hkv, c.d);
    a.lse.data = reinterpret_cast<void *>(p[5]);
    a.lse.rank = 3;
    a.lse.dtype = DASH_DTYPE_F32;
    a.lse.shape[0] = c.B; a.lse.shape[1] = c.Hq; a.lse.shape[2] = c.Sq;
    a.lse.strides[0] = c.Hq * c.Sq; a.lse.strides[1] = c.Sq; a.lse.strides[2] = 1;
    a.causal = c.causal;
    a.align = c.bottomRight ? DASH_ALIGN_BOTTOM_RIGHT : DASH_ALIGN_TOP_LEFT;
    a.scale = float(1.0 / std::sqrt(double(c.d)));
    a.deterministic = c.det;
    dash_policy pol = DASH_POLICY_AUTO;
    dash_policy_parse(c.policy.c_str(), &pol);
    a.policy = pol;
    a.num_units = c.units;
    return a;
  }

  // Waits for the stream with a deadline; a hang is fatal (the kernels may
  // spin forever, and the context cannot be recovered).
  bool waitOrHang(const Case &c, int run) {
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      CUresult q = drv.cuStreamQuery(stream);
      if (q == CUDA_SUCCESS)
        return true;
      if (q != CUDA_ERROR_NOT_READY) {
        std::printf("FAIL %s: %s (run %d)\n", caseName(c).c_str(),
                    drv.describe("cuStreamQuery", q).c_str(), run);
        return false;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > opt.timeoutS) {
        std::printf("HANG %s: run %d did not finish within %.0f s\n", caseName(c).c_str(), run, opt.timeoutS);
        std::fflush(stdout);
        writeJson(&c); // keep what we have
        _exit(3);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  static double relErr(const std::vector<float> &x, const std::vector<float> &ref, bool &nan) {
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i]) || std::isinf(x[i]))
        nan = true;
      double d = double(x[i]) - double(ref[i]);
      num += d * d;
      den += double(ref[i]) * double(ref[i]);
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

  Result run(const Case &c) {
    Result r;
    r.c = c;
    auto skipOrFail = [&](dash_status s) {
      bool skip = s == DASH_ERROR_NO_KERNEL || s == DASH_ERROR_ILLEGAL_SCHEDULE ||
                  s == DASH_ERROR_TOO_MANY_UNITS;
      r.status = skip ? "SKIP" : "FAIL";
      std::string msg = dash_runtime_last_error(rt);
      if (s == DASH_ERROR_NO_KERNEL) // the list of available kernels is printed at start
        msg = msg.substr(0, msg.find("; available:"));
      r.reason = std::string(dash_status_name(s)) + ": " + msg;
      return report(r);
    };
    // Check with placeholder pointers first, so a skipped case costs no
    // reference computation (check() never dereferences them).
    dash_bwd_info info;
    dash_bwd_args a = args(c, /*placeholders=*/true);
    dash_status st = dash_attention_bwd_check(rt, &a, &info);
    if (st != DASH_SUCCESS)
      return skipOrFail(st);
    if (!prepare(c)) {
      r.reason = "setup failed (device memory?)";
      return report(r);
    }
    a = args(c, false);
    const size_t nq = data.q.size(), nk = data.k.size();
    std::vector<uint16_t> rq, rk, rv;
    std::vector<float> fq, fk, fv;
    std::vector<uint64_t> hashes;
    for (int run = 0; run < opt.repeats; ++run) {
      // Poison: a missed write shows up as NaN.
      if (!ck(drv.cuMemsetD16Async(data.dDq, 0xFFFF, nq, stream), "cuMemsetD16Async") ||
          !ck(drv.cuMemsetD16Async(data.dDk, 0xFFFF, nk, stream), "cuMemsetD16Async") ||
          !ck(drv.cuMemsetD16Async(data.dDv, 0xFFFF, nk, stream), "cuMemsetD16Async")) {
        r.reason = "poison failed";
        return report(r);
      }
      st = dash_attention_bwd(rt, &a, stream, &info);
      if (st != DASH_SUCCESS)
        return skipOrFail(st);
      if (!waitOrHang(c, run)) {
        r.reason = "kernel error";
        return report(r);
      }
      if (!download(rq, fq, data.dDq, c.B, c.Hq, c.Sq, c.d) ||
          !download(rk, fk, data.dDk, c.B, c.Hkv, c.Sk, c.d) ||
          !download(rv, fv, data.dDv, c.B, c.Hkv, c.Sk, c.d)) {
        r.reason = "download failed";
        return report(r);
      }
      uint64_t h = fnv1a(rq.data(), rq.size() * 2);
      h = fnv1a(rk.data(), rk.size() * 2, h);
      h = fnv1a(rv.data(), rv.size() * 2, h);
      hashes.push_back(h);
      if (run == 0) {
        bool nan = false;
        r.errDq = relErr(fq, data.dq, nan);
        r.errDk = relErr(fk, data.dk, nan);
        r.errDv = relErr(fv, data.dv, nan);
        if (nan)
          r.reason = "NaN/Inf in output";
      }
    }
    r.kernel = info.kernel_name;
    r.resolvedPolicy = dash_policy_name(info.policy);
    r.G = info.num_units;
    r.workspace = info.workspace_bytes;
    r.runs = int(hashes.size());
    r.hash = hashes[0];
    std::vector<uint64_t> sorted = hashes;
    std::sort(sorted.begin(), sorted.end());
    r.distinct = int(std::unique(sorted.begin(), sorted.end()) - sorted.begin());
    r.hashesEqual = r.distinct == 1;
    bool errOk = r.errDq < 1e-2 && r.errDk < 1e-2 && r.errDv < 1e-2;
    if (!errOk && r.reason.empty())
      r.reason = "relative error >= 1e-2";
    if (c.det && !r.hashesEqual && r.reason.empty())
      r.reason = "deterministic mode gave " + std::to_string(r.distinct) + " distinct results";
    if (r.reason.empty() && opt.timing > 0)
      time(c, a, r);
    r.status = r.reason.empty() ? "PASS" : "FAIL";
    return report(r);
  }

  void time(const Case &c, const dash_bwd_args &a, Result &r) {
    for (int i = 0; i < 3; ++i) // warm-up
      dash_attention_bwd(rt, &a, stream, nullptr);
    if (!waitOrHang(c, -1))
      return;
    std::vector<double> ms;
    for (int i = 0; i < opt.timing; ++i) {
      drv.cuEventRecord(e0, stream);
      dash_attention_bwd(rt, &a, stream, nullptr);
      drv.cuEventRecord(e1, stream);
      if (!waitOrHang(c, -1))
        return;
      float t = 0;
      drv.cuEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    r.ms = ms[ms.size() / 2];
    double flops = 10.0 * double(c.B) * double(c.Hq) * double(c.d) * visiblePairs(c);
    r.tflops = flops / (r.ms * 1e-3) / 1e12;
  }

  std::vector<Result> results;

  Result report(Result &r) {
    char line[768];
    if (r.status == "SKIP") {
      std::snprintf(line, sizeof line, "SKIP %s: %s", caseName(r.c).c_str(), r.reason.c_str());
    } else {
      char timing[96] = "";
      if (!std::isnan(r.ms))
        std::snprintf(timing, sizeof timing, " %.3f ms %.1f TFLOP/s", r.ms, r.tflops);
      std::snprintf(line, sizeof line,
                    "%s %s: kernel %s (%s) G=%lld err dq=%.2e dk=%.2e dv=%.2e bits %d/%d runs equal%s%s%s",
                    r.status.c_str(), caseName(r.c).c_str(), r.kernel.c_str(),
                    r.resolvedPolicy.c_str(), (long long)r.G, r.errDq, r.errDk, r.errDv,
                    r.distinct == 1 ? r.runs : 0, r.runs, timing,
                    r.reason.empty() ? "" : " -- ", r.reason.c_str());
    }
    std::printf("%s\n", line);
    std::fflush(stdout);
    results.push_back(r);
    return r;
  }

  void writeJson(const Case *hung) {
    if (opt.json.empty())
      return;
    FILE *f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "dash-bench: cannot write %s\n", opt.json.c_str());
      return;
    }
    std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"driver_version\": %d,\n  \"kernels\": \"%s\",\n"
                    "  \"repeats\": %d,\n  \"timing_runs\": %d,\n  \"layout\": \"%s\",\n",
                 jsonEscape(deviceName).c_str(), driverVersion, jsonEscape(opt.kernels).c_str(),
                 opt.repeats, opt.timing, opt.layout.c_str());
    if (hung)
      std::fprintf(f, "  \"hang\": \"%s\",\n", jsonEscape(caseName(*hung)).c_str());
    std::fprintf(f, "  \"results\": [\n");
    auto num = [](double x) {
      char b[32];
      if (std::isnan(x)) return std::string("null");
      std::snprintf(b, sizeof b, "%.6g", x);
      return std::string(b);
    };
    for (size_t i = 0; i < results.size(); ++i) {
      const Result &r = results[i];
      const Case &c = r.c;
      std::fprintf(f,
                   "    {\"status\": \"%s\", \"group\": \"%s\", \"hdim\": %lld, \"mask\": \"%s\", "
                   "\"align\": \"%s\", \"policy\": \"%s\", \"resolved_policy\": \"%s\", "
                   "\"deterministic\": %s, \"batch\": %lld, \"heads\": %lld, \"heads_kv\": %lld, "
                   "\"seqlen\": %lld, \"seqlen_k\": %lld, \"units_requested\": %lld, \"G\": %lld, "
                   "\"kernel\": \"%s\", \"rel_err\": {\"dq\": %s, \"dk\": %s, \"dv\": %s}, "
                   "\"runs\": %d, \"distinct_results\": %d, \"hashes_equal\": %s, "
                   "\"hash\": \"%016llx\", \"ms\": %s, \"tflops\": %s, \"workspace_bytes\": %lld, "
                   "\"reason\": \"%s\"}%s\n",
                   r.status.c_str(), c.group.c_str(), (long long)c.d, c.causal ? "causal" : "full",
                   c.causal ? (c.bottomRight ? "bottom_right" : "top_left") : "", c.policy.c_str(),
                   r.resolvedPolicy.c_str(), c.det ? "true" : "false", (long long)c.B,
                   (long long)c.Hq, (long long)c.Hkv, (long long)c.Sq, (long long)c.Sk,
                   (long long)c.units, (long long)r.G, jsonEscape(r.kernel).c_str(),
                   num(r.errDq).c_str(), num(r.errDk).c_str(), num(r.errDv).c_str(), r.runs,
                   r.distinct, r.hashesEqual ? "true" : "false", (unsigned long long)r.hash,
                   num(r.ms).c_str(), num(r.tflops).c_str(), (long long)r.workspace,
                   jsonEscape(r.reason).c_str(), i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
};

std::vector<std::string> policiesFor(const std::string &sel, bool causal) {
  if (sel != "all")
    return {sel};
  if (causal)
    return {"ascending", "spt", "descending", "symmetric-shift"};
  return {"ascending", "descending", "shift"};
}

std::vector<bool> detsFor(const std::string &det) {
  if (det == "both")
    return {true, false};
  return {det == "on"};
}

std::vector<Case> matrixCases(const Options &o) {
  std::vector<Case> cases;
  struct Shape { int64_t B, H, Sq, Sk; };
  const Shape square[] = {{2, 4, 128, 128}, {2, 4, 1000, 1000}, {2, 4, 4096, 4096}, {1, 16, 8192, 8192}};
  // Shape-major so each reference is computed once.
  for (const Shape &s : square)
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (const std::string &p : policiesFor("all", causal))
          for (bool det : {true, false})
            cases.push_back({d, s.B, s.H, s.H, s.Sq, s.Sk, causal, true, det, p, 0, "matrix"});
  const Shape ragged[] = {{2, 4, 1000, 1500}, {2, 4, 1500, 1000}};
  for (const Shape &s : ragged)
    for (int64_t d : {64, 128})
      for (bool br : {true, false})
        for (const char *p : {"ascending", "spt", "descending"})
          for (bool det : {true, false})
            cases.push_back({d, s.B, s.H, s.H, s.Sq, s.Sk, true, br, det, p, 0, "matrix"});
  // GQA (the postprocess sums the group; without it the main kernel writes
  // dk/dv itself): both masks, S_q != S_k too.
  struct Gqa { int64_t B, Hq, Hkv, Sq, Sk; };
  const Gqa gqa[] = {{2, 8, 2, 777, 777}, {1, 6, 3, 300, 520}};
  for (const Gqa &s : gqa)
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (const char *p : {"ascending", "descending"})
          for (bool det : {true, false})
            cases.push_back({d, s.B, s.Hq, s.Hkv, s.Sq, s.Sk, causal, true, det, p, 0, "matrix"});
  // G sweep: same bits for the same G, no hang at any G.
  for (int64_t g : {1, 7, 66, 132}) {
    cases.push_back({128, 2, 4, 4, 1024, 1024, false, true, true, "shift", g, "gsweep"});
    cases.push_back({128, 2, 4, 4, 1024, 1024, true, true, true, "symmetric-shift", g, "gsweep"});
  }
  // The G sweep stays in a shortened matrix: it is the one group whose
  // persistent schedules run several waves with heads split across them,
  // and no shape short enough for the cut has more than one
  // symmetric-shift pair per head at d = 128.
  if (o.matrixMaxSeqlen > 0)
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const Case &c) {
                                 return c.group == "matrix" &&
                                        (c.Sq > o.matrixMaxSeqlen ||
                                         c.Sk > o.matrixMaxSeqlen);
                               }),
                cases.end());
  return cases;
}

} // namespace

int main(int argc, char **argv) {
  Bench bench;
  Options &o = bench.opt;
  if (!parseArgs(argc, argv, o))
    return 2;
  std::vector<Case> cases;
  if (o.matrix) {
    cases = matrixCases(o);
  } else {
    int64_t hkv = o.headsKV ? o.headsKV : o.heads;
    int64_t sk = o.seqlenK ? o.seqlenK : o.seqlen;
    for (const std::string &p : policiesFor(o.policy, o.mask == "causal"))
      for (bool det : detsFor(o.det))
        cases.push_back({o.hdim, o.batch, o.heads, hkv, o.seqlen, sk, o.mask == "causal",
                         o.align == "bottom_right", det, p, o.units, "single"});
  }
  if (!bench.setup())
    return 2;
  for (const Case &c : cases)
    bench.run(c);

  // Summary.
  int pass = 0, fail = 0, skip = 0;
  for (const Result &r : bench.results)
    (r.status == "PASS" ? pass : r.status == "SKIP" ? skip : fail)++;
  std::printf("\n%-62s %-6s %-10s %-9s %-9s %-9s %-7s %-9s %s\n", "case", "status", "policy",
              "err dq", "err dk", "err dv", "bits", "ms", "TFLOP/s");
  for (const Result &r : bench.results) {
    if (r.status == "SKIP")
      continue;
    std::printf("%-62s %-6s %-10s %-9.2e %-9.2e %-9.2e %-7s %-9.3f %.1f\n",
                caseName(r.c).c_str(), r.status.c_str(), r.resolvedPolicy.c_str(), r.errDq,
                r.errDk, r.errDv, r.hashesEqual ? "equal" : "DIFFER", r.ms, r.tflops);
  }
  std::printf("\nsummary: %d passed, %d failed, %d skipped (device %s)\n", pass, fail, skip,
              bench.deviceName.c_str());
  bench.writeJson(nullptr);
  bench.freeDevice();
  dash_runtime_destroy(bench.rt);
  return fail ? 1 : 0;
}
