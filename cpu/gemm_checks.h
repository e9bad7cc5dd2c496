// Shape checks shared by the CPU backends: what every GemmDesc must satisfy
// before a kernel may touch memory, and the error a backend throws when asked
// to run something its supports() rejected.
#pragma once
#include <string>

#include "workloads/backend.h"

namespace flopwatt::cpu {

// Non-negative sizes and leading dimensions at least as wide as the stored rows.
bool shape_valid(const GemmDesc& d);

// Throws InputError(backend.name(), "<layout> <dtype> MxNxK ...", fix) unless
// backend.supports(d). `fix` names what to use instead.
void require_supported(const Backend& backend, const GemmDesc& d, const std::string& fix);

// "256x2304x768 NT fp32 alpha=1 beta=0" for messages.
std::string describe(const GemmDesc& d);

}  // namespace flopwatt::cpu
