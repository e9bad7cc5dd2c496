// Running a built binary from a test: each end-to-end suite in tests/harness
// starts flopwatt or flopwatt_bench through a shell and reads what it wrote.
#pragma once
#include <filesystem>
#include <string>

namespace flopwatt::testing {

struct CommandResult {
  int code = -1;  // exit status, -1 when the command did not exit normally
  std::string out, err;
};

// The whole file ("" when it cannot be read).
std::string slurp(const std::filesystem::path& p);

// A fresh, empty directory flopwatt_<suite>_<tag>_<pid> under the system's
// temporary directory: the pid keeps test processes that run at once apart.
std::filesystem::path temp_dir(const std::string& suite, const std::string& tag);

// Runs a shell command line with stdin from /dev/null, capturing stdout and stderr.
CommandResult run_command_line(const std::string& cmdline);

}  // namespace flopwatt::testing
