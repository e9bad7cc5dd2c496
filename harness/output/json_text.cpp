#include "harness/output/json_text.h"

#include <nlohmann/json.hpp>

namespace flopwatt {

namespace {

// The index of the quote that closes the string opened at `open`, or npos.
std::size_t string_end(const std::string& text, std::size_t open) {
  for (std::size_t j = open + 1;; j += 2) {
    j = text.find_first_of("\"\\", j);
    if (j == std::string::npos || text[j] == '"') return j;
  }
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::size_t skip_space(const std::string& text, std::size_t i) {
  while (i < text.size() && is_space(text[i])) ++i;
  return i;
}

}  // namespace

std::optional<std::string> top_level_string(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') --depth;
    if (c != '"') continue;
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
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    // Copy up to the next space or string in one piece, then skip the spaces
    // or copy the string whole.
    const std::size_t stop = text.find_first_of(" \n\r\t\"", i);
    out.append(text, i, (stop == std::string::npos ? text.size() : stop) - i);
    if (stop == std::string::npos) break;
    if (text[stop] != '"') {
      i = skip_space(text, stop);
      continue;
    }
    const std::size_t end = string_end(text, stop);
    if (end == std::string::npos) return text;  // cut off: left whole, for the parser to refuse
    out.append(text, stop, end - stop + 1);
    i = end + 1;
  }
  return out;
}

}  // namespace flopwatt
