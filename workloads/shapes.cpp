#include "workloads/shapes.h"

#include <charconv>
#include <string_view>

#include "workloads/error.h"

namespace flopwatt {

namespace {

GemmDesc make(std::int64_t M, std::int64_t N, std::int64_t K, bool ta, bool tb, float beta = 0.0f) {
  GemmDesc d;
  d.M = M, d.N = N, d.K = K, d.trans_a = ta, d.trans_b = tb, d.beta = beta;
  return d;
}

}  // namespace

// llm.c's linear layer: out[BT,OC] = inp[BT,C] . W[OC,C]^T (NT); backward
// dinp[BT,C] = dout[BT,OC] . W[OC,C] (NN) and dW[OC,C] += dout^T . inp (TN, beta 1).
std::vector<GemmShape> gpt2_gemm_shapes(const Gpt2GemmConfig& c) {
  const std::int64_t BT = std::int64_t(c.B) * c.T, C = c.C;
  struct Lin {
    const char* op;
    std::int64_t in, out;
    int count;
  };
  const Lin lins[] = {
      {"qkv", C, 3 * C, c.L},    {"attproj", C, C, c.L},       {"fc", C, 4 * C, c.L},
      {"fcproj", 4 * C, C, c.L}, {"lm_head", C, c.Vp, 1},
  };
  std::vector<GemmShape> v;
  for (const auto& l : lins) v.push_back({l.op, "fwd", make(BT, l.out, l.in, false, true), l.count});
  for (const auto& l : lins)
    v.push_back({std::string(l.op) + "_dinp", "bwd", make(BT, l.in, l.out, false, false), l.count});
  for (const auto& l : lins)
    v.push_back({std::string(l.op) + "_dweight", "bwd", make(l.out, l.in, BT, true, false, 1.0f), l.count});
  return v;
}

std::vector<GemmShape> square_shapes() {
  std::vector<GemmShape> v;
  for (std::int64_t n : {256, 512, 1024, 2048, 4096})
    v.push_back({std::to_string(n) + "^3", "", make(n, n, n, false, false), 0});
  return v;
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<GemmShape> parse_shapes(const std::string& spec, const std::string& flag) {
  if (spec == "gpt2-124m") return gpt2_gemm_shapes();
  if (spec == "square") return square_shapes();
  const std::string fix = "use gpt2-124m, square, or M,N,K[,NN|NT|TN|TT][;M,N,K..] with positive integers";
  std::vector<GemmShape> v;
  std::string_view rest = spec;
  while (true) {
    auto semi = rest.find(';');
    std::string_view item = trim(rest.substr(0, semi));
    if (!item.empty()) {
      std::int64_t dims[3];
      std::string_view layout = "NN";
      std::string_view it = item;
      for (int i = 0; i < 3; ++i) {
        auto comma = it.find(',');
        std::string_view num = trim(it.substr(0, comma));
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), dims[i]);
        if (num.empty() || ec != std::errc() || p != num.data() + num.size() || dims[i] <= 0)
          throw InputError(flag, "malformed shape '" + std::string(item) + "'", fix);
        if (i < 2 && comma == std::string_view::npos)
          throw InputError(flag, "shape '" + std::string(item) + "' needs three numbers", fix);
        it = comma == std::string_view::npos ? std::string_view{} : it.substr(comma + 1);
        if (i == 2 && comma != std::string_view::npos) {
          layout = trim(it);
          if (layout != "NN" && layout != "NT" && layout != "TN" && layout != "TT")
            throw InputError(flag, "unknown layout '" + std::string(layout) + "' in '" + std::string(item) + "'", fix);
        }
      }
      GemmDesc d = make(dims[0], dims[1], dims[2], layout[0] == 'T', layout[1] == 'T');
      std::string name = std::to_string(d.M);
      name.append("x").append(std::to_string(d.N)).append("x").append(std::to_string(d.K));
      if (layout != "NN") name.append("_").append(layout);
      v.push_back({name, "", d, 0});
    }
    if (semi == std::string_view::npos) break;
    rest = rest.substr(semi + 1);
  }
  if (v.empty()) throw InputError(flag, "empty shape list", fix);
  return v;
}

}  // namespace flopwatt
