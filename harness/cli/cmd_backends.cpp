#include <fmt/core.h>

#include "harness/run/backend_registry.h"
#include "harness/cli/commands.h"

namespace flopwatt {

void register_backends(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand("backends", "Every backend, available or not, and why");
  cmd->callback([&st] {
    for (const auto& b : all_backends()) {
      const Availability a = b->availability();
      fmt::print("{:<18} {:<12} {}{}\n", b->name(), a.ok ? "available" : "unavailable",
                 b->simulated() ? "[simulated] " : "", a.ok ? "" : a.reason);
      if (a.ok)
        for (const auto& [k, v] : b->notes()) fmt::print("{:<18} {:<12} {}: {}\n", "", "", k, v);
    }
    st.exit_code = 0;
  });
}

}  // namespace flopwatt
