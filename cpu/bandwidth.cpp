#include "cpu/bandwidth.h"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__SSE__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <new>
#include <numeric>

#include "sysfs/files.h"

namespace flopwatt::cpu {
namespace {

namespace fs = std::filesystem;

// fp32 arrays a stream uses (a, b, c, d in that order), and whether it writes h.
int arrays_of(Stream s) {
  switch (s) {
    case Stream::Read: case Stream::Write: case Stream::Update: case Stream::WriteNt: return 1;
    case Stream::Copy: case Stream::R1U1: case Stream::CopyNt: return 2;
    case Stream::Triad: case Stream::R2U1: case Stream::TriadNt: return 3;
    case Stream::R1U3: case Stream::R1U3H1: return 4;
  }
  return 1;
}
bool writes_h(Stream s) { return s == Stream::R1U3H1; }

// Small integers, so every sum and triad below is exact in fp32 whatever the
// order of operations; a wrong element cannot hide in rounding.
float a0(std::size_t i) { return float(i % 1024); }
float b0(std::size_t i) { return float((i * 7) % 512); }
float c0(std::size_t i) { return float((i * 3) % 256); }
float d0(std::size_t i) { return float((i * 5) % 128); }
float written(int pass) { return float(pass % 1000 + 1); }
constexpr float kTriadScale = 3.0f;
// An in-place stream stores u = s - u, with s = kFlip + the element's reads: u
// alternates between its start and s - start, exactly, whatever the number of
// passes, so a skipped or doubled pass shows.
constexpr float kFlip = 1000.0f;
std::uint16_t bf16_bits(float x) { return std::uint16_t(std::bit_cast<std::uint32_t>(x) >> 16); }

#if defined(__AVX512F__)
constexpr std::size_t kNtLanes = 16;
inline void nt_store(float* p, const float* v) { _mm512_stream_ps(p, _mm512_loadu_ps(v)); }
#elif defined(__AVX__)
constexpr std::size_t kNtLanes = 8;
inline void nt_store(float* p, const float* v) { _mm256_stream_ps(p, _mm256_loadu_ps(v)); }
#elif defined(__SSE__)
constexpr std::size_t kNtLanes = 4;
inline void nt_store(float* p, const float* v) { _mm_stream_ps(p, _mm_loadu_ps(v)); }
#else
constexpr std::size_t kNtLanes = 0;
#endif

// out[i] = f(i) for i < n with non-temporal stores: a plain head until out is
// aligned to the store width, whole vectors, then a plain tail.
template <typename F>
void nt_fill(float* out, std::size_t n, F f) {
#if defined(__SSE__)
  std::size_t i = 0;
  for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % (kNtLanes * sizeof(float)) != 0; ++i) out[i] = f(i);
  alignas(64) float v[kNtLanes];
  for (; i + kNtLanes <= n; i += kNtLanes) {
#pragma omp simd
    for (std::size_t k = 0; k < kNtLanes; ++k) v[k] = f(i + k);
    nt_store(out + i, v);
  }
  for (; i < n; ++i) out[i] = f(i);
  _mm_sfence();  // the streamed lines are globally visible before the barrier
#else
  for (std::size_t i = 0; i < n; ++i) out[i] = f(i);
#endif
}

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

template <typename T>
T* HugePageAllocator<T>::allocate(std::size_t n) {
  constexpr std::size_t kHuge = std::size_t(2) << 20;
  const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(T);
  const std::size_t align = bytes >= kHuge ? kHuge : 64;
  void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  if (align == kHuge) madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
  return static_cast<T*>(p);
}
template struct HugePageAllocator<float>;
template struct HugePageAllocator<std::uint16_t>;

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

std::vector<Stream> all_streams() {
  std::vector<Stream> out = {Stream::Read, Stream::Write,  Stream::Copy, Stream::Triad, Stream::Update,
                             Stream::R1U1, Stream::R2U1,   Stream::R1U3, Stream::R1U3H1};
  if (kNtLanes > 0) out.insert(out.end(), {Stream::WriteNt, Stream::CopyNt, Stream::TriadNt});
  return out;
}

std::vector<LevelCapacity> level_capacities(const std::vector<CacheLevel>& caches, int threads) {
  threads = std::max(threads, 1);
  std::vector<LevelCapacity> out;
  const CacheLevel* llc = nullptr;
  for (const auto& c : caches)
    if (!llc || c.level >= llc->level) llc = &c;
  for (const auto& c : caches) {
    const char* name = &c == llc && c.level > 1 ? "LLC" : c.level == 1 ? "L1" : c.level == 2 ? "L2" : nullptr;
    if (!name) continue;  // a middle level working_sets() does not measure
    // Private levels count once per thread (SMT siblings that share one are
    // not told apart: the larger capacity keeps the roof an upper bound); the
    // threads fill one shared cache before the next.
    const int sharing = &c == llc ? std::max(1, c.shared_by) : 1;
    const std::size_t copies = std::size_t((threads + sharing - 1) / sharing);
    out.push_back({name, c.bytes * copies});
  }
  return out;
}

const char* stream_name(Stream s) {
  switch (s) {
    case Stream::Read: return "read";
    case Stream::Write: return "write";
    case Stream::Copy: return "copy";
    case Stream::Triad: return "triad";
    case Stream::Update: return "update";
    case Stream::R1U1: return "r1u1";
    case Stream::R2U1: return "r2u1";
    case Stream::R1U3: return "r1u3";
    case Stream::R1U3H1: return "r1u3h1";
    case Stream::WriteNt: return "write_nt";
    case Stream::CopyNt: return "copy_nt";
    case Stream::TriadNt: return "triad_nt";
  }
  return "?";
}

int stream_bytes_per_element(Stream s) {
  switch (s) {
    case Stream::Read: case Stream::Write: case Stream::WriteNt: return 4;
    case Stream::Copy: case Stream::CopyNt: case Stream::Update: return 8;
    case Stream::Triad: case Stream::TriadNt: case Stream::R1U1: return 12;
    case Stream::R2U1: return 16;
    case Stream::R1U3: return 28;
    case Stream::R1U3H1: return 30;
  }
  return 4;
}

int stream_footprint_per_element(Stream s) { return 4 * arrays_of(s) + (writes_h(s) ? 2 : 0); }

StreamBuffers::StreamBuffers(std::size_t n, Stream s)
    : a(n), b(arrays_of(s) >= 2 ? n : 0), c(arrays_of(s) >= 3 ? n : 0), d(arrays_of(s) >= 4 ? n : 0),
      h(writes_h(s) ? n : 0) {
  for (std::size_t i = 0; i < n; ++i) a[i] = a0(i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = b0(i);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = c0(i);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = d0(i);
}

namespace {

// AdamW's pattern (r1u3): g read, p, m and v rewritten; with_h also writes
// the bf16 copy of p (r1u3h1).
void flip_three(bool with_h, float* __restrict a, float* __restrict b, float* __restrict c, const float* __restrict d,
                std::uint16_t* __restrict h, std::size_t n) {
  if (!with_h) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) {
      const float t = kFlip + d[i];
      a[i] = t - a[i];
      b[i] = t - b[i];
      c[i] = t - c[i];
    }
    return;
  }
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float t = kFlip + d[i];
    const float x = t - a[i];
    a[i] = x;
    b[i] = t - b[i];
    c[i] = t - c[i];
    h[i] = bf16_bits(x);
  }
}

// The non-temporal streams: stores that bypass the caches.
void nt_pass(Stream s, float* __restrict a, float* __restrict b, const float* __restrict c, std::size_t n, int pass) {
  if (s == Stream::WriteNt) {
    const float v = written(pass);
    nt_fill(a, n, [&](std::size_t) { return v; });
  } else if (s == Stream::CopyNt) {
    nt_fill(b, n, [&](std::size_t i) { return a[i]; });
  } else {
    nt_fill(a, n, [&](std::size_t i) { return b[i] + kTriadScale * c[i]; });
  }
}

}  // namespace

double run_stream_pass(Stream s, StreamBuffers& buf, int pass) {
  const std::size_t n = buf.a.size();
  float* __restrict a = buf.a.data();
  float* __restrict b = buf.b.data();
  float* __restrict c = buf.c.data();
  const float* __restrict d = buf.d.data();
  std::uint16_t* __restrict h = buf.h.data();
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
    case Stream::Update:
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) a[i] = kFlip - a[i];
      return 0;
    case Stream::R1U1:
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) a[i] = (kFlip + b[i]) - a[i];
      return 0;
    case Stream::R2U1:
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) a[i] = (kFlip + b[i] + c[i]) - a[i];
      return 0;
    case Stream::R1U3:
    case Stream::R1U3H1:
      flip_three(s == Stream::R1U3H1, a, b, c, d, h, n);
      return 0;
    case Stream::WriteNt:
    case Stream::CopyNt:
    case Stream::TriadNt:
      nt_pass(s, a, b, c, n, pass);
      return 0;
  }
  return 0;
}

bool check_stream(Stream s, const StreamBuffers& buf, int passes, double read_sum) {
  const std::size_t n = buf.a.size();
  const int arrays = arrays_of(s);
  if (buf.b.size() != (arrays >= 2 ? n : 0) || buf.c.size() != (arrays >= 3 ? n : 0) ||
      buf.d.size() != (arrays >= 4 ? n : 0) || buf.h.size() != (writes_h(s) ? n : 0))
    return false;
  const bool flipped = passes % 2 == 1;
  for (std::size_t i = 0; i < n; ++i) {
    float want_a = a0(i), want_b = b0(i), want_c = c0(i);
    const bool write = s == Stream::Write || s == Stream::WriteNt;
    const bool copy = s == Stream::Copy || s == Stream::CopyNt;
    const bool triad = s == Stream::Triad || s == Stream::TriadNt;
    if (write && passes > 0) want_a = written(passes - 1);
    if (copy && passes > 0) want_b = a0(i);
    if (triad && passes > 0) want_a = b0(i) + kTriadScale * c0(i);
    if (flipped) switch (s) {
        case Stream::Update: want_a = kFlip - a0(i); break;
        case Stream::R1U1: want_a = kFlip + b0(i) - a0(i); break;
        case Stream::R2U1: want_a = kFlip + b0(i) + c0(i) - a0(i); break;
        case Stream::R1U3: case Stream::R1U3H1: {
          const float t = kFlip + d0(i);
          want_a = t - a0(i), want_b = t - b0(i), want_c = t - c0(i);
          break;
        }
        default: break;
      }
    if (buf.a[i] != want_a) return false;
    if (!buf.b.empty() && buf.b[i] != want_b) return false;
    if (!buf.c.empty() && buf.c[i] != want_c) return false;
    if (!buf.d.empty() && buf.d[i] != d0(i)) return false;
    // h holds the last pass's a, which is the start value after an even count.
    if (!buf.h.empty() && passes > 0 && buf.h[i] != bf16_bits(want_a)) return false;
  }
  return s != Stream::Read || read_sum == exact_sum_of_a(n);
}

BandwidthPoint measure_stream(Stream s, const WorkingSet& ws, int threads, double min_time_s) {
  BandwidthPoint p;
  p.stream = stream_name(s);
  p.level = ws.level;
  const std::size_t per_element = std::size_t(stream_footprint_per_element(s));
  const std::size_t n = std::max<std::size_t>(1024, ws.bytes / per_element);
  p.bytes_per_thread = n * per_element;
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
      for (Stream s : all_streams())
        out.push_back(measure_stream(s, ws, t, seconds_per_point));
  return out;
}

}  // namespace flopwatt::cpu
