// Hardware performance counters over a measurement window (GEMM repetitions,
// a GPT-2 op), for the roofline: measured cycles, instructions and last-level
// cache misses next to the analytic FLOPs and bytes. Events are libpfm4 event
// strings ("perf::PERF_COUNT_HW_CPU_CYCLES", "INST_RETIRED:ANY_P"), encoded by
// libpfm4 and counted with perf_event_open(2) for this process on every CPU.
// The system calls sit behind CounterAccess so the plumbing is tested with a
// fake. Where no PMU is exposed (virtual machines without PMU passthrough) each
// counter is unavailable with the reason, as a power source would be; nothing
// here throws after parsing.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::cpu {

// The perf_event_attr fields libpfm4 fills for an event string.
struct EventEncoding {
  bool ok = false;
  std::uint32_t type = 0;
  std::uint64_t config = 0, config1 = 0, config2 = 0;
  std::string fully_qualified;  // libpfm4's expansion of the string, with its defaults
  std::string problem;          // why the string could not be encoded
  // >= 0: counted for the whole machine on this CPU (pid -1, not inherited),
  // as uncore PMUs require; -1: this process and its threads on any CPU.
  int cpu = -1;
};
// pfm_get_os_event_encoding(PFM_OS_PERF_EVENT); the twin built without libpfm4
// (cpu/pfm_encode_none.cpp) says so and how to get it.
EventEncoding encode_event(const std::string& event);

// One counter value as perf_event_open(2) returns it with read_format
// PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING.
struct CounterReading {
  std::uint64_t value = 0, time_enabled = 0, time_running = 0;
};

class CounterAccess {
 public:
  virtual ~CounterAccess() = default;
  // perf_event_open(attr, pid = 0, cpu = -1, group = -1, PERF_FLAG_FD_CLOEXEC)
  // with the encoding, disabled, inherited by threads created later (OpenMP),
  // user and kernel counted; for e.cpu >= 0, pid = -1 and cpu = e.cpu, not
  // inherited. -1 with errno in *err on failure.
  virtual int open(const EventEncoding& e, int* err) = 0;
  virtual bool reset_and_enable(int fd) = 0;  // PERF_EVENT_IOC_RESET, then _ENABLE
  virtual bool disable(int fd) = 0;           // PERF_EVENT_IOC_DISABLE
  virtual bool read(int fd, CounterReading& r) = 0;
  virtual void close(int fd) = 0;
};
std::unique_ptr<CounterAccess> real_counter_access();

// The events `--counters` names: "default" (cycles, instructions, LLC misses,
// DRAM read and write bytes), "none", or a comma-separated list of libpfm4
// event strings, perf-style sysfs events ("uncore_imc_0/cas_count_read/") and
// the two DRAM names. Throws InputError(flag, ...) for an empty name in a list.
inline constexpr const char* kDramReadBytes = "dram_read_bytes";
inline constexpr const char* kDramWriteBytes = "dram_write_bytes";
std::vector<std::string> parse_counter_list(const std::string& spec, const std::string& flag = "--counters");

struct CounterStatus {
  std::string event;
  bool available = false;
  std::string reason, fix;  // when not available
  // How it is counted when that is not plain: "system-wide on CPU 0: ...",
  // the PMU instances summed and the unit the value is in.
  std::string how;
};

struct WindowCount {
  std::string event;
  std::optional<double> value;  // scaled by time_enabled / time_running when multiplexed; empty when not counted
  double running_fraction = 0;  // time_running / time_enabled: below 1 the value is an estimate
};

class CounterSet {
 public:
  // Encodes and opens each event. `root` is the filesystem root whose
  // /sys/bus/event_source/devices holds the uncore PMUs and tells why a
  // hardware event cannot be opened ("/" or a fixture tree). An event spread
  // over several PMU instances or CPUs opens one counter on each and reads
  // their scaled sum; it is available only when all of them open.
  CounterSet(const std::vector<std::string>& events, CounterAccess& access, const std::string& root = "/");
  ~CounterSet();
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;

  const std::vector<CounterStatus>& status() const { return status_; }
  bool any_available() const;
  void begin();                      // reset and enable every open counter
  std::vector<WindowCount> end();    // disable and read: one entry per event, in order

 private:
  CounterAccess& access_;
  std::vector<CounterStatus> status_;
  struct Part {
    int fd;
    double scale;  // to the event's unit (bytes for the DRAM events)
    CounterReading at_begin;
  };
  void open_parts(CounterStatus& st, const std::vector<std::pair<EventEncoding, double>>& parts,
                  const std::string& root);
  std::vector<std::vector<Part>> parts_;  // per event; empty where unavailable
};

}  // namespace flopwatt::cpu
