//===- Tile.cpp - dash-tile: choose the tile shape ------------------------===//

#include "dash/Dialect/Dash/Transforms/Passes.h"
#include "dash/Schedule/Problem.h"

namespace mlir::dash {
#define GEN_PASS_DEF_DASHTILE
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;

namespace {

struct DashTilePass : mlir::dash::impl::DashTileBase<DashTilePass> {
  using Base::Base;
  void runOnOperation() override {
    bool overridden = blockM != 0 || blockN != 0 || stages != 0;
    WalkResult result = getOperation()->walk([&](AttentionBwdOp op) {
      if (op.getTiling() && !overridden)
        return WalkResult::advance();
      // FA3's tiles (lib/Schedule): the same defaults as dash-sched.
      auto [m, n] = ::dash::sched::defaultTiles(
          op.getQType().getDimSize(3), op.getMask() == Mask::Causal
                                           ? ::dash::sched::Mask::Causal
                                           : ::dash::sched::Mask::Full);
      int64_t bm = blockM ? (int64_t)blockM : m;
      int64_t bn = blockN ? (int64_t)blockN : n;
      int64_t st = stages ? (int64_t)stages : 2;
      auto emit = [&] { return op.emitOpError(); };
      if (failed(TilingAttr::verify(emit, bm, bn, st)))
        return WalkResult::interrupt();
      op.setTilingAttr(TilingAttr::get(op.getContext(), bm, bn, st));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
