// llm.c token files (workloads/gpt2/token_data.cpp).
#include "tests/fuzz/fuzz_support.h"
#include "workloads/gpt2/token_data.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flopwatt::fuzz::write_input("tokens.bin", data, size);
  flopwatt::fuzz::expect_only_input_errors([&] { flopwatt::gpt2::read_token_file(path, 50257); });
  return 0;
}
