// Events of the kernel's PMUs as sysfs describes them, for the counters
// libpfm4 does not name: the memory controllers' DRAM traffic (Intel IMC, AMD
// UMC), counted system-wide per uncore unit. The files read are the kernel's
// ABI (Documentation/ABI/testing/sysfs-bus-event_source-devices{,-events,
// -format}): <pmu>/type is the perf_event_attr type; <pmu>/format/<term> maps a
// term to bits ("config:0-7", "config:8-15,24-27", "config1:0"); <pmu>/events/
// <name> is "term=0xNN,term=0xNN" with optional <name>.scale and <name>.unit;
// <pmu>/cpumask lists the one CPU per socket or die an uncore event is opened
// on (pid -1: uncore PMUs have no per-task context).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::cpu {

// One event on one uncore PMU, ready for perf_event_open on each CPU listed.
struct SysfsEvent {
  std::string pmu;                   // "uncore_imc_free_running_0", "amd_umc_1"
  std::uint32_t type = 0;
  std::uint64_t config = 0, config1 = 0, config2 = 0;
  std::vector<int> cpus;             // from cpumask; empty: any CPU (-1), counted per task
  double scale = 1.0;                // <name>.scale, or the bytes per count we know
  std::string unit;                  // <name>.unit ("MiB"), "bytes" when we set the scale
};

struct SysfsResolve {
  std::optional<SysfsEvent> event;
  std::string problem, fix;  // when no event
};

// "pmu/name/" or "pmu/term=0xNN,term=0xNN/" (perf's syntax) against
// `root`/sys/bus/event_source/devices.
SysfsResolve resolve_sysfs_event(const std::string& spec, const std::string& root);

// The DRAM read or write traffic of the whole machine, in bytes: every
// instance of the first memory-controller PMU family present, each event
// scaled to bytes. Families, first found wins (one source, never two counting
// the same traffic):
//   uncore_imc_free_running[_N] data_read/data_write (Intel client since Tiger Lake;
//     and Ice Lake and later servers);
//   uncore_imc[_N] data_reads/data_writes (Intel client, Sandy Bridge to Ice Lake);
//   uncore_imc_N cas_count_read/cas_count_write (Intel servers, 64 B per CAS);
//   amd_umc_N event=0x0a with rdwrmask 1 (read) or 2 (write) (AMD Zen 4 and later with
//     PerfMonV2; UMC CAS commands, 64 B each: perf's amdzen4 memory-controller events
//     umc_cas_cmd.rd/.wr, which the kernel does not list under events/).
// Empty with `problem` naming where it looked when none is present.
struct DramEvents {
  std::vector<SysfsEvent> events;
  std::string family, problem;
};
DramEvents dram_events(const std::string& root, bool write);

}  // namespace flopwatt::cpu
