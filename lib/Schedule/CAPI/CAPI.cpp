//===- CAPI.cpp - C API of the DASH schedule model -----------------------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Produces the same JSON as `dash-sched --json` (tools/dash-sched) and the
// same Gantt SVG as `--svg`; the field names and rules mirror that tool so a
// script can switch between the two. Kept as a copy rather than a shared
// helper so dash-sched stays a single file that needs nothing but the
// library.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/CAPI.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Gantt.h"
#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Report.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace dash::sched;

namespace {

std::string num(double v) { return formatNumber(v); }

// malloc'ed copy: the caller frees with dash_sched_free (free()), so the
// allocator never crosses a C++ runtime boundary.
char *dup(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// dash-sched's option rules; "" or the message.
std::string toProblem(const dash_sched_options &o, Problem &p,
                      std::optional<Policy> &policy) {
  struct Pos {
    const char *name;
    int64_t v;
  };
  const Pos positive[] = {{"batch", o.batch}, {"heads", o.heads},
                          {"seqlen", o.seqlen}, {"hdim", o.hdim},
                          {"sms", o.sms}};
  for (const Pos &f : positive)
    if (f.v <= 0)
      return std::string(f.name) + " must be positive, got " +
             std::to_string(f.v);
  const Pos optional[] = {{"heads_kv", o.heads_kv},
                          {"seqlen_k", o.seqlen_k},
                          {"block_m", o.block_m},
                          {"block_n", o.block_n},
                          {"resident_sms", o.resident_sms}};
  for (const Pos &f : optional)
    if (f.v < 0)
      return std::string(f.name) + " must be positive (0 = default), got " +
             std::to_string(f.v);
  if (!std::isfinite(o.c) || o.c <= 0)
    return "c must be positive, got " + num(o.c);
  if (!std::isfinite(o.r) || o.r < 0)
    return "r must be non-negative, got " + num(o.r);
  if (o.persistent != 0 && o.persistent != 1)
    return "persistent must be 0 or 1, got " + std::to_string(o.persistent);
  if (o.staging < 0 || o.staging > 8)
    return "staging must be in [0, 8], got " + std::to_string(o.staging);
  if (!std::isfinite(o.read_fraction) || o.read_fraction < 0 ||
      o.read_fraction > 1)
    return "read_fraction must be in (0, 1] (0 = default), got " +
           num(o.read_fraction);
  if (o.causal != 0 && o.causal != 1)
    return "causal must be 0 or 1, got " + std::to_string(o.causal);
  if (o.top_left != 0 && o.top_left != 1)
    return "top_left must be 0 or 1, got " + std::to_string(o.top_left);
  if (o.hdim != 64 && o.hdim != 128)
    return "hdim " + std::to_string(o.hdim) +
           " is not supported (FA3 backward tiles exist for 64 and 128)";
  policy.reset();
  if (o.policy && *o.policy) {
    std::string name = o.policy;
    for (char &ch : name)
      if (ch == '_')
        ch = '-';
    policy = parsePolicy(name);
    if (!policy)
      return std::string("unknown policy '") + o.policy +
             "' (ascending, spt, descending, shift, symmetric-shift, auto)";
  }
  p = Problem();
  p.batch = o.batch;
  p.headsQ = o.heads;
  p.headsKV = o.heads_kv ? o.heads_kv : o.heads;
  p.seqQ = o.seqlen;
  p.seqK = o.seqlen_k ? o.seqlen_k : o.seqlen;
  p.headDim = o.hdim;
  p.mask = o.causal ? Mask::Causal : Mask::Full;
  p.align = o.top_left ? CausalAlign::TopLeft : CausalAlign::BottomRight;
  auto [tileM, tileN] = defaultTiles(p.headDim, p.mask); // as dash-tile
  p.blockM = o.block_m ? o.block_m : tileM;
  p.blockN = o.block_n ? o.block_n : tileN;
  p.numUnits = o.sms;
  p.residentUnits = o.resident_sms;
  p.c = o.c;
  p.r = o.r;
  p.persistentLaunch = o.persistent != 0;
  p.stagingBuffers = o.staging;
  if (o.read_fraction > 0)
    p.readFraction = o.read_fraction;
  return validate(p);
}

} // namespace

extern "C" {

void dash_sched_options_init(dash_sched_options *o) {
  if (!o)
    return;
  std::memset(o, 0, sizeof(*o));
  o->batch = 1;
  o->heads = 16;
  o->seqlen = 4096;
  o->hdim = 128;
  o->sms = 132;
  o->c = 1.0;
  o->r = 0.25;
}

int32_t dash_sched_report(const dash_sched_options *opts, char **out_json,
                          char **out_svg, char **out_error) {
  if (out_json)
    *out_json = nullptr;
  if (out_svg)
    *out_svg = nullptr;
  if (out_error)
    *out_error = nullptr;
  auto failWith = [&](const std::string &msg) {
    if (out_error)
      *out_error = dup(msg);
    return int32_t(2);
  };
  if (!opts)
    return failWith("opts is NULL");
  if (!out_json)
    return failWith("out_json is NULL");
  Problem p;
  std::optional<Policy> only;
  std::string err = toProblem(*opts, p, only);
  if (!err.empty())
    return failWith(err);

  // The same report code as dash-sched (lib/Schedule/Report.cpp).
  Report report = buildReport(p, only);
  std::string s = reportJson(p, report, opts->detail != 0);
  std::string svg;
  if (opts->svg && out_svg)
    svg = reportSvg(p, report);

  *out_json = dup(s);
  if (!*out_json)
    return failWith("out of memory");
  if (opts->svg && out_svg) {
    *out_svg = dup(svg);
    if (!*out_svg) {
      dash_sched_free(*out_json);
      *out_json = nullptr;
      return failWith("out of memory");
    }
  }
  return 0;
}

void dash_sched_free(char *s) { std::free(s); }

int32_t dash_sched_abi_version(void) { return DASH_SCHED_ABI_VERSION; }

} // extern "C"
