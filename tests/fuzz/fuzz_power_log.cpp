// External power meter logs (power/external_log.cpp).
#include "power/external_log.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("power.log", data, size);
  try {
    flopwatt::power::check_power_log(path);
  } catch (const flopwatt::power::ConfigError&) {
  }
  return 0;
}
