// RAPL through the perf `power` PMU: system-wide counting events whose type,
// encodings, scale and unit the kernel describes in sysfs; names are resolved
// with libpfm4 where it knows the CPU, else from those sysfs descriptions.
// perf keeps 64-bit totals, so these counters do not wrap.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "power/source.h"

namespace flopwatt::power {

struct PerfEventDesc {
  std::string name;         // energy-pkg
  std::string spec;         // event=0x02
  std::uint64_t config = 0;
  double scale = 0;         // J per count
  std::string unit;         // Joules
  std::string problem;      // why it cannot be encoded; empty when fine
};

struct PerfPmuDesc {
  bool present = false;
  int type = -1;
  std::vector<int> cpus;    // one CPU per package (the PMU's cpumask)
  std::vector<PerfEventDesc> events;
  std::string problem;      // why the PMU description is unusable
};

// Parses <root>/sys/bus/event_source/devices/<pmu> ("power", or AMD's
// per-core "power_core" whose cpumask lists one CPU per core).
PerfPmuDesc read_perf_pmu(const std::string& root, const std::string& pmu = "power");
std::string perf_event_domain(const std::string& event_name);

// The syscalls beneath, swappable so tests can stand in for the kernel.
class PerfAccess {
 public:
  virtual ~PerfAccess() = default;
  // A file descriptor, or -errno.
  virtual int open(int type, std::uint64_t config, int cpu) = 0;
  virtual bool read(int fd, std::uint64_t& count) = 0;
  virtual void close(int fd) = 0;
};
std::shared_ptr<PerfAccess> system_perf_access();

// Reason and fix when perf_event_open refused an event with errno err.
std::string perf_open_reason(int err, const std::string& root, const std::string& event);
std::string perf_open_fix(int err);

// Without an access layer, a root other than "/" gets none: perf_event_open is
// a syscall, so the fixture's PMU type means nothing to the running kernel,
// and its events are listed as unavailable for that reason.
void probe_perf_rapl(const std::string& root, Discovery& d, std::shared_ptr<PerfAccess> access = nullptr);

}  // namespace flopwatt::power
