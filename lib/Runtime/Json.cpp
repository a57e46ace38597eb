//===- Json.cpp - Minimal JSON reader for kernel manifests ----------------===//
//
// Part of the DASH project.
//
//===----------------------------------------------------------------------===//

#include "dash/Runtime/Json.h"

#include <cmath>
#include <cstdlib>

namespace dash::rt::json {

bool Value::isInt() const {
  return kind == Kind::Number && std::isfinite(number) &&
         std::floor(number) == number && std::fabs(number) <= 9.0e15;
}

const Value *Value::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &kv : object)
    if (kv.first == key)
      return &kv.second;
  return nullptr;
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
  explicit Parser(const std::string &t) : text(t) {}

  bool run(Value &out, std::string &error) {
    skipSpace();
    bool ok = value(out, 0);
    if (ok) {
      skipSpace();
      if (pos != text.size())
        ok = fail("trailing characters after the JSON value");
    }
    if (!ok)
      error = where() + ": " + msg;
    return ok;
  }

private:
  const std::string &text;
  size_t pos = 0;
  std::string msg;

  bool fail(const std::string &m) {
    if (msg.empty())
      msg = m;
    return false;
  }
  std::string where() const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = 0;
    while (word[n]) {
      if (pos + n >= text.size() || text[pos + n] != word[n])
        return fail(std::string("invalid literal (expected '") + word + "')");
      ++n;
    }
    pos += n;
    return true;
  }

  bool value(Value &v, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than 64 levels");
    if (pos >= text.size())
      return fail("unexpected end of input");
    char c = text[pos];
    switch (c) {
    case '{':
      return object(v, depth);
    case '[':
      return array(v, depth);
    case '"':
      v.kind = Kind::String;
      return string(v.string);
    case 't':
      v.kind = Kind::Bool;
      v.boolean = true;
      return literal("true");
    case 'f':
      v.kind = Kind::Bool;
      v.boolean = false;
      return literal("false");
    case 'n':
      v.kind = Kind::Null;
      return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return number(v);
      return fail(std::string("unexpected character '") + c + "'");
    }
  }

  bool object(Value &v, int depth) {
    v.kind = Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < text.size() && text[pos] == '}') {
      ++pos;
      return true;
    }
    for (;;) {
      skipSpace();
      if (pos >= text.size() || text[pos] != '"')
        return fail("expected a string key in object");
      std::string key;
      if (!string(key))
        return false;
      skipSpace();
      if (pos >= text.size() || text[pos] != ':')
        return fail("expected ':' after object key");
      ++pos;
      skipSpace();
      Value member;
      if (!value(member, depth + 1))
        return false;
      v.object.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}' in object");
    }
  }

  bool array(Value &v, int depth) {
    v.kind = Kind::Array;
    ++pos; // '['
    skipSpace();
    if (pos < text.size() && text[pos] == ']') {
      ++pos;
      return true;
    }
    for (;;) {
      skipSpace();
      Value element;
      if (!value(element, depth + 1))
        return false;
      v.array.push_back(std::move(element));
      skipSpace();
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']' in array");
    }
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t &out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos) {
      if (pos >= text.size())
        return fail("truncated \\u escape");
      char c = text[pos];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= uint32_t(c - 'A' + 10);
      else
        return fail("invalid hex digit in \\u escape");
    }
    return true;
  }

  bool string(std::string &s) {
    ++pos; // opening quote
    for (;;) {
      if (pos >= text.size())
        return fail("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in string");
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos >= text.size())
        return fail("unterminated escape");
      char e = text[pos++];
      switch (e) {
      case '"': s += '"'; break;
      case '\\': s += '\\'; break;
      case '/': s += '/'; break;
      case 'b': s += '\b'; break;
      case 'f': s += '\f'; break;
      case 'n': s += '\n'; break;
      case 'r': s += '\r'; break;
      case 't': s += '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) { // surrogate pair
          uint32_t lo;
          if (pos + 1 >= text.size() || text[pos] != '\\' || text[pos + 1] != 'u')
            return fail("unpaired surrogate in \\u escape");
          pos += 2;
          if (!hex4(lo) || lo < 0xDC00 || lo > 0xDFFF)
            return fail("invalid low surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(s, cp);
        break;
      }
      default:
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool number(Value &v) {
    // Check the JSON grammar by hand, then let strtod convert.
    size_t start = pos;
    if (text[pos] == '-')
      ++pos;
    auto digits = [&] {
      size_t d = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos - d;
    };
    if (pos < text.size() && text[pos] == '0')
      ++pos;
    else if (digits() == 0)
      return fail("invalid number");
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      if (digits() == 0)
        return fail("invalid number (digits expected after '.')");
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (digits() == 0)
        return fail("invalid number (digits expected in exponent)");
    }
    std::string lexeme = text.substr(start, pos - start);
    v.kind = Kind::Number;
    v.number = std::strtod(lexeme.c_str(), nullptr);
    return true;
  }
};

} // namespace

bool parse(const std::string &text, Value &out, std::string &error) {
  out = Value();
  Parser p(text);
  return p.run(out, error);
}

} // namespace dash::rt::json
