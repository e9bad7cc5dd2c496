// Built when CMake did not find the library (FLOPWATT_WITH_OPENBLAS=OFF or AUTO without it):
// the backend exists, says why it cannot run and how to get it.
#include "cpu/openblas_gemm.h"

#include "cpu/gemm_checks.h"

namespace flopwatt::cpu {
namespace {

class OpenblasMissing final : public Backend {
 public:
  std::string name() const override { return "cpu:openblas"; }
  Availability availability() const override {
    return {false,
            "flopwatt was built without OpenBLAS (FLOPWATT_WITH_OPENBLAS was OFF, or AUTO found no cblas.h/libopenblas); "
            "fix: apt-get install libopenblas-openmp-dev, then cmake -DFLOPWATT_WITH_OPENBLAS=ON and rebuild"};
  }
  bool supports(const GemmDesc&) const override { return false; }
  void gemm(const GemmDesc& d, const void*, const void*, void*) override {
    require_supported(*this, d, "install libopenblas-openmp-dev and rebuild with -DFLOPWATT_WITH_OPENBLAS=ON");
  }
};

}  // namespace

std::unique_ptr<Backend> make_openblas_backend() { return std::make_unique<OpenblasMissing>(); }

}  // namespace flopwatt::cpu
