#include "workloads/verify.h"

#include <cmath>
#include <limits>

namespace flopwatt {
namespace {

// Running sums for one comparison; non-finite values poison the result instead
// of being skipped, so a single NaN anywhere fails verification.
struct Accumulator {
  double diff2 = 0, ref2 = 0, got2 = 0;
  bool nonfinite = false;

  void add(double got, double ref) {
    if (!std::isfinite(got) || !std::isfinite(ref)) {
      nonfinite = true;
      return;
    }
    const double d = got - ref;
    diff2 += d * d;
    ref2 += ref * ref;
    got2 += got * got;
  }

  double result() const {
    if (nonfinite) return std::numeric_limits<double>::quiet_NaN();
    if (ref2 == 0.0) return got2 == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::sqrt(diff2) / std::sqrt(ref2);
  }
};

template <typename Ref>
double strided(const float* got, std::size_t ld_got, const Ref* ref, std::size_t ld_ref, std::size_t rows,
               std::size_t cols) {
  Accumulator acc;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) acc.add(got[i * ld_got + j], static_cast<double>(ref[i * ld_ref + j]));
  return acc.result();
}

}  // namespace

double rel_frobenius_error(const float* got, const double* ref, std::size_t n) {
  return strided(got, n, ref, n, n ? 1 : 0, n);
}
double rel_frobenius_error(const float* got, const float* ref, std::size_t n) {
  return strided(got, n, ref, n, n ? 1 : 0, n);
}
double rel_frobenius_error(const float* got, std::size_t ld_got, const double* ref, std::size_t ld_ref,
                           std::size_t rows, std::size_t cols) {
  return strided(got, ld_got, ref, ld_ref, rows, cols);
}
double rel_frobenius_error(const float* got, std::size_t ld_got, const float* ref, std::size_t ld_ref,
                           std::size_t rows, std::size_t cols) {
  return strided(got, ld_got, ref, ld_ref, rows, cols);
}

double gemm_tolerance(DType dtype_in) { return dtype_in == DType::BF16 ? 1e-2 : 1e-4; }

bool passes(double rel_error, double tolerance) { return std::isfinite(rel_error) && rel_error <= tolerance; }

}  // namespace flopwatt
