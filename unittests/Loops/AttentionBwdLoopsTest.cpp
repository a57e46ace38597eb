//===- AttentionBwdLoopsTest.cpp - CPU loops vs float64 reference ---------===//
//
// Compiles dash.attention_bwd through dash-tile, dash-schedule,
// dash-materialize-schedule and convert-dash-to-loops, JIT-runs it on random
// inputs (never zeros) and compares dq, dk, dv with a float64 reference, for
// every legal schedule. Also checks reruns are bitwise equal, that policies
// with the same reduction order give bitwise-equal dQ, and that policies
// with different orders differ only at rounding level.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "dash/Conversion/Passes.h"
#include "dash/InitAllDialects.h"
#include "dash/Pipelines/Pipelines.h"
#include "dash/Schedule/Schedules.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>
#include <random>
#include <sstream>

using namespace dash::test;

namespace {

struct Config {
  int64_t headDim = 64;
  bool causal = false;
  std::string policy = "ascending";
  int64_t seqQ = 64, seqK = 64;
  int64_t batch = 1, headsQ = 2, headsKV = 2;
  int64_t blockM = 0, blockN = 0; // 0: dash-tile defaults
  int64_t units = 3;
  bool topLeft = false;
  bool deterministic = true;
  bool exact = false;   // f32 P/dS and f32 gradients: the fp32 path
  std::string name() const {
    std::ostringstream os;
    os << "d" << headDim << (causal ? (topLeft ? " causal(top-left)" : " causal")
                                    : " full")
       << " sq" << seqQ << " sk" << seqK << " h" << headsQ << "/" << headsKV
       << " tile " << blockM << "x" << blockN << " G" << units << " "
       << policy << (deterministic ? "" : " nondet") << (exact ? " f32" : "");
    return os.str();
  }
  AttnShape shape() const {
    return {batch, seqQ, seqK, headsQ, headsKV, headDim, causal,
            topLeft ? 0 : seqK - seqQ, 1.0 / std::sqrt((double)headDim)};
  }
};

struct Outputs {
  std::vector<float> dq, dk, dv;
};

std::string memrefType(const std::vector<int64_t> &shape, const char *elt) {
  std::string s = "memref<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

/// Owns the MLIR context and runs one configuration end to end.
class LoopsRunner {
public:
  LoopsRunner() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerAllToLLVMIRTranslations(registry);
    dash::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
  }

  /// Returns false (with a message) if compilation or execution failed.
  bool run(const Config &c, const AttnInputs &in, Outputs &out,
           std::string &err) {
    AttnShape s = c.shape();
    std::vector<int64_t> qs = {c.batch, c.seqQ, c.headsQ, c.headDim};
    std::vector<int64_t> ks = {c.batch, c.seqK, c.headsKV, c.headDim};
    std::vector<int64_t> ls = {c.batch, c.headsQ, c.seqQ};
    std::string tq = memrefType(qs, "bf16"), tk = memrefType(ks, "bf16"),
                tl = memrefType(ls, "f32");
    const char *gElt = c.exact ? "f32" : "bf16";
    std::string gq = memrefType(qs, gElt), gk = memrefType(ks, gElt);
    std::ostringstream src;
    char scale[32];
    std::snprintf(scale, sizeof(scale), "%.9e", s.scale);
    src << "func.func @bwd(%q: " << tq << ", %k: " << tk << ", %v: " << tk
        << ", %o: " << tq << ", %do: " << tq << ", %lse: " << tl
        << ", %dq: " << gq << ", %dk: " << gk << ", %dv: " << gk
        << ") attributes {llvm.emit_c_interface} {\n"
        << "  dash.attention_bwd %q, %k, %v, %o, %do, %lse outs(%dq, %dk, %dv"
        << " : " << gq << ", " << gk << ", " << gk << ") mask = "
        << (c.causal ? "causal" : "full")
        << (c.causal ? (c.topLeft ? " align = top_left" : " align = bottom_right")
                     : "")
        << " scale = " << scale << " deterministic = "
        << (c.deterministic ? "true" : "false") << " : " << tq << ", " << tk
        << ", " << tk << ", " << tq << ", " << tq << ", " << tl
        << "\n  return\n}\n";
    std::string diag;
    llvm::raw_string_ostream diagOS(diag);
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      diagOS << d << "\n";
      return mlir::success();
    });
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(src.str(), &ctx);
    if (!module) {
      err = "parse failed: " + diag + "\n" + src.str();
      return false;
    }
    mlir::PassManager pm(&ctx);
    dash::ScheduleOptions so;
    so.policy = c.policy;
    so.numUnits = c.units;
    so.blockM = c.blockM;
    so.blockN = c.blockN;
    dash::buildDashToCPUPipeline(pm, so, c.exact);
    if (mlir::failed(pm.run(*module))) {
      err = "pipeline failed: " + diag;
      return false;
    }
    // function_ref: the transformer must outlive create().
    std::function<llvm::Error(llvm::Module *)> optimize =
        mlir::makeOptimizingTransformer(2, 0, nullptr);
    mlir::ExecutionEngineOptions opts;
    opts.transformer = optimize;
    auto engine = mlir::ExecutionEngine::create(*module, opts);
    if (!engine) {
      err = "JIT failed: " + llvm::toString(engine.takeError());
      return false;
    }

    // Inputs as bf16 bits; the reference sees exactly these values.
    auto bits = [](const std::vector<double> &x) {
      std::vector<uint16_t> b(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        b[i] = toBF16((float)x[i]);
      return b;
    };
    std::vector<uint16_t> q = bits(in.q), k = bits(in.k), v = bits(in.v),
                          o = bits(in.o), dO = bits(in.dO);
    std::vector<float> lse(in.lse.begin(), in.lse.end());
    // Poison the outputs: a gradient the kernel forgets to write fails.
    std::vector<uint16_t> dq16(q.size(), 0x7fc1), dk16(k.size(), 0x7fc1),
        dv16(v.size(), 0x7fc1);
    std::vector<float> dq32(q.size(), NAN), dk32(k.size(), NAN),
        dv32(v.size(), NAN);

    auto desc4 = [](auto *data, const std::vector<int64_t> &shape) {
      StridedMemRefType<std::remove_pointer_t<decltype(data)>, 4> m;
      m.basePtr = m.data = data;
      m.offset = 0;
      int64_t stride = 1;
      for (int i = 3; i >= 0; --i) {
        m.sizes[i] = shape[i];
        m.strides[i] = stride;
        stride *= shape[i];
      }
      return m;
    };
    StridedMemRefType<float, 3> lseM;
    lseM.basePtr = lseM.data = lse.data();
    lseM.offset = 0;
    lseM.sizes[0] = ls[0], lseM.sizes[1] = ls[1], lseM.sizes[2] = ls[2];
    lseM.strides[0] = ls[1] * ls[2], lseM.strides[1] = ls[2],
    lseM.strides[2] = 1;
    auto qM = desc4(q.data(), qs), kM = desc4(k.data(), ks),
         vM = desc4(v.data(), ks), oM = desc4(o.data(), qs),
         dOM = desc4(dO.data(), qs);
    llvm::Error e = llvm::Error::success();
    if (c.exact) {
      auto a = desc4(dq32.data(), qs), b = desc4(dk32.data(), ks),
           d = desc4(dv32.data(), ks);
      e = (*engine)->invoke("bwd", &qM, &kM, &vM, &oM, &dOM, &lseM, &a, &b,
                            &d);
    } else {
      auto a = desc4(dq16.data(), qs), b = desc4(dk16.data(), ks),
           d = desc4(dv16.data(), ks);
      e = (*engine)->invoke("bwd", &qM, &kM, &vM, &oM, &dOM, &lseM, &a, &b,
                            &d);
    }
    if (e) {
      err = "invoke failed: " + llvm::toString(std::move(e));
      return false;
    }
    auto widen = [](const std::vector<uint16_t> &x) {
      std::vector<float> f(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        f[i] = fromBF16(x[i]);
      return f;
    };
    out.dq = c.exact ? dq32 : widen(dq16);
    out.dk = c.exact ? dk32 : widen(dk16);
    out.dv = c.exact ? dv32 : widen(dv16);
    return true;
  }

private:
  mlir::MLIRContext ctx;
};

LoopsRunner &runner() {
  static LoopsRunner r;
  return r;
}

/// Random inputs, rounded to bf16, with O and lse from the float64 forward.
AttnInputs makeInputs(const Config &c, uint32_t seed) {
  AttnShape s = c.shape();
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto fill = [&](size_t n) {
    std::vector<double> x(n);
    for (double &e : x) {
      e = fromBF16(toBF16((float)normal(rng)));
      if (e == 0.0)
        e = 0.5; // never zeros
    }
    return x;
  };
  AttnInputs in;
  in.q = fill(c.batch * c.seqQ * c.headsQ * c.headDim);
  in.k = fill(c.batch * c.seqK * c.headsKV * c.headDim);
  in.v = fill(c.batch * c.seqK * c.headsKV * c.headDim);
  in.dO = fill(c.batch * c.seqQ * c.headsQ * c.headDim);
  forward(s, in);
  for (double &x : in.o)
    x = fromBF16(toBF16((float)x));
  for (double &x : in.lse)
    x = (double)(float)x; // lse is stored as f32
  return in;
}

bool isLegal(const Config &c) {
  dash::sched::Problem p;
  p.batch = c.batch;
  p.headsQ = c.headsQ;
  p.headsKV = c.headsKV;
  p.seqQ = c.seqQ;
  p.seqK = c.seqK;
  p.headDim = c.headDim;
  p.mask = c.causal ? dash::sched::Mask::Causal : dash::sched::Mask::Full;
  auto [tileM, tileN] = dash::sched::defaultTiles(c.headDim, p.mask);
  p.blockM = c.blockM ? c.blockM : tileM;
  p.blockN = c.blockN ? c.blockN : tileN;
  p.align = c.topLeft ? dash::sched::CausalAlign::TopLeft
                      : dash::sched::CausalAlign::BottomRight;
  p.numUnits = c.units;
  std::optional<dash::sched::Policy> pol = dash::sched::parsePolicy(c.policy);
  return pol && dash::sched::checkLegal(p, *pol).legal;
}

/// Runs `c` and checks it against the float64 reference; returns the
/// outputs for further comparisons.
Outputs checkAgainstReference(const Config &c, double tol) {
  AttnInputs in = makeInputs(c, 1234);
  std::vector<double> rq, rk, rv;
  backward(c.shape(), in, rq, rk, rv);
  Outputs out;
  std::string err;
  EXPECT_TRUE(runner().run(c, in, out, err)) << c.name() << ": " << err;
  if (!err.empty())
    return out;
  double eq = relError(out.dq, rq), ek = relError(out.dk, rk),
         ev = relError(out.dv, rv);
  EXPECT_LT(eq, tol) << c.name() << " dq";
  EXPECT_LT(ek, tol) << c.name() << " dk";
  EXPECT_LT(ev, tol) << c.name() << " dv";
  return out;
}

bool bitwiseEqual(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const char *kPolicies[] = {"ascending", "spt", "descending", "shift",
                           "symmetric-shift"};

// The matrix: d in {64, 128}, both masks, every legal policy,
// s in {64, 100, 256}, with FA3's tiles and with small tiles (more KV tiles,
// so the schedules really differ); bf16 path (< 1e-2).
TEST(AttentionBwdLoops, Bf16MatchesFloat64ForEveryLegalSchedule) {
  int cases = 0;
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t s : {64, 100, 256})
        for (auto tile : {std::pair<int64_t, int64_t>{0, 0}, {32, 64}})
          for (const char *policy : kPolicies) {
            Config c;
            c.headDim = d, c.causal = causal, c.seqQ = c.seqK = s;
            c.blockM = tile.first, c.blockN = tile.second;
            c.policy = policy;
            if (!isLegal(c))
              continue;
            checkAgainstReference(c, 1e-2);
            ++cases;
          }
  EXPECT_GE(cases, 60);
}

// fp32 path: P and dS unrounded, f32 gradients (< 1e-5).
TEST(AttentionBwdLoops, F32PathMatchesFloat64) {
  int cases = 0;
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t s : {64, 100, 256})
        for (const char *policy : kPolicies) {
          Config c;
          c.headDim = d, c.causal = causal, c.seqQ = c.seqK = s;
          c.blockM = 32, c.blockN = 64;
          c.policy = policy, c.exact = true;
          if (!isLegal(c))
            continue;
          checkAgainstReference(c, 1e-5);
          ++cases;
        }
  EXPECT_GE(cases, 30);
}

// s_q != s_k with both causal alignments, and grouped-query attention.
TEST(AttentionBwdLoops, UnequalLengthsAlignmentsAndGQA) {
  for (bool topLeft : {false, true})
    for (auto [sq, sk] : {std::pair<int64_t, int64_t>{100, 200}, {200, 100}})
      for (const char *policy : {"ascending", "spt", "descending"}) {
        Config c;
        c.headDim = 64, c.causal = true, c.topLeft = topLeft;
        c.seqQ = sq, c.seqK = sk, c.blockM = 32, c.blockN = 64;
        c.policy = policy, c.exact = true;
        checkAgainstReference(c, 1e-5);
      }
  Config gqa;
  gqa.headDim = 128, gqa.headsQ = 4, gqa.headsKV = 2, gqa.batch = 2;
  gqa.seqQ = gqa.seqK = 100, gqa.blockM = 32, gqa.blockN = 64;
  for (bool causal : {false, true}) {
    gqa.causal = causal;
    gqa.policy = causal ? "symmetric-shift" : "shift";
    gqa.seqQ = gqa.seqK = causal ? 128 : 100; // symmetric-shift: S % block_n == 0
    gqa.exact = true;
    checkAgainstReference(gqa, 1e-5);
    gqa.exact = false;
    checkAgainstReference(gqa, 1e-2);
  }
}

// Reruns are bitwise equal; ascending and descending share the reduction
// order (rank = KV tile) so their dQ is bitwise equal; spt (descending KV
// order) and the shift schedules reduce in other orders: equal to rounding.
TEST(AttentionBwdLoops, ReductionOrderDecidesTheBits) {
  for (bool causal : {false, true}) {
    Config c;
    c.headDim = 64, c.causal = causal, c.seqQ = c.seqK = 256;
    c.blockM = 32, c.blockN = 32, c.exact = true; // N = 8 KV tiles
    c.units = 5;
    c.policy = "ascending";
    Outputs asc = checkAgainstReference(c, 1e-5);
    Outputs again = checkAgainstReference(c, 1e-5);
    EXPECT_TRUE(bitwiseEqual(asc.dq, again.dq)) << c.name() << " rerun dq";
    EXPECT_TRUE(bitwiseEqual(asc.dk, again.dk)) << c.name() << " rerun dk";
    EXPECT_TRUE(bitwiseEqual(asc.dv, again.dv)) << c.name() << " rerun dv";

    c.policy = "descending";
    Outputs desc = checkAgainstReference(c, 1e-5);
    EXPECT_TRUE(bitwiseEqual(asc.dq, desc.dq))
        << "ascending and descending share the dQ reduction order";

    for (const char *other :
         {"spt", causal ? "symmetric-shift" : "shift"}) {
      c.policy = other;
      Outputs o = checkAgainstReference(c, 1e-5);
      EXPECT_FALSE(bitwiseEqual(asc.dq, o.dq))
          << other << " reduces dQ in another order; the bits should differ";
      EXPECT_LT(relError(o.dq, std::vector<double>(asc.dq.begin(),
                                                   asc.dq.end())),
                1e-6)
          << other << " differs from ascending beyond rounding";
    }
  }
}

// Non-deterministic mode (arrival-order adds) is still correct.
TEST(AttentionBwdLoops, NonDeterministicModeIsCorrect) {
  for (bool causal : {false, true}) {
    Config c;
    c.headDim = 128, c.causal = causal, c.seqQ = c.seqK = 100;
    c.blockM = 32, c.blockN = 64, c.deterministic = false;
    c.policy = causal ? "descending" : "shift";
    checkAgainstReference(c, 1e-2);
  }
}

} // namespace
