#pragma once
#include <memory>
#include <string>
#include <vector>

#include "workloads/backend.h"

namespace flopwatt {

// Every backend flopwatt knows, CPU then NPU, available or not.
std::vector<std::unique_ptr<Backend>> all_backends();
// Parses "a,b,c" (or "all", "available"); throws InputError naming `flag`
// for an unknown name, with the list of valid ones, and for a named backend
// that cannot run here, with its reason. "all" keeps unavailable backends
// (their rows say why); "available" drops them.
std::vector<std::unique_ptr<Backend>> select_backends(const std::string& list, const std::string& flag);
// The fastest available CPU GEMM backend (onednn > openblas > llmc).
std::unique_ptr<Backend> default_gemm_backend();

}  // namespace flopwatt
