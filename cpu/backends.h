#pragma once
#include <memory>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt::cpu {

// Every CPU backend, available or not (availability() says why not):
// cpu:reference, cpu:llmc, cpu:openblas, cpu:onednn.
std::vector<std::unique_ptr<Backend>> make_backends();

}  // namespace flopwatt::cpu
