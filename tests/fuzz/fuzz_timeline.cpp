// A capture's timeline.csv, as --sysfs-root replays it (power/replay.cpp):
// loaded, then every series read back at times inside, at the edges of and
// past the recording (a replay loops over it).
#include <filesystem>
#include <fstream>

#include "power/config_error.h"
#include "power/replay.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("timeline.csv", data, size);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::ofstream(dir + "/capture.json") << "{\"duration_s\": 2.0}\n";
  try {
    const flopwatt::power::Timeline tl = flopwatt::power::load_timeline(dir);
    for (const auto& [p, s] : tl.series)
      for (double t : {0.0, 0.05, 1.0, tl.duration_s, 2.5 * tl.duration_s, 1e6})
        (void)flopwatt::power::value_at(tl, s, t);
  } catch (const flopwatt::power::ConfigError&) {
  }
  return 0;
}
