// GPT-2 hyperparameters in llm.c's terms, the presets, and the shape letters
// used throughout workloads/gpt2 (declared once here):
//   B batch, T sequence length, C channels, NH heads, hs = C/NH head size,
//   L layers, V vocabulary, Vp padded vocabulary, maxT longest sequence,
//   N = B*T rows of every (B,T,.) activation, OC output channels of a linear layer.
#pragma once
#include <string>
#include <vector>

namespace flopwatt::gpt2 {

struct Config {
  int maxT = 1024;   // wpe rows
  int V = 50257;     // real vocabulary
  int Vp = 50304;    // padded to a multiple of 128, as llm.c does; wte has Vp rows
  int L = 12;
  int NH = 12;
  int C = 768;
  bool operator==(const Config&) const = default;
};

// llm.c pads the vocabulary so the lm-head GEMM has a friendly N.
int padded_vocab(int V);

// "tiny" (tests: L=2, NH=2, C=32, V=61, maxT=64), "d12" (124M), "d24", "d36", "d48".
// Throws InputError naming `flag` for an unknown preset.
Config preset(const std::string& name, const std::string& flag = "--model");
std::vector<std::string> preset_names();

// Throws InputError naming `where` when the numbers cannot describe a GPT-2
// (non-positive sizes, C not divisible by NH, Vp < V).
void validate(const Config& c, const std::string& where);

std::string describe(const Config& c);  // "L=12 NH=12 C=768 V=50257 Vp=50304 maxT=1024"

}  // namespace flopwatt::gpt2
