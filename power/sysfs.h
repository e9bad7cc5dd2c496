// The access layer for text attribute files (sysfs, procfs) and directories
// under a filesystem root, so a fixture tree can stand in for / in tests.
// Nothing here throws; failures come back with their errno.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flopwatt::power {

// root "/" and "/sys/class/x" -> "/sys/class/x"; root "/tmp/fx" -> "/tmp/fx/sys/class/x".
std::string under_root(const std::string& root, const std::string& abs_path);
std::string join_path(const std::string& dir, const std::string& name);

struct TextRead {
  bool ok = false;
  int err = 0;  // errno when !ok
  std::string text;
};
TextRead read_text(const std::string& path);
// The file's content without surrounding whitespace; nullopt on any failure.
std::optional<std::string> read_trimmed(const std::string& path, int* err = nullptr);
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

// "EACCES (Permission denied)"
std::string errno_text(int err);

}  // namespace flopwatt::power
