// NPU simulator device files (npu/plan/device.cpp).
#include "npu/plan/device.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("device.json", data, size);
  flopwatt::fuzz::expect_only_input_errors([&] { flopwatt::npu::load_device_file(path); });
  return 0;
}
