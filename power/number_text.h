// Numbers in the reasons a judged window carries ("samples cover 0.4 s of the
// 0.7 s window"), written exactly as printf's %.3g, %.0f and %.0e write them
// in the "C" locale: std::to_chars with a format and a precision is specified
// to produce what printf does, without printf's format parsing and
// multi-precision arithmetic. Every source of every window a Meter ends is
// judged, so these run per window, not per run.
#pragma once
#include <charconv>
#include <string>
#include <string_view>

namespace flopwatt::power {

struct Number {
  double v;
  std::chars_format format;
  int precision;
};
inline Number g3(double v) { return {v, std::chars_format::general, 3}; }     // printf "%.3g"
inline Number f0(double v) { return {v, std::chars_format::fixed, 0}; }       // printf "%.0f"
inline Number e0(double v) { return {v, std::chars_format::scientific, 0}; }  // printf "%.0e"

inline void append_part(std::string& out, std::string_view s) { out.append(s); }
inline void append_part(std::string& out, const Number& n) {
  char buf[320];  // "%.0f" of the largest double is 309 digits
  const auto r = std::to_chars(buf, buf + sizeof buf, n.v, n.format, n.precision);
  out.append(buf, r.ptr);
}

// The parts, literal text and Numbers, one after the other.
template <class... Parts>
void append_text(std::string& out, const Parts&... parts) {
  (append_part(out, parts), ...);
}
template <class... Parts>
std::string text(const Parts&... parts) {
  std::string s;
  append_text(s, parts...);
  return s;
}

}  // namespace flopwatt::power
