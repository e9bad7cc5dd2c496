// What every concrete source shares: its identity, a nominal update interval
// that becomes a measured one as the value is seen to change, and the last
// read error. Safe to query from another thread while the sampler reads.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "power/source.h"

namespace flopwatt::power {

// Measures how often a value changes: mean time between observed changes,
// after at least two changes. Reads quantise it to the read cadence, so for a
// counter faster than the sampler it is an upper bound (the sampling period).
class ChangeTracker {
 public:
  void observe(double value, std::int64_t t_ns);
  // 0 while fewer than two changes were seen.
  double interval_s() const { return interval_s_.load(std::memory_order_relaxed); }
  std::int64_t changes() const { return changes_.load(std::memory_order_relaxed); }

 private:
  bool have_prev_ = false;
  double prev_ = 0;
  std::int64_t first_change_ns_ = -1;
  std::atomic<std::int64_t> changes_{0};
  std::atomic<double> interval_s_{0};
};

class SourceBase : public PowerSource {
 public:
  SourceBase(std::string id, std::string domain, Kind kind, double nominal_interval_s)
      : id_(std::move(id)), domain_(std::move(domain)), kind_(kind), nominal_interval_s_(nominal_interval_s) {}
  std::string id() const override { return id_; }
  std::string domain() const override { return domain_; }
  Kind kind() const override { return kind_; }
  double update_interval_s() const override;
  bool interval_measured() const override { return tracker_.interval_s() > 0; }
  std::string last_error() const override;
  double nominal_interval_s() const { return nominal_interval_s_; }

 protected:
  void set_error(std::string e);
  void clear_error();
  ChangeTracker tracker_;

 private:
  std::string id_, domain_;
  Kind kind_;
  double nominal_interval_s_;
  mutable std::mutex err_mu_;
  std::string error_;
  std::atomic<bool> has_error_{false};
};

// Timestamp of a read: the midpoint of the syscalls that made it.
inline std::int64_t midpoint_ns(std::int64_t a, std::int64_t b) { return a + (b - a) / 2; }

}  // namespace flopwatt::power
