// Shared by the fuzz targets: most of flopwatt's parsers read files, so each
// input is written to a private temporary file first. A parser may reject an
// input only with InputError (one clear line for the user); any other
// exception, a crash or a sanitizer report is a finding.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "workloads/error.h"

namespace flopwatt::fuzz {

// A directory of this fuzzing process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("flopwatt_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch_dir(), ec); });
    return d;
  }();
  return dir;
}

inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const auto p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return p.string();
}

// Runs f; InputError is the one accepted way to refuse an input.
template <class F>
void expect_only_input_errors(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  }
}

}  // namespace flopwatt::fuzz
