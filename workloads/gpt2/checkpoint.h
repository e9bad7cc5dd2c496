// llm.c's model checkpoint format: a header of 256 int32 (magic 20240326,
// version 3 = fp32 parameters, then maxT, V, L, NH, C, Vp), followed by every
// parameter as float32 in the order of kParamSpecs. A file whose size does not
// match its header is rejected, so a truncated download never trains.
#pragma once
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "workloads/gpt2/config.h"

namespace flopwatt::gpt2 {

inline constexpr int kCheckpointMagic = 20240326;
inline constexpr int kCheckpointVersionFp32 = 3;

// Reads and validates the header only; throws InputError naming the file.
Config read_checkpoint_config(const std::string& path);
// Reads the header and the parameters (num_parameters(config) floats).
std::vector<float> read_checkpoint(const std::string& path, Config& config);
// Reads the parameters into `params`, which must be sized for `expected`;
// throws InputError when the file's config differs.
void read_checkpoint_into(const std::string& path, const Config& expected, std::span<float> params);
// The file's bytes in order, given to `sink` (the caller decides where they
// go); throws InputError naming `where` when params do not fit config.
void write_checkpoint_to(const std::function<void(const void*, std::size_t)>& sink, const Config& config,
                         std::span<const float> params, const std::string& where);
// Writes atomically (a temporary made by mkstemp, mode 0644, renamed over `path`); throws InputError
// naming `flag` when the file cannot be written.
void write_checkpoint(const std::string& path, const Config& config, std::span<const float> params,
                      const std::string& flag = "--save");

}  // namespace flopwatt::gpt2
