//===- DriverTest.cpp - No-driver path and the launch path on a mock ------===//
//
// Part of the DASH project. CI machines have no libcuda.so.1: the launch
// entry point must answer DASH_ERROR_NO_DRIVER there. The launch path itself
// (grid sizing, shared-memory opt-in, kernel ABI packing) runs against a fake
// libcuda.so.1 built next to this test (MockCuda.cpp).
//
//===----------------------------------------------------------------------===//

#include "MockCuda.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstring>
#include <cuda.h>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <string>
#include <vector>

using namespace dash_test;


namespace {

TEST(NoDriver, MissingLibcudaGivesNoDriver) {
  dash_runtime *rt = nullptr;
  ASSERT_EQ(dash_runtime_create_ex(kernelDir().c_str(), "/nonexistent/libcuda.so.1", &rt),
            DASH_SUCCESS);
  dash_bwd_args a = makeArgs();
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_NO_DRIVER);
  EXPECT_NE(std::string(dash_runtime_last_error(rt)).find("cannot load the CUDA driver"),
            std::string::npos)
      << dash_runtime_last_error(rt);
  // check() still works: it never needs the driver.
  EXPECT_EQ(dash_attention_bwd_check(rt, &a, nullptr), DASH_SUCCESS);
  dash_runtime_destroy(rt);
}

TEST(NoDriver, DefaultLibcudaOnThisMachine) {
  if (void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "libcuda.so.1 exists on this machine; the no-driver path "
                    "is covered by MissingLibcudaGivesNoDriver";
  }
  if (getenv("DASH_LIBCUDA"))
    GTEST_SKIP() << "DASH_LIBCUDA is set";
  dash_runtime *rt = nullptr;
  ASSERT_EQ(dash_runtime_create(kernelDir().c_str(), &rt), DASH_SUCCESS);
  dash_bwd_args a = makeArgs();
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_NO_DRIVER);
  EXPECT_NE(std::string(dash_runtime_last_error(rt)).find("libcuda.so.1"), std::string::npos);
  dash_runtime_destroy(rt);
}

// --- mock driver

struct Mock {
  void *h = nullptr;
  void (*reset)(int, int, int) = nullptr;
  void (*failLaunch)(int) = nullptr;
  void (*capturing)(int) = nullptr;
  int (*initCalls)() = nullptr;
  int (*memsets)() = nullptr;
  int (*syncs)() = nullptr;
  const std::vector<MockLaunch> *(*launches)() = nullptr;
  const std::vector<std::pair<std::string, int>> *(*smemAttrs)() = nullptr;
  const std::vector<MockTensorMap> *(*tensorMaps)() = nullptr;
  const std::vector<std::pair<CUdeviceptr, size_t>> *(*copiesHtoD)() = nullptr;
  bool open() {
    h = dlopen(DASH_MOCK_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      return false;
    reset = reinterpret_cast<decltype(reset)>(dlsym(h, "mock_reset"));
    failLaunch = reinterpret_cast<decltype(failLaunch)>(dlsym(h, "mock_fail_launch"));
    capturing = reinterpret_cast<decltype(capturing)>(dlsym(h, "mock_capturing"));
    initCalls = reinterpret_cast<decltype(initCalls)>(dlsym(h, "mock_init_calls"));
    memsets = reinterpret_cast<decltype(memsets)>(dlsym(h, "mock_memsets"));
    syncs = reinterpret_cast<decltype(syncs)>(dlsym(h, "mock_syncs"));
    launches = reinterpret_cast<decltype(launches)>(dlsym(h, "mock_launches"));
    smemAttrs = reinterpret_cast<decltype(smemAttrs)>(dlsym(h, "mock_smem_attrs"));
    tensorMaps = reinterpret_cast<decltype(tensorMaps)>(dlsym(h, "mock_tensor_maps"));
    copiesHtoD = reinterpret_cast<decltype(copiesHtoD)>(dlsym(h, "mock_copies_htod"));
    return reset && failLaunch && initCalls && memsets && syncs && launches && smemAttrs &&
           tensorMaps && copiesHtoD;
  }
};

// Kernel parameter slots for the fixture ABI: 9 user memrefs (8 of rank 4:
// 3 + 8 slots, lse rank 3: 3 + 6), 3 accumulators (11), dpsum/lse_log2/sem
// (9 each), scale (1).
constexpr int kSlots = 8 * 11 + 9 + 3 * 11 + 3 * 9 + 1;

class MockDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(mock.open()) << dlerror();
    mock.reset(132, 1, kSlots);
    ASSERT_EQ(dash_runtime_create_ex(kernelDir().c_str(), DASH_MOCK_LIBCUDA, &rt), DASH_SUCCESS);
  }
  void TearDown() override { dash_runtime_destroy(rt); }
  std::string err() const { return dash_runtime_last_error(rt); }
  Mock mock;
  dash_runtime *rt = nullptr;
};

TEST_F(MockDriverTest, BadArgumentsNeverTouchTheDriver) {
  dash_bwd_args a = makeArgs();
  a.scale = -1;
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_INVALID_ARGUMENT);
  a = makeArgs();
  a.policy = DASH_POLICY_SPT;
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_NO_KERNEL);
  EXPECT_EQ(mock.initCalls(), 0); // not even loaded
  EXPECT_TRUE(mock.launches()->empty());
}

TEST_F(MockDriverTest, LaunchesThreeKernelsWithThePackedAbi) {
  dash_bwd_args a = makeArgs(2, 256, 256, 4, 2, 128);
  // Permuted (BHSD) strides on q so the descriptor shows them verbatim.
  a.q.strides[0] = 4 * 256 * 128;
  a.q.strides[1] = 128;
  a.q.strides[2] = 256 * 128;
  void *stream = reinterpret_cast<void *>(0x5000);
  dash_bwd_info info;
  ASSERT_EQ(dash_attention_bwd(rt, &a, stream, &info), DASH_SUCCESS) << err();
  EXPECT_EQ(mock.initCalls(), 1);
  const auto &L = *mock.launches();
  ASSERT_EQ(L.size(), 3u);
  EXPECT_EQ(L[0].function, "dash_bwd_preprocess");
  EXPECT_EQ(L[1].function, "dash_bwd_main");
  EXPECT_EQ(L[2].function, "dash_bwd_postprocess");
  for (const MockLaunch &l : L) {
    EXPECT_EQ(l.block, 256u);
    EXPECT_EQ(l.stream, stream);
    EXPECT_GE(l.grid, 1u);
    EXPECT_LE(l.grid, 4u * 132u);
    EXPECT_EQ(l.params, L[0].params); // one parameter list for all three
  }
  EXPECT_EQ(L[1].grid, 132u); // occupancy 1 x 132 SMs
  EXPECT_EQ(L[1].smem, 81920u);
  EXPECT_EQ(L[0].smem, 0u);
  // > 48 KiB dynamic shared memory is opted into for main only.
  ASSERT_EQ(mock.smemAttrs()->size(), 1u);
  EXPECT_EQ((*mock.smemAttrs())[0].first, "dash_bwd_main");
  EXPECT_EQ((*mock.smemAttrs())[0].second, 81920);
  EXPECT_EQ(info.num_units, 132);
  EXPECT_EQ(info.blocks_per_sm, 1);
  EXPECT_EQ(info.num_sms, 132);

  const std::vector<uint64_t> &P = L[1].params;
  ASSERT_EQ(P.size(), size_t(kSlots));
  // q: allocated, aligned, offset, sizes[4], strides[4]
  uint64_t q = reinterpret_cast<uintptr_t>(a.q.data);
  std::vector<uint64_t> wantQ = {q, q, 0, 2, 256, 4, 128, 4 * 256 * 128, 128, 256 * 128, 1};
  EXPECT_EQ(std::vector<uint64_t>(P.begin(), P.begin() + 11), wantQ);
  // lse is parameter 5 (after five rank-4 memrefs): rank 3.
  uint64_t lse = reinterpret_cast<uintptr_t>(a.lse.data);
  std::vector<uint64_t> wantLse = {lse, lse, 0, 2, 4, 256, 4 * 256, 256, 1};
  EXPECT_EQ(std::vector<uint64_t>(P.begin() + 55, P.begin() + 64), wantLse);
  // dk (parameter 7): shape [B, Sk, Hkv, D].
  size_t dk = 64 + 11;
  EXPECT_EQ(P[dk], reinterpret_cast<uintptr_t>(a.dk.data));
  EXPECT_EQ(P[dk + 5], 2u); // Hkv
  // dq_accum (parameter 9): workspace, [B, Hq, Sq, D] contiguous, 256-B aligned.
  size_t acc = 64 + 3 * 11;
  EXPECT_EQ(P[acc] % 256, 0u);
  EXPECT_EQ(P[acc], P[acc + 1]);
  std::vector<uint64_t> wantAcc = {0, 2, 4, 256, 128, 4 * 256 * 128, 256 * 128, 128, 1};
  EXPECT_EQ(std::vector<uint64_t>(P.begin() + acc + 2, P.begin() + acc + 11), wantAcc);
  // semaphores (parameter 14): [B, Hq, M = 256/64].
  size_t sem = acc + 3 * 11 + 2 * 9;
  std::vector<uint64_t> wantSem = {0, 2, 4, 4, 16, 4, 1};
  EXPECT_EQ(std::vector<uint64_t>(P.begin() + sem + 2, P.begin() + sem + 9), wantSem);
  EXPECT_GT(P[sem], P[acc]);
  EXPECT_LE(P[sem] - P[acc] + 2 * 4 * 4 * 4, uint64_t(info.workspace_bytes));
  // scale: last slot, a float.
  float scale;
  std::memcpy(&scale, &P.back(), sizeof scale);
  EXPECT_EQ(scale, a.scale);
  // Production mode does not zero the workspace (preprocess does).
  EXPECT_EQ(mock.memsets(), 0);
}

// A copy of test kernel `name` in `dir` whose manifest lists `tensor_maps`
// (TMA loads of q, k, v, dO, TMA reduce-adds into dq_accum) and, unless
// empty, the dq_accum view `dqMap`.
void writeTmaKernel(const std::string &dir, const std::string &name,
                    const std::string &dqMap, const std::string &extra = "") {
  std::ifstream in(kernelDir() + "/" + name + ".json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string scale = "\"name\": \"scale\",";
  size_t at = text.find(scale);
  ASSERT_NE(at, std::string::npos);
  at = text.find('}', at);
  text.insert(at + 1, ", {\"name\": \"tensor_maps\", \"kind\": \"memref\", \"rank\": 1, "
                      "\"elt\": \"i64\"}");
  if (!dqMap.empty())
    text.insert(text.find('{') + 1, "\"dq_accum_map\": \"" + dqMap + "\",");
  text.insert(text.find('{') + 1, extra); // more top-level fields

  std::ofstream(dir + "/" + name + ".json") << text;
  std::ifstream cubin(kernelDir() + "/" + name + ".cubin", std::ios::binary);
  std::ofstream(dir + "/" + name + ".cubin", std::ios::binary) << cubin.rdbuf();
}

// A temporary kernel directory holding one TMA test kernel, and a runtime
// over it (the mock driver).
class MockDriverTensorMaps : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(mock.open()) << dlerror();
    char tmpl[] = "/tmp/dash-rt-tmaXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    mock.reset(132, 1, kSlots + 5); // + the rank-1 tensor_maps descriptor
  }
  // (Re)writes the kernel with dq_accum view `dqMap` and opens a runtime.
  void load(const std::string &dqMap, const std::string &extra = "") {
    dash_runtime_destroy(rt);
    rt = nullptr;
    writeTmaKernel(dir, name, dqMap, extra);
    ASSERT_EQ(dash_runtime_create_ex(dir.c_str(), DASH_MOCK_LIBCUDA, &rt), DASH_SUCCESS)
        << dash_runtime_last_error(nullptr);
  }
  // One call of a "tiles" kernel (manifest fields `extra`) on the ragged
  // shape B = 2, S_q = 250, S_k = 320, H = 4, H_kv = 2, D = 128; its maps.
  const std::vector<MockTensorMap> &callRaggedTiles(const std::string &extra,
                                                    dash_bwd_info *info) {
    load("tiles", extra);
    dash_bwd_args a = makeArgs(2, 250, 320, 4, 2, 128);
    EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, info), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    return *mock.tensorMaps();
  }
  void TearDown() override {
    dash_runtime_destroy(rt);
    std::remove((dir + "/" + name + ".json").c_str());
    std::remove((dir + "/" + name + ".cubin").c_str());
    rmdir(dir.c_str());
  }
  Mock mock;
  std::string dir;
  const std::string name = "d128_causal_br_descending_det";
  dash_runtime *rt = nullptr;
};

// A TMA kernel: the runtime encodes the seven maps for the call's tensors
// and workspace and copies them into the workspace before the launches.
TEST_F(MockDriverTensorMaps, EncodedForTheCallAndCopiedIntoTheWorkspace) {
  load("panels8");
  const int64_t B = 2, Sq = 256, Sk = 320, H = 4, Hkv = 2, D = 128;
  dash_bwd_args a = makeArgs(B, Sq, Sk, H, Hkv, D);
  // BHSD strides on k: the map takes them verbatim (in bytes).
  a.k.strides[0] = Hkv * Sk * D;
  a.k.strides[1] = D;
  a.k.strides[2] = Sk * D;
  dash_bwd_info info;
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, &info), DASH_SUCCESS)
      << dash_runtime_last_error(rt);

  const auto &maps = *mock.tensorMaps();
  ASSERT_EQ(maps.size(), 7u);
  const dash_tensor *ts[4] = {&a.q, &a.k, &a.v, &a.dO};
  const unsigned rows[4] = {64, 64, 64, 64}; // the fixture's block_m, block_n
  for (int i = 0; i < 4; ++i) {
    const MockTensorMap &t = maps[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(t.type, int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
    EXPECT_EQ(t.rank, 4u);
    EXPECT_EQ(t.address, ts[i]->data);
    // Innermost first: D, S, H, B; outer strides in bytes.
    EXPECT_EQ(t.dims[0], uint64_t(D));
    EXPECT_EQ(t.dims[1], uint64_t(ts[i]->shape[1]));
    EXPECT_EQ(t.dims[2], uint64_t(ts[i]->shape[2]));
    EXPECT_EQ(t.dims[3], uint64_t(B));
    EXPECT_EQ(t.strides[0], uint64_t(ts[i]->strides[1] * 2));
    EXPECT_EQ(t.strides[1], uint64_t(ts[i]->strides[2] * 2));
    EXPECT_EQ(t.strides[2], uint64_t(ts[i]->strides[0] * 2));
    EXPECT_EQ(t.box[0], 64u); // one 128-byte swizzle panel
    EXPECT_EQ(t.box[1], rows[i]);
    EXPECT_EQ(t.box[2], 1u);
    EXPECT_EQ(t.box[3], 1u);
    EXPECT_EQ(t.swizzle, int(CU_TENSOR_MAP_SWIZZLE_128B));
    EXPECT_EQ(t.interleave, int(CU_TENSOR_MAP_INTERLEAVE_NONE));
    EXPECT_EQ(t.oob, int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)); // zeros past S
  }
  EXPECT_EQ(maps[1].dims[1], uint64_t(Sk));
  EXPECT_EQ(maps[1].strides[0], uint64_t(D * 2)); // BHSD k: S stride = D
  // Map 4: the f32 dq_accum [B, H, S_q, D] of the workspace as (column in
  // an 8-column panel, row, panel, head, batch); one box = a whole Q tile,
  // panel by panel, unswizzled.
  const MockTensorMap &dq = maps[4];
  EXPECT_EQ(dq.type, int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32));
  EXPECT_EQ(dq.rank, 5u);
  EXPECT_EQ(dq.dims[0], 8u);
  EXPECT_EQ(dq.dims[1], uint64_t(Sq));
  EXPECT_EQ(dq.dims[2], uint64_t(D / 8));
  EXPECT_EQ(dq.dims[3], uint64_t(H));
  EXPECT_EQ(dq.dims[4], uint64_t(B));
  EXPECT_EQ(dq.strides[0], uint64_t(D * 4));
  EXPECT_EQ(dq.strides[1], 32u);
  EXPECT_EQ(dq.strides[2], uint64_t(Sq * D * 4));
  EXPECT_EQ(dq.strides[3], uint64_t(H * Sq * D * 4));
  EXPECT_EQ(dq.box[0], 8u);
  EXPECT_EQ(dq.box[1], 64u);
  EXPECT_EQ(dq.box[2], uint32_t(D / 8));
  EXPECT_EQ(dq.box[3], 1u);
  EXPECT_EQ(dq.box[4], 1u);
  EXPECT_EQ(dq.swizzle, int(CU_TENSOR_MAP_SWIZZLE_NONE));

  // Maps 5, 6: lse_log2 and dPsum [B, H, S_q] of the workspace, one Q tile
  // per box, rows padded to 4 elements (S_q = 256 needs none; see below).
  for (int i = 5; i < 7; ++i) {
    const MockTensorMap &t = maps[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(t.type, int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32));
    EXPECT_EQ(t.rank, 3u);
    EXPECT_EQ(t.dims[0], uint64_t(Sq));
    EXPECT_EQ(t.dims[1], uint64_t(H));
    EXPECT_EQ(t.dims[2], uint64_t(B));
    EXPECT_EQ(t.strides[0], uint64_t(Sq * 4));
    EXPECT_EQ(t.strides[1], uint64_t(H * Sq * 4));
    EXPECT_EQ(t.box[0], 64u);
    EXPECT_EQ(t.box[1], 1u);
    EXPECT_EQ(t.swizzle, int(CU_TENSOR_MAP_SWIZZLE_NONE));
    EXPECT_EQ(t.oob, int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)); // zeros past S_q
  }
  EXPECT_NE(maps[5].address, maps[6].address);

  // The kernels get a rank-1 i64 descriptor (last parameter) over the
  // workspace copy of the seven maps, in the order q, k, v, dO, dq_accum,
  // lse_log2, dpsum.
  const std::vector<uint64_t> &P = (*mock.launches())[1].params;
  ASSERT_EQ(P.size(), size_t(kSlots + 5));
  const uint64_t tm = P[kSlots]; // after scale
  EXPECT_EQ(P[kSlots + 1], tm);
  EXPECT_EQ(P[kSlots + 3], 112u); // 7 maps x 16 words
  EXPECT_EQ(P[kSlots + 4], 1u);
  EXPECT_EQ(tm % 256, 0u);
  const auto &copies = *mock.copiesHtoD();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].first, CUdeviceptr(tm));
  EXPECT_EQ(copies[0].second, 7 * sizeof(CUtensorMap));
  for (int i = 0; i < 4; ++i) { // the mock writes {address, call index}
    const uint64_t *w = reinterpret_cast<const uint64_t *>(tm) + 16 * i;
    EXPECT_EQ(w[0], uint64_t(reinterpret_cast<uintptr_t>(ts[i]->data)));
    EXPECT_EQ(w[1], uint64_t(i));
  }
  // dq_accum lies in the workspace, before the maps.
  EXPECT_LT(dq.address, reinterpret_cast<void *>(tm));
  const uint64_t *w4 = reinterpret_cast<const uint64_t *>(tm) + 16 * 4;
  EXPECT_EQ(w4[0], uint64_t(reinterpret_cast<uintptr_t>(dq.address)));
  // The maps live inside the workspace the call reports.
  EXPECT_GE(info.workspace_bytes, 640);

  // Batch 1 with an unusable batch stride (PyTorch may leave anything on a
  // size-1 dim): the map gets a 16-byte multiple instead.
  dash_bwd_args one = makeArgs(1, Sq, Sk, H, Hkv, D);
  for (dash_tensor *t : {&one.q, &one.k, &one.v, &one.o, &one.dO, &one.dq, &one.dk, &one.dv})
    t->strides[0] = 3;
  one.lse.strides[0] = 3;
  ASSERT_EQ(dash_attention_bwd(rt, &one, nullptr, nullptr), DASH_SUCCESS)
      << dash_runtime_last_error(rt);
  ASSERT_EQ(mock.tensorMaps()->size(), 14u);
  for (int i = 7; i < 11; ++i) {
    const MockTensorMap &t = (*mock.tensorMaps())[i];
    EXPECT_EQ(t.strides[2] % 16, 0u) << i;
    EXPECT_GE(t.strides[2], t.strides[1] * (t.dims[2] - 1) + t.strides[0]) << i;
  }

  // S_q = 250: the lse_log2/dPsum rows are padded to 252 elements, so the
  // maps' row stride is a multiple of 16 bytes; the maps still end at S_q.
  dash_bwd_args ragged = makeArgs(B, 250, Sk, H, Hkv, D);
  ASSERT_EQ(dash_attention_bwd(rt, &ragged, nullptr, nullptr), DASH_SUCCESS)
      << dash_runtime_last_error(rt);
  ASSERT_EQ(mock.tensorMaps()->size(), 21u);
  for (int i = 19; i < 21; ++i) {
    const MockTensorMap &t = (*mock.tensorMaps())[i];
    EXPECT_EQ(t.dims[0], 250u) << i;
    EXPECT_EQ(t.strides[0], 252u * 4) << i;
    EXPECT_EQ(t.strides[1], uint64_t(H) * 252 * 4) << i;
  }
}

// Under CUDA-graph capture (the global mode PyTorch uses: the mock refuses
// cuMemAlloc, cuMemHostAlloc, module loads and synchronisation then), a TMA
// call records stream operations only: a graph allocation for its workspace,
// the maps' copy from a pinned slot that no later call reuses (a captured copy
// reads its source at every replay), the launches, the allocation's free.
TEST_F(MockDriverTensorMaps, CapturedCallsCopyTheMapsFromTheirOwnPinnedSlot) {
  load("panels8");
  dash_bwd_args a = makeArgs(2, 256, 320, 4, 2, 128);
  auto copySources = reinterpret_cast<const std::vector<const void *> *(*)()>(
      dlsym(mock.h, "mock_copy_sources"));
  auto events = reinterpret_cast<const std::vector<std::string> *(*)()>(
      dlsym(mock.h, "mock_events"));
  auto isPinned = reinterpret_cast<int (*)(const void *, size_t)>(dlsym(mock.h, "mock_is_pinned"));
  auto captureMode = reinterpret_cast<int (*)()>(dlsym(mock.h, "mock_capture_mode"));
  auto refused = reinterpret_cast<int (*)()>(dlsym(mock.h, "mock_refused"));
  ASSERT_TRUE(copySources && events && isPinned && captureMode && refused && mock.capturing);
  const size_t mapBytes = 7 * sizeof(CUtensorMap);

  // The first call of the process is the captured one: its module is loaded
  // in the relaxed mode, and the thread's mode is restored after.
  mock.capturing(1);
  void *stream = reinterpret_cast<void *>(0x5000);
  dash_bwd_info info;
  ASSERT_EQ(dash_attention_bwd(rt, &a, stream, &info), DASH_SUCCESS) << dash_runtime_last_error(rt);
  EXPECT_EQ(captureMode(), int(CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_EQ(refused(), 0); // nothing tried a call the global mode refuses
  ASSERT_EQ(mock.copiesHtoD()->size(), 1u);
  const void *slot1 = (*copySources())[0];
  EXPECT_TRUE(isPinned(slot1, mapBytes));
  // The slot holds this call's maps: {address, encode index} per map (mock).
  const uint64_t *w = static_cast<const uint64_t *>(slot1);
  EXPECT_EQ(w[0], uint64_t(reinterpret_cast<uintptr_t>(a.q.data)));
  EXPECT_EQ(w[16], uint64_t(reinterpret_cast<uintptr_t>(a.k.data)));
  // alloc -> copy into it -> the kernels (GQA: with the postprocess's dK/dV
  // sums) -> free, in stream order.
  const std::vector<std::string> &E = *events();
  ASSERT_EQ(E.size(), 6u);
  ASSERT_EQ(E[0].rfind("alloc ", 0), 0u) << E[0];
  const std::string ws = E[0].substr(6);
  EXPECT_EQ(E[1].rfind("copy ", 0), 0u) << E[1];
  EXPECT_EQ(E[2], "launch dash_bwd_preprocess");
  EXPECT_EQ(E[3], "launch dash_bwd_main");
  EXPECT_EQ(E[4], "launch dash_bwd_postprocess");
  EXPECT_EQ(E[5], "free " + ws);
  const uint64_t tm = (*mock.launches())[1].params[kSlots];
  const uint64_t base = std::stoull(ws, nullptr, 16);
  EXPECT_GE(tm, base); // the maps sit inside the call's own workspace
  EXPECT_LE(tm + mapBytes, base + uint64_t(info.workspace_bytes));

  // A second captured call: a new slot; the first keeps its maps.
  std::vector<uint8_t> before(static_cast<const uint8_t *>(slot1),
                              static_cast<const uint8_t *>(slot1) + mapBytes);
  dash_bwd_args b = makeArgs(1, 128, 128, 4, 2, 128);
  ASSERT_EQ(dash_attention_bwd(rt, &b, stream, nullptr), DASH_SUCCESS) << dash_runtime_last_error(rt);
  ASSERT_EQ(copySources()->size(), 2u);
  const void *slot2 = (*copySources())[1];
  EXPECT_TRUE(isPinned(slot2, mapBytes));
  EXPECT_GE(static_cast<const char *>(slot2), static_cast<const char *>(slot1) + mapBytes);
  EXPECT_EQ(std::memcmp(before.data(), slot1, mapBytes), 0);
  EXPECT_EQ(refused(), 0);

  // Outside capture: the per-stream cached workspace (cuMemAlloc) and a copy
  // from the call's frame, as before; no graph allocation.
  mock.capturing(0);
  const size_t n = events()->size();
  ASSERT_EQ(dash_attention_bwd(rt, &a, stream, nullptr), DASH_SUCCESS) << dash_runtime_last_error(rt);
  for (size_t i = n; i < events()->size(); ++i)
    EXPECT_EQ((*events())[i].rfind("alloc ", 0), std::string::npos) << (*events())[i];
  EXPECT_FALSE(isPinned((*copySources())[2], mapBytes));

  // A launch that fails under capture still frees the graph allocation (in
  // stream order) and leaves the thread in the global mode.
  mock.capturing(1);
  mock.failLaunch(1);
  const size_t m = events()->size();
  EXPECT_EQ(dash_attention_bwd(rt, &a, stream, nullptr), DASH_ERROR_DRIVER);
  ASSERT_GE(events()->size(), m + 3);
  EXPECT_EQ((*events())[m].rfind("alloc ", 0), 0u);
  EXPECT_EQ(events()->back(), "free " + (*events())[m].substr(6));
  EXPECT_EQ(captureMode(), int(CU_STREAM_CAPTURE_MODE_GLOBAL));
  mock.failLaunch(0);
  mock.capturing(0);
}

// A module load that fails under capture (a cubin gone since the runtime
// read the manifests) reports it and restores the thread's capture mode.
TEST_F(MockDriverTensorMaps, FailedLoadUnderCaptureRestoresTheMode) {
  load("panels8");
  auto captureMode = reinterpret_cast<int (*)()>(dlsym(mock.h, "mock_capture_mode"));
  ASSERT_TRUE(captureMode && mock.capturing);
  std::remove((dir + "/" + name + ".cubin").c_str());
  dash_bwd_args a = makeArgs(2, 256, 320, 4, 2, 128);
  mock.capturing(1);
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_MANIFEST);
  EXPECT_NE(std::string(dash_runtime_last_error(rt)).find("cannot read cubin"), std::string::npos)
      << dash_runtime_last_error(rt);
  EXPECT_EQ(captureMode(), int(CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_TRUE(mock.launches()->empty());
  mock.capturing(0);
}

// Kernels built before "dq_accum_map" existed reduce-add 128B-swizzled
// 32-column boxes: without the field the runtime encodes that 4-D map; an
// unknown view is refused when the directory is loaded.
TEST_F(MockDriverTensorMaps, DqAccumMapFollowsTheManifest) {
  load("");
  const int64_t D = 128;
  dash_bwd_args a = makeArgs(2, 256, 320, 4, 2, D);
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
      << dash_runtime_last_error(rt);
  ASSERT_EQ(mock.tensorMaps()->size(), 7u);
  const MockTensorMap &dq = (*mock.tensorMaps())[4];
  EXPECT_EQ(dq.rank, 4u);
  EXPECT_EQ(dq.dims[0], uint64_t(D));
  EXPECT_EQ(dq.box[0], 32u);
  EXPECT_EQ(dq.box[1], 64u);
  EXPECT_EQ(dq.swizzle, int(CU_TENSOR_MAP_SWIZZLE_128B));

  writeTmaKernel(dir, name, "tile");
  dash_runtime *bad = nullptr;
  EXPECT_NE(dash_runtime_create_ex(dir.c_str(), DASH_MOCK_LIBCUDA, &bad), DASH_SUCCESS);
  EXPECT_NE(std::string(dash_runtime_last_error(nullptr)).find("dq_accum_map"),
            std::string::npos)
      << dash_runtime_last_error(nullptr);
}

// "tiles" (the TMA kernels since the 1-D bulk dQ reduce-adds): dq_accum's
// rows are padded to whole Q tiles (a ragged S_q = 250 gets 256 rows of the
// fixture's block_m = 64, so the last tile's bulk adds stay inside), no
// dq_accum map is encoded, and its slot in the workspace copy is zero while
// lse_log2 and dPsum keep slots 5 and 6.
TEST_F(MockDriverTensorMaps, DqAccumTilesArePaddedAndNeedNoMap) {
  const int64_t B = 2, Sq = 250, H = 4, D = 128;
  dash_bwd_info info;
  const auto &maps = callRaggedTiles("", &info);
  ASSERT_EQ(maps.size(), 6u); // q, k, v, dO, lse_log2, dPsum
  for (int i = 4; i < 6; ++i) {
    EXPECT_EQ(maps[i].type, int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)) << i;
    EXPECT_EQ(maps[i].rank, 3u) << i;
    EXPECT_EQ(maps[i].dims[0], uint64_t(Sq)) << i;
  }
  const std::vector<uint64_t> &P = (*mock.launches())[1].params;
  ASSERT_EQ(P.size(), size_t(kSlots + 5));
  // dq_accum (parameter 9): [B, H, 256, D], contiguous.
  const size_t acc = 64 + 3 * 11;
  std::vector<uint64_t> wantAcc = {0, uint64_t(B), uint64_t(H), 256, uint64_t(D),
                                   uint64_t(H * 256 * D), uint64_t(256 * D), uint64_t(D), 1};
  EXPECT_EQ(std::vector<uint64_t>(P.begin() + acc + 2, P.begin() + acc + 11), wantAcc);
  const uint64_t *tm = reinterpret_cast<const uint64_t *>(P[kSlots]);
  for (int w = 0; w < 16; ++w) // slot 4: zero
    EXPECT_EQ(tm[16 * 4 + w], 0u) << w;
  for (int slot = 5; slot < 7; ++slot) // the mock writes {address, call index}
    EXPECT_EQ(tm[16 * slot], uint64_t(reinterpret_cast<uintptr_t>(maps[slot - 1].address)))
        << slot;
  // The padded rows are in the workspace the call reports.
  EXPECT_GE(info.workspace_bytes, B * H * 256 * D * 4);
}

// dkdv_bulk kernels store dk and dv by TMA: the runtime encodes their maps
// too (after dO's, with the K/V tiles' boxes) into slots 7 and 8 of the
// workspace copy, which then holds nine maps.
TEST_F(MockDriverTensorMaps, DkdvBulkAddsTheDkAndDvMaps) {
  load("tiles", "\"dkdv_direct\": true, \"dkdv_bulk\": true,");
  const int64_t B = 2, Sq = 256, Sk = 320, H = 4, Hkv = 2, D = 128;
  dash_bwd_args a = makeArgs(B, Sq, Sk, H, Hkv, D);
  a.dv.strides[0] = Hkv * Sk * D; // BHSD dv: the map takes its strides
  a.dv.strides[1] = D;
  a.dv.strides[2] = Sk * D;
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
      << dash_runtime_last_error(rt);
  const auto &maps = *mock.tensorMaps();
  ASSERT_EQ(maps.size(), 8u); // q, k, v, dO, dk, dv, lse_log2, dPsum
  const dash_tensor *ts[2] = {&a.dk, &a.dv};
  for (int i = 0; i < 2; ++i) {
    const MockTensorMap &t = maps[4 + i];
    SCOPED_TRACE(i);
    EXPECT_EQ(t.type, int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
    EXPECT_EQ(t.rank, 4u);
    EXPECT_EQ(t.address, ts[i]->data);
    EXPECT_EQ(t.dims[0], uint64_t(D));
    EXPECT_EQ(t.dims[1], uint64_t(Sk));
    EXPECT_EQ(t.dims[2], uint64_t(Hkv));
    EXPECT_EQ(t.dims[3], uint64_t(B));
    EXPECT_EQ(t.strides[0], uint64_t(ts[i]->strides[1] * 2));
    EXPECT_EQ(t.strides[1], uint64_t(ts[i]->strides[2] * 2));
    EXPECT_EQ(t.strides[2], uint64_t(ts[i]->strides[0] * 2));
    EXPECT_EQ(t.box[0], 64u);
    EXPECT_EQ(t.box[1], 64u); // the fixture's block_n
    EXPECT_EQ(t.swizzle, int(CU_TENSOR_MAP_SWIZZLE_128B));
  }
  EXPECT_EQ(maps[5].strides[0], uint64_t(D * 2)); // BHSD dv: S stride = D
  const std::vector<uint64_t> &P = (*mock.launches())[1].params;
  const uint64_t *tm = reinterpret_cast<const uint64_t *>(P[kSlots]);
  // The mock writes {address, call index}: dk, dv in slots 7, 8; lse_log2
  // and dPsum stay in 5, 6.
  EXPECT_EQ(tm[16 * 7], uint64_t(reinterpret_cast<uintptr_t>(a.dk.data)));
  EXPECT_EQ(tm[16 * 8], uint64_t(reinterpret_cast<uintptr_t>(a.dv.data)));
  EXPECT_EQ(tm[16 * 5], uint64_t(reinterpret_cast<uintptr_t>(maps[6].address)));
  EXPECT_EQ(tm[16 * 6], uint64_t(reinterpret_cast<uintptr_t>(maps[7].address)));
}

// dq_in_main kernels write dq in the main kernel: without GQA a call launches
// no postprocess (with GQA it still sums dk/dv), and the semaphore buffer has
// room for the tile ticket after its B * H * M words.
TEST_F(MockDriverTensorMaps, DqInMainSkipsThePostprocessWithoutGqa) {
  load("tiles", "\"dkdv_direct\": true, \"dq_in_main\": true,");
  // B * H * M * 4 = 1024 B, a multiple of the workspace's 256-B alignment:
  // without the ticket's word the tensor maps would start right after.
  const int64_t B = 2, S = 2048, H = 4, D = 128, M = S / 64;
  for (int64_t Hkv : {H, int64_t(2)}) {
    const size_t before = mock.launches()->size();
    dash_bwd_args a = makeArgs(B, S, S, H, Hkv, D);
    ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    const auto &L = *mock.launches();
    ASSERT_EQ(L.size() - before, Hkv == H ? 2u : 3u) << "Hkv = " << Hkv;
    EXPECT_EQ(L[before].function, "dash_bwd_preprocess");
    EXPECT_EQ(L[before + 1].function, "dash_bwd_main");
    if (Hkv != H)
      EXPECT_EQ(L.back().function, "dash_bwd_postprocess");
    // semaphores (parameter 14), then the tensor maps (last).
    const std::vector<uint64_t> &P = L[before + 1].params;
    const size_t sem = 64 + 3 * 11 + 3 * 11 + 2 * 9;
    EXPECT_EQ(P[sem + 3], uint64_t(B));
    EXPECT_EQ(P[sem + 5], uint64_t(M));
    EXPECT_GE(P[kSlots] - P[sem], uint64_t(B * H * M * 4 + 4)) << "Hkv = " << Hkv;
  }
}

// "pdl" kernels: the main kernel (only it) is a programmatic dependent launch
// of the preprocess; without the field every launch is a plain one.
TEST_F(MockDriverTensorMaps, PdlLaunchesTheMainKernelProgrammatically) {
  for (bool pdl : {false, true}) {
    SCOPED_TRACE(pdl);
    load("tiles", pdl ? "\"pdl\": true," : "");
    const size_t before = mock.launches()->size();
    dash_bwd_args a = makeArgs(2, 256, 256, 4, 2, 128);
    ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    const auto &L = *mock.launches();
    ASSERT_EQ(L.size() - before, 3u);
    EXPECT_EQ(L[before + 1].function, "dash_bwd_main");
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(L[before + i].programmatic, pdl && i == 1) << L[before + i].function;
    // The same parameters either way.
    EXPECT_EQ(L[before + 1].params, L[before].params);
  }
}

// dps_fold kernels read dPsum as two bf16 rows (hi, lo) in the bytes of its
// f32 row: map 6 is a bf16 [B, H, 2, S_q] view, one box both rows of block_m
// Q rows as they are, unswizzled ("rows", the one form); the rows are padded to 8 elements so the hi -> lo stride is a multiple of
// 16 bytes. lse_log2 (map 5) keeps its f32 form.
TEST_F(MockDriverTensorMaps, DpsFoldLoadsDpsumAsHiLoRows) {
  const int64_t B = 2, Sq = 250, H = 4;
  {
    dash_bwd_info info;
    const auto &maps = callRaggedTiles("\"dps_fold\": \"rows\",", &info);
    ASSERT_EQ(maps.size() % 6, 0u); // q, k, v, dO, lse_log2, dPsum per call
    const MockTensorMap &lse = maps[maps.size() - 2], &dps = maps.back();
    EXPECT_EQ(lse.type, int(CU_TENSOR_MAP_DATA_TYPE_FLOAT32));
    EXPECT_EQ(lse.rank, 3u);
    EXPECT_EQ(lse.strides[0], 256u * 4); // 250 padded to 8 for both
    EXPECT_EQ(dps.type, int(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
    EXPECT_EQ(dps.rank, 4u);
    const uint64_t wantDims[4] = {uint64_t(Sq), 2, uint64_t(H), uint64_t(B)};
    const uint64_t wantStrides[3] = {256 * 2, 256 * 4, uint64_t(H) * 256 * 4};
    const unsigned wantBox[4] = {64, 2, 1, 1}; // the fixture's block_m: 64
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(dps.dims[i], wantDims[i]) << i;
      EXPECT_EQ(dps.box[i], wantBox[i]) << i;
      if (i < 3)
        EXPECT_EQ(dps.strides[i], wantStrides[i]) << i;
    }
    EXPECT_EQ(dps.swizzle, int(CU_TENSOR_MAP_SWIZZLE_NONE));
    EXPECT_EQ(dps.oob, int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)); // zeros past S_q
    // In the bytes of the f32 rows: B * H rows of 256 f32, lse_log2 after.
    EXPECT_GE(static_cast<const char *>(lse.address) -
                  static_cast<const char *>(dps.address),
              B * H * 256 * 4);
  }
}

// stats_in_main kernels count finished statistics rows per query head: the
// semaphore buffer ends in the dQ ticket, the statistics ticket and B * H_q
// counts (with or without dq_in_main, at the same places).
TEST_F(MockDriverTensorMaps, StatsInMainAddsATicketAndACountPerHead) {
  const int64_t B = 2, S = 2048, H = 4, D = 128, M = S / 64;
  for (const char *extra : {"\"stats_in_main\": true,",
                            "\"dq_in_main\": true, \"stats_in_main\": true,"}) {
    SCOPED_TRACE(extra);
    load("tiles", std::string("\"dkdv_direct\": true, ") + extra);
    dash_bwd_args a = makeArgs(B, S, S, H, H, D);
    ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
        << dash_runtime_last_error(rt);
    const std::vector<uint64_t> &P = mock.launches()->back().params;
    const size_t sem = 64 + 3 * 11 + 3 * 11 + 2 * 9;
    // B * H * M * 4 = 1024 B and 256-B alignment: the 2 + B * H words are
    // what puts the maps another 256 B further.
    EXPECT_GE(P[kSlots] - P[sem], uint64_t((B * H * M + 2 + B * H) * 4));
  }
}

TEST_F(MockDriverTest, RequestedGridSizeAndItsLimit) {
  mock.reset(132, 2, kSlots);
  dash_bwd_args a = makeArgs();
  a.num_units = 7;
  dash_bwd_info info;
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, &info), DASH_SUCCESS) << err();
  EXPECT_EQ((*mock.launches())[1].grid, 7u);
  a.num_units = 264;
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, &info), DASH_SUCCESS) << err();
  EXPECT_EQ((*mock.launches())[4].grid, 264u);
  a.num_units = 265;
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, &info), DASH_ERROR_TOO_MANY_UNITS);
  EXPECT_NE(err().find("2 per SM x 132 SMs"), std::string::npos) << err();
  EXPECT_EQ(mock.launches()->size(), 6u); // nothing launched for the refused call
  // After a launch, check() knows the device.
  a.num_units = 0;
  ASSERT_EQ(dash_attention_bwd_check(rt, &a, &info), DASH_SUCCESS);
  EXPECT_EQ(info.num_units, 264);
}

TEST_F(MockDriverTest, AutoLaunchesTheResolvedKernel) {
  dash_bwd_args a = makeArgs(1, 2048, 2048, 8, 8);
  a.policy = DASH_POLICY_AUTO;
  dash_bwd_info launched, checked;
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, &launched), DASH_SUCCESS) << err();
  EXPECT_NE(launched.policy, DASH_POLICY_AUTO);
  ASSERT_EQ(dash_attention_bwd_check(rt, &a, &checked), DASH_SUCCESS);
  EXPECT_EQ(checked.policy, launched.policy);
  EXPECT_STREQ(checked.kernel_name, launched.kernel_name);
}

TEST_F(MockDriverTest, DebugModeZeroesAndSynchronises) {
  ASSERT_EQ(dash_runtime_set_debug(rt, 1), DASH_SUCCESS);
  dash_bwd_args a = makeArgs();
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS) << err();
  EXPECT_EQ(mock.memsets(), 1);
  EXPECT_EQ(mock.syncs(), 3);
}

// A kernel without tensor maps under CUDA-graph capture: a graph allocation
// for the workspace (the per-stream cache would need cuMemAlloc, refused in
// the global capture mode, and may be freed later), freed after the kernels.
TEST_F(MockDriverTest, CapturedCallsUseAGraphWorkspace) {
  auto events = reinterpret_cast<const std::vector<std::string> *(*)()>(
      dlsym(mock.h, "mock_events"));
  ASSERT_TRUE(events && mock.capturing);
  dash_bwd_args a = makeArgs();
  mock.capturing(1);
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS) << err();
  const std::vector<std::string> &E = *events();
  ASSERT_EQ(E.size(), 5u);
  ASSERT_EQ(E[0].rfind("alloc ", 0), 0u) << E[0];
  EXPECT_EQ(E[1], "launch dash_bwd_preprocess");
  EXPECT_EQ(E[2], "launch dash_bwd_main");
  EXPECT_EQ(E[3], "launch dash_bwd_postprocess");
  EXPECT_EQ(E[4], "free " + E[0].substr(6));
  auto refused = reinterpret_cast<int (*)()>(dlsym(mock.h, "mock_refused"));
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused(), 0); // nothing tried a call the global mode refuses
  // Debug mode synchronizes after every launch: refused before anything is
  // allocated or launched.
  ASSERT_EQ(dash_runtime_set_debug(rt, 1), DASH_SUCCESS);
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_UNSUPPORTED);
  EXPECT_NE(err().find("debug mode"), std::string::npos) << err();
  EXPECT_NE(err().find("CUDA graph"), std::string::npos) << err();
  EXPECT_EQ(E.size(), 5u);
  // Outside capture the same runtime still works (and synchronizes).
  mock.capturing(0);
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS) << err();
  EXPECT_EQ(mock.syncs(), 3);
}

TEST_F(MockDriverTest, LaunchFailureNamesTheKernel) {
  mock.failLaunch(1);
  dash_bwd_args a = makeArgs();
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_DRIVER);
  EXPECT_NE(err().find("cuLaunchKernel failed"), std::string::npos) << err();
  EXPECT_NE(err().find("preprocess of d128_causal_br_descending_det"), std::string::npos) << err();
}

TEST_F(MockDriverTest, OccupancyZeroIsAnError) {
  mock.reset(132, 0, kSlots);
  dash_bwd_args a = makeArgs();
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_DRIVER);
  EXPECT_NE(err().find("cannot be resident"), std::string::npos) << err();
}

} // namespace

// A debug kernel (convert-dash-to-gpu debug-spin-limit=N) that gives up on a
// semaphore writes (unit, b, h, q, rank, seen, polls) to a host-mapped record
// and traps; the runtime must turn that into DASH_ERROR_HANG naming the wait.
// The mock's main launch writes such a record and its sync fails like a trap.
TEST(MockDebugKernel, TrappedWaitBecomesAHangError) {
  Mock mock;
  ASSERT_TRUE(mock.open()) << dlerror();
  auto hang = reinterpret_cast<void (*)(const int64_t *, int)>(
      dlsym(mock.h, "mock_hang"));
  ASSERT_NE(hang, nullptr);
  mock.reset(132, 1, kSlots + 5); // + the rank-1 debug memref
  dash_runtime *rt = nullptr;
  std::string dir = std::string(DASH_TEST_INPUTS) + "/debug-kernels";
  ASSERT_EQ(dash_runtime_create_ex(dir.c_str(), DASH_MOCK_LIBCUDA, &rt),
            DASH_SUCCESS);
  dash_bwd_args a = makeArgs();
  // A clean run first: no record, success, and the debug record is passed.
  ASSERT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_SUCCESS)
      << dash_runtime_last_error(rt);
  ASSERT_EQ(mock.launches()->size(), 3u);
  const std::vector<uint64_t> &p = (*mock.launches())[1].params;
  ASSERT_EQ(p.size(), size_t(kSlots + 5));
  EXPECT_NE(p[kSlots], 0u);            // allocated == aligned: mapped record
  EXPECT_EQ(p[kSlots], p[kSlots + 1]);
  EXPECT_EQ(p[kSlots + 3], 8u);        // 8 i64 words
  EXPECT_EQ(p[kSlots + 4], 1u);
  // Now the main kernel traps on a wait that cannot complete.
  const int64_t record[8] = {0xDA5400DE, 3, 1, 2, 5, 4, 2, 1000000};
  hang(record, 8);
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_HANG);
  std::string msg = dash_runtime_last_error(rt);
  EXPECT_NE(msg.find("unit 3 waited on dQ row tile (b=1, h=2, q=5) for rank 4 "
                     "but its semaphore stayed at 2 after 1000000 polls"),
            std::string::npos)
      << msg;
  EXPECT_STREQ(dash_status_name(DASH_ERROR_HANG), "DASH_ERROR_HANG");
  // A TMA kernel's mbarrier wait gives up: rank = -1 - barrier index
  // (3 = EMPTY_Q[1]), seen = the phase parity, q = the unit's hand-off.
  const int64_t mbarRecord[8] = {0xDA5400DE, 7, 0, 1, 12, -1 - 3, 1, 5000};
  hang(mbarRecord, 8);
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_HANG);
  msg = dash_runtime_last_error(rt);
  EXPECT_NE(msg.find("unit 7 waited on mbarrier EMPTY_Q[1] (phase parity 1) at "
                     "b=0, h=1, hand-off 12 for 5000 polls"),
            std::string::npos)
      << msg;
  // Under CUDA-graph capture a debug kernel is refused: it must synchronize
  // to read its record.
  ASSERT_NE(mock.capturing, nullptr);
  mock.capturing(1);
  const size_t launches = mock.launches()->size();
  EXPECT_EQ(dash_attention_bwd(rt, &a, nullptr, nullptr), DASH_ERROR_UNSUPPORTED);
  msg = dash_runtime_last_error(rt);
  EXPECT_NE(msg.find("is a debug kernel"), std::string::npos) << msg;
  EXPECT_EQ(mock.launches()->size(), launches);
  mock.capturing(0);
  dash_runtime_destroy(rt);
}
