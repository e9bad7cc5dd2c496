#include "power/battery.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>

#include "power/clock.h"
#include "power/power_state.h"
#include "power/source_base.h"
#include "power/summed_source.h"
#include "power/sysfs.h"

namespace flopwatt::power {

namespace {

// Firmware refreshes battery readings every 1-15 s; the source measures its own.
constexpr double kPowerNominalS = 1.0;
constexpr double kEnergyNominalS = 10.0;
// No laptop battery delivers or takes a kilowatt (a 100 Wh pack at 10 C);
// a reading above it is a driver's garbage (INT64_MAX uW has been seen from
// buggy firmware), not power.
constexpr double kMaxBatteryW = 1000;

std::string implausible_text(double w) {
  return "implausible " + std::to_string(w) + " W (> " + std::to_string(int(kMaxBatteryW)) +
         " W for a laptop battery): not a reading";
}

// Instantaneous power: power_now (uW), else current_now (uA) x voltage_now (uV).
// Drivers disagree on the sign; the magnitude is what the battery delivers
// (discharging) or takes (charging), which discovery states.
class BatteryPowerSource final : public SourceBase {
 public:
  BatteryPowerSource(std::string id, std::string dir, bool use_power_now)
      : SourceBase(std::move(id), "battery", Kind::Gauge, kPowerNominalS),
        power_(join_path(dir, "power_now")), current_(join_path(dir, "current_now")),
        voltage_(join_path(dir, "voltage_now")), use_power_now_(use_power_now) {}

  std::optional<Sample> read() override {
    const std::int64_t a = monotonic_ns();
    std::int64_t p = 0, i = 0, v = 0;
    int err = 0;
    double w = 0;
    if (use_power_now_) {
      if (!read_i64_file(power_.c_str(), p, err)) return fail(power_, err);
      w = std::fabs(double(p)) * 1e-6;
    } else {
      if (!read_i64_file(current_.c_str(), i, err)) return fail(current_, err);
      if (!read_i64_file(voltage_.c_str(), v, err)) return fail(voltage_, err);
      w = std::fabs(double(i)) * std::fabs(double(v)) * 1e-12;
    }
    const std::int64_t t = midpoint_ns(a, monotonic_ns());
    if (!(w <= kMaxBatteryW)) {
      set_error((use_power_now_ ? power_ : current_ + " x " + voltage_) + ": " + implausible_text(w));
      return std::nullopt;
    }
    clear_error();
    tracker_.observe(w, t);
    return Sample{t, w};
  }

 private:
  std::optional<Sample> fail(const std::string& path, int err) {
    set_error(path + ": " + errno_text(err));
    return std::nullopt;
  }
  std::string power_, current_, voltage_;
  bool use_power_now_;
};

// Average power between two changes of energy_now (uWh), or of charge_now (uAh)
// times voltage_now. Coarser and slower than power_now, but it is what the
// fuel gauge integrates itself, so it does not miss short spikes.
class BatteryEnergySource final : public SourceBase {
 public:
  BatteryEnergySource(std::string id, std::string dir, bool use_energy_now)
      : SourceBase(std::move(id), "battery", Kind::Gauge, kEnergyNominalS),
        energy_(join_path(dir, "energy_now")), charge_(join_path(dir, "charge_now")),
        voltage_(join_path(dir, "voltage_now")), use_energy_(use_energy_now) {}

  std::optional<Sample> read() override {
    std::int64_t raw = 0, v = 0;
    int err = 0;
    const std::int64_t a = monotonic_ns();
    const std::string& path = use_energy_ ? energy_ : charge_;
    if (!read_i64_file(path.c_str(), raw, err)) {
      set_error(path + ": " + errno_text(err));
      return std::nullopt;
    }
    // Charge to energy at the present voltage; only charge changes count as
    // updates, since the voltage moves with every load step.
    double per_unit_j = 3.6e-3;  // 1 uWh
    if (!use_energy_) {
      if (!read_i64_file(voltage_.c_str(), v, err)) {
        set_error(voltage_ + ": " + errno_text(err));
        return std::nullopt;
      }
      per_unit_j = double(v) * 1e-6 * 3.6e-3;  // 1 uAh at v uV
    }
    const std::int64_t t = midpoint_ns(a, monotonic_ns());
    clear_error();
    tracker_.observe(double(raw), t);
    if (!have_raw_) {
      have_raw_ = true;
      raw_ = raw;
      return std::nullopt;
    }
    if (raw != raw_) {
      if (have_change_) {
        const double dt = double(t - change_t_) * 1e-9;
        if (dt > 0) {
          watts_ = std::fabs(double(raw - change_raw_)) * per_unit_j / dt;
          have_watts_ = true;
        }
      }
      // The value before the first change was set at an unknown time, so the
      // first estimate needs two observed changes.
      have_change_ = true;
      change_raw_ = raw;
      change_t_ = t;
      raw_ = raw;
    }
    if (!have_watts_) return std::nullopt;
    return Sample{t, watts_};
  }

 private:
  std::string energy_, charge_, voltage_;
  bool use_energy_;
  bool have_raw_ = false, have_change_ = false, have_watts_ = false;
  std::int64_t raw_ = 0, change_raw_ = 0, change_t_ = 0;
  double watts_ = 0;
};

bool readable_int(const std::string& path, int* err = nullptr) { return read_int(path, err).has_value(); }

}  // namespace

void probe_battery(const std::string& root, Discovery& d) {
  const std::string base = under_root(root, "/sys/class/power_supply");
  auto none = [&](std::string reason) {
    SourceStatus s;
    s.id = "battery:*";
    s.domain = "battery";
    s.kind = Kind::Gauge;
    s.reason = std::move(reason);
    s.fix = "none: only a laptop running on its battery has this source; use RAPL or an external meter";
    d.status.push_back(std::move(s));
  };
  int found = 0;
  std::vector<std::pair<std::string, std::pair<std::string, bool>>> gauges;  // name -> (dir, power_now)
  for (const auto& n : list_dir(base)) {
    const std::string dir = join_path(base, n);
    if (read_trimmed(join_path(dir, "type")).value_or("") != "Battery") continue;
    if (read_trimmed(join_path(dir, "scope")).value_or("") == "Device") continue;  // mouse, headset
    ++found;
    if (auto present = read_int(join_path(dir, "present")); present && *present == 0) {
      SourceStatus s;
      s.id = "battery:" + n;
      s.domain = "battery";
      s.kind = Kind::Gauge;
      s.reason = "battery bay " + n + " is empty (present = 0)";
      s.fix = "none: insert the battery, or use the other one";
      d.status.push_back(std::move(s));
      continue;
    }
    const BatteryStatus st = parse_battery_status(read_trimmed(join_path(dir, "status")).value_or(""));
    std::string status_note = std::string("status ") + to_string(st);
    if (st == BatteryStatus::Charging)
      status_note += ": while charging the value is the power going into the battery, not the machine's draw";
    else if (st == BatteryStatus::Full || st == BatteryStatus::NotCharging)
      status_note += ": an idle battery carries little or no current, so this is not the machine's draw";
    else if (st == BatteryStatus::Unknown)
      status_note += ": neither charging nor discharging by its own account, so this is not the machine's draw";
    status_note += " (the headline takes a battery only while it discharges)";

    SourceStatus g;
    g.id = "battery:" + n;
    g.domain = "battery";
    g.kind = Kind::Gauge;
    g.update_interval_s = kPowerNominalS;
    int e1 = 0, e2 = 0, e3 = 0;
    const auto pw = read_int(join_path(dir, "power_now"), &e1);
    const auto cur = read_int(join_path(dir, "current_now"), &e2);
    const auto volt = read_int(join_path(dir, "voltage_now"), &e3);
    const bool power_ok = pw && std::fabs(double(*pw)) * 1e-6 <= kMaxBatteryW;
    const bool cv_ok = cur && volt && std::fabs(double(*cur)) * std::fabs(double(*volt)) * 1e-12 <= kMaxBatteryW;
    // Two readings of one quantity (sysfs-class-power: power_now in uW;
    // current_now in uA x voltage_now in uV): a factor of 10 or more between
    // them is a unit error in one (a driver writing mW, say). The product of
    // two attributes is the consistent reading; power_now is set aside.
    std::string cross_note;
    bool power_inconsistent = false;
    if (power_ok && cv_ok && *pw != 0) {
      const double p_w = std::fabs(double(*pw)) * 1e-6, cv_w = std::fabs(double(*cur)) * std::fabs(double(*volt)) * 1e-12;
      const double ratio = cv_w > 0 ? p_w / cv_w : 0;
      if (cv_w > 0 && (ratio < 0.1 || ratio > 10)) {
        power_inconsistent = true;
        char b[200];
        std::snprintf(b, sizeof b,
                      "power_now (%.4g W) disagrees with current_now x voltage_now (%.4g W) by a factor of %.3g: "
                      "a unit error; read current_now x voltage_now",
                      p_w, cv_w, ratio < 1 ? 1 / ratio : ratio);
        cross_note = b;
      }
    }
    const bool has_power = power_ok && !power_inconsistent;
    const bool has_cv = cv_ok;
    if (!has_power && !has_cv && (pw || (cur && volt))) {
      g.reason = "battery " + n + ": " +
                 (pw ? "power_now " + implausible_text(std::fabs(double(*pw)) * 1e-6)
                     : "current_now x voltage_now " +
                           implausible_text(std::fabs(double(*cur)) * std::fabs(double(*volt)) * 1e-12));
      g.fix = "none: a firmware or driver fault; use battery-energy:" + n + ", RAPL or an external meter";
    } else if (has_power || has_cv) {
      g.available = true;
      g.note = std::string(has_power ? "power_now" : "current_now x voltage_now") + "; " + status_note +
               (cross_note.empty() ? "" : "; " + cross_note);
      d.sources.push_back(std::make_unique<BatteryPowerSource>(g.id, dir, has_power));
      gauges.push_back({n, {dir, has_power}});
    } else {
      g.reason = "battery " + n + " reports neither power_now nor current_now and voltage_now" +
                 std::string(e1 == EINVAL || e2 == EINVAL || e3 == EINVAL ? " as numbers" : "");
      g.fix = "none: use battery-energy:" + n + " (energy_now differences) if listed";
    }
    d.status.push_back(g);

    SourceStatus e;
    e.id = "battery-energy:" + n;
    e.domain = "battery";
    e.kind = Kind::Gauge;
    e.update_interval_s = kEnergyNominalS;
    const bool has_energy = readable_int(join_path(dir, "energy_now"));
    const bool has_charge = readable_int(join_path(dir, "charge_now")) && readable_int(join_path(dir, "voltage_now"));
    if (has_energy || has_charge) {
      e.available = true;
      e.note = std::string(has_energy ? "energy_now" : "charge_now x voltage_now") +
               " differences: first value after two changes; " + status_note;
      d.sources.push_back(std::make_unique<BatteryEnergySource>(e.id, dir, has_energy));
    } else {
      e.reason = "battery " + n + " reports neither energy_now nor charge_now and voltage_now";
      e.fix = "none: use battery:" + n;
    }
    d.status.push_back(std::move(e));
    if (g.available && e.available) {
      // Both measure the same battery: never add them.
      d.status[d.status.size() - 2].note += "; same battery as battery-energy:" + n;
    }
  }
  if (gauges.size() >= 2) {
    // The machine draws from all its batteries at once (or one after the
    // other); only their sum is its draw. Each part is read by a reader of
    // its own, so the single-battery sources stay as they are.
    SourceStatus s;
    s.id = "battery:sum";
    s.domain = "battery";
    s.kind = Kind::Gauge;
    s.update_interval_s = kPowerNominalS;
    s.available = true;
    std::vector<std::unique_ptr<PowerSource>> parts;
    for (const auto& [n, dp] : gauges) {
      s.sum_of.push_back("battery:" + n);
      s.contains.push_back("battery:" + n);
      parts.push_back(std::make_unique<BatteryPowerSource>("battery:" + n, dp.first, dp.second));
    }
    s.note = "sum of";
    for (const auto& id : s.sum_of) s.note += " " + id;
    s.note += "; each battery's magnitude, so it is the machine's draw only while none charges"
              " (the headline rule checks every part's status)";
    d.sources.push_back(make_summed_source(s.id, s.domain, std::move(parts)));
    d.status.push_back(std::move(s));
  }
  if (!found)
    none(is_directory(base) ? "no battery in " + base + " (a desktop, a server or a virtual machine)"
                            : "no " + base);
}

}  // namespace flopwatt::power
