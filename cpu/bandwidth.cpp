#include "cpu/bandwidth.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "sysfs/files.h"

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

int arrays_of(Stream s) {
  switch (s) {
    case Stream::Read: case Stream::Write: return 1;
    case Stream::Copy: return 2;
    case Stream::Triad: return 3;
  }
  return 1;
}

// Small integers, so every sum and triad below is exact in fp32 whatever the
// order of operations; a wrong element cannot hide in rounding.
float a0(std::size_t i) { return float(i % 1024); }
float b0(std::size_t i) { return float((i * 7) % 512); }
float c0(std::size_t i) { return float((i * 3) % 256); }
float written(int pass) { return float(pass % 1000 + 1); }
constexpr float kTriadScale = 3.0f;

double exact_sum_of_a(std::size_t n) {
  const double full = double(n / 1024) * (1023.0 * 1024.0 / 2.0);
  const double r = double(n % 1024);
  return full + r * (r - 1) / 2;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

std::vector<CacheLevel> cache_topology(const std::string& root) {
  std::vector<CacheLevel> out;
  for (const auto& c : sysfs::cpu0_caches(root))
    if (c.type == "Data" || c.type == "Unified")
      out.push_back({c.level, c.type, c.bytes, std::max(1, int(c.shared_cpus.size())), "sysfs"});
  std::error_code ec;
  if (out.empty() && fs::equivalent(fs::path(root), "/", ec)) {
    const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    const struct {
      int level, name;
      const char* type;
    } levels[] = {{1, _SC_LEVEL1_DCACHE_SIZE, "Data"}, {2, _SC_LEVEL2_CACHE_SIZE, "Unified"},
                  {3, _SC_LEVEL3_CACHE_SIZE, "Unified"}, {4, _SC_LEVEL4_CACHE_SIZE, "Unified"}};
    for (const auto& l : levels)
      if (const long v = sysconf(l.name); v > 0)
        // sysconf does not say who shares a cache: the last level is taken as
        // shared by all online CPUs, the others as private.
        out.push_back({l.level, l.type, std::size_t(v), l.level >= 3 ? int(cpus) : 1, "sysconf"});
  }
  std::sort(out.begin(), out.end(), [](const CacheLevel& x, const CacheLevel& y) { return x.level < y.level; });
  return out;
}

std::vector<WorkingSet> working_sets(const std::vector<CacheLevel>& caches, int threads) {
  std::vector<WorkingSet> out;
  threads = std::max(threads, 1);
  const CacheLevel* l1 = nullptr;
  const CacheLevel* l2 = nullptr;
  const CacheLevel* llc = nullptr;
  for (const auto& c : caches) {
    if (c.level == 1) l1 = &c;
    if (c.level == 2) l2 = &c;
    if (!llc || c.level >= llc->level) llc = &c;
  }
  if (l1) out.push_back({"L1", l1->bytes / 2, "half of the " + std::to_string(l1->bytes >> 10) + " KiB L1d"});
  if (l2 && l2 != llc) out.push_back({"L2", l2->bytes / 2, "half of the " + std::to_string(l2->bytes >> 10) + " KiB L2"});
  if (llc && llc->level > 1) {
    // Threads on one cache share it: each gets half of its share.
    const int sharing = std::max(1, std::min(threads, llc->shared_by));
    out.push_back({"LLC", llc->bytes / std::size_t(sharing) / 2,
                   "half of the " + std::to_string(llc->bytes >> 10) + " KiB L" + std::to_string(llc->level) +
                       " shared by " + std::to_string(sharing) + " thread(s)"});
  }
  const std::size_t llc_bytes = llc ? llc->bytes : 0;
  constexpr std::size_t kMin = std::size_t(64) << 20, kMax = std::size_t(1) << 30;
  const std::size_t dram = std::clamp<std::size_t>(4 * llc_bytes, kMin, kMax);
  std::string basis = !llc ? "64 MiB (no cache topology known)"
                      : 4 * llc_bytes > kMax ? "1 GiB per thread (capped; 4x the last-level cache would be " +
                                                   std::to_string((4 * llc_bytes) >> 20) + " MiB)"
                                             : "4x the last-level cache, at least 64 MiB";
  out.push_back({"DRAM", dram, basis});
  return out;
}

const char* stream_name(Stream s) {
  switch (s) {
    case Stream::Read: return "read";
    case Stream::Write: return "write";
    case Stream::Copy: return "copy";
    case Stream::Triad: return "triad";
  }
  return "?";
}

int stream_bytes_per_element(Stream s) { return 4 * (s == Stream::Write ? 1 : arrays_of(s)); }

StreamBuffers::StreamBuffers(std::size_t n, Stream s)
    : a(n), b(arrays_of(s) >= 2 ? n : 0), c(arrays_of(s) >= 3 ? n : 0) {
  for (std::size_t i = 0; i < n; ++i) a[i] = a0(i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = b0(i);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = c0(i);
}

double run_stream_pass(Stream s, StreamBuffers& buf, int pass) {
  const std::size_t n = buf.a.size();
  float* __restrict a = buf.a.data();
  float* __restrict b = buf.b.data();
  const float* __restrict c = buf.c.data();
  switch (s) {
    case Stream::Read: {
      // Blocks of 1024 keep every fp32 partial sum an integer below 2^24 (exact,
      // so the vectorised reduction's order does not matter).
      double total = 0;
      for (std::size_t i0 = 0; i0 < n; i0 += 1024) {
        const std::size_t i1 = std::min(n, i0 + 1024);
        float s32 = 0;
#pragma omp simd reduction(+ : s32)
        for (std::size_t i = i0; i < i1; ++i) s32 += a[i];
        total += s32;
      }
      return total;
    }
    case Stream::Write: {
      const float v = written(pass);
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) a[i] = v;
      return 0;
    }
    case Stream::Copy:
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) b[i] = a[i];
      return 0;
    case Stream::Triad:
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + kTriadScale * c[i];
      return 0;
  }
  return 0;
}

bool check_stream(Stream s, const StreamBuffers& buf, int passes, double read_sum) {
  const std::size_t n = buf.a.size();
  if (buf.b.size() != (arrays_of(s) >= 2 ? n : 0) || buf.c.size() != (arrays_of(s) >= 3 ? n : 0)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    float want_a = a0(i), want_b = b0(i);
    if (s == Stream::Write && passes > 0) want_a = written(passes - 1);
    if (s == Stream::Copy && passes > 0) want_b = a0(i);
    if (s == Stream::Triad && passes > 0) want_a = b0(i) + kTriadScale * c0(i);
    if (buf.a[i] != want_a) return false;
    if (!buf.b.empty() && buf.b[i] != want_b) return false;
    if (!buf.c.empty() && buf.c[i] != c0(i)) return false;
  }
  return s != Stream::Read || read_sum == exact_sum_of_a(n);
}

BandwidthPoint measure_stream(Stream s, const WorkingSet& ws, int threads, double min_time_s) {
  BandwidthPoint p;
  p.stream = stream_name(s);
  p.level = ws.level;
  const std::size_t n = std::max<std::size_t>(1024, ws.bytes / (4 * std::size_t(arrays_of(s))));
  p.bytes_per_thread = n * 4 * std::size_t(arrays_of(s));
  // A repetition moves at least 8 MiB per thread, so barriers and the clock
  // stay small against it even for an L1-sized set.
  const int passes_per_rep = int(std::max<std::size_t>(1, (std::size_t(8) << 20) / p.bytes_per_thread));
  const double bytes_per_rep = double(stream_bytes_per_element(s)) * double(n) * passes_per_rep;
  std::vector<double> rates, seconds;
  int ran_threads = 0;
  bool all_ok = true;
  bool stop = false;
  using clock = std::chrono::steady_clock;
#pragma omp parallel num_threads(threads) shared(rates, stop, all_ok, ran_threads)
  {
    StreamBuffers buf(n, s);  // first touch by the thread that streams it
    int pass = 0;
    double sum = run_stream_pass(s, buf, pass++);  // warm-up
#pragma omp single
    ran_threads = omp_get_num_threads();
    const auto start = clock::now();
    while (true) {
#pragma omp barrier
      const auto t0 = clock::now();
      for (int k = 0; k < passes_per_rep; ++k) sum = run_stream_pass(s, buf, pass++);
#pragma omp barrier
#pragma omp master
      {
        const double dt = std::chrono::duration<double>(clock::now() - t0).count();
        seconds.push_back(dt);
        rates.push_back(bytes_per_rep * ran_threads / std::max(dt, 1e-9));
        const double spent = std::chrono::duration<double>(clock::now() - start).count();
        stop = rates.size() >= 5 && spent >= min_time_s;
      }
#pragma omp barrier
      if (stop) break;
    }
    const bool ok = check_stream(s, buf, pass, sum);
#pragma omp critical
    all_ok = all_ok && ok;
  }
  p.threads = ran_threads;
  p.reps = int(rates.size());
  p.bytes_per_rep = bytes_per_rep * ran_threads;
  p.rep_seconds = seconds;
  p.median_bytes_per_s = quantile(rates, 0.5);
  p.p10_bytes_per_s = quantile(rates, 0.1);
  p.p90_bytes_per_s = quantile(rates, 0.9);
  p.verified = all_ok;
  if (!all_ok) p.note = "the data the stream moved is wrong: a miscompiled or interrupted kernel";
  return p;
}

std::vector<BandwidthPoint> measure_bandwidth(double seconds_per_point, const std::string& root) {
  std::vector<BandwidthPoint> out;
  const auto caches = cache_topology(root);
  const int max_threads = omp_get_max_threads();
  for (int t = 1; t <= max_threads; ++t)
    for (const auto& ws : working_sets(caches, t))
      for (Stream s : {Stream::Read, Stream::Write, Stream::Copy, Stream::Triad})
        out.push_back(measure_stream(s, ws, t, seconds_per_point));
  return out;
}

}  // namespace flopwatt::cpu
