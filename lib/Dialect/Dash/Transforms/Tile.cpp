//===- Tile.cpp - dash-tile: choose the tile shape ------------------------===//

#include "dash/Dialect/Dash/Transforms/Passes.h"

namespace mlir::dash {
#define GEN_PASS_DEF_DASHTILE
#include "dash/Dialect/Dash/Transforms/Passes.h.inc"
} // namespace mlir::dash

using namespace mlir;
using namespace mlir::dash;

namespace {
/// FlashAttention-3's Hopper backward tiles: d=64 -> 128x128; d=128 -> 64x128
/// causal (the diagonal tiles waste less) and 80x128 full (more rows per K/V
/// load while the register budget still fits).
std::pair<int64_t, int64_t> defaultTile(int64_t headDim, Mask mask) {
  if (headDim == 64)
    return {128, 128};
  return {mask == Mask::Causal ? 64 : 80, 128};
}

struct DashTilePass : mlir::dash::impl::DashTileBase<DashTilePass> {
  using Base::Base;
  void runOnOperation() override {
    bool overridden = blockM != 0 || blockN != 0 || stages != 0;
    WalkResult result = getOperation()->walk([&](AttentionBwdOp op) {
      if (op.getTiling() && !overridden)
        return WalkResult::advance();
      auto [m, n] = defaultTile(op.getQType().getDimSize(3), op.getMask());
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
