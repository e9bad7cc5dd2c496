// Placeholder until this command lands.
#include "harness/commands.h"

namespace flopwatt {
void register_npu(CLI::App& app, CliState& st) {}
}  // namespace flopwatt
