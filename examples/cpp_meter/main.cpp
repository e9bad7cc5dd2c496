// Two nested windows around a dot-product loop: the outer one holds the
// inner one and a sleep. Prints one line per window.
#include <flopwatt/meter.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

static double work(double seconds) {
  std::vector<double> a(1 << 16, 1.0001), b(1 << 16, 0.9999);
  double s = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end)
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

static void print(const flopwatt::WindowResult& r) {
  std::printf("%s %.3f s", r.name.c_str(), r.duration_s);
  if (r.energy_j) std::printf(" %.4f J %.3f W headline %s", *r.energy_j, *r.avg_power_w, r.headline->c_str());
  else std::printf(" no headline: %s", r.headline_why.c_str());
  std::printf("\n");
}

int main(int argc, char** argv) {
  flopwatt::MeterOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--power-log")) o.power_log = argv[i + 1];
    else if (!std::strcmp(argv[i], "--sysfs-root")) o.sysfs_root = argv[i + 1];
  }
  try {
    flopwatt::Meter meter(o);
    // Each window names its own headline source (print shows it); there is none before a window.
    std::printf("flopwatt %s, %s\n", flopwatt::version(), meter.active() ? "sampling" : "no power source");
    auto outer = meter.begin("outer");
    auto inner = meter.begin("inner");
    volatile double sink = work(0.4);
    (void)sink;
    print(meter.end(inner));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    print(meter.end(outer));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meter_example: %s\n", e.what());
    return 2;
  }
}
