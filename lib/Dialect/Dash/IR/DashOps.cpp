//===- DashOps.cpp - DASH operations --------------------------------------===//
//
// Verifier and memory effects of dash.attention_bwd. Every message names the
// operand and gives the expected and the actual value, because the user who
// hits one is usually wiring up a model, not reading our sources.
//
//===----------------------------------------------------------------------===//

#include "dash/Dialect/Dash/IR/Dash.h"
#include "dash/Dialect/Dash/IR/ScheduleEval.h"
#include "dash/Dialect/Dash/IR/ScheduleProblem.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::dash;

//===----------------------------------------------------------------------===//
// `mask = causal [align = top_left]`
//===----------------------------------------------------------------------===//

template <typename EnumT>
static ParseResult parseEnumKeyword(OpAsmParser &parser, StringRef what,
                                    std::optional<EnumT> (*symbolize)(StringRef),
                                    StringRef choices, EnumT &out) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef kw;
  if (parser.parseKeyword(&kw))
    return failure();
  std::optional<EnumT> value = symbolize(kw);
  if (!value)
    return parser.emitError(loc)
           << "unknown " << what << " '" << kw << "'; expected " << choices;
  out = *value;
  return success();
}

static ParseResult parseMaskClause(OpAsmParser &parser, MaskAttr &mask,
                                   CausalAlignAttr &align) {
  Mask m;
  if (parser.parseKeyword("mask") || parser.parseEqual() ||
      parseEnumKeyword<Mask>(parser, "mask", symbolizeMask,
                             "'full' or 'causal'", m))
    return failure();
  mask = MaskAttr::get(parser.getContext(), m);
  if (succeeded(parser.parseOptionalKeyword("align"))) {
    CausalAlign a;
    if (parser.parseEqual() ||
        parseEnumKeyword<CausalAlign>(parser, "causal alignment",
                                      symbolizeCausalAlign,
                                      "'bottom_right' or 'top_left'", a))
      return failure();
    align = CausalAlignAttr::get(parser.getContext(), a);
  }
  return success();
}

static void printMaskClause(OpAsmPrinter &printer, Operation *,
                            MaskAttr mask, CausalAlignAttr align) {
  printer << "mask = " << stringifyMask(mask.getValue());
  if (align)
    printer << " align = " << stringifyCausalAlign(align.getValue());
}

#define GET_OP_CLASSES
#include "dash/Dialect/Dash/IR/DashOps.cpp.inc"

namespace {
/// A named shaped operand, for messages.
struct Named {
  StringRef name;
  ShapedType type;
};

/// One logical dimension (B, S_q, ...) seen by several operands: all static
/// sizes must agree.
struct DimUse {
  StringRef operand;
  ShapedType type;
  unsigned index;
};
} // namespace

static LogicalResult checkDimAgreement(Operation *op, StringRef dimName,
                                       ArrayRef<DimUse> uses) {
  const DimUse *first = nullptr;
  for (const DimUse &use : uses) {
    if (use.type.isDynamicDim(use.index))
      continue;
    if (!first) {
      first = &use;
      continue;
    }
    int64_t want = first->type.getDimSize(first->index);
    int64_t got = use.type.getDimSize(use.index);
    if (want != got)
      return op->emitOpError()
             << dimName << " mismatch: operand '" << use.operand << "' has "
             << got << " (dim " << use.index << ") but '" << first->operand
             << "' has " << want << " (dim " << first->index << ")";
  }
  return success();
}

LogicalResult AttentionBwdOp::verify() {
  Operation *op = getOperation();
  SmallVector<Named> ins = {{"q", getQType()},
                            {"k", getKType()},
                            {"v", cast<ShapedType>(getV().getType())},
                            {"o", cast<ShapedType>(getO().getType())},
                            {"dO", cast<ShapedType>(getDO().getType())},
                            {"lse", getLseType()}};

  // Tensors or memrefs throughout: mixing would leave no clear owner for
  // the gradients.
  bool isMemRef = isa<MemRefType>(ins[0].type);
  for (const Named &in : ins)
    if (isa<MemRefType>(in.type) != isMemRef)
      return emitOpError() << "operand '" << in.name << "' is a "
                           << (isMemRef ? "tensor" : "memref")
                           << " but 'q' is a "
                           << (isMemRef ? "memref" : "tensor")
                           << "; use tensors or memrefs throughout";
  if (isMemRef) {
    if (getOuts().size() != 3 || !getResults().empty())
      return emitOpError() << "on memrefs expects 3 'outs' buffers (dq, dk, "
                              "dv) and no results, got "
                           << getOuts().size() << " outs and "
                           << getResults().size() << " results";
  } else {
    if (!getOuts().empty() || getResults().size() != 3)
      return emitOpError() << "on tensors expects 3 results (dq, dk, dv) and "
                              "no 'outs', got "
                           << getResults().size() << " results and "
                           << getOuts().size() << " outs";
  }

  // Ranks: BSHD for the activations, [B, H_q, S_q] for lse.
  for (const Named &in : ins) {
    int64_t want = in.name == "lse" ? 3 : 4;
    if (in.type.getRank() != want)
      return emitOpError() << "operand '" << in.name << "' must have rank "
                           << want
                           << (want == 4 ? " [B, S, H, D]" : " [B, H_q, S_q]")
                           << ", got rank " << in.type.getRank();
  }

  // Element types.
  Type elt = ins[0].type.getElementType();
  if (!elt.isBF16() && !elt.isF16())
    return emitOpError() << "operand 'q' must have element type bf16 or f16, "
                            "got "
                         << elt;
  for (const Named &in : ArrayRef<Named>(ins).drop_front().drop_back())
    if (in.type.getElementType() != elt)
      return emitOpError() << "operand '" << in.name << "' has element type "
                           << in.type.getElementType() << " but 'q' has "
                           << elt;
  if (!getLseType().getElementType().isF32())
    return emitOpError() << "operand 'lse' must have element type f32, got "
                         << getLseType().getElementType();

  // Logical dimensions shared between operands.
  ShapedType q = ins[0].type, k = ins[1].type, v = ins[2].type,
             o = ins[3].type, dO = ins[4].type, lse = ins[5].type;
  if (failed(checkDimAgreement(op, "batch size B",
                               {{"q", q, 0}, {"k", k, 0}, {"v", v, 0},
                                {"o", o, 0}, {"dO", dO, 0}, {"lse", lse, 0}})) ||
      failed(checkDimAgreement(op, "query length S_q",
                               {{"q", q, 1}, {"o", o, 1}, {"dO", dO, 1},
                                {"lse", lse, 2}})) ||
      failed(checkDimAgreement(op, "key length S_k",
                               {{"k", k, 1}, {"v", v, 1}})) ||
      failed(checkDimAgreement(op, "query heads H_q",
                               {{"q", q, 2}, {"o", o, 2}, {"dO", dO, 2},
                                {"lse", lse, 1}})) ||
      failed(checkDimAgreement(op, "key/value heads H_kv",
                               {{"k", k, 2}, {"v", v, 2}})) ||
      failed(checkDimAgreement(op, "head dim D",
                               {{"q", q, 3}, {"k", k, 3}, {"v", v, 3},
                                {"o", o, 3}, {"dO", dO, 3}})))
    return failure();

  // Head dim: static and one we generate kernels for.
  if (q.isDynamicDim(3))
    return emitOpError() << "head dim D (dim 3 of 'q') must be static";
  int64_t d = q.getDimSize(3);
  if (d != 64 && d != 128)
    return emitOpError() << "unsupported head dim D = " << d
                         << " (operand 'q' dim 3); supported: 64, 128";

  // Grouped-query attention.
  if (!q.isDynamicDim(2) && !k.isDynamicDim(2)) {
    int64_t hq = q.getDimSize(2), hkv = k.getDimSize(2);
    if (hkv == 0 || hq % hkv != 0)
      return emitOpError() << "query heads H_q = " << hq
                           << " must be a multiple of key/value heads H_kv = "
                           << hkv;
  }

  // Gradients mirror their inputs.
  Value grads[3] = {getDq(), getDk(), getDv()};
  const char *gradNames[3] = {"dq", "dk", "dv"};
  ShapedType srcs[3] = {q, k, v};
  const char *srcNames[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    auto g = cast<ShapedType>(grads[i].getType());
    // Gradients come in the input precision or in f32 (no final rounding:
    // what fp32 master-gradient training and our CPU checks want).
    Type gElt = g.getElementType();
    if (g.getShape() != srcs[i].getShape() ||
        (gElt != srcs[i].getElementType() && !gElt.isF32()))
      return emitOpError() << "'" << gradNames[i] << "' must have the shape "
                           << "of '" << srcNames[i] << "' (" << srcs[i]
                           << ") and its element type or f32, got " << g;
  }

  // Softmax scale.
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale) || !(scale > 0.0f)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", scale);
    return emitOpError() << "scale must be finite and > 0, got " << buf;
  }

  // Causal alignment.
  if (getMask() == Mask::Full && getAlign())
    return emitOpError() << "'align' applies only to a causal mask, but mask "
                            "is full";
  if (getMask() == Mask::Causal && !getAlign()) {
    bool sameLen = !q.isDynamicDim(1) && !k.isDynamicDim(1) &&
                   q.getDimSize(1) == k.getDimSize(1);
    if (!sameLen)
      return emitOpError()
             << "causal mask with S_q ("
             << (q.isDynamicDim(1) ? std::string("?")
                                   : std::to_string(q.getDimSize(1)))
             << ") possibly != S_k ("
             << (k.isDynamicDim(1) ? std::string("?")
                                   : std::to_string(k.getDimSize(1)))
             << ") needs an explicit 'align = bottom_right' (FlashAttention) "
                "or 'align = top_left' (PyTorch SDPA is_causal)";
  }
  return success();
}

void AttentionBwdOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!hasBufferSemantics())
    return;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    bool isOut = operand.getOperandNumber() >= 6;
    if (isOut)
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

//===----------------------------------------------------------------------===//
// ScheduledAttentionBwdOp
//===----------------------------------------------------------------------===//

void ScheduledAttentionBwdOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (operand.getOperandNumber() >= 6)
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    else
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

/// Above this many (KV tile, Q tile) tasks the verifier trusts the pass that
/// built the regions instead of evaluating all of them (it runs after every
/// pass; tests and fuzzers use small problems).
static constexpr int64_t kMaxVerifiedTasks = 1 << 18;

LogicalResult ScheduledAttentionBwdOp::verifyRegions() {
  struct RegionSig {
    Region *region;
    const char *name;
    unsigned numArgs, numResults;
  };
  RegionSig sigs[] = {{&getItems(), "items", 1, 1},
                      {&getWork(), "work", 2, 4},
                      {&getVisit(), "visit", 4, 1},
                      {&getRank(), "rank", 4, 1}};
  for (const RegionSig &sig : sigs) {
    Block &block = sig.region->front();
    if (block.getNumArguments() != sig.numArgs ||
        !llvm::all_of(block.getArgumentTypes(),
                      [](Type t) { return t.isIndex(); }))
      return emitOpError() << "region '" << sig.name << "' must take "
                           << sig.numArgs << " index arguments";
    auto yield = dyn_cast<YieldOp>(block.getTerminator());
    if (!yield || yield.getValues().size() != sig.numResults)
      return emitOpError() << "region '" << sig.name << "' must yield "
                           << sig.numResults << " index values";
  }

  auto q = cast<ShapedType>(getQ().getType());
  auto k = cast<ShapedType>(getK().getType());
  ScheduleAttr schedule = getSchedule();
  if (schedule.getPolicy() == Policy::Auto)
    return emitOpError() << "a materialised schedule needs a concrete policy, "
                            "got 'auto'";
  std::optional<::dash::sched::Problem> problem = getScheduleProblem(
      q, k, getMask(), getEffectiveAlign(), getTiling(),
      schedule.getNumUnits(), 1.0, 0.0);
  if (!problem)
    return success(); // Dynamic sizes: checked by the runtime at launch.
  if (std::string why = ::dash::sched::validate(*problem); !why.empty())
    return emitOpError() << "invalid problem: " << why;
  const ::dash::sched::Problem &p = *problem;
  int64_t n = p.numKVTiles(), m = p.numQTiles(), g = p.numUnits;
  int64_t tasks = p.numHeadSlots() * ::dash::sched::tasksPerHead(p);
  if (tasks > kMaxVerifiedTasks)
    return success();

  // Evaluate the whole schedule: every covered task visited exactly once,
  // and per dQ row the ranks a permutation of 0..k-1.
  std::string err;
  SmallVector<int64_t, 4> out;
  auto eval = [&](Region &r, ArrayRef<int64_t> args) -> bool {
    return evaluateScheduleRegion(r, args, out, err);
  };
  int64_t heads = p.numHeadSlots();
  // rankSeen[(hb * m + q) * n + rank] = kv + 1
  std::vector<int64_t> rankSeen(heads * m * n, 0);
  std::vector<uint8_t> visited(heads * m * n, 0);
  int64_t count = 0;
  for (int64_t unit = 0; unit < g; ++unit) {
    if (!eval(getItems(), {unit}))
      return emitOpError() << "items(" << unit << "): " << err;
    int64_t numItems = out[0];
    for (int64_t item = 0; item < numItems; ++item) {
      if (!eval(getWork(), {unit, item}))
        return emitOpError() << "work(" << unit << ", " << item << "): " << err;
      int64_t b = out[0], h = out[1], kv = out[2], len = out[3];
      if (b < 0 || b >= p.batch || h < 0 || h >= p.headsQ || kv < 0 ||
          kv >= n)
        return emitOpError() << "work(" << unit << ", " << item
                             << ") names (b=" << b << ", h=" << h
                             << ", kv=" << kv << ") outside the problem";
      int64_t first = ::dash::sched::firstCoveredQTile(p, kv);
      if (len != m - first)
        return emitOpError() << "work(" << unit << ", " << item
                             << "): KV tile " << kv << " covers " << m - first
                             << " Q tiles but the walk has " << len;
      int64_t hb = h + p.headsQ * b;
      for (int64_t step = 0; step < len; ++step) {
        if (!eval(getVisit(), {b, h, kv, step}))
          return emitOpError() << "visit: " << err;
        int64_t qt = out[0];
        if (qt < first || qt >= m)
          return emitOpError() << "visit(b=" << b << ", h=" << h << ", kv="
                               << kv << ", step=" << step << ") = " << qt
                               << " is not a Q tile KV tile " << kv
                               << " covers [" << first << ", " << m << ")";
        uint8_t &seen = visited[(hb * m + qt) * n + kv];
        if (seen)
          return emitOpError() << "KV tile " << kv << " of (b=" << b
                               << ", h=" << h << ") visits Q tile " << qt
                               << " twice";
        seen = 1;
        ++count;
        if (!eval(getRank(), {b, h, kv, qt}))
          return emitOpError() << "rank: " << err;
        int64_t rk = out[0], cover = ::dash::sched::coveringCount(p, qt);
        if (rk < 0 || rk >= cover)
          return emitOpError()
                 << "ranks are not a permutation on dQ row (b=" << b
                 << ", h=" << h << ", q=" << qt << "): KV tile " << kv
                 << " has rank " << rk << ", outside 0.." << cover - 1;
        int64_t &owner = rankSeen[(hb * m + qt) * n + rk];
        if (owner)
          return emitOpError()
                 << "ranks are not a permutation on dQ row (b=" << b
                 << ", h=" << h << ", q=" << qt << "): KV tiles "
                 << owner - 1 << " and " << kv << " both have rank " << rk;
        owner = kv + 1;
      }
    }
  }
  if (count != tasks)
    return emitOpError() << "schedule visits " << count << " of the " << tasks
                         << " covered (KV tile, Q tile) tasks";
  return success();
}
