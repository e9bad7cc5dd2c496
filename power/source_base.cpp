#include "power/source_base.h"

#include <algorithm>

namespace flopwatt::power {

std::size_t PowerSource::read_many(std::vector<Sample>& out) {
  auto s = read();
  if (!s) return 0;
  out.push_back(*s);
  return 1;
}

double PowerSource::min_read_interval_s() const {
  // Four reads per update catch a change within a quarter interval without
  // hammering a slow interface (ACPI battery, SMU-backed hwmon).
  return kind() == Kind::Counter ? 0.0 : update_interval_s() / 4;
}

double PowerSource::expected_spacing_s(double period_s) const {
  return std::max(period_s, min_read_interval_s());
}

void ChangeTracker::observe(double value, std::int64_t t_ns) {
  if (!have_prev_) {
    have_prev_ = true;
    prev_ = value;
    return;
  }
  if (value == prev_) return;
  prev_ = value;
  const std::int64_t n = changes_.load(std::memory_order_relaxed) + 1;
  if (first_change_ns_ < 0) first_change_ns_ = t_ns;
  changes_.store(n, std::memory_order_relaxed);
  if (n >= 2) interval_s_.store(double(t_ns - first_change_ns_) * 1e-9 / double(n - 1), std::memory_order_relaxed);
}

double SourceBase::update_interval_s() const {
  const double m = tracker_.interval_s();
  return m > 0 ? m : nominal_interval_s_;
}

std::string SourceBase::last_error() const {
  if (!has_error_.load(std::memory_order_acquire)) return {};
  std::lock_guard<std::mutex> g(err_mu_);
  return error_;
}

void SourceBase::set_error(std::string e) {
  std::lock_guard<std::mutex> g(err_mu_);
  error_ = std::move(e);
  has_error_.store(true, std::memory_order_release);
}

void SourceBase::clear_error() {
  if (has_error_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> g(err_mu_);
    error_.clear();
    has_error_.store(false, std::memory_order_release);
  }
}

}  // namespace flopwatt::power
