#include "harness/run/ceilings_store.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/run/context.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path p = fs::temp_directory_path() / ("flopwatt_ceilings_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(p);
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
};

Ceilings at(int threads, double peak, double dram) {
  Ceilings c;
  c.label = "cpu";
  c.threads = threads;
  c.peak_flop_per_s["fp32"] = peak;
  c.memory.push_back({"dram_triad", dram});
  return c;
}

StoredPeak stored(std::time_t when) {
  StoredPeak p;
  p.host = "box";
  p.cpu = "Test CPU 9000";
  p.measured_by = "run peak";
  p.measured_at = when;
  p.by_threads = {at(1, 50e9, 10e9), at(2, 100e9, 15e9)};
  return p;
}

TEST(CeilingsStore, FileNameIsHostAndCpuWithUnsafeCharactersReplaced) {
  EXPECT_EQ(peak_file("d", "box", "AMD Ryzen 7 7840U w/ Radeon"), "d/box-AMD_Ryzen_7_7840U_w__Radeon.json");
  EXPECT_EQ(peak_file("d", "../x", ""), "d/.._x-unknown-cpu.json");
}

TEST(CeilingsStore, ReusesARecentFileOfThisMachineAndSaysItsAge) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000;
  std::string why;
  ASSERT_TRUE(write_stored_peak(f, stored(now - 3600), &why)) << why;
  const auto r = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->from, f);
  EXPECT_DOUBLE_EQ(*r->age_s, 3600);
  EXPECT_DOUBLE_EQ(r->ceilings->peak_flop_per_s.at("fp32"), 100e9);
  EXPECT_DOUBLE_EQ(r->ceilings->dram()->bytes_per_s, 15e9);
}

TEST(CeilingsStore, RefusesStaleForeignDamagedOrMissingFilesWithTheReason) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000;
  std::string why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("no stored peak"), std::string::npos) << why;
  ASSERT_TRUE(write_stored_peak(f, stored(now - 8 * 24 * 3600), &why));
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("192 h old"), std::string::npos) << why;
  ASSERT_TRUE(write_stored_peak(f, stored(now + 60), &why));  // a clock that went back
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  ASSERT_TRUE(write_stored_peak(f, stored(now), &why));
  EXPECT_FALSE(reuse_stored(f, "other", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("another machine"), std::string::npos) << why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9001", 2, now, kPeakMaxAgeS, &why));
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 4, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("no ceilings for 4 threads"), std::string::npos) << why;
  std::ofstream(f) << "{\"what\": \"flopwatt machine ceilings\", \"by_threads\": 3}";
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("not a stored peak"), std::string::npos) << why;
  std::ofstream(f) << "not json";
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
}

// A file from before per-pattern ceilings (no "format", DRAM streams only)
// still loads, but is not reused: its DRAM-only roofs were what AdamW and
// the residual adds exceeded, so the next run measures again and says why.
TEST(CeilingsStore, AFormat1FileLoadsButIsMeasuredAgain) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000;
  nlohmann::json j = to_json(stored(now - 60));
  EXPECT_EQ(j["format"], kStoredPeakFormat);
  j.erase("format");
  for (auto& c : j["by_threads"]) c.erase("capacity_bytes");
  std::ofstream(f) << j.dump();
  const auto old = stored_peak_from_json(j);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->format, 1);
  EXPECT_DOUBLE_EQ(old->by_threads[1].dram()->bytes_per_s, 15e9);
  std::string why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("format 1"), std::string::npos) << why;

  StoredPeak levelled = stored(now - 60);
  levelled.by_threads[1].capacity_bytes = {{"l2", 2e6}, {"llc", 32e6}};
  ASSERT_TRUE(write_stored_peak(f, levelled, &why)) << why;
  const auto r = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->ceilings->capacity_bytes, levelled.by_threads[1].capacity_bytes);
}

// A format 2 file has every stream but no exp rate: GELU would be held to the
// FMA peak at one FLOP per exp, so it is measured again, saying why.
TEST(CeilingsStore, AFormat2FileWithoutTheExpRateIsMeasuredAgain) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000;
  StoredPeak p = stored(now - 60);
  p.by_threads[1].exp_per_s = 18e9;
  nlohmann::json j = to_json(p);
  EXPECT_EQ(j["by_threads"][1]["exp_per_s"], 18e9);
  j["format"] = 2;
  for (auto& c : j["by_threads"]) c.erase("exp_per_s");
  std::ofstream(f) << j.dump();
  std::string why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why));
  EXPECT_NE(why.find("format 2"), std::string::npos) << why;
  EXPECT_NE(why.find("exp rate"), std::string::npos) << why;
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  const auto r = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->ceilings->exp_per_s, 18e9);
}

class ModelBackend : public Backend {
 public:
  std::string name() const override { return "npu:sim-test"; }
  Availability availability() const override { return {true, ""}; }
  bool supports(const GemmDesc&) const override { return true; }
  void gemm(const GemmDesc&, const void*, const void*, void*) override {}
  bool simulated() const override { return true; }
  std::optional<ModelledCeilings> modelled_ceilings() const override {
    return ModelledCeilings{2e12, 24e9, 0.5e-12, 30e-12, 0.6};
  }
};

Ceilings placed(int threads, double peak, std::vector<double> trips) {
  Ceilings c = at(threads, peak, 10e9);
  c.core_round_trip_ns = std::move(trips);
  return c;
}

// A store keeps each placement's ceilings: what was just measured replaces
// the entries of its thread count that could be its placement (or have no
// probes), and leaves the other placement's and other thread counts'.
TEST(CeilingsStore, EachPlacementKeepsTheCeilingsLastMeasuredInIt) {
  const std::vector<Ceilings> old = {placed(1, 50e9, {330}), placed(2, 100e9, {330, 341}), placed(2, 90e9, {75}),
                                     placed(2, 80e9, {})};
  const auto merged = merge_by_placement({placed(2, 120e9, {81, 88})}, old);
  std::vector<double> peaks;
  for (const auto& c : merged) peaks.push_back(c.peak_flop_per_s.at("fp32"));
  EXPECT_EQ(peaks, (std::vector<double>{120e9, 50e9, 100e9})) << "the near 2-thread and unprobed ones replaced";
  // Measured while the placement changed: it replaces neither placement's
  // own entry (a far DRAM stream measured in the near placement would lower
  // the far roofs), only the unprobed one; the next set of one placement
  // replaces it.
  const auto moved = merge_by_placement({placed(2, 120e9, {81, 330})}, old);
  peaks.clear();
  for (const auto& c : moved) peaks.push_back(c.peak_flop_per_s.at("fp32"));
  EXPECT_EQ(peaks, (std::vector<double>{120e9, 50e9, 100e9, 90e9}));
  EXPECT_EQ(merge_by_placement({placed(2, 110e9, {330})}, moved).size(), 3u) << "the moved set and the far one";
  EXPECT_TRUE(one_placement({81, 88, 150}));
  EXPECT_FALSE(one_placement({81, 330}));
  EXPECT_TRUE(one_placement({}));
  // `run peak` says so (its end probe against the one its run opened with).
  const std::string note = moved_note({81, 330});
  EXPECT_NE(note.find("the cores were 81 ns apart when the measurement started and 330 ns when it ended"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("replace neither"), std::string::npos) << note;
  EXPECT_EQ(moved_note({81, 88}), "");
  EXPECT_EQ(moved_note({81}), "");
  // Without probes (one thread, or a probe that could not finish): any entry of its thread count.
  EXPECT_EQ(merge_by_placement({placed(2, 120e9, {})}, old).size(), 2u);
}

// A run reuses the stored ceilings once its own placement has been measured
// (a set without probes may be any placement), at the best of every
// placement's: a roof must hold wherever the vCPUs sit while its ops run.
// Where its placement has not been measured it measures (the reason says so).
TEST(CeilingsStore, ARunTakesTheBestOfEveryPlacementOnceItsOwnIsMeasured) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000;
  StoredPeak p = stored(now - 60);
  Ceilings near = placed(2, 100e9, {75, 81}), far = placed(2, 90e9, {330});
  near.memory = {{"dram_update", 60e9}, {"dram_read", 38e9}};
  far.memory = {{"dram_update", 104e9}, {"llc_read", 165e9}};
  far.exp_per_s = 18e9;
  p.by_threads = {near, far, placed(1, 50e9, {80})};
  std::string why;
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  for (const std::vector<double>& trip : {std::vector<double>{84}, {350}, {}}) {
    SCOPED_TRACE(::testing::Message() << (trip.empty() ? 0.0 : trip[0]) << " ns now");
    const auto r = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, trip);
    ASSERT_TRUE(r) << why;
    const Ceilings& c = *r->ceilings;
    EXPECT_EQ(c.peak_flop_per_s.at("fp32"), 100e9);
    std::map<std::string, double> mem;
    for (const auto& m : c.memory) mem[m.name] = m.bytes_per_s;
    EXPECT_EQ(mem, (std::map<std::string, double>{{"dram_update", 104e9}, {"dram_read", 38e9}, {"llc_read", 165e9}}));
    EXPECT_EQ(c.exp_per_s, 18e9);
    EXPECT_EQ(c.core_round_trip_ns, (std::vector<double>{75, 81, 330}));
  }
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {1500}));
  EXPECT_NE(why.find("measured with the cores 75-330 ns apart, and they are 1500 ns apart now"), std::string::npos)
      << why;
  p.by_threads.push_back(placed(2, 50e9, {}));
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  EXPECT_TRUE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {1500}))
      << "a set without probes may have been measured there";
}

// Each placement's set ages on its own: a file rewritten yesterday for the
// near placement does not make the far placement's set, measured eight days
// ago, current again. A run in the far placement measures; a near run takes
// the near set alone, at its own age, and the merge of a store drops the
// expired set. Files from before sets kept their time age as the file.
TEST(CeilingsStore, EachStoredSetAgesOnItsOwn) {
  TempDir t;
  const std::string f = (t.p / "p.json").string();
  const std::time_t now = 1'800'000'000, day = 24 * 3600;
  StoredPeak p = stored(now - day);
  Ceilings near = placed(2, 100e9, {75}), far = placed(2, 140e9, {330});
  near.measured_at = now - day;
  far.measured_at = now - 8 * day;
  p.by_threads = {near, far};
  std::string why;
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {340}));
  EXPECT_NE(why.find("another placement"), std::string::npos) << why;
  const auto r = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {80});
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->ceilings->peak_flop_per_s.at("fp32"), 100e9) << "not the expired far set's 140e9";
  EXPECT_DOUBLE_EQ(*r->age_s, double(day));
  EXPECT_EQ(r->ceilings->measured_at, now - day);
  // Both current: the best of them, as old as the older.
  far.measured_at = now - 3 * day;
  p.by_threads = {near, far};
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  const auto both = reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {80});
  ASSERT_TRUE(both) << why;
  EXPECT_EQ(both->ceilings->peak_flop_per_s.at("fp32"), 140e9);
  EXPECT_DOUBLE_EQ(*both->age_s, double(3 * day));
  // Every set expired: the reason is the newest one's age.
  near.measured_at = now - 9 * day;
  far.measured_at = now - 8 * day;
  p.by_threads = {near, far};
  ASSERT_TRUE(write_stored_peak(f, p, &why)) << why;
  EXPECT_FALSE(reuse_stored(f, "box", "Test CPU 9000", 2, now, kPeakMaxAgeS, &why, {80}));
  EXPECT_NE(why.find("ceilings for 2 threads are 192 h old"), std::string::npos) << why;
  // A file whose sets have no time of their own: the file's.
  nlohmann::json j = to_json(stored(now - 2 * day));
  for (auto& c : j["by_threads"]) {
    EXPECT_FALSE(c.contains("measured_at"));
  }
  const auto loaded = stored_peak_from_json(j);
  ASSERT_TRUE(loaded);
  for (const auto& c : loaded->by_threads) EXPECT_EQ(c.measured_at, now - 2 * day);
}

TEST(CeilingsStore, SimulatedBackendsBringTheirDeviceModelLabelled) {
  ModelBackend b;
  nlohmann::json ctx;
  const RooflineSet s = settle_roofline({&b}, DType::BF16, "/", false, "test", {}, &ctx);
  EXPECT_FALSE(s.host);
  ASSERT_EQ(s.modelled.count("npu:sim-test"), 1u);
  const Ceilings& c = s.modelled.at("npu:sim-test");
  EXPECT_EQ(c.label, "npu:sim-test (modelled)");
  EXPECT_DOUBLE_EQ(*c.peak("bf16"), 2e12);
  EXPECT_DOUBLE_EQ(c.dram()->bytes_per_s, 24e9);
  ASSERT_TRUE(c.modelled_energy);
  EXPECT_DOUBLE_EQ(c.modelled_energy->j_per_byte, 30e-12);
  EXPECT_DOUBLE_EQ(c.modelled_energy->constant_w, 0.6);
  EXPECT_TRUE(ctx["host"].is_null());
  EXPECT_EQ(ctx["from"], "not measured (--no-peak)");
  EXPECT_EQ(ctx["modelled"]["npu:sim-test"]["label"], "npu:sim-test (modelled)");
}

}  // namespace
}  // namespace flopwatt

namespace {

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

// A cache of this machine goes to the XDG cache directory, never the working
// directory (it used to be results/peaks of wherever flopwatt was started).
TEST(PeakDir, XdgCacheHomeThenHomeCacheAndTheOverride) {
  ScopedEnv no_override("FLOPWATT_PEAK_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/tmp/cache-test");
    EXPECT_EQ(flopwatt::peak_dir(), "/var/tmp/cache-test/flopwatt/peaks");
  }
  {
    ScopedEnv relative("XDG_CACHE_HOME", "relative/cache");  // the spec ignores a relative path
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(flopwatt::peak_dir(), "/home/someone/.cache/flopwatt/peaks");
  }
  ScopedEnv override_dir("FLOPWATT_PEAK_DIR", "/srv/peaks");
  EXPECT_EQ(flopwatt::peak_dir(), "/srv/peaks");
}

// Every test executable runs with its cache and results store in the build
// tree (tests/test_environment.cpp), whatever the user's environment says: a
// test's run must neither reuse the machine's stored ceilings nor add its own
// to them, nor record itself in the user's store.
TEST(PeakDir, TestsKeepTheirCacheAndStoreInTheBuildTree) {
  EXPECT_EQ(flopwatt::peak_dir(), std::string(FLOPWATT_TEST_CACHE_HOME) + "/flopwatt/peaks");
  const char* data = std::getenv("XDG_DATA_HOME");
  ASSERT_NE(data, nullptr);
  EXPECT_STREQ(data, FLOPWATT_TEST_DATA_HOME);
  EXPECT_EQ(std::getenv("FLOPWATT_STORE"), nullptr);
}

// A run's ceilings are picked, and stored when measured, by the probe its
// context took when it opened: host_ceilings takes that probe rather than
// timing the cores a second time (a few milliseconds at every run's start).
TEST(CeilingsStore, HostCeilingsUseTheRunsStartProbe) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_peaks_probe_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ScopedEnv peaks("FLOPWATT_PEAK_DIR", dir.c_str());
  // No probe here can read 100 us: were the ceilings chosen by a probe of
  // their own, the set stored below would not start with it.
  const flopwatt::HostCeilings measured = flopwatt::host_ceilings("/", "test", {100000});
  ASSERT_TRUE(measured.ceilings) << measured.from;
  ASSERT_FALSE(measured.ceilings->core_round_trip_ns.empty());
  EXPECT_EQ(measured.ceilings->core_round_trip_ns[0], 100000) << measured.from;
  EXPECT_NE(measured.from.find("measured now"), std::string::npos) << measured.from;
  // The same placement reuses them; one the file has not seen has none to
  // reuse, which a second probe of the cores' own would have hidden.
  const flopwatt::HostCeilings again = flopwatt::host_ceilings("/", "test", {90000});
  EXPECT_EQ(again.from.find("measured now"), std::string::npos) << again.from;
  ASSERT_TRUE(again.ceilings);
  EXPECT_EQ(again.ceilings->core_round_trip_ns[0], 100000);
  fs::remove_all(dir);
}

// A short measurement stores its set with its own time, beside the other
// placements' current sets and without the expired ones, though the file
// itself was written an hour ago.
TEST(CeilingsStore, AStoreDropsOtherPlacementsExpiredSets) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flopwatt_peaks_expired_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ScopedEnv peaks("FLOPWATT_PEAK_DIR", dir.c_str());
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::string cpu = flopwatt::cpu_model("/");
  const std::time_t now = std::time(nullptr), day = 24 * 3600;
  const int threads = omp_get_max_threads();
  flopwatt::StoredPeak p;
  p.host = host;
  p.cpu = cpu;
  p.measured_by = "run peak";
  p.measured_at = now - 3600;
  flopwatt::Ceilings current, expired;
  for (flopwatt::Ceilings* c : {&current, &expired}) {
    c->label = "cpu";
    c->threads = threads;
    c->peak_flop_per_s["fp32"] = 1e9;
    c->memory.push_back({"dram_read", 1e9});
  }
  current.core_round_trip_ns = {3000};
  current.measured_at = now - 3600;
  expired.core_round_trip_ns = {30000};
  expired.measured_at = now - 8 * day;
  p.by_threads = {current, expired};
  const std::string file = flopwatt::peak_file(dir.string(), host, cpu);
  std::string why;
  ASSERT_TRUE(flopwatt::write_stored_peak(file, p, &why)) << why;
  // No probe reads 300 us: a placement the file has no set for.
  const flopwatt::HostCeilings h = flopwatt::host_ceilings("/", "test", {300000});
  ASSERT_TRUE(h.ceilings) << h.from;
  EXPECT_NE(h.from.find("measured now"), std::string::npos) << h.from;
  // The run's roof is the best of its set and the current stored one, as old as the older.
  EXPECT_EQ(h.ceilings->measured_at, now - 3600);
  std::ifstream in(file);
  const auto kept = flopwatt::stored_peak_from_json(nlohmann::json::parse(in, nullptr, false));
  ASSERT_TRUE(kept);
  std::vector<double> first_probes;
  for (const auto& c : kept->by_threads) first_probes.push_back(c.core_round_trip_ns.at(0));
  EXPECT_EQ(first_probes, (std::vector<double>{300000, 3000})) << "the 8-day-old set at 30 us is dropped";
  EXPECT_GE(kept->by_threads[0].measured_at, now);
  EXPECT_EQ(kept->by_threads[1].measured_at, now - 3600);
  fs::remove_all(dir);
}
