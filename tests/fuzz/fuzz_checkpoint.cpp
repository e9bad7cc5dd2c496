// llm.c checkpoint files (workloads/gpt2/checkpoint.cpp).
#include "tests/fuzz/fuzz_support.h"
#include "workloads/gpt2/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("model.bin", data, size);
  flopwatt::fuzz::expect_only_input_errors([&] {
    flopwatt::gpt2::Config c = flopwatt::gpt2::read_checkpoint_config(path);
    // Only small models: a header asking for 124M parameters is valid and
    // would just be slow to read.
    const double params = (double(c.Vp) + c.maxT) * c.C + 12.0 * c.L * double(c.C) * c.C;
    if (params < double(1 << 22)) flopwatt::gpt2::read_checkpoint(path, c);
  });
  return 0;
}
