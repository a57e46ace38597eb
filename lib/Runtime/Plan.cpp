//===- Plan.cpp - Which kernel a call runs, on how many units ------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//
//
// Selection needs no driver: the manifests that match the call's head dim,
// dtype, mask, alignment, determinism and policy (every policy for auto).
// Once the device's occupancy is known (or injected), the grid G follows,
// then each candidate's legality under the schedule library's rules and,
// for auto, the DAG model's pick (sched::simulate, sched::pickBest). Both
// answers are cached by problem.
//
//===----------------------------------------------------------------------===//

#include "RuntimeImpl.h"

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Simulate.h"

#include <cmath>
#include <cstdio>

namespace dash::rt::impl {

namespace {

std::string problemKey(const sched::Problem &p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%d,%lld,%g,%g",
                (long long)p.batch, (long long)p.headsQ, (long long)p.headsKV,
                (long long)p.seqQ, (long long)p.seqK, (long long)p.headDim,
                (long long)p.blockM, (long long)p.blockN, int(p.mask),
                int(p.align), (long long)p.numUnits, p.c, p.r);
  return buf + std::string(p.persistentLaunch ? "/P" : "/L") +
         (p.ordered ? "/O/" : "/U/") + std::to_string(p.tieTolerance) + "/S" +
         std::to_string(p.stagingBuffers) + "/" +
         std::to_string(p.readFraction);
}

sched::Problem makeProblem(const Shape &s, const Manifest &m, int64_t G) {
  sched::Problem p;
  p.batch = s.B;
  p.headsQ = s.Hq;
  p.headsKV = s.Hkv;
  p.seqQ = s.Sq;
  p.seqK = s.Sk;
  p.headDim = s.D;
  p.blockM = m.blockM;
  p.blockN = m.blockN;
  p.mask = m.mask;
  p.align = m.align;
  p.numUnits = G;
  // DASH's kernels run every schedule as a persistent grid of G units.
  p.persistentLaunch = true;
  p.ordered = m.deterministic; // non-deterministic kernels add unordered
  if (m.modelC > 0) {
    p.c = m.modelC;
    p.r = m.modelR;
    p.tieTolerance = m.modelTie;
    p.stagingBuffers = m.modelStaging;
    p.readFraction = m.modelReadFraction;
  }
  return p;
}

// The kernels walk the schedule in 32-bit arithmetic (the schedule regions
// are narrowed to i32 in convert-dash-to-gpu): its largest values are the
// work-item count plus two grids, B * Hq * ceil(Sk / bn) + 2 G, and the
// rounded-up sequence lengths. Empty when they fit.
std::string walkFitsInt32(const Shape &s, const Manifest &m, int64_t G) {
  int64_t items;
  int64_t kvTiles = (s.Sk + m.blockN - 1) / m.blockN;
  if (__builtin_mul_overflow(s.B * s.Hq, kvTiles, &items) ||
      items > kInt32Max - 2 * G)
    return "batch * heads * KV tiles (" + str(s.B) + " * " + str(s.Hq) +
           " * " + str(kvTiles) + ") + 2 * num_units exceeds the kernels' " +
           "32-bit schedule walk (2^31-1)";
  if (std::max(s.Sq + m.blockM, s.Sk + m.blockN) > kInt32Max)
    return "sequence length + tile exceeds the kernels' 32-bit schedule "
           "walk (2^31-1)";
  return "";
}

std::string legalReason(dash_runtime *rt, const sched::Problem &p,
                        sched::Policy pol) {
  std::string key = problemKey(p) + "|" + sched::policyName(pol);
  auto it = rt->legalCache.find(key);
  if (it != rt->legalCache.end())
    return it->second;
  sched::Legality l = sched::checkLegal(p, pol);
  if (rt->legalCache.size() > 1024)
    rt->legalCache.clear();
  return rt->legalCache[key] = l.legal ? std::string() : l.reason;
}

// Every manifest matching the configuration (all policies for auto).
dash_status selectCandidates(dash_runtime *rt, const dash_bwd_args *a,
                             const Shape &s, std::vector<int> &out) {
  out.clear();
  Elt dtype = s.dtype == DASH_DTYPE_F16 ? Elt::F16 : Elt::BF16;
  sched::Mask mask = a->causal ? sched::Mask::Causal : sched::Mask::Full;
  sched::CausalAlign align = a->align == DASH_ALIGN_TOP_LEFT
                                 ? sched::CausalAlign::TopLeft
                                 : sched::CausalAlign::BottomRight;
  sched::Policy pol = toSched(a->policy);
  auto matches = [&](const Manifest &m, sched::CausalAlign al) {
    return m.headDim == s.D && m.dtype == dtype && m.mask == mask &&
           (mask == sched::Mask::Full || m.align == al) &&
           m.deterministic == bool(a->deterministic) &&
           (pol == sched::Policy::Auto || m.policy == pol);
  };
  for (size_t i = 0; i < rt->kernels.size(); ++i)
    if (matches(rt->kernels[i], align))
      out.push_back(int(i));
  // With Sq == Sk both alignments give the same mask: use either kernel.
  if (out.empty() && mask == sched::Mask::Causal && s.Sq == s.Sk) {
    sched::CausalAlign other = align == sched::CausalAlign::TopLeft
                                   ? sched::CausalAlign::BottomRight
                                   : sched::CausalAlign::TopLeft;
    for (size_t i = 0; i < rt->kernels.size(); ++i)
      if (matches(rt->kernels[i], other))
        out.push_back(int(i));
  }
  if (!out.empty())
    return DASH_SUCCESS;
  std::string want = "d" + str(s.D) + " " + eltName(dtype) + " " +
                     sched::maskName(mask);
  if (mask == sched::Mask::Causal)
    want += align == sched::CausalAlign::TopLeft ? " top_left" : " bottom_right";
  want += std::string(" ") + sched::policyName(pol) +
          (a->deterministic ? " det" : " nondet");
  std::string avail;
  for (size_t i = 0; i < rt->kernels.size() && i < 64; ++i)
    avail += (i ? "; " : "") + rt->kernels[i].configString();
  if (rt->kernels.size() > 64)
    avail += "; ...";
  return fail(DASH_ERROR_NO_KERNEL,
              "no kernel for configuration \"" + want + "\" in \"" + rt->dir +
                  "\"; available: " + (avail.empty() ? "(none)" : avail));
}

} // namespace

dash_status resolvePlan(dash_runtime *rt, const dash_bwd_args *a,
                        const DeviceView &view, Plan &plan) {
  struct Cand {
    int k;
    int64_t G, maxUnits;
    int blocks;
  };
  std::vector<Cand> legal;
  std::string reasons, tooMany;
  bool unknownG = false;
  for (int k : plan.candidates) {
    const Manifest &m = rt->kernels[k];
    Cand c{k, a->num_units, 0, view.known ? view.blocksFor(k) : 0};
    if (view.known && c.blocks > 0) {
      c.maxUnits = int64_t(c.blocks) * view.numSMs;
      if (c.G == 0)
        c.G = c.maxUnits;
      if (c.G > c.maxUnits) {
        tooMany = "num_units = " + str(c.G) + " exceeds the " +
                  str(c.maxUnits) + " co-resident CTAs of kernel " + m.name +
                  " (" + str(c.blocks) + " per SM x " + str(view.numSMs) +
                  " SMs); the persistent schedules need the whole grid "
                  "resident";
        continue;
      }
      if (c.G > kInt32Max)
        return fail(DASH_ERROR_INVALID_ARGUMENT, "grid of " + str(c.G) +
                                                     " CTAs exceeds 2^31-1");
    }
    // Unknown G: check the G-independent rules with G = 1.
    bool gKnown = c.G > 0;
    if (std::string why = walkFitsInt32(plan.shape, m, gKnown ? c.G : 1);
        !why.empty())
      return fail(DASH_ERROR_INVALID_ARGUMENT, why);
    unknownG |= !gKnown;
    sched::Problem p = makeProblem(plan.shape, m, gKnown ? c.G : 1);
    std::string why = legalReason(rt, p, m.policy);
    if (!why.empty()) {
      reasons += (reasons.empty() ? "" : "; ") + m.name + ": " + why;
      continue;
    }
    legal.push_back(c);
  }
  if (legal.empty()) {
    if (!tooMany.empty() && reasons.empty())
      return fail(DASH_ERROR_TOO_MANY_UNITS, tooMany);
    return fail(DASH_ERROR_ILLEGAL_SCHEDULE,
                "schedule refused for B=" + str(plan.shape.B) + " Hq=" +
                    str(plan.shape.Hq) + " Hkv=" + str(plan.shape.Hkv) +
                    " Sq=" + str(plan.shape.Sq) + " Sk=" + str(plan.shape.Sk) +
                    ": " + reasons + (tooMany.empty() ? "" : "; " + tooMany));
  }
  const Cand *pick = &legal[0];
  if (a->policy == DASH_POLICY_AUTO) {
    if (unknownG) {
      // Cannot model without G: report the configuration, not a kernel.
      plan.kernel = -1;
      plan.policy = sched::Policy::Auto;
      return DASH_SUCCESS;
    }
    std::string key;
    for (const Cand &c : legal)
      key += str(c.k) + ":" + str(c.G) + ",";
    key += problemKey(makeProblem(plan.shape, rt->kernels[legal[0].k], 0));
    auto it = rt->autoCache.find(key);
    int chosen = -1;
    if (it != rt->autoCache.end()) {
      chosen = it->second;
    } else {
      std::vector<sched::Choice> choices;
      std::vector<int> owner;
      for (const Cand &c : legal) {
        const Manifest &m = rt->kernels[c.k];
        sched::ModelResult r =
            sched::simulate(makeProblem(plan.shape, m, c.G), m.policy);
        if (r.deadlock || !std::isfinite(r.makespan))
          continue;
        choices.push_back({m.policy, r});
        owner.push_back(c.k);
      }
      if (choices.empty())
        return fail(DASH_ERROR_ILLEGAL_SCHEDULE,
                    "auto: the schedule model deadlocks for every compiled policy");
      // The tie gap of the kernels' calibration (the first candidate's
      // manifest; AOT writes the same model into every manifest); it
      // favours G-independent orders for deterministic kernels only (every
      // candidate has the call's `deterministic`).
      const Manifest &first = rt->kernels[owner.front()];
      sched::Choice best =
          sched::pickBest(choices, first.modelTie, first.deterministic);
      for (size_t i = 0; i < choices.size(); ++i)
        if (choices[i].policy == best.policy)
          chosen = owner[i];
      if (rt->autoCache.size() > 1024)
        rt->autoCache.clear();
      rt->autoCache[key] = chosen;
    }
    for (const Cand &c : legal)
      if (c.k == chosen)
        pick = &c;
  }
  plan.kernel = pick->k;
  plan.policy = rt->kernels[pick->k].policy;
  plan.G = pick->G;
  plan.maxUnits = pick->maxUnits;
  plan.blocksPerSM = pick->blocks;
  plan.numSMs = view.known ? view.numSMs : 0;
  return DASH_SUCCESS;
}

dash_status prepare(dash_runtime *rt, const dash_bwd_args *a, Plan &plan) {
  if (dash_status st = validateArgs(a, plan.shape))
    return st;
  if (dash_status st = selectCandidates(rt, a, plan.shape, plan.candidates))
    return st;
  // The workspace must serve every candidate: the largest of their layouts.
  // (A layout for the candidates' largest block sizes is not that: with a
  // larger block_m a kernel needs fewer semaphores, so a smaller-block
  // candidate could need more than it.)
  plan.ws = WsLayout();
  for (int k : plan.candidates) {
    WsLayout one = workspaceLayout(plan.shape, wsKernel(rt->kernels[k]));
    if (!one.ok)
      return fail(DASH_ERROR_INVALID_ARGUMENT,
                  "problem too large: workspace size overflows");
    if (!plan.ws.ok || one.total > plan.ws.total)
      plan.ws = one;
  }
  // Validate the problem itself once more through the schedule library (same
  // limits the kernels' index math was written for).
  sched::Problem p = makeProblem(plan.shape, rt->kernels[plan.candidates[0]], 1);
  std::string err = sched::validate(p);
  if (!err.empty())
    return fail(DASH_ERROR_INVALID_ARGUMENT, err);
  return DASH_SUCCESS;
}

void fillInfo(dash_runtime *rt, const Plan &plan, dash_bwd_info *info) {
  if (!info)
    return;
  std::memset(info, 0, sizeof *info);
  info->policy = fromSched(plan.policy);
  info->num_units = plan.G;
  info->max_units = plan.maxUnits;
  info->blocks_per_sm = plan.blocksPerSM;
  info->num_sms = plan.numSMs;
  if (plan.kernel >= 0) {
    const Manifest &m = rt->kernels[plan.kernel];
    WsLayout ws = workspaceLayout(plan.shape, wsKernel(m));
    info->workspace_bytes = ws.total;
    info->block_m = int32_t(m.blockM);
    info->block_n = int32_t(m.blockN);
    info->threads = int32_t(m.threads);
    info->main_shared_bytes = m.main.sharedBytes;
    std::snprintf(info->kernel_name, sizeof info->kernel_name, "%s",
                  m.name.c_str());
  } else {
    info->workspace_bytes = plan.ws.total;
  }
}

} // namespace dash::rt::impl
