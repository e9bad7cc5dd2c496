// Runs a command line through the shell and captures its standard output.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace flopwatt::power::testing {

struct CommandResult {
  int status = -1;  // exit status, -1 when it did not exit normally
  std::string out;
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null 2>&1 && echo yes").out == "yes\n";
}

// The tab-separated record of a probe line starting with kind and id, or "".
inline std::string probe_line(const std::string& out, const std::string& kind, const std::string& id) {
  const std::string key = kind + "\t" + id + "\t";
  const auto at = out.find(key);
  if (at == std::string::npos) return {};
  return out.substr(at, out.find('\n', at) - at);
}

}  // namespace flopwatt::power::testing
