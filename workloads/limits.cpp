#include "workloads/limits.h"

#include <unistd.h>

#include <cstdio>
#include <limits>

#include "workloads/error.h"

namespace flopwatt {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t mul_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}

std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

}  // namespace

std::int64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return mul_sat(pages, page);
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

void check_thread_count(std::int64_t threads, const std::string& flag) {
  const std::int64_t bound = 4 * std::int64_t(online_cpus());
  if (threads < 0 || threads > bound)
    throw InputError(flag + " " + std::to_string(threads),
                     "must be between 0 (all cores) and " + std::to_string(bound) + " (4x the " +
                         std::to_string(online_cpus()) + " online CPUs)",
                     "pass --threads " + std::to_string(online_cpus()) + " or less");
}

std::int64_t gemm_shape_bytes(const GemmDesc& d) {
  const std::int64_t floats =
      add_sat(add_sat(mul_sat(d.M, d.K), mul_sat(d.K, d.N)), mul_sat(d.M, d.N));
  return add_sat(mul_sat(floats, 4), mul_sat(mul_sat(d.M, d.N), 8));
}

void check_shapes_fit_memory(const std::vector<GemmShape>& shapes, const std::string& flag,
                             std::int64_t memory_bytes) {
  if (memory_bytes <= 0) return;  // unknown: nothing to bound by
  for (const auto& s : shapes) {
    const std::int64_t need = gemm_shape_bytes(s.desc);
    if (need > memory_bytes)
      throw InputError(flag + " " + std::to_string(s.desc.M) + "," + std::to_string(s.desc.N) + "," +
                           std::to_string(s.desc.K),
                       "needs at least " + (need == kMax ? std::string("8 EiB") : format_bytes(double(need))) +
                           " for its operands, the machine has " + format_bytes(double(memory_bytes)),
                       "pass smaller M, N, K");
  }
}

std::string format_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int i = 0;
  while (b >= 1024 && i < 6) b /= 1024, ++i;
  char out[32];
  std::snprintf(out, sizeof out, "%.1f %s", b, unit[i]);
  return out;
}

}  // namespace flopwatt
