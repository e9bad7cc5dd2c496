// The run context: what machine, kernel, settings and libraries produced the
// figures (ARCHITECTURE.md, "What a run records").
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "power/temperature.h"
#include "workloads/backend.h"

namespace flopwatt {

// root: filesystem root for /proc and /sys reads ("/" normally, a fixture tree in tests).
nlohmann::json collect_context(const std::string& root, const std::vector<const Backend*>& backends);
std::string read_first_line(const std::string& path);  // "" when unreadable
// /proc/cpuinfo's "model name" below root; "" when absent.
std::string cpu_model(const std::string& root);
// Temperatures as every output spells them: [{"id", "celsius"}, ...].
nlohmann::json temperatures_json(const std::vector<power::Temperature>& t);

// A backend's notes() as the context's "backends" entry.
nlohmann::json backend_notes(const Backend& b);

}  // namespace flopwatt
