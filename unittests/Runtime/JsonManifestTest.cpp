//===- JsonManifestTest.cpp - JSON reader and manifest parsing ------------===//
//
// Part of the DASH project. Good and malformed manifests: every error names
// the field, and nothing crashes on truncated or corrupted input.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "dash/Runtime/Json.h"
#include "dash/Runtime/Manifest.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace dash::rt;

namespace {

std::string readText(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string goodPath() {
  return dash_test::kernelDir() + "/d128_causal_br_descending_det.json";
}

// Replace the first occurrence of `from` (must exist).
std::string replaced(std::string s, const std::string &from, const std::string &to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos)
    s.replace(p, from.size(), to);
  return s;
}

TEST(Json, ParsesNestedValues) {
  json::Value v;
  std::string err;
  ASSERT_TRUE(json::parse(
      R"( {"a": [1, -2.5e2, true, false, null], "b": {"c": "x\"\u00e9\ud83d\ude00"}} )",
      v, err)) << err;
  ASSERT_TRUE(v.isObject());
  const json::Value *a = v.get("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_TRUE(a->array[0].isInt());
  EXPECT_EQ(a->array[0].asInt(), 1);
  EXPECT_DOUBLE_EQ(a->array[1].number, -250.0);
  EXPECT_FALSE(a->array[1].isInt() && a->array[1].number != -250.0);
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[4].kind, json::Kind::Null);
  EXPECT_EQ(v.get("b")->get("c")->string, "x\"\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.get("zz"), nullptr);
}

TEST(Json, ErrorsCarryLineAndColumn) {
  struct Case {
    const char *text, *want;
  } cases[] = {
      {"", "unexpected end"},
      {"{\"a\": 1,}", "expected a string key"},
      {"[1, 2", "expected ',' or ']'"},
      {"{\"a\" 1}", "expected ':'"},
      {"\"abc", "unterminated string"},
      {"01", "trailing characters"},
      {"1.", "digits expected after '.'"},
      {"-", "invalid number"},
      {"tru", "expected 'true'"},
      {"{} x", "trailing characters"},
      {"\"\\q\"", "invalid escape"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"{\n  \"a\": @\n}", "line 2, column 8"},
  };
  for (const Case &c : cases) {
    json::Value v;
    std::string err;
    EXPECT_FALSE(json::parse(c.text, v, err)) << c.text;
    EXPECT_NE(err.find(c.want), std::string::npos) << c.text << " -> " << err;
  }
}

TEST(Json, DepthIsBounded) {
  std::string deep(100000, '[');
  json::Value v;
  std::string err;
  EXPECT_FALSE(json::parse(deep, v, err));
  EXPECT_NE(err.find("nesting deeper"), std::string::npos) << err;
}

TEST(Manifest, ParsesFixture) {
  Manifest m;
  ASSERT_EQ(parseManifest(readText(goodPath()), goodPath(), m), "");
  EXPECT_EQ(m.name, "d128_causal_br_descending_det");
  EXPECT_EQ(m.cubinPath, dash_test::kernelDir() + "/d128_causal_br_descending_det.cubin");
  EXPECT_EQ(m.headDim, 128);
  EXPECT_EQ(m.dtype, Elt::BF16);
  EXPECT_EQ(m.mask, dash::sched::Mask::Causal);
  EXPECT_EQ(m.align, dash::sched::CausalAlign::BottomRight);
  EXPECT_EQ(m.policy, dash::sched::Policy::Descending);
  EXPECT_TRUE(m.deterministic);
  EXPECT_EQ(m.blockM, 64);
  EXPECT_EQ(m.blockN, 64);
  EXPECT_EQ(m.threads, 256);
  EXPECT_EQ(m.main.entry, "dash_bwd_main");
  EXPECT_EQ(m.main.sharedBytes, 81920);
  ASSERT_EQ(m.params.size(), 16u);
  for (size_t i = 0; i < m.params.size(); ++i)
    EXPECT_EQ(int(m.params[i].role), int(i)) << m.params[i].name;
  EXPECT_FALSE(m.params[15].memref);
  EXPECT_EQ(m.params[14].elt, Elt::I32);
  EXPECT_EQ(m.configString(), "d128 bf16 causal bottom_right descending det");
}

// The fixture with a `tensor_maps` parameter appended (TMA kernels).
std::string withTensorMaps(const std::string &good, const char *elt, int rank) {
  return replaced(good, "\"kind\": \"f32\"\n  }",
                  std::string("\"kind\": \"f32\"\n  }, {\"name\": \"tensor_maps\", "
                              "\"kind\": \"memref\", \"rank\": ") +
                      std::to_string(rank) + ", \"elt\": \"" + elt + "\"}");
}

TEST(Manifest, TensorMapsParameter) {
  Manifest m;
  ASSERT_EQ(parseManifest(withTensorMaps(readText(goodPath()), "i64", 1), "x.json", m), "");
  EXPECT_TRUE(m.usesTensorMaps());
  EXPECT_EQ(m.params.back().role, Role::TensorMaps);
  Manifest plain;
  ASSERT_EQ(parseManifest(readText(goodPath()), "x.json", plain), "");
  EXPECT_FALSE(plain.usesTensorMaps());
}

TEST(Manifest, MalformedFieldsAreNamed) {
  const std::string good = readText(goodPath());
  struct Case {
    std::string text, want;
  } cases[] = {
      {replaced(good, "\"name\": \"d128", "\"nome\": \"d128"), "missing field \"name\""},
      {replaced(good, "\"head_dim\": 128", "\"head_dim\": \"128\""), "\"head_dim\""},
      {replaced(good, "\"head_dim\": 128", "\"head_dim\": 12.5"), "\"head_dim\""},
      {replaced(good, "\"dtype\": \"bf16\"", "\"dtype\": \"f64\""), "\"dtype\""},
      {replaced(good, "\"mask\": \"causal\"", "\"mask\": \"sliding\""), "\"mask\""},
      {replaced(good, "\"align\": \"bottom_right\"", "\"align\": \"middle\""), "\"align\""},
      {replaced(good, "\"align\": \"bottom_right\",", ""), "needs field \"align\""},
      {replaced(good, "\"policy\": \"descending\"", "\"policy\": \"auto\""), "\"policy\""},
      {replaced(good, "\"policy\": \"descending\"", "\"policy\": \"random\""), "\"policy\""},
      {replaced(good, "\"deterministic\": true", "\"deterministic\": 1"), "\"deterministic\""},
      {replaced(good, "\"block_m\": 64", "\"block_m\": 0"), "\"block_m\""},
      {replaced(good, "\"threads\": 256", "\"threads\": 4096"), "\"threads\""},
      {replaced(good, "\"main\": {", "\"mian\": {"), "kernels.main"},
      {replaced(good, "\"shared_bytes\": 81920", "\"shared_bytes\": -1"), "kernels.main: field \"shared_bytes\""},
      {replaced(good, "\"entry\": \"dash_bwd_main\"", "\"entry\": \"\""), "kernels.main: field \"entry\" is empty"},
      {replaced(good, "\"name\": \"q\"", "\"name\": \"query\""), "params[0]: unknown parameter name \"query\""},
      {replaced(good, "\"name\": \"k\"", "\"name\": \"q\""), "params[1]: parameter \"q\" appears twice"},
      {replaced(good, "\"name\": \"dq\"", "\"name\": \"dq_x\""), "params[6]: unknown parameter name"},
      {replaced(good, "\"name\": \"lse\",\n   \"kind\": \"memref\",\n   \"rank\": 3",
                "\"name\": \"lse\",\n   \"kind\": \"memref\",\n   \"rank\": 4"),
       "\"lse\" must have rank 3"},
      {replaced(good, "\"elt\": \"i32\"", "\"elt\": \"f32\""), "\"semaphores\" must have elt \"i32\""},
      {replaced(good, "\"kind\": \"f32\"", "\"kind\": \"memref\""), "\"scale\" must have kind \"f32\""},
      {replaced(good, "\"cubin\": \"d128_causal_br_descending_det.cubin\"", "\"cubin\": \"\""), "\"cubin\" is empty"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"model\": {\"c\": 1, \"r\": 1, \"tie\": 0.9}"),
       "\"model.tie\" must be a number in [0, 0.5)"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"model\": {\"c\": 1, \"r\": 1, \"tie\": \"x\"}"),
       "\"model.tie\""},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"model\": {\"c\": 1, \"r\": 1, \"staging\": 1.5}"),
       "\"model.staging\" must be an integer in [0, 8]"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"model\": {\"c\": 1, \"r\": 1, \"staging\": 9}"),
       "\"model.staging\" must be an integer in [0, 8]"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"model\": {\"c\": 1, \"r\": 1, \"read_fraction\": 0}"),
       "\"model.read_fraction\" must be a number in (0, 1]"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dkdv_direct\": 1"),
       "\"dkdv_direct\" must be true or false"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dq_in_main\": 1"),
       "\"dq_in_main\" must be true or false"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dkdv_bulk\": 1"),
       "\"dkdv_bulk\" must be true or false"},
      // dkdv_bulk stores through maps 7 and 8 of a kernel that writes dk/dv.
      {replaced(good, "\"threads\": 256",
                "\"threads\": 256, \"dkdv_direct\": true, \"dkdv_bulk\": true"),
       "\"dkdv_bulk\": true needs a TMA kernel that writes dk/dv itself"},
      {replaced(withTensorMaps(good, "i64", 1), "\"threads\": 256",
                "\"threads\": 256, \"dkdv_bulk\": true"),
       "\"dkdv_bulk\": true needs a TMA kernel"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"pdl\": \"yes\""),
       "\"pdl\" must be true or false"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dps_fold\": true"),
       "\"dps_fold\" must be \"rows\""},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dps_fold\": \"cols\""),
       "\"dps_fold\" must be \"rows\""},
      // The swizzled form was removed (it failed on hardware).
      {replaced(withTensorMaps(good, "i64", 1), "\"threads\": 256",
                "\"threads\": 256, \"dps_fold\": \"atoms\""),
       "\"dps_fold\" must be \"rows\""},
      // dps_fold's hi / lo rows come by a tensor map.
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"dps_fold\": \"rows\""),
       "\"dps_fold\": \"rows\" needs a TMA kernel with block_m a multiple of 64"},
      {replaced(replaced(withTensorMaps(good, "i64", 1), "\"block_m\": 64",
                         "\"block_m\": 80"),
                "\"threads\": 256", "\"threads\": 256, \"dps_fold\": \"rows\""),
       "\"dps_fold\": \"rows\" needs a TMA kernel with block_m a multiple of 64"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"stats_in_main\": 1"),
       "\"stats_in_main\" must be true or false"},
      // stats_in_main's producer waits before its tensor-map loads.
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"stats_in_main\": true"),
       "\"stats_in_main\": true needs a TMA kernel"},
      // dq_in_main needs the semaphores' ticket and the TMA kernels' layout.
      {replaced(good, "\"threads\": 256",
                "\"threads\": 256, \"dkdv_direct\": true, \"dq_in_main\": true"),
       "\"dq_in_main\": true needs a TMA kernel that counts its dQ adds"},
      {replaced(good, "\"threads\": 256", "\"threads\": 256, \"counted_adds\": 1"),
       "\"counted_adds\" must be true or false"},
      // Deterministic kernels always count; a counted kernel is a TMA one.
      {replaced(withTensorMaps(good, "i64", 1), "\"threads\": 256",
                "\"threads\": 256, \"counted_adds\": true"),
       "\"counted_adds\": true needs a non-deterministic TMA kernel"},
      {replaced(replaced(good, "\"deterministic\": true", "\"deterministic\": false"),
                "\"threads\": 256", "\"threads\": 256, \"counted_adds\": true"),
       "\"counted_adds\": true needs a non-deterministic TMA kernel"},
      // A non-deterministic kernel that does not count cannot write dq.
      {replaced(replaced(withTensorMaps(good, "i64", 1), "\"deterministic\": true",
                         "\"deterministic\": false"),
                "\"threads\": 256", "\"threads\": 256, \"dkdv_direct\": true, \"dq_in_main\": true"),
       "\"dq_in_main\": true needs a TMA kernel that counts its dQ adds"},
      {replaced(withTensorMaps(good, "i64", 1), "\"threads\": 256",
                "\"threads\": 256, \"dq_in_main\": true"),
       "writes dk/dv itself (\"dkdv_direct\")"},
      {withTensorMaps(good, "i64", 2), "\"tensor_maps\" must have rank 1"},
      {withTensorMaps(good, "f32", 1), "\"tensor_maps\" must have elt \"i64\""},
      {replaced(withTensorMaps(good, "i64", 1), "\"head_dim\": 128", "\"head_dim\": 96"),
       "\"tensor_maps\" needs a head dim that is a multiple of 64"},
      {"[1, 2]", "top level must be an object"},
      {"", "invalid JSON"},
      {good.substr(0, good.size() / 2), "invalid JSON"},
  };
  for (const Case &c : cases) {
    Manifest m;
    std::string err = parseManifest(c.text, "x.json", m);
    EXPECT_NE(err.find(c.want), std::string::npos)
        << "want \"" << c.want << "\", got \"" << err << "\"";
  }
}

TEST(Manifest, ModelCalibration) {
  const std::string good = readText(goodPath());
  Manifest m;
  std::string err = parseManifest(
      replaced(good, "\"threads\": 256",
               "\"threads\": 256, \"model\": {\"c\": 1.0, \"r\": 1.0, \"tie\": 0.01}"),
      "x.json", m);
  ASSERT_EQ(err, "");
  EXPECT_DOUBLE_EQ(m.modelR, 1.0);
  EXPECT_DOUBLE_EQ(m.modelTie, 0.01);
  EXPECT_EQ(m.modelStaging, 0); // serial model when absent
  Manifest staged;
  ASSERT_EQ(parseManifest(replaced(good, "\"threads\": 256",
                                   "\"threads\": 256, \"model\": {\"c\": 1.0, "
                                   "\"r\": 1.0, \"staging\": 2, "
                                   "\"read_fraction\": 0.25}"),
                          "x.json", staged),
            "");
  EXPECT_EQ(staged.modelStaging, 2);
  EXPECT_DOUBLE_EQ(staged.modelReadFraction, 0.25);
  Manifest plain;
  ASSERT_EQ(parseManifest(good, "x.json", plain), "");
  EXPECT_DOUBLE_EQ(plain.modelTie, 1e-9);
  EXPECT_FALSE(plain.dkdvDirect); // optional, false when absent
}

TEST(Manifest, DirectDkDvFlag) {
  Manifest m;
  ASSERT_EQ(parseManifest(replaced(readText(goodPath()), "\"threads\": 256",
                                   "\"threads\": 256, \"dkdv_direct\": true"),
                          "x.json", m),
            "");
  EXPECT_TRUE(m.dkdvDirect);
}

TEST(Manifest, DqInMainFlag) {
  Manifest m;
  ASSERT_EQ(parseManifest(replaced(withTensorMaps(readText(goodPath()), "i64", 1),
                                   "\"threads\": 256",
                                   "\"threads\": 256, \"dkdv_direct\": true, "
                                   "\"dq_in_main\": true"),
                          "x.json", m),
            "");
  EXPECT_TRUE(m.dqInMain);
  Manifest plain;
  ASSERT_EQ(parseManifest(readText(goodPath()), "x.json", plain), "");
  EXPECT_FALSE(plain.dqInMain); // optional, false when absent
}

TEST(Manifest, MissingRequiredParameter) {
  const std::string good = readText(goodPath());
  Manifest m;
  std::string text, err;
  // Remove the scale param entirely.
  size_t at = good.find(",\n  {\n   \"name\": \"scale\"");
  ASSERT_NE(at, std::string::npos);
  size_t end = good.find('}', at);
  text = good.substr(0, at) + good.substr(end + 1);
  err = parseManifest(text, "x.json", m);
  EXPECT_NE(err.find("missing required parameter \"scale\""), std::string::npos) << err;
}

TEST(Manifest, TruncationAndCorruptionNeverCrash) {
  const std::string good = readText(goodPath());
  Manifest m;
  for (size_t n = 0; n < good.size(); n += 7)
    EXPECT_NE(parseManifest(good.substr(0, n), "x.json", m), "") << n;
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string t = good;
    for (int f = 0; f < 3; ++f)
      t[rng() % t.size()] = char(rng() % 256);
    accepted += parseManifest(t, "x.json", m).empty();
  }
  // Flips inside string values or whitespace may still parse; that is fine.
  EXPECT_LT(accepted, 3000);
}

TEST(Manifest, LoadsFixtureDirectory) {
  std::vector<Manifest> ms;
  ASSERT_EQ(loadManifestDir(dash_test::kernelDir(), ms), "");
  EXPECT_EQ(ms.size(), 6u);
}

TEST(Manifest, DirectoryErrors) {
  std::vector<Manifest> ms;
  std::string err = loadManifestDir("/nonexistent/dash/kernels", ms);
  EXPECT_NE(err.find("cannot open kernel directory"), std::string::npos) << err;
  err = loadManifestDir(std::string(DASH_TEST_INPUTS) + "/bad", ms);
  EXPECT_NE(err.find("broken.json"), std::string::npos) << err;
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;

  // Two manifests for one configuration.
  char tmpl[] = "/tmp/dash-rt-dupXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl, good = readText(goodPath());
  std::ofstream(dir + "/a.json") << good;
  std::ofstream(dir + "/b.json") << replaced(good, "\"name\": \"d128_causal_br_descending_det\"",
                                             "\"name\": \"other\"");
  err = loadManifestDir(dir, ms);
  EXPECT_NE(err.find("already provided by"), std::string::npos) << err;
  std::remove((dir + "/a.json").c_str());
  std::remove((dir + "/b.json").c_str());
  rmdir(dir.c_str());
}

} // namespace

// A non-deterministic TMA kernel that counts its dQ adds may write dq itself.
TEST(Manifest, CountedNonDeterministicKernelWritesDq) {
  const std::string good = readText(goodPath());
  Manifest m;
  std::string err = parseManifest(
      replaced(replaced(withTensorMaps(good, "i64", 1), "\"deterministic\": true",
                        "\"deterministic\": false"),
               "\"threads\": 256",
               "\"threads\": 256, \"counted_adds\": true, \"dkdv_direct\": true, "
               "\"dq_in_main\": true"),
      "x.json", m);
  ASSERT_EQ(err, "");
  EXPECT_FALSE(m.deterministic);
  EXPECT_TRUE(m.countedAdds);
  EXPECT_TRUE(m.dqInMain);
}
