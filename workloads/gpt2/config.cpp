#include "workloads/gpt2/config.h"

#include <sstream>

#include "workloads/error.h"

namespace flopwatt::gpt2 {

int padded_vocab(int V) { return (V + 127) / 128 * 128; }

namespace {

struct Preset {
  const char* name;
  int L, NH, C, V, maxT;
};

// GPT-2 sizes (124M, 350M, 774M, 1558M) as llm.c names them by depth.
constexpr Preset kPresets[] = {
    {"tiny", 2, 2, 32, 61, 64},
    {"d12", 12, 12, 768, 50257, 1024},
    {"d24", 24, 16, 1024, 50257, 1024},
    {"d36", 36, 20, 1280, 50257, 1024},
    {"d48", 48, 25, 1600, 50257, 1024},
};

}  // namespace

Config preset(const std::string& name, const std::string& flag) {
  for (const auto& p : kPresets) {
    if (name == p.name) {
      Config c;
      c.L = p.L;
      c.NH = p.NH;
      c.C = p.C;
      c.V = p.V;
      c.Vp = padded_vocab(p.V);
      c.maxT = p.maxT;
      return c;
    }
  }
  std::string all;
  for (const auto& p : kPresets) all += std::string(all.empty() ? "" : "|") + p.name;
  throw InputError(flag + " " + name, "unknown model preset", "use one of " + all);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> v;
  for (const auto& p : kPresets) v.emplace_back(p.name);
  return v;
}

void validate(const Config& c, const std::string& where) {
  auto bad = [&](const std::string& what) {
    throw InputError(where, what + " (" + describe(c) + ")",
                     "use an llm.c GPT-2 checkpoint (version 3) or a --model preset");
  };
  if (c.maxT <= 0 || c.V <= 0 || c.Vp <= 0 || c.L <= 0 || c.NH <= 0 || c.C <= 0)
    bad("every size must be positive");
  if (c.C % c.NH != 0) bad("channels C must be divisible by the head count NH");
  if (c.Vp < c.V) bad("padded vocabulary Vp is smaller than V");
  // Far above any GPT-2; catches a header of garbage before it sizes an allocation.
  if (c.C > 65536 || c.L > 4096 || c.V > 1 << 24 || c.Vp > 1 << 24 || c.maxT > 1 << 20)
    bad("sizes are implausibly large");
}

std::string describe(const Config& c) {
  std::ostringstream s;
  s << "L=" << c.L << " NH=" << c.NH << " C=" << c.C << " V=" << c.V << " Vp=" << c.Vp
    << " maxT=" << c.maxT;
  return s.str();
}

}  // namespace flopwatt::gpt2
