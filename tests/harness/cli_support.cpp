#include "tests/harness/cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace flopwatt::testing {

namespace fs = std::filesystem;

namespace {

// Every run a test starts is also recorded in the results store: point the
// default store at a directory of this process, never the user's home, and
// ignore a FLOPWATT_STORE of the environment (a suite that tests the store
// passes --store or sets it on its own command lines).
const fs::path kTestDataHome = [] {
  const fs::path d = fs::temp_directory_path() / ("flopwatt_test_data_" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(d, ec);
  ::setenv("XDG_DATA_HOME", d.c_str(), 1);
  ::unsetenv("FLOPWATT_STORE");
  std::atexit([] {
    std::error_code e;
    fs::remove_all(fs::temp_directory_path() / ("flopwatt_test_data_" + std::to_string(::getpid())), e);
  });
  return d;
}();

}  // namespace

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

fs::path temp_dir(const std::string& suite, const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("flopwatt_" + suite + "_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

CommandResult run_command_line(const std::string& cmdline) {
  const fs::path d = temp_dir("cmd", "io");
  const std::string cmd = cmdline + " >" + (d / "out").string() + " 2>" + (d / "err").string() + " </dev/null";
  const int st = std::system(cmd.c_str());
  CommandResult r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(d / "out"), slurp(d / "err")};
  fs::remove_all(d);
  return r;
}

}  // namespace flopwatt::testing
