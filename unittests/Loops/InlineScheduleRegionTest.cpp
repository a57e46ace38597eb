//===- InlineScheduleRegionTest.cpp - Narrowed schedule-region clones -----===//
//
// inlineScheduleRegion with RegionMapping::narrow (the GPU kernels' i32
// walk): index arithmetic is rebuilt in i32, i1 values (compares, boolean
// constants) stay i1, values from outside the region enter through
// index_cast, and the yielded values leave as index. The clone must verify.
//
//===----------------------------------------------------------------------===//

#include "LoopGen.h"

#include "dash/InitAllDialects.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dash;
using namespace mlir::dash::detail;

namespace {

// The region: (x) -> select(true, min(x, 7) floordiv 3, x) + G, and a
// compare of x against 5 selecting between two index constants.
struct Fixture {
  MLIRContext ctx;
  Location loc = UnknownLoc::get(&ctx);
  Region region;
  Fixture() {
    DialectRegistry registry;
    ::dash::registerAllDialects(registry);
    registry.insert<func::FuncDialect, arith::ArithDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    Block *blk = new Block();
    region.push_back(blk);
    Value x = blk->addArgument(IndexType::get(&ctx), loc);
    // The region has no parent op (so no context of its own): a builder
    // on the context, positioned in the block.
    OpBuilder b(&ctx);
    b.setInsertionPointToEnd(blk);
    Value t = arith::ConstantIntOp::create(b, loc, 1, 1);
    Value c3 = arith::ConstantIndexOp::create(b, loc, 3);
    Value c7 = arith::ConstantIndexOp::create(b, loc, 7);
    Value m = arith::MinSIOp::create(b, loc, x, c7);
    Value q = arith::FloorDivSIOp::create(b, loc, m, c3);
    Value s = arith::SelectOp::create(b, loc, t, q, x);
    Value g = NumUnitsOp::create(b, loc, b.getIndexType());
    Value y = arith::AddIOp::create(b, loc, s, g);
    Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x,
                                     arith::ConstantIndexOp::create(b, loc, 5));
    Value z = arith::SelectOp::create(b, loc, lt, c3, c7);
    YieldOp::create(b, loc, ValueRange{y, z});
  }
};

// func @walk(x, G) returning the region's clone (narrowed to `narrow` if
// set) in a fresh module, which the caller erases.
struct Clone {
  ModuleOp module;
  func::FuncOp fn;
  SmallVector<Value> out;
};
Clone cloneIntoFunc(Fixture &f, Type narrow) {
  OpBuilder b(&f.ctx);
  Clone c;
  c.module = ModuleOp::create(f.loc);
  b.setInsertionPointToEnd(c.module.getBody());
  Type index = b.getIndexType();
  c.fn = func::FuncOp::create(
      b, f.loc, "walk", b.getFunctionType({index, index}, {index, index}));
  Block *entry = c.fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  RegionMapping map;
  map.numUnits = entry->getArgument(1);
  map.narrow = narrow;
  c.out = inlineScheduleRegion(b, f.region, {entry->getArgument(0)}, map);
  func::ReturnOp::create(b, f.loc, c.out);
  return c;
}

} // namespace

TEST(InlineScheduleRegion, NarrowedCloneVerifiesAndKeepsBooleans) {
  Fixture f;
  auto [module, fn, out] = cloneIntoFunc(f, IntegerType::get(&f.ctx, 32));
  ASSERT_TRUE(succeeded(verify(module)));
  ASSERT_EQ(out.size(), 2u);
  for (Value v : out)
    EXPECT_TRUE(v.getType().isIndex());
  int narrowArith = 0, boolConsts = 0, indexArith = 0;
  fn.walk([&](Operation *op) {
    if (isa<arith::IndexCastOp>(op) || !isa<arith::ArithDialect>(op->getDialect()))
      return;
    Type t = op->getResult(0).getType();
    if (isa<arith::ConstantOp>(op) && t.isInteger(1))
      ++boolConsts;
    else if (t.isInteger(32) || (isa<arith::CmpIOp>(op) &&
                                 op->getOperand(0).getType().isInteger(32)))
      ++narrowArith;
    else if (t.isIndex() && !isa<arith::ConstantOp>(op))
      ++indexArith;
  });
  EXPECT_EQ(boolConsts, 1);  // `true` stays i1
  EXPECT_EQ(indexArith, 0);  // no arithmetic left in index
  EXPECT_GE(narrowArith, 6); // min, floordiv, two selects, add, compare
  module->erase();
}

TEST(InlineScheduleRegion, WithoutNarrowTheCloneStaysIndex) {
  Fixture f;
  auto [module, fn, out] = cloneIntoFunc(f, Type());
  ASSERT_TRUE(succeeded(verify(module)));
  bool anyI32 = false;
  fn.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      anyI32 |= t.isInteger(32);
  });
  EXPECT_FALSE(anyI32);
  module->erase();
}
