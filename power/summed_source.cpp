#include "power/summed_source.h"

#include <algorithm>
#include <mutex>

namespace flopwatt::power {

namespace {

class SummedSource final : public PowerSource {
 public:
  SummedSource(std::string id, std::string domain, std::vector<std::unique_ptr<PowerSource>> parts)
      : id_(std::move(id)), domain_(std::move(domain)), parts_(std::move(parts)) {}
  std::string id() const override { return id_; }
  std::string domain() const override { return domain_; }
  Kind kind() const override { return parts_.front()->kind(); }
  // The sum changes when any part does, but is only as fresh as its slowest part.
  double update_interval_s() const override {
    double m = 0;
    for (const auto& p : parts_) m = std::max(m, p->update_interval_s());
    return m;
  }
  bool interval_measured() const override {
    return std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->interval_measured(); });
  }
  double min_read_interval_s() const override {
    double m = 0;
    for (const auto& p : parts_) m = std::max(m, p->min_read_interval_s());
    return m;
  }
  std::optional<Sample> read() override {
    double sum = 0;
    std::int64_t t_first = 0, t_last = 0;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      auto s = parts_[i]->read();
      if (!s) {
        set_error(parts_[i]->id() + ": " + (parts_[i]->last_error().empty() ? "no value yet" : parts_[i]->last_error()));
        return std::nullopt;
      }
      if (i == 0) t_first = s->t_ns;
      t_last = s->t_ns;
      sum += s->value;
    }
    set_error({});
    return Sample{t_first + (t_last - t_first) / 2, sum};
  }
  std::uint64_t resets() const override {
    std::uint64_t r = 0;
    for (const auto& p : parts_) r += p->resets();
    return r;
  }
  std::string last_error() const override {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
  }

 private:
  void set_error(std::string e) {
    std::lock_guard<std::mutex> g(mu_);
    error_ = std::move(e);
  }
  std::string id_, domain_;
  std::vector<std::unique_ptr<PowerSource>> parts_;
  mutable std::mutex mu_;
  std::string error_;
};

}  // namespace

std::unique_ptr<PowerSource> make_summed_source(std::string id, std::string domain,
                                                std::vector<std::unique_ptr<PowerSource>> parts) {
  return std::make_unique<SummedSource>(std::move(id), std::move(domain), std::move(parts));
}

}  // namespace flopwatt::power
