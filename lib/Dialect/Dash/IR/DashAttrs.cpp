//===- DashAttrs.cpp - DASH enums and attributes --------------------------===//

#include "dash/Dialect/Dash/IR/Dash.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::dash;

#include "dash/Dialect/Dash/IR/DashEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dash/Dialect/Dash/IR/DashAttrs.cpp.inc"

void DashDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dash/Dialect/Dash/IR/DashAttrs.cpp.inc"
      >();
}

LogicalResult TilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t blockM, int64_t blockN,
                                 int64_t stages) {
  // WGMMA works on 64-row M slices fed 16 rows at a time and 8/16-wide N
  // slices, so tiles must be whole multiples of 16.
  if (blockM <= 0 || blockM % 16 != 0)
    return emitError() << "block_m must be a positive multiple of 16, got "
                       << blockM;
  if (blockN <= 0 || blockN % 16 != 0)
    return emitError() << "block_n must be a positive multiple of 16, got "
                       << blockN;
  if (stages < 1 || stages > 8)
    return emitError() << "stages must be in [1, 8], got " << stages;
  return success();
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   Policy policy, Policy requested,
                                   int64_t numUnits, APFloat cF, APFloat rF,
                                   APFloat makespanF, APFloat criticalPathF) {
  double c = cF.convertToDouble(), r = rF.convertToDouble();
  double makespan = makespanF.convertToDouble();
  double criticalPath = criticalPathF.convertToDouble();
  if (numUnits < 1)
    return emitError() << "num_units must be >= 1, got " << numUnits;
  if (!(c > 0) || !std::isfinite(c) || !(r >= 0) || !std::isfinite(r))
  {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "c = %g, r = %g", c, r);
    return emitError() << "costs must be finite with c > 0 and r >= 0, got "
                       << buf;
  }
  if (requested != Policy::Auto && policy != requested)
    return emitError() << "policy '" << stringifyPolicy(policy)
                       << "' differs from the requested '"
                       << stringifyPolicy(requested) << "'";
  if (makespan < 0 || criticalPath < 0)
    return emitError() << "modelled times must be >= 0";
  return success();
}

// #dash.schedule<policy = P, requested = P, num_units = N, c = F, r = F,
//                makespan = F, critical_path = F>
// Written by hand because the doubles are stored as APFloat (hashable) but
// read and printed as plain decimal numbers.
Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  Policy policy, requested;
  int64_t numUnits;
  double values[4];
  const char *names[4] = {"c", "r", "makespan", "critical_path"};
  auto parsePolicyField = [&](StringRef name, Policy &out) -> ParseResult {
    StringRef kw;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(name) || parser.parseEqual() ||
        parser.parseKeyword(&kw))
      return failure();
    std::optional<Policy> p = symbolizePolicy(kw);
    if (!p)
      return parser.emitError(loc) << "unknown schedule policy '" << kw
                                   << "'";
    out = *p;
    return success();
  };
  if (parser.parseLess() || parsePolicyField("policy", policy) ||
      parser.parseComma() || parsePolicyField("requested", requested) ||
      parser.parseComma() || parser.parseKeyword("num_units") ||
      parser.parseEqual() || parser.parseInteger(numUnits))
    return {};
  for (int i = 0; i < 4; ++i)
    if (parser.parseComma() || parser.parseKeyword(names[i]) ||
        parser.parseEqual() || parser.parseFloat(values[i]))
      return {};
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), policy, requested, numUnits,
                    APFloat(values[0]), APFloat(values[1]), APFloat(values[2]),
                    APFloat(values[3]));
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  printer << "<policy = " << stringifyPolicy(getPolicy())
          << ", requested = " << stringifyPolicy(getRequested())
          << ", num_units = " << getNumUnits();
  auto field = [&](StringRef name, const APFloat &v) {
    // Shortest decimal that reads back to the same double.
    SmallString<24> text;
    v.toString(text, /*FormatPrecision=*/0, /*FormatMaxPadding=*/6);
    if (!StringRef(text).contains_insensitive('.') &&
        !StringRef(text).contains_insensitive('e'))
      text += ".0"; // the parser wants a float literal, not an integer
    printer << ", " << name << " = " << text;
  };
  field("c", getC());
  field("r", getR());
  field("makespan", getMakespan());
  field("critical_path", getCriticalPath());
  printer << ">";
}
