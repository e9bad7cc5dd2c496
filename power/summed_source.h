// One source that adds up several of the same kind: the packages of a
// multi-socket machine, the batteries of a laptop with two. A machine's
// draw is the sum; any one part alone is a fraction of it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "power/source.h"

namespace flopwatt::power {

// parts: readers of its own (not the ones the sampler also reads as single
// sources), all of one kind. A read fails, leaving a gap, when any part fails:
// a sum missing a part would be too low, not merely noisy.
std::unique_ptr<PowerSource> make_summed_source(std::string id, std::string domain,
                                                std::vector<std::unique_ptr<PowerSource>> parts);

}  // namespace flopwatt::power
