#include "harness/run/context.h"

#include <cpuid.h>
#include <omp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "cpu/core_trip.h"
#include "harness/output/text.h"
#include "harness/output/version.h"
#include "power/sysfs.h"
#include "sysfs/files.h"

namespace flopwatt {

using nlohmann::json;

std::string read_first_line(const std::string& path) {
  const auto s = sysfs::read_trimmed(path);
  if (!s) return "";
  return s->substr(0, s->find('\n'));
}

namespace {

json nullable(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::string cpuinfo_field(const std::string& root, const std::string& key) {
  return sysfs::cpuinfo_field(root, key).value_or("");
}

// CPUID leaf 0x40000000 names the hypervisor when the "hypervisor" bit is set.
std::string hypervisor_vendor() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31))) return "";
  __cpuid(0x40000000, a, b, c, d);
  char v[13] = {};
  std::memcpy(v, &b, 4);
  std::memcpy(v + 4, &c, 4);
  std::memcpy(v + 8, &d, 4);
  std::string s(v);
  if (s == "KVMKVMKVM") return "kvm";
  if (s == "Microsoft Hv") return "hyper-v";
  if (s == "VMwareVMware") return "vmware";
  if (s == "XenVMMXenVMM") return "xen";
  if (s == "TCGTCGTCGTCG") return "qemu-tcg";
  return s.empty() ? "unknown" : s;
}

}  // namespace

json backend_notes(const Backend& b) {
  json n = json::object();
  for (const auto& [key, val] : b.notes()) n[key] = val;
  return n;
}

json collect_context(const std::string& root, const std::vector<const Backend*>& backends) {
  json c;
  c["cpu"] = nullable(cpuinfo_field(root, "model name"));
  c["cpu_flags_simd"] = json::array();
  {
    const std::string flags = std::string(" ").append(cpuinfo_field(root, "flags")).append(" ");
    for (const char* f : {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"})
      if (flags.find(std::string(" ").append(f).append(" ")) != std::string::npos) c["cpu_flags_simd"].push_back(f);
  }
  c["threads"] = omp_get_max_threads();
  c["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  // Where the run's cores sit moves its memory-bound figures (docs/performance.md): two
  // runs compare only when their round trips are alike.
  const auto trip = cpu::core_round_trip_ns(omp_get_max_threads());
  c["core_round_trip_ns"] = trip ? json(*trip) : json(nullptr);
  utsname u{};
  if (uname(&u) == 0) {
    c["kernel"] = std::string(u.sysname) + " " + u.release;
    c["arch"] = u.machine;
  }
  const std::string hv = hypervisor_vendor();
  c["hypervisor"] = nullable(hv);
  const std::string cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq/";
  c["governor"] = nullable(read_first_line(power::under_root(root, cpufreq + "scaling_governor")));
  c["energy_performance_preference"] = nullable(read_first_line(power::under_root(root, cpufreq + "energy_performance_preference")));
  c["scaling_driver"] = nullable(read_first_line(power::under_root(root, cpufreq + "scaling_driver")));
  c["platform_profile"] = nullable(read_first_line(power::under_root(root, "/sys/firmware/acpi/platform_profile")));
  c["ac_online"] = nullptr;  // filled from power_supply by the run (power/power_state.h)
  c["battery_percent"] = nullptr;
  c["flopwatt_git_revision"] = FLOPWATT_GIT_REV;
  c["compiler"] = "g++ " __VERSION__;
  c["started_utc"] = utc_now();
  json be = json::object();
  for (const Backend* k : backends) be[k->name()] = backend_notes(*k);
  c["backends"] = be;
  return c;
}

json temperatures_json(const std::vector<power::Temperature>& t) {
  json a = json::array();
  for (const auto& x : t) a.push_back({{"id", x.id}, {"celsius", x.celsius}});
  return a;
}

std::string cpu_model(const std::string& root) { return cpuinfo_field(root, "model name"); }

}  // namespace flopwatt
