#include "npu/sim/kim2023_workloads.h"

#include <cmath>

#include <fmt/core.h>

namespace flopwatt::npu {

namespace {

// An encoder layer: Q, K, V and output projections (d -> d), FFN d -> f -> d.
std::vector<KimLayer> encoder(std::int64_t d, std::int64_t f, int layers, int attn_proj_per_layer) {
  return {{"attn d->d", d, d, attn_proj_per_layer * layers}, {"ffn d->f", d, f, layers}, {"ffn f->d", f, d, layers}};
}

std::vector<KimLayer> t5(std::int64_t d, std::int64_t f, int layers) {
  // Encoder: 4 projections per layer; decoder: 8 (self- and cross-attention),
  // cross-attention's K and V taken over as many encoder tokens as decoder tokens.
  return {{"attn d->d", d, d, 4 * layers + 8 * layers}, {"ffn d->f", d, f, 2 * layers}, {"ffn f->d", f, d, 2 * layers}};
}

}  // namespace

const std::vector<KimWorkload>& kim2023_workloads() {
  static const std::vector<KimWorkload> w = {
      {"BERT-tiny", true, encoder(128, 512, 2, 4), "Turc et al. 2019 (BERT miniatures): L=2, H=128, FFN 4H"},
      {"BERT-large", true, encoder(1024, 4096, 24, 4), "Devlin et al. 2019: L=24, H=1024, FFN 4096"},
      {"T5-small", true, t5(512, 2048, 6), "Raffel et al. 2020: d_model 512, d_ff 2048, 6+6 layers, 8 heads x 64"},
      {"T5-large", true, t5(1024, 4096, 24), "Raffel et al. 2020: d_model 1024, d_ff 4096, 24+24 layers, 16 heads x 64"},
      {"NCF", false, {{"mlp 256->256", 256, 256, 1}, {"mlp 256->128", 256, 128, 1}, {"mlp 128->64", 128, 64, 1}, {"predict 128->1", 128, 1, 1}},
       "MLPerf NCF reference: MLP 256-256-128-64, GMF factors 64 joined before the output layer"},
      {"DLRM", false,
       {{"bottom 13->512", 13, 512, 1}, {"bottom 512->256", 512, 256, 1}, {"bottom 256->128", 256, 128, 1},
        {"top 479->1024", 479, 1024, 1}, {"top 1024->1024", 1024, 1024, 1}, {"top 1024->512", 1024, 512, 1},
        {"top 512->256", 512, 256, 1}, {"top 256->1", 256, 1, 1}},
       "MLPerf DLRM (Criteo Terabyte): bottom MLP 13-512-256-128, top MLP 1024-1024-512-256-1 on 479 interaction features"},
  };
  return w;
}

std::vector<KimWorkloadResult> model_kim2023_workloads(const ScratchpadNpu& dev, int batch, int seq) {
  std::vector<KimWorkloadResult> out;
  for (const auto& w : kim2023_workloads()) {
    KimWorkloadResult r;
    r.name = w.name;
    r.M = w.per_token ? std::int64_t(batch) * seq : batch;
    for (const auto& l : w.layers) {
      const BwdShape s{r.M, l.out, l.in};
      r.forward_s += l.count * model_gemm(dev, r.M, l.out, l.in).time_s;
      r.backward_standard_s += l.count * best_standard(dev, s).time_s;
      r.backward_chosen_s += l.count * choose_backward(dev, s).time_s;
    }
    out.push_back(r);
  }
  return out;
}

double kim2023_published_speedup(const std::string& device_name) {
  if (device_name == "kim2023-large") return 1.15;
  if (device_name == "kim2023-small") return 1.29;
  return 0;
}

std::string format_kim2023(const ScratchpadNpu& dev, int batch, int seq, const std::vector<KimWorkloadResult>& rows) {
  std::string s = fmt::format(
      "{} [simulated: fused backward model] {} core(s), {:.0f} KiB scratchpad per core, DRAM {:.1f} GB/s; batch {}, "
      "NLP sequence {} tokens\n",
      dev.name, dev.cores, dev.scratchpad_bytes / 1024.0, dev.dram_bytes_per_s / 1e9, batch, seq);
  s += fmt::format("{:<11} {:>7} | {:>10} {:>12} {:>12} | {:>9} {:>9}\n", "workload", "M", "fwd ms", "bwd std ms",
                   "bwd chosen ms", "bwd x", "train x");
  double sum = 0, logsum = 0;
  for (const auto& r : rows) {
    s += fmt::format("{:<11} {:>7} | {:>10.4f} {:>12.4f} {:>12.4f} | {:>8.3f}x {:>8.3f}x\n", r.name, r.M,
                     r.forward_s * 1e3, r.backward_standard_s * 1e3, r.backward_chosen_s * 1e3, r.backward_speedup(),
                     r.training_speedup());
    sum += r.training_speedup();
    logsum += std::log(r.training_speedup());
  }
  const double n = double(rows.size());
  const double pub = kim2023_published_speedup(dev.name);
  s += fmt::format("linear layers' training speedup: mean {:.3f}x, geometric mean {:.3f}x{}\n", sum / n,
                   std::exp(logsum / n),
                   pub > 0 ? fmt::format("; Kim et al. 2023 report {:+.0f}% on this NPU (whole training, all workloads)",
                                         (pub - 1) * 100)
                           : std::string());
  return s;
}

}  // namespace flopwatt::npu
