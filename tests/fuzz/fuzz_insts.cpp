// NPU instruction streams (npu/xdna/insts.cpp): the binary and the text form.
#include "npu/xdna/insts.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  flopwatt::fuzz::expect_only_input_errors([&] { flopwatt::npu::xdna::parse_insts({data, size}, "fuzz.bin"); });
  flopwatt::fuzz::expect_only_input_errors([&] {
    flopwatt::npu::xdna::parse_insts_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.txt");
  });
  return 0;
}
