#include "cpu/backends.h"

#include "cpu/llmc_gemm.h"
#include "cpu/onednn_gemm.h"
#include "cpu/openblas_gemm.h"
#include "cpu/reference_gemm.h"

namespace flopwatt::cpu {

std::vector<std::unique_ptr<Backend>> make_backends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(make_reference_backend());
  v.push_back(make_llmc_backend());
  v.push_back(make_openblas_backend());
  v.push_back(make_onednn_backend());
  return v;
}

}  // namespace flopwatt::cpu
