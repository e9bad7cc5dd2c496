// Numbers, CPU lists and cache sizes read from sysfs attributes
// (sysfs/files.cpp): whatever a driver or a fixture writes, a value is either
// what was there or nothing.
#include "sysfs/files.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("energy_uj", data, size);
  flopwatt::sysfs::read_int(path);
  flopwatt::sysfs::read_double(path);
  std::uint64_t u = 0;
  std::int64_t i = 0;
  int err = 0;
  flopwatt::sysfs::read_u64_file(path.c_str(), u, err);
  flopwatt::sysfs::read_i64_file(path.c_str(), i, err);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  flopwatt::sysfs::parse_decimal(text);
  if (const auto cpus = flopwatt::sysfs::parse_cpu_list(text))
    for (int c : *cpus)
      if (c < 0 || c > 65535) __builtin_trap();  // outside the range the parser promises
  flopwatt::sysfs::parse_cache_size(text);
  return 0;
}
