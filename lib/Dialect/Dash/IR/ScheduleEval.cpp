//===- ScheduleEval.cpp - Evaluate materialised schedule regions ----------===//

#include "dash/Dialect/Dash/IR/ScheduleEval.h"
#include "dash/Dialect/Dash/IR/Dash.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dash;

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static bool compare(arith::CmpIPredicate pred, int64_t a, int64_t b) {
  uint64_t ua = a, ub = b;
  switch (pred) {
  case arith::CmpIPredicate::eq: return a == b;
  case arith::CmpIPredicate::ne: return a != b;
  case arith::CmpIPredicate::slt: return a < b;
  case arith::CmpIPredicate::sle: return a <= b;
  case arith::CmpIPredicate::sgt: return a > b;
  case arith::CmpIPredicate::sge: return a >= b;
  case arith::CmpIPredicate::ult: return ua < ub;
  case arith::CmpIPredicate::ule: return ua <= ub;
  case arith::CmpIPredicate::ugt: return ua > ub;
  case arith::CmpIPredicate::uge: return ua >= ub;
  }
  return false;
}

bool mlir::dash::evaluateScheduleRegion(Region &region, ArrayRef<int64_t> args,
                                        SmallVectorImpl<int64_t> &results,
                                        std::string &error) {
  Block &block = region.front();
  if (block.getNumArguments() != args.size()) {
    error = "region takes " + std::to_string(block.getNumArguments()) +
            " arguments, given " + std::to_string(args.size());
    return false;
  }
  llvm::DenseMap<Value, int64_t> env;
  for (auto [arg, v] : llvm::zip(block.getArguments(), args))
    env[arg] = v;

  auto lookup = [&](Value v, int64_t &out) -> bool {
    auto it = env.find(v);
    if (it != env.end()) {
      out = it->second;
      return true;
    }
    // Captured from above: only constants are static.
    IntegerAttr attr;
    if (auto cst = v.getDefiningOp<arith::ConstantOp>())
      attr = dyn_cast<IntegerAttr>(cst.getValue());
    if (!attr) {
      error = "schedule region uses a value that is not a constant";
      return false;
    }
    out = attr.getValue().getSExtValue();
    if (attr.getType().isInteger(1))
      out = attr.getValue().getZExtValue();
    env[v] = out;
    return true;
  };

  for (Operation &op : block) {
    if (auto yield = dyn_cast<YieldOp>(op)) {
      results.clear();
      for (Value v : yield.getValues()) {
        int64_t x;
        if (!lookup(v, x))
          return false;
        results.push_back(x);
      }
      return true;
    }
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      int64_t x;
      if (!lookup(cst.getResult(), x))
        return false;
      continue;
    }
    SmallVector<int64_t, 3> in;
    for (Value v : op.getOperands()) {
      int64_t x;
      if (!lookup(v, x))
        return false;
      in.push_back(x);
    }
    bool divByZero = false;
    auto div = [&](int64_t b) {
      divByZero |= b == 0;
      return b == 0 ? 1 : b;
    };
    std::optional<int64_t> r =
        llvm::TypeSwitch<Operation *, std::optional<int64_t>>(&op)
            .Case([&](arith::AddIOp) { return in[0] + in[1]; })
            .Case([&](arith::SubIOp) { return in[0] - in[1]; })
            .Case([&](arith::MulIOp) { return in[0] * in[1]; })
            .Case([&](arith::DivSIOp) { return in[0] / div(in[1]); })
            .Case([&](arith::DivUIOp) {
              return (int64_t)((uint64_t)in[0] / (uint64_t)div(in[1]));
            })
            .Case([&](arith::RemSIOp) { return in[0] % div(in[1]); })
            .Case([&](arith::RemUIOp) {
              return (int64_t)((uint64_t)in[0] % (uint64_t)div(in[1]));
            })
            .Case([&](arith::FloorDivSIOp) {
              return floorDiv(in[0], div(in[1]));
            })
            .Case([&](arith::CeilDivSIOp) {
              int64_t b = div(in[1]);
              return -floorDiv(-in[0], b);
            })
            .Case([&](arith::MinSIOp) { return std::min(in[0], in[1]); })
            .Case([&](arith::MaxSIOp) { return std::max(in[0], in[1]); })
            .Case([&](arith::AndIOp) { return in[0] & in[1]; })
            .Case([&](arith::OrIOp) { return in[0] | in[1]; })
            .Case([&](arith::XOrIOp) { return in[0] ^ in[1]; })
            .Case([&](arith::CmpIOp cmp) {
              return (int64_t)compare(cmp.getPredicate(), in[0], in[1]);
            })
            .Case([&](arith::SelectOp) { return in[0] ? in[1] : in[2]; })
            .Case([&](arith::IndexCastOp) { return in[0]; })
            .Default([&](Operation *) { return std::nullopt; });
    if (!r) {
      error = "unsupported op '" + op.getName().getStringRef().str() +
              "' in schedule region";
      return false;
    }
    if (divByZero) {
      error = "division by zero in schedule region ('" +
              op.getName().getStringRef().str() + "')";
      return false;
    }
    env[op.getResult(0)] = *r;
  }
  error = "schedule region has no dash.yield";
  return false;
}
