// judge_xclbin: what an xclbin is, from the compute units XRT would list, and
// whether flopwatt's command path (mlir-aie's kernel convention) can drive it.
#include <string>

#include <fmt/format.h>

#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace {

bool has_arg(const MetadataKernel& k, const char* name) {
  for (const auto& a : k.args)
    if (a.name == name) return true;
  return false;
}

// RyzenAI's DPU overlays (Vitis AI) name the instruction buffer and its size
// instruct/nistruct, where mlir-aie's aiecc writes instr/ninstr.
bool is_dpu_overlay_kernel(const MetadataKernel& k) { return has_arg(k, "instruct") || has_arg(k, "nistruct"); }

std::string plural(std::size_t n, const char* one) { return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s"); }

XclbinVerdict refused(std::string what, std::string why) { return {std::move(what), false, std::move(why), 0}; }

}  // namespace

XclbinVerdict judge_xclbin(const Xclbin& x) {
  if (!x.has_partition) return refused("not an NPU design", "it has no AIE_PARTITION section");
  if (x.partition.pdis.empty()) return refused("not an NPU design", "its AIE_PARTITION holds no PDI");
  for (const auto& p : x.partition.pdis)
    if (p.image.empty()) return refused("a corrupt NPU design", "its AIE_PARTITION has an empty PDI image");
  if (x.cus.empty())
    return refused("an NPU partition without a usable kernel",
                   fmt::format("no kernel of EMBEDDED_METADATA has a PDI for its dpu_kernel_id and a compute unit in "
                               "IP_LAYOUT ({} kernels, {} IP_LAYOUT entries); XRT refuses it too",
                               x.metadata_kernels.size(), x.ips.size()));
  std::size_t overlay_kernels = 0;
  for (const auto& k : x.metadata_kernels) overlay_kernels += is_dpu_overlay_kernel(k);
  std::string first_problem;
  for (std::size_t i = 0; i < x.cus.size(); ++i) {
    const MetadataKernel* k = x.kernel(x.cus[i].kernel);
    if (!k || is_dpu_overlay_kernel(*k)) continue;
    try {
      register_map(x, i);
    } catch (const InputError& e) {
      if (first_problem.empty()) first_problem = e.problem();
      continue;
    }
    return {fmt::format("mlir-aie design (kernel {}; {}, {})", k->name, plural(x.cus.size(), "compute unit"),
                        plural(x.partition.pdis.size(), "PDI")),
            true, {}, i};
  }
  if (overlay_kernels)
    return refused(fmt::format("DPU overlay ({} with instruct/nistruct arguments; {}, {})",
                               plural(overlay_kernels, "kernel"), plural(x.cus.size(), "compute unit"),
                               plural(x.partition.pdis.size(), "PDI")),
                   "its instruction streams come from the Vitis AI compiler for one model; flopwatt runs mlir-aie "
                   "GEMM designs, whose kernel takes opcode, instr and ninstr");
  return refused(fmt::format("NPU design ({})", plural(x.cus.size(), "compute unit")), first_problem);
}

}  // namespace flopwatt::npu::xdna
