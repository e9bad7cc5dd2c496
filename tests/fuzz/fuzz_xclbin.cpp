// AMD xclbin containers (npu/xdna/xclbin.cpp), parsed from memory.
#include "npu/xdna/xclbin.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  flopwatt::fuzz::expect_only_input_errors([&] {
    const auto x = flopwatt::npu::xdna::parse_xclbin({data, size}, "fuzz.xclbin");
    flopwatt::npu::xdna::require_npu_design(x);
  });
  return 0;
}
