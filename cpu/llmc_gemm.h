// cpu:llmc -- the loop structure of llm.c's CPU trainer (the CPU baseline of
// Rösti & Franz 2025), generalised to GemmDesc so it can be timed like the others.
//   forward  out[BT,OC] = inp[BT,C] · W[OC,C]^T   layout NT  (M=BT, N=OC, K=C)
//   dinp     dinp[BT,C] = dout[BT,OC] · W[OC,C]   layout NN  (M=BT, N=C,  K=OC)
//   dweight  dW[OC,C]  += dout^T · inp            layout TN  (M=OC, N=C,  K=BT)
// fp32 only, no BLAS; TT and bf16 are not supported.
#pragma once
#include <memory>

#include "workloads/backend.h"

namespace flopwatt::cpu {

std::unique_ptr<Backend> make_llmc_backend();

}  // namespace flopwatt::cpu
