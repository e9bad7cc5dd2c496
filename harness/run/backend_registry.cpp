#include "harness/run/backend_registry.h"

#include <sstream>

#include "cpu/backends.h"
#include "npu/backends.h"
#include "workloads/error.h"

namespace flopwatt {

std::vector<std::unique_ptr<Backend>> all_backends() {
  auto v = cpu::make_backends();
  for (auto& b : npu::make_backends()) v.push_back(std::move(b));
  return v;
}

std::vector<std::unique_ptr<Backend>> select_backends(const std::string& list, const std::string& flag) {
  auto all = all_backends();
  std::vector<std::unique_ptr<Backend>> out;
  if (list == "all") return all;
  if (list == "available") {
    for (auto& b : all)
      if (b->availability().ok) out.push_back(std::move(b));
    return out;
  }
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    bool found = false;
    for (auto& b : all)
      if (b && b->name() == name) {
        out.push_back(std::move(b));
        found = true;
        break;
      }
    if (!found) {
      std::string names;
      for (const auto& b : all_backends()) names += (names.empty() ? "" : ", ") + b->name();
      for (const auto& b : out)
        if (b->name() == name) throw InputError(flag, "backend '" + name + "' is listed twice", "name each backend once");
      throw InputError(flag, "unknown backend '" + name + "'", "use one of: " + names + " (see `flopwatt backends`)");
    }
  }
  if (out.empty()) throw InputError(flag, "no backend given", "name at least one backend (see `flopwatt backends`)");
  // A backend asked for by name that cannot run is an error (only `available`
  // and `all` skip with reasons): a run without the rows the user asked for is
  // not a result.
  for (const auto& b : out)
    if (const Availability av = b->availability(); !av.ok)
      throw InputError(flag + " " + b->name(), "unavailable: " + av.reason,
                       // The reason usually carries its own fix already.
                       av.reason.find("fix:") == std::string::npos
                           ? "install what it names, or use `" + flag + " available` to skip what cannot run"
                           : "");
  return out;
}

std::unique_ptr<Backend> default_gemm_backend() {
  auto all = cpu::make_backends();
  for (const char* pref : {"cpu:onednn", "cpu:openblas", "cpu:llmc", "cpu:reference"})
    for (auto& b : all)
      if (b && b->name() == pref && b->availability().ok) return std::move(b);
  return nullptr;
}

}  // namespace flopwatt
