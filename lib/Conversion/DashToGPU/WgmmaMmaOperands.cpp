//===- WgmmaMmaOperands.cpp - The MMA warpgroups' shared-memory operands --===//
//
// Where a step's products find their shared-memory operands (wgmma
// descriptors of the Q/dO stage, this warpgroup's K/V rows, the dS^T buffer
// and K as dQ's operands) and how dS^T gets there by stmatrix. Built where
// they are used, from the step's opaque thread id and window address (short
// live ranges: WgmmaMma.cpp says why). The layouts are SmemLayout's
// (WgmmaBuilder.h): 128B-swizzled panels of 64 bf16 columns.
//
//===----------------------------------------------------------------------===//

#include "MainWgmma.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;
using namespace mlir::dash::detail::wgmma;

// Q/dO are also N-major B operands: their panels are bm rows x 128 B apart;
// K-major operands do not use LBO (1 by convention).
WgmmaBuilder::Desc WgmmaMain::qDesc(Arg a, Value buf) {
  int64_t o = a == kQ ? L.q(0) : L.dO(0);
  return w.desc(g.add(at(o), g.mul(buf, g.idx(L.qBytes()))), bm * 128);
}

WgmmaBuilder::Desc WgmmaMain::wgRowsDesc(const MmaThread &t, int64_t o) {
  return w.desc(g.add(at(o), g.mul(t.wgRows, g.idx(128))), 16);
}

// dQ = dS K by the warpgroups' parts (dqParts); by D columns, D = 64's
// half is 64 B into the single panel.
WgmmaBuilder::Desc WgmmaMain::dqBDesc(const MmaThread &t) {
  if (dqParts().partsByRows())
    return w.desc(at(L.k()), kBn * 128);
  Value kHalf = D == 128 ? g.add(at(L.k()), g.mul(t.wg, g.idx(kBn * 128)))
                         : g.add(at(L.k()), g.mul(t.wg, g.idx(64)));
  return w.desc(kHalf, kBn * 128);
}

// dsBufs = 2 (TMA kernels) alternates with the stage's parity.
Value WgmmaMain::dsTile(Value buf) {
  Value a = at(L.dsT());
  return dsBufs == 2 ? g.add(a, g.mul(buf, g.idx(L.dsBytes()))) : a;
}

Value WgmmaMain::dpsStage(Value buf) {
  return g.add(at(L.dps(0)), g.mul(buf, g.idx(L.dpsStageBytes())));
}

WgmmaBuilder::Desc WgmmaMain::dqADesc(const MmaThread &t, Value buf) {
  Value a = dsTile(buf);
  // ds-trans: dS itself, K-major in two panels of 64 KV columns (at 128-row
  // tiles from this warpgroup's 64 Q rows of each).
  if (config.dsTrans)
    return w.desc(dqParts().partsByRows()
                      ? g.add(a, g.mul(t.wg, g.idx(64 * 128)))
                      : a,
                  16);
  if (dqParts().partsByRows())
    a = g.add(a, g.mul(t.wg, g.idx(kBn * 128)));
  return w.desc(a, kBn * 128);
}

// The packed pairs 4j .. 4j + 3 are rows 0-7 and 8-15 of the warp's 16 KV
// rows in column blocks 2j and 2j + 1 (the m16n8 fragment order); lane l
// gives row l % 8 of matrix l / 8: KV row 16 wi + 8 ((l / 8) % 2) + l % 8,
// column block 2j + l / 16, whose 16-byte chunk is swizzled by row % 8 =
// l % 8. One stmatrix replaces four 4-byte stores and their address math.
// (WgmmaBuilder::swz's arithmetic, with the lane's part of the chunk XOR
// taken once: through swz per matrix every kernel's code changes, not
// measured.)
void WgmmaMain::storeDsStmatrix(const MmaThread &t, Value buf,
                                ArrayRef<Value> packed) {
  Value r8 = g.rem(t.lane, g.idx(8));
  Value h = g.div(t.lane, g.idx(16));
  Value half = g.rem(g.div(t.lane, g.idx(8)), g.idx(2)); // rows 8.. of 16
  std::function<Value(int64_t)> addrOf;
  if (config.dsTrans) {
    // ds-trans: each 8x8 matrix goes out transposed, so lane l's address
    // is Q row 8 (2j + l / 16) + l % 8 of dS, whose 16 bytes are KV rows
    // 16 wi + 8 ((l / 8) % 2) .. + 7: chunk 2 wi + (l / 8) % 2 of panel wg
    // (bm Q rows: this warpgroup's 64 KV columns), swizzled by the Q row
    // % 8 = l % 8.
    Value chunk = arith::XOrIOp::create(
        b, loc, g.add(g.mul(t.wi, g.idx(2)), half), r8);
    Value lane = g.add(
        g.add(g.mul(t.wg, g.idx(bm * 128)),
              g.mul(g.add(g.mul(h, g.idx(8)), r8), g.idx(128))),
        g.mul(chunk, g.idx(16)));
    Value tile = g.add(dsTile(buf), lane);
    addrOf = [=](int64_t j) { return g.add(tile, g.idx(j * 16 * 128)); };
  } else {
    Value rowOff = g.mul(
        g.add(g.add(t.wgRows, g.mul(t.wi, g.idx(16))),
              g.add(g.mul(half, g.idx(8)), r8)),
        g.idx(128));
    Value c0 = arith::XOrIOp::create(b, loc, h, r8);
    Value tile = dsTile(buf);
    addrOf = [=](int64_t j) {
      Value chunk = arith::XOrIOp::create(b, loc, g.idx((2 * j) % 8), c0);
      Value byteOff = g.add(g.add(g.idx((j / 4) * kBn * 128), rowOff),
                            g.mul(chunk, g.idx(16)));
      return g.add(tile, byteOff);
    };
  }
  for (int64_t j = 0; j < bm / 16; ++j)
    NVVM::StMatrixOp::create(
        b, loc, w.sh(addrOf(j)), ValueRange(packed.slice(4 * j, 4)),
        config.dsTrans ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
        NVVM::LdStMatrixEltType::B16);
}
