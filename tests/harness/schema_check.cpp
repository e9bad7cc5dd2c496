#include "tests/harness/schema_check.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace flopwatt::testing {

namespace fs = std::filesystem;

std::string schema_violations(const std::string& json_file, const std::string& schema_name) {
  const std::string cmd = "/usr/bin/python3 '" FLOPWATT_SOURCE_DIR "/tests/harness/validate_schema.py' '" + json_file +
                          "' '" FLOPWATT_SOURCE_DIR "/results/schema/" + schema_name + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "cannot start " + cmd;
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int st = pclose(p);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
  // A validator that failed without a word (python3-jsonschema missing, killed) must still fail the test.
  return out.empty() ? cmd + ": exit status " + std::to_string(st) : out;
}

std::string schema_violations(const nlohmann::json& doc, const std::string& schema_name) {
  static std::atomic<int> seq{0};
  const fs::path tmp =
      fs::temp_directory_path() / ("flopwatt_schema_" + std::to_string(::getpid()) + "_" + std::to_string(seq++) + ".json");
  {
    std::ofstream f(tmp);
    f << doc.dump(1);
    if (!f) return "cannot write " + tmp.string();
  }
  std::string v = schema_violations(tmp.string(), schema_name);
  fs::remove(tmp);
  return v;
}

}  // namespace flopwatt::testing
