// The NPU artifact manifest (npu/xdna/artifacts.cpp): manifest.json in a
// directory of its own.
#include "npu/xdna/artifacts.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = flopwatt::fuzz::scratch_dir() / "artifacts";
  std::filesystem::create_directories(dir);
  flopwatt::fuzz::write_input("artifacts/manifest.json", data, size);
  flopwatt::fuzz::expect_only_input_errors([&] { flopwatt::npu::xdna::load_artifacts(dir.string()); });
  return 0;
}
