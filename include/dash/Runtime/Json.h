//===- Json.h - Minimal JSON reader for kernel manifests --------*- C++ -*-===//
//
// Part of the DASH project. Plain C++17, no exceptions, no dependencies.
//
//===----------------------------------------------------------------------===//
//
// Just enough JSON for the manifests the AOT step writes: objects keep their
// key order, numbers are doubles (with an "is an exact integer" query), and
// errors carry line:column. Depth is bounded so hostile input cannot blow the
// stack.
//
//===----------------------------------------------------------------------===//

#ifndef DASH_RUNTIME_JSON_H
#define DASH_RUNTIME_JSON_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dash::rt::json {

enum class Kind { Null, Bool, Number, String, Array, Object };

struct Value {
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;

  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }
  bool isString() const { return kind == Kind::String; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isBool() const { return kind == Kind::Bool; }
  /// Number with an integral value that fits int64 exactly.
  bool isInt() const;
  int64_t asInt() const { return static_cast<int64_t>(number); }
  /// Member lookup (first match); nullptr if absent or not an object.
  const Value *get(const std::string &key) const;
};

/// Parses `text` completely (trailing garbage is an error). On failure returns
/// false and sets `error` to "line L, column C: what".
bool parse(const std::string &text, Value &out, std::string &error);

} // namespace dash::rt::json

#endif // DASH_RUNTIME_JSON_H
