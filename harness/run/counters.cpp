#include "harness/run/counters.h"

#include <algorithm>

#include "harness/output/text.h"

namespace flopwatt {

RunCounters::RunCounters(const std::string& spec, const std::string& root, const std::string& flag,
                         std::unique_ptr<cpu::CounterAccess> access)
    : access_(access ? std::move(access) : cpu::real_counter_access()) {
  const auto events = cpu::parse_counter_list(spec, flag);
  if (!events.empty()) set_ = std::make_unique<cpu::CounterSet>(events, *access_, root);
}

void RunCounters::begin() {
  if (active()) set_->begin();
}

std::map<std::string, std::optional<double>> RunCounters::end() {
  std::map<std::string, std::optional<double>> out;
  if (!active()) return out;
  for (const auto& w : set_->end()) out[w.event] = w.value;
  return out;
}

nlohmann::json RunCounters::status_json() const {
  if (!set_) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : set_->status())
    a.push_back({{"event", s.event},
                 {"available", s.available},
                 {"reason", s.available ? nlohmann::json(nullptr) : nlohmann::json(s.reason)},
                 {"fix", s.available ? nlohmann::json(nullptr) : nlohmann::json(s.fix)},
                 {"how", s.how.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.how)}});
  return a;
}

std::string RunCounters::summary() const {
  if (!set_) return "";
  std::vector<std::string> on, off;
  std::string reason;
  for (const auto& s : set_->status()) {
    (s.available ? on : off).push_back(s.event);
    if (!s.available && reason.empty()) reason = s.reason + "; fix: " + s.fix;
  }
  const bool dram = std::find(on.begin(), on.end(), cpu::kDramReadBytes) != on.end() &&
                    std::find(on.begin(), on.end(), cpu::kDramWriteBytes) != on.end();
  const std::string note = dram ? "; FLOP/B marked # is over the DRAM bytes counted (system-wide)" : "";
  if (off.empty()) return "counters: " + join(on, ", ") + note;
  if (on.empty()) return "counters: unavailable: " + reason;
  return "counters: " + join(on, ", ") + " (not " + join(off, ", ") + ": " + reason + ")" + note;
}

}  // namespace flopwatt
