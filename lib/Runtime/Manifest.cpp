//===- Manifest.cpp - Kernel manifests written by the AOT step -----------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "dash/Runtime/Manifest.h"
#include "dash/Runtime/Json.h"

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <sys/stat.h>

namespace dash::rt {

namespace {
struct RoleInfo {
  const char *name;
  int rank;
};
// Indexed by Role; ranks from the kernel ABI.
const RoleInfo kRoles[] = {
    {"q", 4},        {"k", 4},        {"v", 4},        {"o", 4},
    {"dO", 4},       {"lse", 3},      {"dq", 4},       {"dk", 4},
    {"dv", 4},       {"dq_accum", 4}, {"dk_accum", 4}, {"dv_accum", 4},
    {"dpsum", 3},    {"lse_log2", 3}, {"semaphores", 3}, {"scale", 0},
    {"debug", 1},    {"tensor_maps", 1}};
static_assert(sizeof(kRoles) / sizeof(kRoles[0]) == size_t(Role::NumRoles),
              "one entry per role");

bool parseElt(const std::string &s, Elt &e) {
  if (s == "bf16") e = Elt::BF16;
  else if (s == "f16") e = Elt::F16;
  else if (s == "f32") e = Elt::F32;
  else if (s == "i32") e = Elt::I32;
  else if (s == "i64") e = Elt::I64;
  else return false;
  return true;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Field readers: each returns "" or a message naming the field.
std::string getString(const json::Value &o, const char *key, std::string &out,
                      bool required = true) {
  const json::Value *v = o.get(key);
  if (!v)
    return required ? std::string("missing field \"") + key + "\"" : "";
  if (!v->isString())
    return std::string("field \"") + key + "\" must be a string";
  out = v->string;
  return "";
}

std::string getInt(const json::Value &o, const char *key, int64_t &out,
                   int64_t lo, int64_t hi, bool required = true) {
  const json::Value *v = o.get(key);
  if (!v)
    return required ? std::string("missing field \"") + key + "\"" : "";
  if (!v->isInt() || v->asInt() < lo || v->asInt() > hi)
    return std::string("field \"") + key + "\" must be an integer in [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]";
  out = v->asInt();
  return "";
}

std::string getKernel(const json::Value &kernels, const char *key,
                      KernelEntry &out) {
  const json::Value *k = kernels.get(key);
  if (!k || !k->isObject())
    return std::string("missing object \"kernels.") + key + "\"";
  std::string err = getString(*k, "entry", out.entry);
  if (err.empty() && out.entry.empty())
    err = "field \"entry\" is empty";
  if (err.empty())
    err = getInt(*k, "shared_bytes", out.sharedBytes, 0, 1 << 30);
  if (!err.empty())
    return std::string("kernels.") + key + ": " + err;
  return "";
}
} // namespace

const char *roleName(Role r) { return kRoles[int(r)].name; }
int roleRank(Role r) { return kRoles[int(r)].rank; }

const char *eltName(Elt e) {
  switch (e) {
  case Elt::BF16: return "bf16";
  case Elt::F16: return "f16";
  case Elt::F32: return "f32";
  case Elt::I32: return "i32";
  case Elt::I64: return "i64";
  }
  return "?";
}

std::string Manifest::configString() const {
  std::string s = "d" + std::to_string(headDim) + " " + eltName(dtype) + " " +
                  sched::maskName(mask);
  if (mask == sched::Mask::Causal)
    s += align == sched::CausalAlign::BottomRight ? " bottom_right" : " top_left";
  s += std::string(" ") + sched::policyName(policy) +
       (deterministic ? " det" : " nondet");
  return s;
}

std::string parseManifest(const std::string &text, const std::string &path,
                          Manifest &m) {
  m = Manifest();
  m.path = path;
  json::Value root;
  std::string err;
  if (!json::parse(text, root, err))
    return "invalid JSON: " + err;
  if (!root.isObject())
    return "top level must be an object";

  if (!(err = getString(root, "name", m.name)).empty()) return err;
  std::string cubin;
  if (!(err = getString(root, "cubin", cubin)).empty()) return err;
  if (cubin.empty()) return "field \"cubin\" is empty";
  m.cubinPath = cubin[0] == '/' ? cubin : dirOf(path) + "/" + cubin;

  if (!(err = getInt(root, "head_dim", m.headDim, 1, 1024)).empty()) return err;
  std::string s;
  if (!(err = getString(root, "dtype", s)).empty()) return err;
  if (!parseElt(s, m.dtype) || (m.dtype != Elt::BF16 && m.dtype != Elt::F16))
    return "field \"dtype\" must be \"bf16\" or \"f16\", got \"" + s + "\"";

  if (!(err = getString(root, "mask", s)).empty()) return err;
  if (s == "full") m.mask = sched::Mask::Full;
  else if (s == "causal") m.mask = sched::Mask::Causal;
  else return "field \"mask\" must be \"full\" or \"causal\", got \"" + s + "\"";

  s.clear();
  if (!(err = getString(root, "align", s, /*required=*/false)).empty()) return err;
  if (m.mask == sched::Mask::Causal && s.empty())
    return "causal manifest needs field \"align\" (\"bottom_right\" or \"top_left\")";
  if (s == "bottom_right" || s == "bottom-right") m.align = sched::CausalAlign::BottomRight;
  else if (s == "top_left" || s == "top-left") m.align = sched::CausalAlign::TopLeft;
  else if (!s.empty())
    return "field \"align\" must be \"bottom_right\" or \"top_left\", got \"" + s + "\"";

  if (!(err = getString(root, "policy", s)).empty()) return err;
  std::string canon = s;
  std::replace(canon.begin(), canon.end(), '_', '-');
  auto pol = sched::parsePolicy(canon);
  if (!pol || *pol == sched::Policy::Auto)
    return "field \"policy\" must name a concrete policy (ascending, spt, "
           "descending, shift, symmetric-shift), got \"" + s + "\"";
  m.policy = *pol;

  const json::Value *det = root.get("deterministic");
  if (!det || !det->isBool())
    return "field \"deterministic\" must be true or false";
  m.deterministic = det->boolean;

  if (!(err = getInt(root, "block_m", m.blockM, 1, 1024)).empty()) return err;
  if (!(err = getInt(root, "block_n", m.blockN, 1, 1024)).empty()) return err;
  if (!(err = getInt(root, "threads", m.threads, 1, 1024)).empty()) return err;

  const json::Value *kernels = root.get("kernels");
  if (!kernels || !kernels->isObject())
    return "missing object \"kernels\"";
  if (!(err = getKernel(*kernels, "preprocess", m.preprocess)).empty()) return err;
  if (!(err = getKernel(*kernels, "main", m.main)).empty()) return err;
  if (!(err = getKernel(*kernels, "postprocess", m.postprocess)).empty()) return err;

  const json::Value *params = root.get("params");
  if (!params || !params->isArray() || params->array.empty())
    return "field \"params\" must be a non-empty array";
  bool seen[size_t(Role::NumRoles)] = {};
  for (size_t i = 0; i < params->array.size(); ++i) {
    const json::Value &pv = params->array[i];
    std::string at = "params[" + std::to_string(i) + "]";
    if (!pv.isObject())
      return at + " must be an object";
    Param p;
    if (!(err = getString(pv, "name", p.name)).empty()) return at + ": " + err;
    int r = 0;
    while (r < int(Role::NumRoles) && p.name != kRoles[r].name)
      ++r;
    if (r == int(Role::NumRoles))
      return at + ": unknown parameter name \"" + p.name + "\"";
    if (seen[r])
      return at + ": parameter \"" + p.name + "\" appears twice";
    seen[r] = true;
    p.role = Role(r);
    std::string kind;
    if (!(err = getString(pv, "kind", kind)).empty()) return at + ": " + err;
    if (p.role == Role::Scale) {
      if (kind != "f32")
        return at + ": \"scale\" must have kind \"f32\", got \"" + kind + "\"";
      p.memref = false;
      p.rank = 0;
      p.elt = Elt::F32;
    } else {
      if (kind != "memref")
        return at + ": \"" + p.name + "\" must have kind \"memref\", got \"" + kind + "\"";
      p.memref = true;
      int64_t rank;
      if (!(err = getInt(pv, "rank", rank, 0, 8)).empty()) return at + ": " + err;
      if (rank != roleRank(p.role))
        return at + ": \"" + p.name + "\" must have rank " +
               std::to_string(roleRank(p.role)) + ", got " + std::to_string(rank);
      p.rank = int(rank);
      std::string e;
      if (!(err = getString(pv, "elt", e)).empty()) return at + ": " + err;
      if (!parseElt(e, p.elt))
        return at + ": unknown element type \"" + e + "\"";
      Elt want = p.role <= Role::DV && p.role != Role::Lse ? m.dtype
                 : p.role == Role::Semaphores              ? Elt::I32
                 : p.role == Role::Debug ||
                           p.role == Role::TensorMaps              ? Elt::I64
                                                           : Elt::F32;
      if (p.elt != want)
        return at + ": \"" + p.name + "\" must have elt \"" + eltName(want) +
               "\", got \"" + e + "\"";
    }
    m.params.push_back(p);
  }
  // The caller's tensors and the scale are always needed; workspace buffers
  // are passed only if the kernel lists them.
  for (Role r : {Role::Q, Role::K, Role::V, Role::O, Role::DO, Role::Lse,
                 Role::DQ, Role::DK, Role::DV, Role::Scale})
    if (!seen[int(r)])
      return std::string("params: missing required parameter \"") +
             roleName(r) + "\"";

  // TMA boxes are 64-element panels (128 B, the 128B swizzle) of Q/dO/K/V.
  if (m.usesTensorMaps() && m.headDim % 64 != 0)
    return "params: \"tensor_maps\" needs a head dim that is a multiple of 64, "
           "got " + std::to_string(m.headDim);

  // The optional flags: absent is false, anything but a boolean an error.
  const std::pair<const char *, bool *> flags[] = {
      {"dkdv_direct", &m.dkdvDirect},   {"dkdv_bulk", &m.dkdvBulk},
      {"stats_in_main", &m.statsInMain}, {"pdl", &m.pdl},
      {"dq_in_main", &m.dqInMain},       {"counted_adds", &m.countedAdds}};
  for (auto [name, value] : flags)
    if (const json::Value *v = root.get(name)) {
      if (!v->isBool())
        return std::string("field \"") + name + "\" must be true or false";
      *value = v->boolean;
    }
  if (const json::Value *fold = root.get("dps_fold")) {
    // "rows" is the one form (a swizzled "atoms" form failed on hardware
    // and was removed, bench/NOTES.md section 46).
    if (!fold->isString() || fold->string != "rows")
      return "field \"dps_fold\" must be \"rows\"";
    m.dpsFold = true;
    if (!m.usesTensorMaps() || m.blockM % 64 != 0)
      return "field \"dps_fold\": \"rows\" needs a TMA kernel with block_m "
             "a multiple of 64 (its map loads boxes of dPsum's hi / lo bf16 "
             "rows)";
  }
  // What a set flag's kernel relies on.
  const struct {
    const char *name;
    bool set, allowed;
    const char *needs;
  } needs[] = {
      {"dkdv_bulk", m.dkdvBulk, m.usesTensorMaps() && m.dkdvDirect,
       "a TMA kernel that writes dk/dv itself (\"dkdv_direct\")"},
      {"stats_in_main", m.statsInMain, m.usesTensorMaps(),
       "a TMA kernel (its producer waits for a head's statistics before "
       "their tensor-map loads)"},
      {"counted_adds", m.countedAdds, !m.deterministic && m.usesTensorMaps(),
       "a non-deterministic TMA kernel (deterministic ones always count)"},
      {"dq_in_main", m.dqInMain,
       (m.deterministic || m.countedAdds) && m.usesTensorMaps() &&
           m.dkdvDirect,
       "a TMA kernel that counts its dQ adds (deterministic, or "
       "\"counted_adds\") and writes dk/dv itself (\"dkdv_direct\")"},
  };
  for (const auto &f : needs)
    if (f.set && !f.allowed)
      return std::string("field \"") + f.name + "\": true needs " + f.needs;

  if (const json::Value *map = root.get("dq_accum_map")) {
    if (!map->isString() || (map->string != "tiles" && map->string != "panels8" &&
                             map->string != "swizzle128x32"))
      return "field \"dq_accum_map\" must be \"tiles\", \"panels8\" or "
             "\"swizzle128x32\"";
    m.dqAccumMap = map->string == "tiles"     ? Manifest::DqAccumMap::Tiles
                   : map->string == "panels8" ? Manifest::DqAccumMap::Panels8
                                              : Manifest::DqAccumMap::Swizzle128x32;
  }

  if (const json::Value *model = root.get("model")) {
    const json::Value *c = model->get("c"), *r = model->get("r");
    if (!model->isObject() || !c || !r || !c->isNumber() || !r->isNumber() ||
        !(c->number > 0) || !(r->number >= 0) || c->number > 1e12 || r->number > 1e12)
      return "field \"model\" must be {\"c\": positive, \"r\": non-negative}";
    m.modelC = c->number;
    m.modelR = r->number;
    if (const json::Value *tie = model->get("tie")) {
      if (!tie->isNumber() || !(tie->number >= 0) || tie->number >= 0.5)
        return "field \"model.tie\" must be a number in [0, 0.5)";
      m.modelTie = tie->number;
    }
    if (const json::Value *st = model->get("staging")) {
      if (!st->isNumber() || !(st->number >= 0) || st->number > 8 ||
          st->number != static_cast<double>(static_cast<int64_t>(st->number)))
        return "field \"model.staging\" must be an integer in [0, 8]";
      m.modelStaging = static_cast<int64_t>(st->number);
    }
    if (const json::Value *rf = model->get("read_fraction")) {
      if (!rf->isNumber() || !(rf->number > 0) || rf->number > 1)
        return "field \"model.read_fraction\" must be a number in (0, 1]";
      m.modelReadFraction = rf->number;
    }
  }
  return "";
}

std::string loadManifestDir(const std::string &dir, std::vector<Manifest> &out) {
  out.clear();
  DIR *d = opendir(dir.c_str());
  if (!d)
    return "cannot open kernel directory \"" + dir + "\"";
  std::vector<std::string> names;
  while (struct dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0)
      names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &n : names) {
    std::string path = dir + "/" + n, text;
    if (!readFile(path, text))
      return path + ": cannot read";
    Manifest m;
    std::string err = parseManifest(text, path, m);
    if (!err.empty())
      return path + ": " + err;
    for (const Manifest &o : out)
      if (o.configString() == m.configString())
        return path + ": configuration \"" + m.configString() +
               "\" is already provided by " + o.path;
    out.push_back(std::move(m));
  }
  return "";
}

bool readFile(const std::string &path, std::string &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  char buf[65536];
  size_t n;
  out.clear();
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

} // namespace dash::rt

bool dash::rt::Manifest::usesTensorMaps() const {
  for (const Param &p : params)
    if (p.role == Role::TensorMaps)
      return true;
  return false;
}

bool dash::rt::Manifest::hasDebugRecord() const {
  for (const Param &p : params)
    if (p.role == Role::Debug)
      return true;
  return false;
}
