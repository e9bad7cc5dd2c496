// The rate at which this machine evaluates the exp the GPT-2 kernels use
// (fast_math.h), a ceiling of its own beside the FMA peak and the streams.
//
// The op table counts an exp as one FLOP, as it counts a division or a square
// root, but flopwatt's 16-lane exp is about nine vector instructions: an op
// with an exp per element (GELU, the softmax of attention and of the
// cross-entropy) cannot reach the FMA peak at one FLOP per exp. Its roof also
// needs exps / exp rate, measured the way the cross-entropy sums its exps: a
// row in L1, each vector's exp added into one of several sums.
#pragma once

namespace flopwatt::gpt2 {

// Exps per second on `threads` OpenMP threads together, the best of a few
// rounds over about `seconds` in all (other processes only slow it down).
// 0 when threads < 1 or seconds <= 0.
double measure_exp_rate(int threads, double seconds);

}  // namespace flopwatt::gpt2
