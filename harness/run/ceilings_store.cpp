#include "harness/run/ceilings_store.h"

#include <fmt/core.h>
#include <omp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cpu/bandwidth.h"
#include "cpu/core_trip.h"
#include "cpu/peak.h"
#include "harness/output/safe_file.h"
#include "harness/run/context.h"
#include "workloads/error.h"
#include "workloads/gpt2/exp_rate.h"

namespace fs = std::filesystem;

namespace flopwatt {

using nlohmann::json;

std::string peak_dir() {
  const char* env = std::getenv("FLOPWATT_PEAK_DIR");
  if (env && *env) return env;
  // A cache of this machine, not a result: the XDG base directory
  // specification's $XDG_CACHE_HOME (absolute only), else ~/.cache.
  fs::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = fs::path(home) / ".cache";
  else return "results/peaks";
  return (base / "flopwatt" / "peaks").string();
}

std::string peak_file(const std::string& dir, const std::string& host, const std::string& cpu) {
  std::string name = host + "-" + (cpu.empty() ? "unknown-cpu" : cpu);
  for (auto& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return (fs::path(dir) / (name + ".json")).string();
}

json to_json(const StoredPeak& p) {
  json by = json::array();
  for (const auto& c : p.by_threads) by.push_back(to_json(c));
  return {{"what", "flopwatt machine ceilings"}, {"format", kStoredPeakFormat}, {"host", p.host}, {"cpu", p.cpu},
          {"kernel", p.kernel},                 {"run_id", p.run_id}, {"measured_by", p.measured_by},
          {"measured_at", p.measured_at},       {"by_threads", by}};
}

std::optional<StoredPeak> stored_peak_from_json(const json& j) {
  if (!j.is_object() || j.value("what", "") != "flopwatt machine ceilings") return std::nullopt;
  try {
    StoredPeak p;
    p.host = j.value("host", "");
    p.cpu = j.value("cpu", "");
    p.kernel = j.value("kernel", "");
    p.run_id = j.value("run_id", "");
    p.measured_by = j.value("measured_by", "");
    p.format = j.value("format", 1);
    p.measured_at = j.at("measured_at").get<std::time_t>();
    for (const auto& c : j.at("by_threads")) {
      p.by_threads.push_back(ceilings_from_json(c));
      // Sets stored before each kept its own time are as old as the file.
      if (p.by_threads.back().measured_at == 0) p.by_threads.back().measured_at = p.measured_at;
    }
    return p;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool write_stored_peak(const std::string& file, const StoredPeak& p, std::string* why) {
  try {
    const fs::path f(file);
    OutputDir dir(f.parent_path().empty() ? "." : f.parent_path().string(), "FLOPWATT_PEAK_DIR");
    dir.replace(f.filename().string(), to_json(p).dump(1) + "\n");
    return true;
  } catch (const InputError& e) {
    if (why) *why = e.what();
    return false;
  }
}

// A stored peak's sets at one thread count: one per placement measured.
static std::vector<Ceilings> sets_at(const std::vector<Ceilings>& by_threads, int threads) {
  std::vector<Ceilings> sets;
  std::copy_if(by_threads.begin(), by_threads.end(), std::back_inserter(sets),
               [&](const Ceilings& c) { return c.threads == threads; });
  return sets;
}

// Keeps the sets current at `now`: measured at most max_age_s before it (a
// clock that went back makes a set not current).
static void drop_expired(std::vector<Ceilings>& sets, std::time_t now, double max_age_s) {
  sets.erase(std::remove_if(sets.begin(), sets.end(),
                            [&](const Ceilings& c) {
                              const double age = std::difftime(now, c.measured_at);
                              return age < 0 || age > max_age_s;
                            }),
             sets.end());
}

std::optional<HostCeilings> reuse_stored(const std::string& file, const std::string& host, const std::string& cpu,
                                         int threads, std::time_t now, double max_age_s, std::string* why,
                                         const std::vector<double>& trip_ns) {
  auto no = [&](std::string reason) -> std::optional<HostCeilings> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  std::ifstream in(file);
  if (!in) return no("no stored peak " + file);
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  const auto p = stored_peak_from_json(j);
  if (!p) return no(file + " is not a stored peak");
  if (p->host != host || p->cpu != cpu) return no(file + " is another machine's");
  if (p->format < kStoredPeakFormat)
    return no(fmt::format("{} is format {}, without the ceilings of format {} (per stream pattern and cache "
                          "level, the exp rate)",
                          file, p->format, kStoredPeakFormat));
  std::vector<Ceilings> sets = sets_at(p->by_threads, threads);
  if (sets.empty()) return no(file + " has no ceilings for " + std::to_string(threads) + " threads");
  const auto newest = std::max_element(sets.begin(), sets.end(), [](const Ceilings& a, const Ceilings& b) {
                        return a.measured_at < b.measured_at;
                      })->measured_at;
  drop_expired(sets, now, max_age_s);
  if (sets.empty()) {
    const double age = std::difftime(now, newest);
    if (age < 0) return no(fmt::format("{} was measured {:.0f} s ahead of this clock", file, -age));
    return no(fmt::format("{}'s ceilings for {} threads are {:.0f} h old", file, threads, age / 3600));
  }
  const bool this_placement = std::any_of(
      sets.begin(), sets.end(), [&](const Ceilings& c) { return same_placement(c.core_round_trip_ns, trip_ns); });
  if (!this_placement) {
    std::vector<double> probes;
    for (const auto& c : sets) probes.insert(probes.end(), c.core_round_trip_ns.begin(), c.core_round_trip_ns.end());
    const auto [lo, hi] = std::minmax_element(probes.begin(), probes.end());
    return no(fmt::format("{} has ceilings for {} threads measured with the cores {:.0f}-{:.0f} ns apart, and they "
                          "are {:.0f} ns apart now: another placement of the vCPUs, not measured yet",
                          file, threads, *lo, *hi, trip_ns.front()));
  }
  Ceilings best = best_of_placements(sets);
  const double age = std::difftime(now, best.measured_at);
  return HostCeilings{std::move(best), file, age};
}

std::vector<Ceilings> merge_by_placement(std::vector<Ceilings> fresh, const std::vector<Ceilings>& old) {
  const std::size_t n = fresh.size();
  for (const auto& o : old) {
    bool replaced = false;
    for (std::size_t i = 0; i < n && !replaced; ++i)
      replaced = fresh[i].threads == o.threads &&
                 (o.core_round_trip_ns.empty() || (one_placement(fresh[i].core_round_trip_ns) &&
                                                   same_placement(fresh[i].core_round_trip_ns, o.core_round_trip_ns)));
    if (!replaced) fresh.push_back(o);
  }
  return fresh;
}

namespace {

// The file's stored peak when it is this machine's and current in format,
// with only its sets current at `now`: what a new store keeps beside what it
// measured.
std::optional<StoredPeak> current_stored(const std::string& file, const std::string& host, const std::string& cpu,
                                         std::time_t now) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto old = stored_peak_from_json(json::parse(ss.str(), nullptr, false));
  if (!old || old->host != host || old->cpu != cpu || old->format < kStoredPeakFormat) return std::nullopt;
  drop_expired(old->by_threads, now, kPeakMaxAgeS);
  return old;
}

std::string hostname() {
  char b[256] = {};
  if (gethostname(b, sizeof b - 1) != 0) return "unknown-host";
  return b;
}

std::string kernel_release() {
  utsname u{};
  return uname(&u) == 0 ? u.release : "";
}

std::map<std::string, double> capacities(const std::string& root, int threads) {
  std::map<std::string, double> out;
  for (const auto& l : cpu::level_capacities(cpu::cache_topology(root), threads)) {
    std::string name = l.level;
    for (auto& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    out[name] = double(l.bytes);
  }
  return out;
}

// The short measurement: the SIMD peak (about 0.1 s per point), every
// stream at every level at the current thread count (about 0.02 s each) and
// the exp rate (0.1 s).
Ceilings measure_short(const std::string& root, int threads) {
  Ceilings c;
  c.label = "cpu";
  c.threads = threads;
  for (const auto& p : cpu::measure_peak(0.1))
    if (p.threads == threads && p.flop_per_s > 0) {
      double& best = c.peak_flop_per_s[p.dtype];
      best = std::max(best, p.flop_per_s);
    }
  for (const auto& ws : cpu::working_sets(cpu::cache_topology(root), threads)) {
    std::string level = ws.level;
    for (auto& ch : level) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    for (cpu::Stream s : cpu::all_streams()) {
      const cpu::BandwidthPoint p = cpu::measure_stream(s, ws, threads, 0.02);
      // p90, as ceilings_from_peak_run takes the fastest tenth of a full run's repetitions.
      if (p.verified && p.p90_bytes_per_s > 0) c.memory.push_back({level + "_" + p.stream, p.p90_bytes_per_s});
    }
  }
  c.capacity_bytes = capacities(root, threads);
  if (const double e = measure_exp_rate(threads, 0.1); e > 0) c.exp_per_s = e;
  return c;
}

}  // namespace

double measure_exp_rate(int threads, double seconds) {
  return cpu::best_throughput(gpt2::exps_until, threads, seconds);
}

std::vector<double> start_trip(const json& run_context) {
  if (const auto it = run_context.find("core_round_trip_ns"); it != run_context.end() && it->is_number())
    return {it->get<double>()};
  return {};
}

std::string moved_note(const std::vector<double>& probes_ns) {
  if (one_placement(probes_ns)) return "";
  return fmt::format("note: the cores were {:.0f} ns apart when the measurement started and {:.0f} ns when it "
                     "ended: the vCPUs moved while it ran, so these ceilings are stored beside each placement's own "
                     "and replace neither; run `flopwatt run peak` again for a set of one placement",
                     probes_ns.front(), probes_ns.back());
}

std::string store_peak_run(const Run& run, const std::string& root, std::string* why, std::string* note) {
  StoredPeak p;
  p.host = hostname();
  p.cpu = cpu_model(root);
  p.kernel = run.context.value("kernel", "");
  p.run_id = run.run_id;
  p.measured_by = "run peak";
  p.measured_at = std::time(nullptr);
  // The run's context has the probe from before the measurement; this one is after it.
  std::vector<double> trips = start_trip(run.context);
  if (const auto end = cpu::core_round_trip_ns(omp_get_max_threads())) trips.push_back(*end);
  if (note) *note = moved_note(trips);
  for (int t = 1; t <= omp_get_max_threads(); ++t)
    if (auto c = ceilings_from_peak_run(run, t)) {
      c->capacity_bytes = capacities(root, t);
      c->core_round_trip_ns = trips;
      c->measured_at = p.measured_at;
      p.by_threads.push_back(*c);
    }
  const std::string file = peak_file(peak_dir(), p.host, p.cpu);
  if (const auto old = current_stored(file, p.host, p.cpu, p.measured_at))
    p.by_threads = merge_by_placement(std::move(p.by_threads), old->by_threads);
  return write_stored_peak(file, p, why) ? file : "";
}

// This run's probe of the cores' round trip, as a set of probes (empty without one).
std::vector<double> trip_now(int threads) {
  if (const auto t = cpu::core_round_trip_ns(threads)) return {*t};
  return {};
}

std::optional<HostCeilings> stored_host_ceilings(const std::string& root, std::string* why) {
  const std::string host = hostname(), cpu = cpu_model(root);
  const std::string file = peak_file(peak_dir(), host, cpu);
  const int threads = omp_get_max_threads();
  const std::time_t now = std::time(nullptr);
  std::string other;
  if (auto r = reuse_stored(file, host, cpu, threads, now, kPeakMaxAgeS, &other, trip_now(threads))) return r;
  auto r = reuse_stored(file, host, cpu, threads, now, kPeakMaxAgeS, why);
  if (r) r->from += " (" + other + ")";
  return r;
}

HostCeilings host_ceilings(const std::string& root, const std::string& measured_by,
                           const std::vector<double>& start_trip_ns) {
  const int threads = omp_get_max_threads();
  const std::string host = hostname(), cpu = cpu_model(root);
  const std::string file = peak_file(peak_dir(), host, cpu);
  const std::time_t now = std::time(nullptr);
  std::string why;
  if (auto r = reuse_stored(file, host, cpu, threads, now, kPeakMaxAgeS, &why, start_trip_ns)) return *r;
  HostCeilings h;
  Ceilings c = measure_short(root, threads);
  c.core_round_trip_ns = start_trip_ns;
  for (double t : trip_now(threads)) c.core_round_trip_ns.push_back(t);
  c.measured_at = now;
  h.from = "measured now (short: " + why + ")";
  if (c.peak_flop_per_s.empty() && !c.dram()) return h;
  h.ceilings = c;
  StoredPeak p;
  p.host = host;
  p.cpu = cpu;
  p.kernel = kernel_release();
  p.measured_by = "short, by " + measured_by;
  p.measured_at = now;
  p.by_threads = {c};
  // Keep what a full `run peak` stored for other thread counts and placements.
  if (const auto old = current_stored(file, host, cpu, now))
    p.by_threads = merge_by_placement(std::move(p.by_threads), old->by_threads);
  const std::vector<Ceilings> sets = sets_at(p.by_threads, threads);
  if (sets.size() > 1) {
    h.ceilings = best_of_placements(sets);
    h.from += fmt::format(", at the best of it and the {} other placement(s) stored", sets.size() - 1);
  }
  std::string fail;
  if (write_stored_peak(file, p, &fail)) h.from += "; stored in " + file;
  else h.from += "; not stored: " + fail;
  return h;
}

std::optional<Ceilings> modelled_ceilings(const Backend& b, DType) {
  const auto m = b.modelled_ceilings();
  if (!m) return std::nullopt;
  Ceilings c;
  c.label = b.name() + " (modelled)";
  // The array multiplies bf16 whatever the host hands it: one peak for both dtypes.
  c.peak_flop_per_s["bf16"] = m->peak_flop_per_s;
  c.peak_flop_per_s["fp32"] = m->peak_flop_per_s;
  c.memory.push_back({"dram_model", m->dram_bytes_per_s});
  EnergyFit e;
  e.j_per_flop = m->j_per_flop;
  e.j_per_byte = m->j_per_byte;
  e.constant_w = m->static_w;
  c.modelled_energy = e;
  return c;
}

RooflineSet settle_roofline(const std::vector<const Backend*>& backends, DType dtype, const std::string& root,
                            bool measure_host, const std::string& measured_by, const std::vector<double>& start_trip_ns,
                            json* context) {
  RooflineSet roofs;
  json ctx = {{"host", nullptr}, {"from", "not measured (--no-peak)"}, {"age_s", nullptr}};
  if (measure_host) {
    const HostCeilings h = host_ceilings(root, measured_by, start_trip_ns);
    roofs.host = h.ceilings;
    ctx["host"] = h.ceilings ? to_json(*h.ceilings) : json(nullptr);
    ctx["from"] = h.from;
    ctx["age_s"] = h.age_s ? json(*h.age_s) : json(nullptr);
  }
  for (const Backend* b : backends)
    if (auto c = modelled_ceilings(*b, dtype)) {
      ctx["modelled"][b->name()] = to_json(*c);
      roofs.modelled[b->name()] = std::move(*c);
    }
  if (context) *context = ctx;
  return roofs;
}

}  // namespace flopwatt
