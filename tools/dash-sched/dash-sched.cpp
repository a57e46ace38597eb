//===- dash-sched.cpp - Report the modelled schedules of a problem --------===//
//
// Part of the DASH project. Plain C++17: no MLIR/LLVM, no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//
//
// Prints every schedule's legality, modelled makespan, critical path and
// idle share for one attention-backward problem, marks the `auto` choice,
// and optionally writes a Gantt SVG or the task DAG. Exit 2 on bad input,
// before any file is written.
//
//===----------------------------------------------------------------------===//

#include "dash/Schedule/Choose.h"
#include "dash/Schedule/Gantt.h"
#include "dash/Schedule/Plan.h"
#include "dash/Schedule/Report.h"
#include "dash/Schedule/Schedules.h"
#include "dash/Schedule/Simulate.h"
#include "dash/Schedule/TaskGraph.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace dash::sched;

namespace {

constexpr int64_t kMaxDotTasks = 2000;

const char *kHelp = R"(usage: dash-sched [options]

Models the deterministic attention backward (FA3 structure) under every
tile-order schedule and reports makespan, critical path and idle SM time, in
units of the compute cost c of one (KV tile, Q tile) task.

Problem (defaults in brackets):
  --batch B            batch size [1]
  --heads H            query heads [16]
  --heads-kv H         key/value heads, must divide --heads [= --heads]
  --seqlen S           query length [4096]
  --seqlen-k S         key length [= --seqlen]
  --hdim D             head dim, 64 or 128 [128]
  --mask M             full | causal [full]
  --align A            causal alignment: bottom-right (FlashAttention, key j
                       visible to query i iff j <= i + sk - sq) | top-left
                       (PyTorch SDPA, j <= i) [bottom-right]
  --block-m M          Q tile rows [FA3: d=64 128; d=128 64 causal, 80 full]
  --block-n N          KV tile rows [FA3: 128]
  --sms G              SMs = units of the persistent grid [132]
  --resident-sms K     SMs that actually fit a unit, when fewer than --sms
                       (a grid sized for G on a smaller GPU) [= --sms]
  --c C                compute cost per task [1]
  --r R                ordered dQ reduce cost per task [0.25]
  --staging B          dQ staging buffers per unit: 0 = serial model (a
                       unit's reduce follows its compute); B >= 1 = the
                       unit computes on while B hand-offs wait for their
                       reducers, as DASH's WGMMA kernels do [0]
  --read-fraction F    staged model: a staging buffer is free again F * r
                       after its reduce starts, in (0, 1] [0.5]
Output:
  --policy P           only this schedule: ascending | spt | descending |
                       shift | symmetric-shift | auto [all]
  --json               one JSON object instead of the table
  --detail             with --json: per-unit work lists and per-row ranks
  --svg FILE           Gantt chart per schedule: one lane per SM, colour =
                       Q tile, hatched = waiting on the dQ semaphore
  --dot FILE           task DAG of the selected (or auto) schedule; refused
                       above 2000 tasks
  --help               this text

Models: ascending, spt, descending run as FA3 launches them: one CTA per
KV tile (heads and batches in sequence), dispatched in launch order to the
first free SM, holding it while it waits. shift and symmetric-shift run as a
persistent grid of G units, unit u taking tiles u, u+G, ...
  --launch persistent  every schedule as a persistent grid (how DASH's own
                       kernels run them; the runtime's `auto` models this)
                       [fa3]
Options take --x=v or --x v. Exit status 2 on bad arguments.
)";

int fail(const std::string &msg) {
  std::fprintf(stderr, "dash-sched: error: %s\n", msg.c_str());
  return 2;
}

bool parseInt(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

bool parseReal(const std::string &s, double &out) {
  if (s.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

std::string num(double v) { return formatNumber(v); }

struct Options {
  Problem problem;
  std::optional<Policy> policy;
  bool json = false, detail = false;
  std::string svg, dot;
};

// Returns "" on success, else the message for fail().
std::string parseArgs(int argc, char **argv, Options &o, bool &help) {
  Problem &p = o.problem;
  p.batch = 1;
  p.headsQ = 16;
  p.seqQ = 4096;
  p.headDim = 128;
  p.numUnits = 132;
  int64_t headsKV = 0, seqK = 0, blockM = 0, blockN = 0;
  std::string mask = "full", align = "bottom-right";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return "";
    }
    if (arg == "--json" || arg == "--detail") {
      (arg == "--json" ? o.json : o.detail) = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      return "unexpected argument '" + arg + "' (see --help)";
    std::string key = arg, value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc)
        return "missing value for " + key;
      value = argv[++i];
    }
    struct IntFlag {
      const char *name;
      int64_t *dst;
    };
    const IntFlag ints[] = {
        {"--batch", &p.batch},    {"--heads", &p.headsQ},
        {"--heads-kv", &headsKV}, {"--seqlen", &p.seqQ},
        {"--seqlen-k", &seqK},    {"--hdim", &p.headDim},
        {"--block-m", &blockM},   {"--block-n", &blockN},
        {"--sms", &p.numUnits},   {"--resident-sms", &p.residentUnits}};
    bool matched = false;
    for (const IntFlag &f : ints)
      if (key == f.name) {
        if (!parseInt(value, *f.dst))
          return key + " expects an integer, got '" + value + "'";
        if (*f.dst <= 0)
          return key + " must be positive, got " + value;
        matched = true;
      }
    if (matched)
      continue;
    if (key == "--c" || key == "--r") {
      double &dst = key == "--c" ? p.c : p.r;
      if (!parseReal(value, dst))
        return key + " expects a number, got '" + value + "'";
      if (key == "--c" ? dst <= 0 : dst < 0)
        return key +
               (key == "--c" ? " must be positive" : " must be non-negative") +
               ", got " + value;
    } else if (key == "--staging") {
      if (!parseInt(value, p.stagingBuffers) || p.stagingBuffers < 0 ||
          p.stagingBuffers > 8)
        return "--staging expects an integer in [0, 8], got '" + value + "'";
    } else if (key == "--read-fraction") {
      if (!parseReal(value, p.readFraction) || !(p.readFraction > 0) ||
          p.readFraction > 1)
        return "--read-fraction expects a number in (0, 1], got '" + value +
               "'";
    } else if (key == "--launch") {
      if (value != "fa3" && value != "persistent")
        return "--launch must be fa3 or persistent, got '" + value + "'";
      p.persistentLaunch = value == "persistent";
    } else if (key == "--mask") {
      mask = value;
    } else if (key == "--align") {
      align = value;
    } else if (key == "--policy") {
      o.policy = parsePolicy(value);
      if (!o.policy)
        return "unknown policy '" + value +
               "' (ascending, spt, descending, shift, symmetric-shift, auto)";
    } else if (key == "--svg") {
      o.svg = value;
    } else if (key == "--dot") {
      o.dot = value;
    } else {
      return "unknown option '" + key + "' (see --help)";
    }
  }
  if (mask != "full" && mask != "causal")
    return "--mask must be full or causal, got '" + mask + "'";
  p.mask = mask == "full" ? Mask::Full : Mask::Causal;
  if (align != "bottom-right" && align != "top-left")
    return "--align must be bottom-right or top-left, got '" + align + "'";
  p.align =
      align == "bottom-right" ? CausalAlign::BottomRight : CausalAlign::TopLeft;
  if (p.headDim != 64 && p.headDim != 128)
    return "--hdim " + std::to_string(p.headDim) +
           " is not supported (FA3 backward tiles exist for 64 and 128)";
  auto [tileM, tileN] = defaultTiles(p.headDim, p.mask); // as dash-tile
  p.blockM = blockM ? blockM : tileM;
  p.blockN = blockN ? blockN : tileN;
  p.headsKV = headsKV ? headsKV : p.headsQ;
  p.seqK = seqK ? seqK : p.seqQ;
  if (o.detail && !o.json)
    return "--detail needs --json";
  std::string err = validate(p);
  if (!err.empty())
    return err;
  return "";
}

struct Row {
  Policy policy;
  Legality legal;
  ModelResult model;
};

const char *modelName(const Problem &prob, Policy p) {
  return runsPersistent(prob, p) ? "persistent grid of G units"
                                 : "FA3 launch: CTA per KV tile, first free SM";
}

bool writeFile(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  bool help = false;
  std::string err = parseArgs(argc, argv, o, help);
  if (help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!err.empty())
    return fail(err);
  const Problem &p = o.problem;
  const int64_t tasks = p.numHeadSlots() * tasksPerHead(p);

  // Every schedule is evaluated once; auto picks among them.
  Report report = buildReport(p, o.policy);
  const std::vector<ReportRow> &rows = report.rows;
  const Choice &choice = report.choice;

  // Refuse an oversized or illegal DAG before writing anything.
  Policy dotPolicy =
      o.policy && *o.policy != Policy::Auto ? *o.policy : choice.policy;
  if (!o.dot.empty() && tasks > kMaxDotTasks)
    return fail("--dot: " + std::to_string(tasks) +
                " tasks is too many to draw (limit " +
                std::to_string(kMaxDotTasks) + "); shrink batch/heads/seqlen");
  if (!o.dot.empty() && !checkLegal(p, dotPolicy).legal)
    return fail(std::string("--dot: ") + policyName(dotPolicy) +
                " is illegal here: " + checkLegal(p, dotPolicy).reason);

  if (!o.svg.empty() && !writeFile(o.svg, reportSvg(p, report)))
    return fail("cannot write --svg file '" + o.svg + "'");
  if (!o.dot.empty()) {
    Plan plan = buildPlan(p, dotPolicy);
    TaskGraph g = buildTaskGraph(p, dotPolicy, plan.units);
    if (!writeFile(o.dot, taskGraphDot(g, policyName(dotPolicy))))
      return fail("cannot write --dot file '" + o.dot + "'");
  }

  if (o.json) {
    std::fputs((reportJson(p, report, o.detail) + "\n").c_str(), stdout);
    return 0;
  }

  std::printf("problem: b=%lld h=%lld h_kv=%lld sq=%lld sk=%lld d=%lld mask=%s",
              (long long)p.batch, (long long)p.headsQ, (long long)p.headsKV,
              (long long)p.seqQ, (long long)p.seqK, (long long)p.headDim,
              maskName(p.mask));
  if (p.mask == Mask::Causal)
    std::printf(" (%s)", alignName(p.align));
  std::printf(
      "\ntiles: %lldx%lld -> M=%lld Q tiles, N=%lld KV tiles, %lld tasks\n",
      (long long)p.blockM, (long long)p.blockN, (long long)p.numQTiles(),
      (long long)p.numKVTiles(), (long long)tasks);
  std::printf("grid: G=%lld SMs", (long long)p.numUnits);
  if (p.numSMs() != p.numUnits)
    std::printf(" (%lld resident)", (long long)p.numSMs());
  std::printf("; costs per task: c=%s r=%s\n\n", num(p.c).c_str(),
              num(p.r).c_str());
  std::printf("  %-16s %-6s %12s %12s %7s  %s\n", "schedule", "legal",
              "makespan", "crit.path", "idle%", "model");
  for (const ReportRow &row : rows) {
    const char *mark = row.policy == choice.policy ? "*" : " ";
    if (!row.legal.legal) {
      std::printf("%s %-16s no: %s\n", mark, policyName(row.policy),
                  row.legal.reason.c_str());
      continue;
    }
    std::printf("%s %-16s %-6s %12s %12s %6.1f%%  %s\n", mark,
                policyName(row.policy), "yes", num(row.model.makespan).c_str(),
                num(row.model.criticalPath).c_str(),
                row.model.idleFraction * 100, modelName(p, row.policy));
  }
  // No schedule beats total work spread evenly over the SMs (staged model:
  // the reduces overlap the compute, which is then the work).
  double perTask = p.stagingBuffers > 0 ? p.c : p.c + p.r;
  double ideal = static_cast<double>(tasks) * perTask /
                 static_cast<double>(p.numSMs());
  std::printf("\nauto: %s (makespan %s; work/SMs %s)\n",
              policyName(choice.policy), num(choice.model.makespan).c_str(),
              num(ideal).c_str());
  return 0;
}
