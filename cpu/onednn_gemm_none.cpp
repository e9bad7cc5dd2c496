// Built when CMake did not find the library (FLOPWATT_WITH_ONEDNN=OFF or AUTO without it):
// the backend exists, says why it cannot run and how to get it.
#include "cpu/onednn_gemm.h"

#include "cpu/gemm_checks.h"
#include "workloads/error.h"

namespace flopwatt::cpu {
namespace {

class OnednnMissing final : public Backend {
 public:
  std::string name() const override { return "cpu:onednn"; }
  Availability availability() const override {
    return {false,
            "flopwatt was built without oneDNN (FLOPWATT_WITH_ONEDNN was OFF, or AUTO found no usable dnnl); "
            "fix: apt-get install libdnnl-dev ocl-icd-opencl-dev, then cmake -DFLOPWATT_WITH_ONEDNN=ON and rebuild"};
  }
  bool supports(const GemmDesc&) const override { return false; }
  void gemm(const GemmDesc& d, const void*, const void*, void*) override {
    require_supported(*this, d, "install libdnnl-dev ocl-icd-opencl-dev and rebuild with -DFLOPWATT_WITH_ONEDNN=ON");
  }
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend(OnednnPacking, double) { return std::make_unique<OnednnMissing>(); }
std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OnednnMissing>(); }

}  // namespace flopwatt::cpu
