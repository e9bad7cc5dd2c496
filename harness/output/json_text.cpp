#include "harness/output/json_text.h"

#include <nlohmann/json.hpp>

namespace flopwatt {

namespace {

// What each byte is to these scans. std::string::find_first_of costs a
// memchr over its set per byte of text; a table lookup is one load.
enum : unsigned char { kPlain = 0, kSpace = 1, kQuote = 2, kEscape = 4, kOpen = 8, kClose = 16 };
struct ByteClass {
  unsigned char of[256] = {};
  constexpr ByteClass() {
    of[static_cast<unsigned char>(' ')] = of[static_cast<unsigned char>('\n')] = kSpace;
    of[static_cast<unsigned char>('\r')] = of[static_cast<unsigned char>('\t')] = kSpace;
    of[static_cast<unsigned char>('"')] = kQuote;
    of[static_cast<unsigned char>('\\')] = kEscape;
    of[static_cast<unsigned char>('{')] = of[static_cast<unsigned char>('[')] = kOpen;
    of[static_cast<unsigned char>('}')] = of[static_cast<unsigned char>(']')] = kClose;
  }
};
constexpr ByteClass kClass;
unsigned char class_of(char c) { return kClass.of[static_cast<unsigned char>(c)]; }

// The index of the quote that closes the string opened at `open`, or npos.
std::size_t string_end(const std::string& text, std::size_t open) {
  const std::size_t n = text.size();
  for (std::size_t j = open + 1; j < n; ++j) {
    const unsigned char k = class_of(text[j]);
    if (k == kQuote) return j;
    if (k == kEscape) ++j;  // the escaped byte, whatever it is
  }
  return std::string::npos;
}

std::size_t skip_space(const std::string& text, std::size_t i) {
  while (i < text.size() && class_of(text[i]) == kSpace) ++i;
  return i;
}

}  // namespace

std::optional<std::string> top_level_string(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char k = class_of(text[i]);
    if (k == kOpen) ++depth;
    else if (k == kClose) --depth;
    if (k != kQuote) continue;
    const std::size_t end = string_end(text, i);
    if (end == std::string::npos) return std::nullopt;
    const std::size_t after = skip_space(text, end + 1);
    if (depth == 1 && after < text.size() && text[after] == ':' && text.compare(i, end - i + 1, quoted) == 0) {
      const std::size_t v = skip_space(text, after + 1);
      if (v >= text.size() || text[v] != '"') return std::nullopt;
      const std::size_t v_end = string_end(text, v);
      if (v_end == std::string::npos) return std::nullopt;
      try {  // the value's escapes are nlohmann's to decode
        return nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(v),
                                     text.begin() + static_cast<std::ptrdiff_t>(v_end + 1))
            .get<std::string>();
      } catch (const nlohmann::json::exception&) {
        return std::nullopt;
      }
    }
    i = end;
  }
  return std::nullopt;
}

std::string minified_json(const std::string& text) {
  std::string out;
  out.resize(text.size());
  char* o = out.data();
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char k = class_of(text[i]);
    if (k == kSpace) {
      ++i;
      continue;
    }
    if (k != kQuote) {
      *o++ = text[i++];
      continue;
    }
    const std::size_t end = string_end(text, i);
    if (end == std::string::npos) return text;  // cut off: left whole, for the parser to refuse
    text.copy(o, end + 1 - i, i);  // the string whole, escapes and all
    o += end + 1 - i;
    i = end + 1;
  }
  out.resize(static_cast<std::size_t>(o - out.data()));
  return out;
}

}  // namespace flopwatt
