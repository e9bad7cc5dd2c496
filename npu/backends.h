#pragma once
#include <memory>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt::npu {

// Every NPU backend, available or not: npu:xdna, npu:sim-phoenix, npu:sim-strix.
std::vector<std::unique_ptr<Backend>> make_backends();

}  // namespace flopwatt::npu
