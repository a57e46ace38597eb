//===- LoopGen.h - Loop-nest helpers shared by the DASH lowerings -*- C++ -*-===//
//
// Internal to lib/Conversion: the CPU loops and the GPU kernels build the
// same per-task math with these helpers, so the two stay one algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_LIB_CONVERSION_LOOPGEN_H
#define DASH_LIB_CONVERSION_LOOPGEN_H

#include "dash/Dialect/Dash/IR/Dash.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::dash::detail {

/// Small builder for loop nests, reductions and typed loads/stores.
struct LoopGen {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) {
    if (isa<FloatType>(x.getType()))
      return arith::AddFOp::create(b, loc, x, y);
    return b.createOrFold<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) {
    if (isa<FloatType>(x.getType()))
      return arith::SubFOp::create(b, loc, x, y);
    return b.createOrFold<arith::SubIOp>(loc, x, y);
  }
  Value mul(Value x, Value y) {
    if (isa<FloatType>(x.getType()))
      return arith::MulFOp::create(b, loc, x, y);
    return b.createOrFold<arith::MulIOp>(loc, x, y);
  }
  Value minIdx(Value x, Value y) {
    return b.createOrFold<arith::MinSIOp>(loc, x, y);
  }

  /// for iv in [lb, ub): body(iv)
  void loop(Value lb, Value ub, function_ref<void(Value)> body) {
    loop(lb, ub, idx(1), body);
  }
  /// for iv in [lb, ub) step `step`: body(iv)
  void loop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lb, ub, step, ValueRange{},
                       [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard g(b);
                         b.setInsertionPoint(nb.getInsertionBlock(),
                                             nb.getInsertionPoint());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  }
  void loop(Value ub, function_ref<void(Value)> body) {
    loop(idx(0), ub, body);
  }
  /// Zero-based loop nest over `ubs`.
  void nest(ArrayRef<Value> ubs, function_ref<void(ArrayRef<Value>)> body,
            SmallVector<Value> ivs = {}) {
    if (ivs.size() == ubs.size())
      return body(ivs);
    loop(ubs[ivs.size()], [&](Value iv) {
      SmallVector<Value> inner = ivs;
      inner.push_back(iv);
      nest(ubs, body, inner);
    });
  }
  /// if (cond) body()
  void when(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  }
  Value lt(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value andI(Value x, Value y) { return b.createOrFold<arith::AndIOp>(loc, x, y); }
  Value orI(Value x, Value y) { return b.createOrFold<arith::OrIOp>(loc, x, y); }
  /// The causal mask: key `key` is visible to query `query` iff
  /// key <= query + off (off = S_k - S_q bottom-right, 0 top-left). Applied
  /// per element, it never depends on the order tiles are visited in.
  Value causalVisible(Value key, Value query, Value off) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, key,
                                 add(query, off));
  }
  Value div(Value x, Value y) { return b.createOrFold<arith::DivUIOp>(loc, x, y); }
  Value rem(Value x, Value y) { return b.createOrFold<arith::RemUIOp>(loc, x, y); }

  /// sum_{iv in [0, ub)} term(iv), accumulated in f32 in ascending iv order.
  Value sum(Value ub, function_ref<Value(Value)> term) {
    auto forOp = scf::ForOp::create(
        b, loc, idx(0), ub, idx(1), ValueRange{f32(0.0)},
        [&](OpBuilder &nb, Location, Value iv, ValueRange acc) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, loc, add(acc[0], term(iv)));
        });
    return forOp.getResult(0);
  }

  /// Loads an element as f32.
  Value load(Value mem, ArrayRef<Value> indices) {
    Value v = memref::LoadOp::create(b, loc, mem, indices);
    if (!v.getType().isF32())
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return v;
  }
  /// Stores an f32 value, rounding to the memref's element type.
  void store(Value v, Value mem, ArrayRef<Value> indices) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    if (elt != v.getType())
      v = arith::TruncFOp::create(b, loc, elt, v);
    memref::StoreOp::create(b, loc, v, mem, indices);
  }
  /// mem[indices] += v (f32 memref).
  void accumulate(Value v, Value mem, ArrayRef<Value> indices) {
    Value old = memref::LoadOp::create(b, loc, mem, indices);
    memref::StoreOp::create(b, loc, add(old, v), mem, indices);
  }
  /// Rounds an f32 to `elt` and back (what a bf16/f16 MMA operand holds).
  Value roundTo(Type elt, Value v) {
    if (elt.isF32())
      return v;
    Value t = arith::TruncFOp::create(b, loc, elt, v);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), t);
  }
  Value alloc(ArrayRef<int64_t> shape, Type elt) {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elt));
  }
  void zero(Value mem) {
    auto type = cast<MemRefType>(mem.getType());
    SmallVector<Value> ubs;
    for (int64_t d : type.getShape())
      ubs.push_back(idx(d));
    Value z = f32(0.0);
    nest(ubs, [&](ArrayRef<Value> iv) {
      memref::StoreOp::create(b, loc, z, mem, iv);
    });
  }
};

/// How schedule regions see the world when inlined: which values replace
/// the op's operands (kernel arguments on the GPU) and what G is.
struct RegionMapping {
  IRMapping operands;
  Value numUnits;
  /// The integer type the regions' index arithmetic is rebuilt in (see
  /// inlineScheduleRegion); null keeps index.
  Type narrow;
};

/// Clones a schedule region at the insertion point with `args` for its
/// block arguments and returns the yielded values (index).
///
/// With `m.narrow` (i32 in the GPU kernels) the region's index arithmetic is
/// rebuilt in that type: its values are tile, unit and head counts, far below
/// 2^31 (the runtime checks the bound), and 64-bit division on the GPU is a
/// subroutine call whose registers warpgroup 2 (24 of them) spills around.
/// Operands enter through index_cast, results leave sign-extended to index.
inline SmallVector<Value> inlineScheduleRegion(OpBuilder &b, Region &region,
                                               ValueRange args,
                                               const RegionMapping &m) {
  Type narrow = m.narrow;
  IRMapping wide = m.operands, thin;
  Block &block = region.front();
  Location loc = block.getTerminator()->getLoc();
  wide.map(block.getArguments(), args);
  auto isIndexOrBool = [](Type t) { return t.isIndex() || t.isInteger(1); };
  auto thinOf = [&](Value v) -> Value {
    if (Value t = thin.lookupOrNull(v))
      return t;
    Value w = wide.lookupOrDefault(v);
    if (!w.getType().isIndex())
      return w;
    Value t = arith::IndexCastOp::create(b, loc, narrow, w);
    thin.map(v, t);
    return t;
  };
  auto wideOf = [&](Value v) -> Value {
    if (Value w = wide.lookupOrNull(v))
      return w;
    Value t = thin.lookupOrNull(v);
    if (!t) // defined outside the region
      return wide.lookupOrDefault(v);
    Value w = t.getType() == narrow
                  ? arith::IndexCastOp::create(b, loc, b.getIndexType(), t)
                  : t;
    wide.map(v, w);
    return w;
  };
  for (Operation &op : block.without_terminator()) {
    if (isa<NumUnitsOp>(op)) {
      wide.map(op.getResult(0), m.numUnits);
      continue;
    }
    bool narrowable =
        narrow && isa<arith::ArithDialect>(op.getDialect()) &&
        !isa<arith::IndexCastOp, arith::IndexCastUIOp>(op) &&
        llvm::all_of(op.getOperandTypes(), isIndexOrBool) &&
        llvm::all_of(op.getResultTypes(), isIndexOrBool) &&
        op.getNumRegions() == 0;
    if (auto c = dyn_cast<arith::ConstantOp>(op); c && narrowable) {
      // Index constants in both forms (memref.dim and friends take the
      // index one); i1 constants stay i1 (cloned below).
      auto v = dyn_cast<IntegerAttr>(c.getValue());
      if (v && c.getType().isIndex()) {
        wide.map(c.getResult(), b.clone(op, wide)->getResult(0));
        thin.map(c.getResult(),
                 arith::ConstantOp::create(
                     b, loc, b.getIntegerAttr(narrow, v.getValue().getSExtValue())));
        continue;
      }
      narrowable = false;
    }
    if (!narrowable) {
      for (Value v : op.getOperands())
        wideOf(v);
      b.clone(op, wide);
      continue;
    }
    OperationState st(loc, op.getName());
    for (Value v : op.getOperands())
      st.addOperands(thinOf(v));
    for (Type t : op.getResultTypes())
      st.addTypes(t.isIndex() ? narrow : t);
    st.addAttributes(op.getAttrs());
    Operation *n = b.create(st);
    for (auto [from, to] : llvm::zip(op.getResults(), n->getResults()))
      thin.map(from, to);
  }
  SmallVector<Value> out;
  for (Value v : cast<YieldOp>(block.getTerminator()).getValues())
    out.push_back(wideOf(v));
  return out;
}


} // namespace mlir::dash::detail

#endif // DASH_LIB_CONVERSION_LOOPGEN_H
