#include "harness/output/data_home.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace flopwatt {

std::string data_home() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/') return (fs::path(xdg) / "flopwatt").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".local/share/flopwatt").string();
  return "/tmp/flopwatt-" + std::to_string(::getuid());
}

std::string default_run_dir(const std::string& name) { return data_home() + "/runs/" + name; }

}  // namespace flopwatt
