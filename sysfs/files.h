// The one access layer for the machine's files (/sys, /proc, /dev) below a
// filesystem root: "/" on a machine, a fixture tree in tests and under
// --sysfs-root, so nothing that honours the root reads the real machine by
// accident. sysfs prints numbers in decimal (Documentation/filesystems/
// sysfs.rst), so a leading 0 is not octal here; hex is read only where the
// kernel's ABI writes it with 0x (PMU event terms, "event=0x02").
// Nothing here throws; failures come back with their errno or a one-line
// problem naming the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flopwatt::sysfs {

// root "/" and "/sys/class/x" -> "/sys/class/x"; root "/tmp/fx" -> "/tmp/fx/sys/class/x".
std::string under_root(const std::string& root, const std::string& abs_path);
std::string join_path(const std::string& dir, const std::string& name);

struct TextRead {
  bool ok = false;
  int err = 0;  // errno when !ok
  std::string text;
};
TextRead read_text(const std::string& path);

// Contents computed when a file is read instead of stored in it: a replayed
// capture (power/replay.h) answers for the files its timeline moves, from the
// reader's own clock at the moment of the read. No writer thread then has to
// keep files on disk current, so no reader ever sees a value that a writer
// starved by load (or a real-time writer starving the reader) left behind.
class Overlay {
 public:
  virtual ~Overlay() = default;
  // True, with the file's content, when `path` is one of its files.
  virtual bool read(std::string_view path, std::string& text) const = 0;
};
// Every read below (read_text and all that use it, read_u64_file,
// read_i64_file) asks `o` first; nullptr removes it. Not owned: `o` must
// stay alive while it is installed and while a read may still be using it.
// Directory listings and existence checks still look at the files on disk.
void set_overlay(const Overlay* o);
const Overlay* overlay();
// The file's content without surrounding whitespace; nullopt on any failure.
std::optional<std::string> read_trimmed(const std::string& path, int* err = nullptr);
// Decimal, optionally signed; EINVAL for anything else ("0x10", "1e3", "").
std::optional<std::int64_t> read_int(const std::string& path, int* err = nullptr);
std::optional<double> read_double(const std::string& path, int* err = nullptr);

// Hot-path read of a decimal unsigned integer file without allocating. The
// file is re-opened on each call: a held descriptor would keep seeing a file
// that a test bed or a logger replaced by rename.
bool read_u64_file(const char* path, std::uint64_t& value, int& err);
bool read_i64_file(const char* path, std::int64_t& value, int& err);

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// Entry names (no "." or ".."), in natural order (hwmon2 before hwmon10).
std::vector<std::string> list_dir(const std::string& path);
bool natural_less(const std::string& a, const std::string& b);

// The last component of a symlink's target: "amdxdna" for a device's
// driver -> ../../../bus/pci/drivers/amdxdna; nullopt when not a link.
std::optional<std::string> link_target_name(const std::string& path);

// "0x1022" -> 0x1022: the 0x form sysfs uses for PCI ids (vendor, device,
// revision); nullopt without the 0x, with other characters or past 2^64 - 1.
std::optional<std::uint64_t> parse_hex_0x(std::string_view s);

// /proc/cpuinfo below the root: the value of the first "key<TAB>: value"
// line (the first CPU's), trimmed; nullopt when no line has that key.
std::optional<std::string> cpuinfo_field(const std::string& root, std::string_view key);
// /proc/meminfo below the root: "MemTotal:  16303480 kB" -> bytes; nullopt
// when absent, not decimal, or in a unit other than kB.
std::optional<std::uint64_t> meminfo_bytes(const std::string& root, std::string_view key);

// "EACCES (Permission denied)"
std::string errno_text(int err);

// "010" -> 10: digits only, base 10, nothing around them; nullopt otherwise
// or past 2^64 - 1.
std::optional<std::uint64_t> parse_decimal(std::string_view s);

// A CPU list as the kernel prints it (cpumask, shared_cpu_list: "0", "0,8",
// "0-3,8-11", "" for none), ascending as written; nullopt when malformed:
// a reversed or open range, a sign, an empty element, or a CPU past 65535
// (the kernel's NR_CPUS limit is 8192; beyond that is corruption).
std::optional<std::vector<int>> parse_cpu_list(std::string_view s);

// A perf PMU as sysfs describes it (Documentation/ABI/testing/
// sysfs-bus-event_source-devices{,-format,-events}) under
// <root>/sys/bus/event_source/devices/<name>.
struct Pmu {
  std::string name, dir;
  bool present = false;                       // the directory exists
  std::uint32_t type = 0;                     // perf_event_attr.type, decimal in `type`
  std::vector<int> cpus;                      // `cpumask`; empty when the PMU has none
  std::map<std::string, std::string> formats;  // format/<term> -> "config:0-7"
  std::string problem;                        // set when present but unusable
};
Pmu read_pmu(const std::string& root, const std::string& name);

struct PmuEvent {
  std::string name, spec;             // "energy-pkg", "event=0x02"
  std::optional<double> scale;        // <name>.scale when the kernel gives one
  std::optional<std::string> unit;    // <name>.unit
  std::string problem;                // set when a file is present but unreadable
};
// events/<name>; nullopt when the PMU has no such event.
std::optional<PmuEvent> read_pmu_event(const Pmu& pmu, const std::string& name);
// The PMU's event names, without the .scale/.unit companions, in natural order.
std::vector<std::string> pmu_event_names(const Pmu& pmu);

struct PerfConfig {
  std::uint64_t config = 0, config1 = 0, config2 = 0;
};
// "event=0x0a,rdwrmask=0x1" with the PMU's formats into perf_event_attr's
// config words. A term without "=" is 1; a term's value fills its format's
// bit ranges in order, low bits first ("config:8-15,24-27", as perf's
// pmu_format_value does). Without any format files "event" is config:0-7, as
// kernels before format/ encoded it. False with `problem` when a term has no
// format, a format is malformed, or a value does not fit its bits.
bool encode_terms(const std::string& terms, const Pmu& pmu, PerfConfig& out, std::string& problem);

// One cache of cpu0 (Documentation/ABI/testing/sysfs-devices-system-cpu,
// cpu0/cache/index*/).
struct Cache {
  int level = 0;
  std::string type;          // "Data", "Instruction", "Unified"
  std::size_t bytes = 0;
  std::vector<int> shared_cpus;  // shared_cpu_list; empty when the file is absent
};
// "48K", "2048K", "32M", "1G" or plain bytes; nullopt when malformed.
std::optional<std::size_t> parse_cache_size(std::string_view s);
// Every cache of cpu0 below `root`, in index order. A directory whose level,
// type or size is missing or malformed is left out, a malformed
// shared_cpu_list leaves shared_cpus empty; `problem`, when given, gets the
// first such file named.
std::vector<Cache> cpu0_caches(const std::string& root, std::string* problem = nullptr);

}  // namespace flopwatt::sysfs
