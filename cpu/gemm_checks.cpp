#include "cpu/gemm_checks.h"

#include <algorithm>
#include <sstream>

#include "workloads/error.h"

namespace flopwatt::cpu {

bool shape_valid(const GemmDesc& d) {
  if (d.M < 0 || d.N < 0 || d.K < 0 || d.lda < 0 || d.ldb < 0 || d.ldc < 0) return false;
  const std::int64_t a_cols = d.trans_a ? d.M : d.K;
  const std::int64_t b_cols = d.trans_b ? d.K : d.N;
  return d.eff_lda() >= std::max<std::int64_t>(1, a_cols) && d.eff_ldb() >= std::max<std::int64_t>(1, b_cols) &&
         d.eff_ldc() >= std::max<std::int64_t>(1, d.N);
}

std::string describe(const GemmDesc& d) {
  std::ostringstream s;
  s << d.M << 'x' << d.N << 'x' << d.K << ' ' << d.layout() << ' ' << to_string(d.dtype_in);
  if (d.dtype_out != d.dtype_in) s << "->" << to_string(d.dtype_out);
  s << " alpha=" << d.alpha << " beta=" << d.beta;
  if (d.lda || d.ldb || d.ldc) s << " ld=" << d.eff_lda() << ',' << d.eff_ldb() << ',' << d.eff_ldc();
  return s.str();
}

void require_supported(const Backend& backend, const GemmDesc& d, const std::string& fix) {
  if (backend.supports(d)) return;
  const Availability a = backend.availability();
  if (!a.ok) throw InputError(backend.name(), "not available: " + a.reason);
  throw InputError(backend.name(), "does not support GEMM " + describe(d), fix);
}

}  // namespace flopwatt::cpu
