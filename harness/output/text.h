// Small text and JSON helpers every writer and command needs, in one place.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flopwatt {

// "a<sep>b<sep>c"; "" for an empty list.
std::string join(const std::vector<std::string>& v, const std::string& sep);

// The non-empty items of a comma-separated list ("a,,b" -> {"a", "b"}).
std::vector<std::string> split_list(const std::string& s);

// A number as the user would type it back on a command line (shortest round-trip form).
std::string shortest(double v);

// Now as ISO 8601 UTC ("2026-11-25T05:20:39Z"): the stamp of run.json's
// started_utc / ended_utc and of the results store.
std::string utc_now();

// A CSV field (RFC 4180): quoted when it holds a comma, a quote, a CR or a LF.
std::string csv_escape(const std::string& s);

// A markdown table cell: '|' as "\|", newline, CR and tab as "\n", "\r",
// "\t", and any other control character (ESC included) as "\xNN", so a
// hostile id can neither break the table nor reach the terminal raw.
std::string md_cell(const std::string& s);

// The value, or JSON null when there is none.
template <class T>
nlohmann::json json_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value at `key`, or nullopt when the key is missing or null.
template <class T>
std::optional<T> json_optional(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->template get<T>();
}

}  // namespace flopwatt
