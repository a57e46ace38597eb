//===- ScheduleProblem.cpp - dash op <-> lib/Schedule bridge --------------===//

#include "dash/Dialect/Dash/IR/ScheduleProblem.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::dash;
namespace sched = ::dash::sched;

sched::Policy mlir::dash::toSchedPolicy(Policy policy) {
  switch (policy) {
  case Policy::Ascending:
    return sched::Policy::Ascending;
  case Policy::Spt:
    return sched::Policy::Spt;
  case Policy::Descending:
    return sched::Policy::Descending;
  case Policy::Shift:
    return sched::Policy::Shift;
  case Policy::SymmetricShift:
    return sched::Policy::SymmetricShift;
  case Policy::Auto:
    return sched::Policy::Auto;
  }
  llvm_unreachable("unknown policy");
}

Policy mlir::dash::fromSchedPolicy(sched::Policy policy) {
  switch (policy) {
  case sched::Policy::Ascending:
    return Policy::Ascending;
  case sched::Policy::Spt:
    return Policy::Spt;
  case sched::Policy::Descending:
    return Policy::Descending;
  case sched::Policy::Shift:
    return Policy::Shift;
  case sched::Policy::SymmetricShift:
    return Policy::SymmetricShift;
  case sched::Policy::Auto:
    return Policy::Auto;
  }
  llvm_unreachable("unknown policy");
}

std::optional<Policy> mlir::dash::parsePolicyOption(StringRef text) {
  if (text == "symmetric-shift")
    return Policy::SymmetricShift;
  return symbolizePolicy(text);
}

std::optional<sched::Problem>
mlir::dash::getScheduleProblem(ShapedType q, ShapedType k, Mask mask,
                               CausalAlign align, TilingAttr tiling,
                               int64_t numUnits, double c, double r) {
  for (auto [type, dim] : {std::pair{q, 0}, {q, 1}, {q, 2}, {k, 1}, {k, 2}})
    if (type.isDynamicDim(dim))
      return std::nullopt;
  assert(tiling && "scheduling needs a tiling");
  sched::Problem p;
  p.batch = q.getDimSize(0);
  p.seqQ = q.getDimSize(1);
  p.headsQ = q.getDimSize(2);
  p.headDim = q.getDimSize(3);
  p.seqK = k.getDimSize(1);
  p.headsKV = k.getDimSize(2);
  p.blockM = tiling.getBlockM();
  p.blockN = tiling.getBlockN();
  p.mask = mask == Mask::Causal ? sched::Mask::Causal : sched::Mask::Full;
  p.align = align == CausalAlign::TopLeft ? sched::CausalAlign::TopLeft
                                          : sched::CausalAlign::BottomRight;
  p.numUnits = numUnits;
  p.c = c;
  p.r = r;
  return p;
}

std::optional<sched::Problem>
mlir::dash::getScheduleProblem(AttentionBwdOp op, int64_t numUnits, double c,
                               double r) {
  std::optional<sched::Problem> p = getScheduleProblem(
      op.getQType(), op.getKType(), op.getMask(), op.getEffectiveAlign(),
      op.getTilingAttr(), numUnits, c, r);
  // Non-deterministic adds wait for no rank (as the runtime models them).
  if (p)
    p->ordered = op.getDeterministic();
  return p;
}
