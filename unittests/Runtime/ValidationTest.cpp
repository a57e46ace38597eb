//===- ValidationTest.cpp - Argument checks, selection, G, auto -----------===//
//
// Part of the DASH project. Everything here goes through
// dash_attention_bwd_check(), which never calls the driver.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <gtest/gtest.h>

#include <climits>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>

using namespace dash_test;

namespace {

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(dash_runtime_create(kernelDir().c_str(), &rt), DASH_SUCCESS)
        << dash_runtime_last_error(nullptr);
  }
  void TearDown() override { dash_runtime_destroy(rt); }

  dash_status check(const dash_bwd_args &a, dash_bwd_info *info = nullptr) {
    return dash_attention_bwd_check(rt, &a, info);
  }
  std::string err() const { return dash_runtime_last_error(rt); }
  void setProps(int sms, int blocks) {
    dash_device_props p{sms, blocks};
    ASSERT_EQ(dash_runtime_set_device_props(rt, &p), DASH_SUCCESS);
  }

  dash_runtime *rt = nullptr;
};

TEST_F(RuntimeTest, ValidArgsSelectKernel) {
  dash_bwd_args a = makeArgs();
  dash_bwd_info info;
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_STREQ(info.kernel_name, "d128_causal_br_descending_det");
  EXPECT_EQ(info.policy, DASH_POLICY_DESCENDING);
  EXPECT_EQ(info.block_m, 64);
  EXPECT_EQ(info.threads, 256);
  EXPECT_EQ(info.main_shared_bytes, 81920);
  EXPECT_EQ(info.num_units, 0); // no device known: G unknown
  EXPECT_EQ(dash_runtime_num_kernels(rt), 6);
  EXPECT_NE(std::string(dash_runtime_kernel_description(rt, 0)).find(": d128 bf16"), std::string::npos);
  EXPECT_EQ(dash_runtime_kernel_description(rt, 6), nullptr);
}

TEST_F(RuntimeTest, WorkspaceBytesMatchTheLayout) {
  dash_bwd_args a = makeArgs(2, 256, 320, 4, 2, 128);
  int64_t bytes = 0;
  ASSERT_EQ(dash_workspace_bytes(rt, &a, &bytes), DASH_SUCCESS) << err();
  auto up = [](int64_t x) { return (x + 255) / 256 * 256; };
  const int64_t B = 2, H = 4, Sq = 256, Sk = 320, D = 128, bm = 64, bn = 64;
  int64_t want = up((B * H * Sq * D + bm * D) * 4) + 2 * up((B * H * Sk * D + bn * D) * 4) +
                 2 * up((B * H * Sq + bm) * 4) + up(B * H * ((Sq + bm - 1) / bm) * 4);
  EXPECT_EQ(bytes, want);
  dash_bwd_info info;
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.workspace_bytes, want);
  EXPECT_EQ(dash_workspace_bytes(rt, &a, nullptr), DASH_ERROR_INVALID_ARGUMENT);
}

// Kernels that write dk/dv themselves when H_q == H_kv (the WGMMA family,
// "dkdv_direct": true) need no f32 dk/dv accumulators then; with GQA they do.
TEST(RuntimeWorkspace, DirectDkDvKernelsNeedNoDkDvAccumulatorsWithoutGqa) {
  char tmpl[] = "/tmp/dash-rt-directXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, name = "d128_causal_br_descending_det";
  std::ifstream in(kernelDir() + "/" + name + ".json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t at = text.find("\"threads\": 256");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"dkdv_direct\": true, ");
  std::ofstream(dir + "/" + name + ".json") << text;
  { // the cubin is only read at launch; check() needs the manifest alone
    std::ofstream(dir + "/" + name + ".cubin") << "x";
  }
  dash_runtime *rt = nullptr;
  ASSERT_EQ(dash_runtime_create(dir.c_str(), &rt), DASH_SUCCESS)
      << dash_runtime_last_error(nullptr);
  auto up = [](int64_t x) { return (x + 255) / 256 * 256; };
  const int64_t B = 2, Sq = 256, Sk = 320, D = 128, bm = 64, bn = 64;
  for (int64_t Hkv : {4, 2}) {
    const int64_t H = 4;
    dash_bwd_args a = makeArgs(B, Sq, Sk, H, Hkv, D);
    int64_t bytes = 0;
    ASSERT_EQ(dash_workspace_bytes(rt, &a, &bytes), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    int64_t kv = Hkv == H ? 0 : 2 * up((B * H * Sk * D + bn * D) * 4);
    int64_t want = up((B * H * Sq * D + bm * D) * 4) + kv +
                   2 * up((B * H * Sq + bm) * 4) + up(B * H * ((Sq + bm - 1) / bm) * 4);
    EXPECT_EQ(bytes, want) << "Hkv = " << Hkv;
    dash_bwd_info info;
    ASSERT_EQ(dash_attention_bwd_check(rt, &a, &info), DASH_SUCCESS);
    EXPECT_EQ(info.workspace_bytes, want) << "Hkv = " << Hkv;
  }
  dash_runtime_destroy(rt);
  std::remove((dir + "/" + name + ".json").c_str());
  std::remove((dir + "/" + name + ".cubin").c_str());
  rmdir(dir.c_str());
}

// dash_workspace_bytes serves every kernel auto may pick: the largest of
// their layouts. Here the descending kernel has 128-row Q tiles, the
// ascending one 64: the 64-row kernel needs twice the semaphores, more than
// the larger block's slack makes up at B * H * S_q = 2^21, so a layout for the
// largest block sizes alone (what the runtime used to report) fell short.
TEST(RuntimeWorkspace, TheReportServesTheLargestCandidate) {
  char tmpl[] = "/tmp/dash-rt-mixedXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const char *names[2] = {"d128_causal_br_ascending_det", "d128_causal_br_descending_det"};
  for (const char *name : names) {
    std::ifstream in(kernelDir() + "/" + name + ".json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (std::string(name).find("descending") != std::string::npos) {
      const std::string from = "\"block_m\": 64";
      size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos);
      text.replace(at, from.size(), "\"block_m\": 128");
    }
    std::ofstream(dir + "/" + name + ".json") << text;
    std::ofstream(dir + "/" + name + ".cubin") << "x"; // read only at launch
  }
  dash_runtime *rt = nullptr;
  ASSERT_EQ(dash_runtime_create(dir.c_str(), &rt), DASH_SUCCESS)
      << dash_runtime_last_error(nullptr);
  dash_bwd_args a = makeArgs(8, 16384, 16384, 16, 16, 128);
  int64_t perKernel[2] = {0, 0};
  const dash_policy pols[2] = {DASH_POLICY_ASCENDING, DASH_POLICY_DESCENDING};
  for (int i = 0; i < 2; ++i) {
    a.policy = pols[i];
    dash_bwd_info info;
    ASSERT_EQ(dash_attention_bwd_check(rt, &a, &info), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    EXPECT_EQ(info.block_m, i == 0 ? 64 : 128);
    perKernel[i] = info.workspace_bytes;
  }
  EXPECT_GT(perKernel[0], perKernel[1]); // the 64-row kernel needs more
  a.policy = DASH_POLICY_AUTO;
  int64_t bytes = 0;
  ASSERT_EQ(dash_workspace_bytes(rt, &a, &bytes), DASH_SUCCESS) << dash_runtime_last_error(rt);
  EXPECT_EQ(bytes, std::max(perKernel[0], perKernel[1]));
  dash_runtime_destroy(rt);
  for (const char *name : names) {
    std::remove((dir + "/" + name + ".json").c_str());
    std::remove((dir + "/" + name + ".cubin").c_str());
  }
  rmdir(dir.c_str());
}

// One rule per case: mutate valid args, expect the code and a message that
// names the argument.
struct Rule {
  const char *name;
  std::function<void(dash_bwd_args &)> mutate;
  dash_status want;
  const char *message;
};

TEST_F(RuntimeTest, EveryValidationRuleNamesItsArgument) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Rule> rules = {
      {"q null", [](dash_bwd_args &a) { a.q.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "q.data is NULL"},
      {"k null", [](dash_bwd_args &a) { a.k.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "k.data is NULL"},
      {"v null", [](dash_bwd_args &a) { a.v.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "v.data is NULL"},
      {"o null", [](dash_bwd_args &a) { a.o.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "o.data is NULL"},
      {"dO null", [](dash_bwd_args &a) { a.dO.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "dO.data is NULL"},
      {"lse null", [](dash_bwd_args &a) { a.lse.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "lse.data is NULL"},
      {"dq null", [](dash_bwd_args &a) { a.dq.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "dq.data is NULL"},
      {"dk null", [](dash_bwd_args &a) { a.dk.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "dk.data is NULL"},
      {"dv null", [](dash_bwd_args &a) { a.dv.data = nullptr; }, DASH_ERROR_INVALID_ARGUMENT, "dv.data is NULL"},
      {"q rank", [](dash_bwd_args &a) { a.q.rank = 3; }, DASH_ERROR_INVALID_ARGUMENT, "q.rank must be 4, got 3"},
      {"lse rank", [](dash_bwd_args &a) { a.lse.rank = 4; }, DASH_ERROR_INVALID_ARGUMENT, "lse.rank must be 3"},
      {"q zero", [](dash_bwd_args &a) { a.q.shape[1] = 0; }, DASH_ERROR_INVALID_ARGUMENT, "q.shape[1] must be positive"},
      {"k negative", [](dash_bwd_args &a) { a.k.shape[0] = -2; }, DASH_ERROR_INVALID_ARGUMENT, "k.shape[0] must be positive"},
      {"huge dim", [](dash_bwd_args &a) { a.v.shape[1] = int64_t(1) << 32; }, DASH_ERROR_INVALID_ARGUMENT, "v.shape[1] = 4294967296 exceeds"},
      {"batch mismatch", [](dash_bwd_args &a) { a.k.shape[0] = 3; }, DASH_ERROR_INVALID_ARGUMENT, "k.shape[0] (batch) = 3 does not match q.shape[0] = 2"},
      {"sq mismatch o", [](dash_bwd_args &a) { a.o.shape[1] = 128; }, DASH_ERROR_INVALID_ARGUMENT, "o.shape[1] (seqlen)"},
      {"sk mismatch v", [](dash_bwd_args &a) { a.v.shape[1] = 128; }, DASH_ERROR_INVALID_ARGUMENT, "v.shape[1] (seqlen_k)"},
      {"hkv mismatch dv", [](dash_bwd_args &a) { a.dv.shape[2] = 4; a.dv.strides[1] = 512; a.dv.strides[0] = 512 * 256; }, DASH_ERROR_INVALID_ARGUMENT, "dv.shape[2] (heads_kv)"},
      {"hq mismatch dO", [](dash_bwd_args &a) { a.dO.shape[2] = 2; }, DASH_ERROR_INVALID_ARGUMENT, "dO.shape[2] (heads)"},
      {"d mismatch dk", [](dash_bwd_args &a) { a.dk.shape[3] = 64; }, DASH_ERROR_INVALID_ARGUMENT, "dk.shape[3] (head_dim)"},
      {"lse heads", [](dash_bwd_args &a) { a.lse.shape[1] = 8; }, DASH_ERROR_INVALID_ARGUMENT, "lse.shape[1] (heads)"},
      {"lse seqlen", [](dash_bwd_args &a) { a.lse.shape[2] = 255; }, DASH_ERROR_INVALID_ARGUMENT, "lse.shape[2] (seqlen)"},
      {"gqa ratio", [](dash_bwd_args &a) {
         for (dash_tensor *t : {&a.k, &a.v, &a.dk, &a.dv}) {
           t->shape[2] = 3;
           t->strides[1] = 3 * 128;
           t->strides[0] = 3 * 128 * 256;
         }
       }, DASH_ERROR_INVALID_ARGUMENT, "heads of q (4) must be a multiple of heads of k (3)"},
      {"head dim 96", [](dash_bwd_args &a) {
         for (dash_tensor *t : {&a.q, &a.k, &a.v, &a.o, &a.dO, &a.dq, &a.dk, &a.dv}) t->shape[3] = 96;
       }, DASH_ERROR_UNSUPPORTED, "head_dim 96 is not supported"},
      {"q f32", [](dash_bwd_args &a) { a.q.dtype = DASH_DTYPE_F32; }, DASH_ERROR_UNSUPPORTED, "q.dtype f32 is not supported"},
      {"mixed dtype", [](dash_bwd_args &a) { a.v.dtype = DASH_DTYPE_F16; }, DASH_ERROR_INVALID_ARGUMENT, "v.dtype f16 differs from q.dtype bf16"},
      {"bad dtype enum", [](dash_bwd_args &a) { a.o.dtype = dash_dtype(42); }, DASH_ERROR_INVALID_ARGUMENT, "o.dtype has unknown value 42"},
      {"lse bf16", [](dash_bwd_args &a) { a.lse.dtype = DASH_DTYPE_BF16; }, DASH_ERROR_INVALID_ARGUMENT, "lse.dtype must be f32"},
      {"d stride", [](dash_bwd_args &a) { a.k.strides[3] = 2; }, DASH_ERROR_INVALID_ARGUMENT, "k.strides[3] (head dim) must be 1"},
      {"stride 16B", [](dash_bwd_args &a) { a.q.strides[1] = 516; }, DASH_ERROR_INVALID_ARGUMENT, "q.strides[1] = 516 elements is not a multiple of 16 bytes"},
      {"negative stride", [](dash_bwd_args &a) { a.o.strides[0] = -8; }, DASH_ERROR_INVALID_ARGUMENT, "o.strides[0] must be >= 1"},
      {"lse zero stride", [](dash_bwd_args &a) { a.lse.strides[2] = 0; }, DASH_ERROR_INVALID_ARGUMENT, "lse.strides[2] must be >= 1"},
      {"misaligned", [](dash_bwd_args &a) { a.dO.data = static_cast<char *>(a.dO.data) + 8; }, DASH_ERROR_INVALID_ARGUMENT, "dO.data must be 16-byte aligned"},
      {"misaligned lse", [](dash_bwd_args &a) { a.lse.data = static_cast<char *>(a.lse.data) + 4; }, DASH_ERROR_INVALID_ARGUMENT, "lse.data must be 16-byte aligned"},
      {"overflow", [](dash_bwd_args &a) { a.q.shape[0] = 3; a.q.strides[0] = int64_t(1) << 62; }, DASH_ERROR_INVALID_ARGUMENT, "q: shape x strides overflows"},
      {"dq overlaps itself", [](dash_bwd_args &a) { a.dq.strides[1] = 8; a.dq.strides[2] = 8; }, DASH_ERROR_INVALID_ARGUMENT, "dq: strides make elements overlap"},
      {"dk aliases k", [](dash_bwd_args &a) { a.dk.data = a.k.data; }, DASH_ERROR_INVALID_ARGUMENT, "dk.data aliases k.data"},
      {"dv aliases dq", [](dash_bwd_args &a) { a.dv.data = a.dq.data; }, DASH_ERROR_INVALID_ARGUMENT, "dq.data aliases dv.data"},
      {"scale nan", [nan](dash_bwd_args &a) { a.scale = nan; }, DASH_ERROR_INVALID_ARGUMENT, "scale must be finite and > 0"},
      {"scale inf", [inf](dash_bwd_args &a) { a.scale = inf; }, DASH_ERROR_INVALID_ARGUMENT, "scale must be finite and > 0"},
      {"scale zero", [](dash_bwd_args &a) { a.scale = 0; }, DASH_ERROR_INVALID_ARGUMENT, "scale must be finite and > 0"},
      {"scale negative", [](dash_bwd_args &a) { a.scale = -0.1f; }, DASH_ERROR_INVALID_ARGUMENT, "scale must be finite and > 0"},
      {"causal 2", [](dash_bwd_args &a) { a.causal = 2; }, DASH_ERROR_INVALID_ARGUMENT, "causal must be 0 or 1"},
      {"det 3", [](dash_bwd_args &a) { a.deterministic = 3; }, DASH_ERROR_INVALID_ARGUMENT, "deterministic must be 0 or 1"},
      {"align enum", [](dash_bwd_args &a) { a.align = dash_align(7); }, DASH_ERROR_INVALID_ARGUMENT, "align has unknown value 7"},
      {"policy enum", [](dash_bwd_args &a) { a.policy = dash_policy(9); }, DASH_ERROR_INVALID_ARGUMENT, "policy has unknown value 9"},
      {"units negative", [](dash_bwd_args &a) { a.num_units = -1; }, DASH_ERROR_INVALID_ARGUMENT, "num_units must be in [0, 2^31-1]"},
      {"units int32", [](dash_bwd_args &a) { a.num_units = int64_t(INT32_MAX) + 1; }, DASH_ERROR_INVALID_ARGUMENT, "num_units must be in [0, 2^31-1]"},
  };
  for (const Rule &r : rules) {
    dash_bwd_args a = makeArgs();
    r.mutate(a);
    EXPECT_EQ(check(a), r.want) << r.name << ": " << err();
    EXPECT_NE(err().find(r.message), std::string::npos)
        << r.name << ": want \"" << r.message << "\", got \"" << err() << "\"";
    // The launch entry point refuses the same way, before any driver call
    // (this runtime's driver path does not even exist).
    EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), r.want) << r.name;
  }
  EXPECT_EQ(dash_attention_bwd_check(rt, nullptr, nullptr), DASH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(err().find("args is NULL"), std::string::npos);
  dash_bwd_args a = makeArgs();
  EXPECT_EQ(dash_attention_bwd_check(nullptr, &a, nullptr), DASH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dash_runtime_last_error(nullptr)).find("rt is NULL"), std::string::npos);
}

TEST_F(RuntimeTest, StridedLayoutsAreAccepted) {
  // BHSD storage passed as BSHD logical order with permuted strides.
  dash_bwd_args a = makeArgs();
  for (dash_tensor *t : {&a.q, &a.o, &a.dO, &a.dq}) {
    int64_t S = t->shape[1], H = t->shape[2], D = t->shape[3];
    t->strides[0] = H * S * D;
    t->strides[1] = D;
    t->strides[2] = S * D;
    t->strides[3] = 1;
  }
  // Strided lse (padded rows) and an arbitrary stride on a size-1 dim.
  a.lse.strides[1] = 512;
  a.lse.strides[0] = 4 * 512;
  EXPECT_EQ(check(a), DASH_SUCCESS) << err();
  dash_bwd_args b = makeArgs(1);
  b.q.strides[0] = 3; // batch of 1: never used
  EXPECT_EQ(check(b), DASH_SUCCESS) << err();
  EXPECT_EQ(err(), ""); // cleared on success
}

TEST_F(RuntimeTest, MissingKernelListsTheAvailableOnes) {
  dash_bwd_args a = makeArgs();
  a.policy = DASH_POLICY_SPT; // not compiled in the fixtures
  EXPECT_EQ(check(a), DASH_ERROR_NO_KERNEL);
  EXPECT_NE(err().find("\"d128 bf16 causal bottom_right spt det\""), std::string::npos) << err();
  EXPECT_NE(err().find("available: d128 bf16 causal bottom_right ascending det"), std::string::npos) << err();

  dash_bwd_args f16 = makeArgs(2, 256, 256, 4, 2, 128, DASH_DTYPE_F16);
  EXPECT_EQ(check(f16), DASH_ERROR_NO_KERNEL);
  EXPECT_NE(err().find("d128 f16 causal"), std::string::npos) << err();

  dash_bwd_args d64 = makeArgs(2, 256, 256, 4, 2, 64);
  EXPECT_EQ(check(d64), DASH_ERROR_NO_KERNEL); // d64 only has full-mask kernels
  d64.causal = 0;
  d64.policy = DASH_POLICY_ASCENDING;
  dash_bwd_info info;
  EXPECT_EQ(check(d64, &info), DASH_SUCCESS) << err();
  EXPECT_STREQ(info.kernel_name, "d64_full_ascending_det");

  dash_bwd_args nd = makeArgs();
  nd.deterministic = 0;
  EXPECT_EQ(check(nd, &info), DASH_SUCCESS) << err();
  EXPECT_STREQ(info.kernel_name, "d128_causal_br_descending_nondet");
  nd.policy = DASH_POLICY_ASCENDING;
  EXPECT_EQ(check(nd), DASH_ERROR_NO_KERNEL);
}

TEST_F(RuntimeTest, AlignmentSelection) {
  // Sq == Sk: both alignments are the same mask, the bottom-right kernel serves.
  dash_bwd_args a = makeArgs();
  a.align = DASH_ALIGN_TOP_LEFT;
  dash_bwd_info info;
  EXPECT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_STREQ(info.kernel_name, "d128_causal_br_descending_det");
  // Sq != Sk: top-left is a different mask and has no kernel.
  dash_bwd_args b = makeArgs(2, 256, 384);
  b.align = DASH_ALIGN_TOP_LEFT;
  EXPECT_EQ(check(b), DASH_ERROR_NO_KERNEL);
  EXPECT_NE(err().find("causal top_left"), std::string::npos) << err();
  b.align = DASH_ALIGN_BOTTOM_RIGHT;
  EXPECT_EQ(check(b), DASH_SUCCESS) << err();
  dash_bwd_args c = makeArgs(2, 384, 256); // sq > sk: empty rows, still legal
  EXPECT_EQ(check(c), DASH_SUCCESS) << err();
}

TEST_F(RuntimeTest, IllegalSchedulesAreRefusedWithTheReason) {
  setProps(132, 1);
  // symmetric-shift: N = 5 KV tiles is odd.
  dash_bwd_args a = makeArgs(2, 320, 320);
  a.policy = DASH_POLICY_SYMMETRIC_SHIFT;
  EXPECT_EQ(check(a), DASH_ERROR_ILLEGAL_SCHEDULE);
  EXPECT_NE(err().find("even number of KV tiles"), std::string::npos) << err();
  // symmetric-shift: needs Sq == Sk.
  a = makeArgs(2, 256, 384);
  a.policy = DASH_POLICY_SYMMETRIC_SHIFT;
  EXPECT_EQ(check(a), DASH_ERROR_ILLEGAL_SCHEDULE);
  EXPECT_NE(err().find("symmetric-shift needs seqlen == seqlen-k"), std::string::npos) << err();
  a = makeArgs(2, 256, 256);
  a.policy = DASH_POLICY_SYMMETRIC_SHIFT;
  EXPECT_EQ(check(a), DASH_SUCCESS) << err();

  // The kernels walk the schedule in 32-bit arithmetic: B * Hq * KV tiles
  // (+ 2 G) must fit it (2^20 * 4 * 512 64-row KV tiles = 2^31 do not).
  a = makeArgs(int64_t(1) << 20, 1 << 15, 1 << 15, 4, 4, 128);
  EXPECT_EQ(check(a), DASH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(err().find("batch * heads * KV tiles (1048576 * 4 * 512) + 2 * "
                       "num_units exceeds the kernels' 32-bit schedule walk"),
            std::string::npos)
      << err();
  a = makeArgs((int64_t(1) << 20) - 1, 1 << 15, 1 << 15, 4, 4, 128);
  a.num_units = 1;
  EXPECT_NE(check(a), DASH_ERROR_INVALID_ARGUMENT) << err();

  // shift needs M >= R (Q tiles >= tiles of one head in one wave).
  dash_bwd_args s = makeArgs(1, 64, 1024, 1, 1, 64);
  s.causal = 0;
  s.policy = DASH_POLICY_SHIFT;
  EXPECT_EQ(check(s), DASH_ERROR_ILLEGAL_SCHEDULE);
  EXPECT_NE(err().find("shift needs Q tiles M >= tiles of one head in one wave R"), std::string::npos) << err();
  // With G = 1 a wave holds one tile: legal.
  s.num_units = 1;
  EXPECT_EQ(check(s), DASH_SUCCESS) << err();
}

TEST_F(RuntimeTest, GridSizeComesFromOccupancyAndIsCapped) {
  dash_bwd_args a = makeArgs();
  dash_bwd_info info;
  setProps(132, 1);
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.num_units, 132);
  EXPECT_EQ(info.max_units, 132);
  EXPECT_EQ(info.num_sms, 132);
  a.num_units = 7;
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.num_units, 7);
  a.num_units = 133;
  EXPECT_EQ(check(a), DASH_ERROR_TOO_MANY_UNITS);
  EXPECT_NE(err().find("num_units = 133 exceeds the 132 co-resident CTAs"), std::string::npos) << err();
  setProps(66, 2);
  a.num_units = 132;
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.max_units, 132);
  a.num_units = 0;
  setProps(132, 2);
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.num_units, 264);

  dash_device_props bad{0, 1};
  EXPECT_EQ(dash_runtime_set_device_props(rt, &bad), DASH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(err().find("props.num_sms"), std::string::npos);
  EXPECT_EQ(dash_runtime_set_device_props(rt, nullptr), DASH_SUCCESS);
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.num_units, 0); // back to unknown
}

// Auto must equal pickBest over exactly the compiled, legal policies.
TEST_F(RuntimeTest, AutoResolvesThroughTheScheduleLibrary) {
  namespace s = dash::sched;
  struct Case {
    int64_t B, Sq, Sk, Hq, Hkv, D;
    bool causal;
    int sms;
    std::vector<s::Policy> compiled;
  } cases[] = {
      {2, 1024, 1024, 4, 2, 128, true, 132, {s::Policy::Ascending, s::Policy::Descending, s::Policy::SymmetricShift}},
      {1, 4096, 4096, 16, 16, 128, true, 132, {s::Policy::Ascending, s::Policy::Descending, s::Policy::SymmetricShift}},
      {2, 1000, 1500, 4, 4, 128, true, 132, {s::Policy::Ascending, s::Policy::Descending}}, // symshift illegal
      {2, 4096, 4096, 4, 4, 64, false, 132, {s::Policy::Ascending, s::Policy::Shift}},
      {1, 64, 1024, 1, 1, 64, false, 132, {s::Policy::Ascending}}, // shift illegal
  };
  for (const Case &c : cases) {
    setProps(c.sms, 1);
    dash_bwd_args a = makeArgs(c.B, c.Sq, c.Sk, c.Hq, c.Hkv, c.D);
    a.causal = c.causal;
    a.policy = DASH_POLICY_AUTO;
    dash_bwd_info info;
    ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
    s::Problem p;
    p.batch = c.B; p.headsQ = c.Hq; p.headsKV = c.Hkv; p.seqQ = c.Sq; p.seqK = c.Sk;
    p.headDim = c.D; p.blockM = 64; p.blockN = c.causal ? 64 : 128;
    p.mask = c.causal ? s::Mask::Causal : s::Mask::Full;
    p.numUnits = c.sms;
    std::vector<s::Choice> cands;
    for (s::Policy pol : c.compiled)
      if (s::checkLegal(p, pol).legal)
        cands.push_back({pol, s::simulate(p, pol)});
    s::Choice best = s::pickBest(cands, 1e-9, true);
    EXPECT_STREQ(dash_policy_name(info.policy), s::policyName(best.policy))
        << "Sq=" << c.Sq << " Sk=" << c.Sk;
    EXPECT_EQ(info.num_units, c.sms);
    // Same answer from the cache.
    dash_bwd_info again;
    ASSERT_EQ(check(a, &again), DASH_SUCCESS);
    EXPECT_EQ(again.policy, info.policy);
  }
  // Without device properties G is unknown: auto stays unresolved.
  dash_runtime_set_device_props(rt, nullptr);
  dash_bwd_args a = makeArgs();
  a.policy = DASH_POLICY_AUTO;
  dash_bwd_info info;
  ASSERT_EQ(check(a, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(info.policy, DASH_POLICY_AUTO);
  EXPECT_STREQ(info.kernel_name, "");
  // Never a policy without a kernel (spt is not compiled).
  setProps(132, 1);
  for (int64_t sq : {128, 512, 2048}) {
    dash_bwd_args b = makeArgs(1, sq, sq, 8, 8);
    b.policy = DASH_POLICY_AUTO;
    ASSERT_EQ(check(b, &info), DASH_SUCCESS) << err();
    EXPECT_NE(info.policy, DASH_POLICY_SPT);
  }
}

// Non-deterministic kernels add their dQ partials unordered: auto models
// them without the rank chain (Problem::ordered = false), so the two flags
// can pick different schedules for one shape. A kernel directory with the
// fixture's three causal policies, each deterministic and not.
TEST(AutoNonDeterministic, ModelsUnorderedAdds) {
  namespace s = dash::sched;
  char tmpl[] = "/tmp/dash-rt-nondetXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::vector<std::string> written;
  for (std::string pol : {"ascending", "descending", "symshift"}) {
    const std::string det = "d128_causal_br_" + pol + "_det";
    std::ifstream in(kernelDir() + "/" + det + ".json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(text.empty()) << det;
    for (bool d : {true, false}) {
      std::string name = "d128_causal_br_" + pol + (d ? "_det" : "_nondet"), t = text;
      for (size_t at = 0; (at = t.find(det, at)) != std::string::npos;
           at += name.size())
        t.replace(at, det.size(), name);
      if (!d) {
        const std::string yes = "\"deterministic\": true";
        size_t at = t.find(yes);
        ASSERT_NE(at, std::string::npos);
        t.replace(at, yes.size(), "\"deterministic\": false");
      }
      std::ofstream(dir + "/" + name + ".json") << t;
      std::ifstream cubin(kernelDir() + "/" + det + ".cubin", std::ios::binary);
      std::ofstream(dir + "/" + name + ".cubin", std::ios::binary) << cubin.rdbuf();
      written.push_back(dir + "/" + name + ".json");
      written.push_back(dir + "/" + name + ".cubin");
    }
  }
  dash_runtime *rt = nullptr;
  ASSERT_EQ(dash_runtime_create(dir.c_str(), &rt), DASH_SUCCESS)
      << dash_runtime_last_error(nullptr);
  dash_device_props props{132, 1};
  ASSERT_EQ(dash_runtime_set_device_props(rt, &props), DASH_SUCCESS);
  int differ = 0;
  for (int64_t S : {512, 1024, 2048})
    for (int64_t B : {1, 2}) {
      std::string pick[2];
      for (int det : {1, 0}) {
        dash_bwd_args a = makeArgs(B, S, S, 4, 4, 128);
        a.deterministic = det;
        a.policy = DASH_POLICY_AUTO;
        dash_bwd_info info;
        ASSERT_EQ(dash_attention_bwd_check(rt, &a, &info), DASH_SUCCESS)
            << dash_runtime_last_error(rt);
        EXPECT_EQ(std::string(info.kernel_name).find(det ? "_det" : "_nondet") !=
                      std::string::npos,
                  true)
            << info.kernel_name;
        s::Problem p;
        p.batch = B; p.headsQ = p.headsKV = 4; p.seqQ = p.seqK = S;
        p.headDim = 128; p.blockM = 64; p.blockN = 64;
        p.mask = s::Mask::Causal; p.numUnits = 132; p.persistentLaunch = true;
        p.ordered = det;
        std::vector<s::Choice> cands;
        for (s::Policy pol : {s::Policy::Ascending, s::Policy::Descending,
                              s::Policy::SymmetricShift})
          if (s::checkLegal(p, pol).legal)
            cands.push_back({pol, s::simulate(p, pol)});
        EXPECT_STREQ(dash_policy_name(info.policy),
                     s::policyName(s::pickBest(cands, 1e-9, det).policy))
            << "S=" << S << " B=" << B << " det=" << det;
        pick[det] = dash_policy_name(info.policy);
      }
      differ += pick[0] != pick[1];
    }
  // The unordered model changes the answer somewhere (e.g. a few short
  // heads: descending shortens the ordered chains, ascending is as good
  // without them and comes first).
  EXPECT_GT(differ, 0);
  dash_runtime_destroy(rt);
  for (const std::string &f : written)
    std::remove(f.c_str());
  rmdir(dir.c_str());
}

TEST_F(RuntimeTest, ErrorsAreThreadLocal) {
  dash_bwd_args bad = makeArgs();
  bad.scale = 0;
  EXPECT_EQ(check(bad), DASH_ERROR_INVALID_ARGUMENT);
  std::string other;
  std::thread t([&] {
    dash_bwd_args good = makeArgs();
    EXPECT_EQ(check(good), DASH_SUCCESS);
    other = dash_runtime_last_error(rt);
  });
  t.join();
  EXPECT_EQ(other, "");
  EXPECT_NE(err().find("scale"), std::string::npos);
}

TEST(RuntimeCreate, Errors) {
  EXPECT_EQ(dash_runtime_create(kernelDir().c_str(), nullptr), DASH_ERROR_INVALID_ARGUMENT);
  dash_runtime *rt = reinterpret_cast<dash_runtime *>(1);
  EXPECT_EQ(dash_runtime_create("/nonexistent/dir", &rt), DASH_ERROR_MANIFEST);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(dash_runtime_last_error(nullptr)).find("/nonexistent/dir"), std::string::npos);
  EXPECT_EQ(dash_runtime_create((std::string(DASH_TEST_INPUTS) + "/bad").c_str(), &rt),
            DASH_ERROR_MANIFEST);
  EXPECT_NE(std::string(dash_runtime_last_error(nullptr)).find("broken.json: invalid JSON"), std::string::npos)
      << dash_runtime_last_error(nullptr);
  dash_runtime_destroy(nullptr);
}

TEST(RuntimeNames, PolicyAndStatus) {
  dash_policy p;
  EXPECT_TRUE(dash_policy_parse("symmetric_shift", &p));
  EXPECT_EQ(p, DASH_POLICY_SYMMETRIC_SHIFT);
  EXPECT_TRUE(dash_policy_parse("auto", &p));
  EXPECT_EQ(p, DASH_POLICY_AUTO);
  EXPECT_FALSE(dash_policy_parse("zigzag", &p));
  EXPECT_STREQ(dash_policy_name(DASH_POLICY_SHIFT), "shift");
  EXPECT_STREQ(dash_policy_name(DASH_POLICY_AUTO), "auto");
  EXPECT_STREQ(dash_status_name(DASH_ERROR_NO_DRIVER), "DASH_ERROR_NO_DRIVER");
}

} // namespace

// The schedule `auto` resolves to for `a` with the kernels of `dir` on a
// 132-SM device (the check path: no driver), or the runtime's error.
static std::string autoPolicyFor(const std::string &dir, dash_bwd_args a) {
  dash_runtime *rt = nullptr;
  if (dash_runtime_create(dir.c_str(), &rt) != DASH_SUCCESS)
    return std::string("error: ") + dash_runtime_last_error(nullptr);
  dash_device_props props{132, 1};
  dash_bwd_info info;
  a.policy = DASH_POLICY_AUTO;
  std::string out;
  if (dash_runtime_set_device_props(rt, &props) != DASH_SUCCESS ||
      dash_attention_bwd_check(rt, &a, &info) != DASH_SUCCESS)
    out = std::string("error: ") + dash_runtime_last_error(rt);
  else
    out = dash_policy_name(info.policy);
  dash_runtime_destroy(rt);
  return out;
}

// The manifests' model reaches auto, staging included: d = 64 full, b = 2,
// h = 16, s = 8192 on 132 SMs, with ascending and shift compiled. The
// serial model (r = c, 3% gap) calls them a tie and keeps the G-independent
// ascending; the staged model (two staging buffers) sees ascending's
// lock-step units 3% behind and picks shift.
TEST(RuntimeModel, StagedModelFromTheManifestDecidesAuto) {
  for (int staging : {0, 2}) {
    char tmpl[] = "/tmp/dash-rt-modelXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    for (const char *name : {"d64_full_ascending_det", "d64_full_shift_det"}) {
      std::ifstream in(kernelDir() + "/" + name + ".json");
      std::string text((std::istreambuf_iterator<char>(in)), {});
      size_t at = text.find("\"threads\": 256");
      ASSERT_NE(at, std::string::npos);
      text.insert(at, "\"model\": {\"c\": 1.0, \"r\": 1.0, \"tie\": 0.03, "
                      "\"staging\": " +
                          std::to_string(staging) + "}, ");
      std::ofstream(dir + "/" + name + ".json") << text;
      std::ofstream(dir + "/" + name + ".cubin") << "x"; // read at launch only
    }
    dash_bwd_args a = makeArgs(2, 8192, 8192, 16, 16, 64);
    a.causal = 0;
    EXPECT_EQ(autoPolicyFor(dir, a), staging ? "shift" : "ascending")
        << "staging = " << staging;
    for (const char *name : {"d64_full_ascending_det", "d64_full_shift_det"}) {
      std::remove((dir + "/" + name + ".json").c_str());
      std::remove((dir + "/" + name + ".cubin").c_str());
    }
    rmdir(dir.c_str());
  }
}

// The manifests' tie gap favours G-independent orders for deterministic
// kernels only: with ascending and symmetric-shift compiled non-
// deterministic under the AOT model (r = c, 3% gap, two staging buffers),
// b = 1, h = 32, s = 8192 on 132 SMs with the fixture's 64 x 64 tiles (the
// tile grid of the H200 case, d = 64 s = 16384 with 128 x 128 tiles,
// bench/NOTES.md section 25: ascending measured 5% slower) models ascending
// 2.3% behind -- inside the gap -- and auto must still pick symmetric-shift.
TEST(RuntimeModel, NonDeterministicAutoIgnoresTheTieGap) {
  namespace s = dash::sched;
  {
    s::Problem p;
    p.batch = 1; p.headsQ = p.headsKV = 32; p.seqQ = p.seqK = 8192;
    p.headDim = 128; p.blockM = p.blockN = 64; p.mask = s::Mask::Causal;
    p.numUnits = 132; p.persistentLaunch = true; p.ordered = false;
    p.c = p.r = 1.0; p.tieTolerance = 0.03; p.stagingBuffers = 2;
    double asc = s::simulate(p, s::Policy::Ascending).makespan;
    double sym = s::simulate(p, s::Policy::SymmetricShift).makespan;
    ASSERT_LT(sym, asc); // the case is a near-tie, not a clear win
    ASSERT_LE(asc - sym, 0.03 * asc);
  }
  char tmpl[] = "/tmp/dash-rt-nondet-tieXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::vector<std::string> written;
  for (std::string pol : {"ascending", "symshift"}) {
    const std::string det = "d128_causal_br_" + pol + "_det";
    const std::string name = "d128_causal_br_" + pol + "_nondet";
    std::ifstream in(kernelDir() + "/" + det + ".json");
    std::string t((std::istreambuf_iterator<char>(in)), {});
    ASSERT_FALSE(t.empty()) << det;
    for (size_t at = 0; (at = t.find(det, at)) != std::string::npos; at += name.size())
      t.replace(at, det.size(), name);
    const std::string yes = "\"deterministic\": true";
    size_t at = t.find(yes);
    ASSERT_NE(at, std::string::npos);
    t.replace(at, yes.size(), "\"deterministic\": false");
    at = t.find("\"threads\"");
    ASSERT_NE(at, std::string::npos);
    t.insert(at, "\"model\": {\"c\": 1.0, \"r\": 1.0, \"tie\": 0.03, \"staging\": 2}, ");
    std::ofstream(dir + "/" + name + ".json") << t;
    std::ofstream(dir + "/" + name + ".cubin") << "x"; // read at launch only
    written.push_back(dir + "/" + name + ".json");
    written.push_back(dir + "/" + name + ".cubin");
  }
  dash_bwd_args a = makeArgs(1, 8192, 8192, 32, 32, 128);
  a.deterministic = 0;
  EXPECT_EQ(autoPolicyFor(dir, a), "symmetric-shift");
  for (const std::string &f : written)
    std::remove(f.c_str());
  rmdir(dir.c_str());
}
