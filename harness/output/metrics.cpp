#include "harness/output/metrics.h"

#include <string>

namespace flopwatt {

void json_set(nlohmann::json& j, std::string_view path, nlohmann::json value) {
  nlohmann::json* at = &j;
  for (std::size_t slash; (slash = path.find('/')) != std::string_view::npos; path.remove_prefix(slash + 1))
    at = &(*at)[std::string(path.substr(0, slash))];
  (*at)[std::string(path)] = std::move(value);
}

const nlohmann::json* json_get(const nlohmann::json& j, std::string_view path) {
  const nlohmann::json* at = &j;
  for (;;) {
    const std::size_t slash = path.find('/');
    const std::string key(path.substr(0, slash));
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (slash == std::string_view::npos) return at;
    path.remove_prefix(slash + 1);
  }
}

}  // namespace flopwatt
