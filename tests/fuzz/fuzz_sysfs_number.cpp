// Numbers read from sysfs attributes (sysfs/files.cpp): whatever a driver or
// a fixture writes, a value is either a number that was there or nothing.
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
  return 0;
}
