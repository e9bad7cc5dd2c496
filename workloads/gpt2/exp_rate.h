// The exp the GPT-2 kernels use (fast_math.h), evaluated back to back: the
// kernel `run peak` times (cpu::best_throughput) for the exp rate, a ceiling
// of its own beside the FMA peak and the streams.
//
// The op table counts an exp as one FLOP, as it counts a division or a square
// root, but flopwatt's 16-lane exp is about nine vector instructions: an op
// with an exp per element (GELU, the softmax of attention and of the
// cross-entropy) cannot reach the FMA peak at one FLOP per exp. Its roof also
// needs exps / exp rate, measured the way the cross-entropy sums its exps: a
// row in L1, each vector's exp added into one of several sums.
#pragma once
#include <chrono>

namespace flopwatt::gpt2 {

// Exps evaluated on this thread until `deadline` (at least one pass of 64 K),
// their sum kept so that none can be dropped; returns how many.
double exps_until(std::chrono::steady_clock::time_point deadline);

}  // namespace flopwatt::gpt2
