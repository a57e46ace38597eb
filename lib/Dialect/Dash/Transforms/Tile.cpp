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
    if (kernels != "fa3" && kernels != "wgmma" && kernels != "sync") {
      getOperation()->emitError()
          << "dash-tile: unknown kernels='" << kernels
          << "'; expected fa3, wgmma or sync";
      return signalPassFailure();
    }
    bool overridden = blockM != 0 || blockN != 0 || stages != 0 ||
                      kernels != "fa3";
    WalkResult result = getOperation()->walk([&](AttentionBwdOp op) {
      if (op.getTiling() && !overridden)
        return WalkResult::advance();
      // FA3's tiles (lib/Schedule): the same defaults as dash-sched.
      int64_t d = op.getQType().getDimSize(3);
      auto [m, n] = ::dash::sched::defaultTiles(
          d, op.getMask() == Mask::Causal ? ::dash::sched::Mask::Causal
                                          : ::dash::sched::Mask::Full);
      if (kernels == "wgmma") // convert-dash-to-gpu's WGMMA kernels
        std::tie(m, n) = std::pair<int64_t, int64_t>{d == 64 ? 128 : 64, 128};
      else if (kernels == "sync")
        std::tie(m, n) = std::pair<int64_t, int64_t>{64, 64};
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
