#include "workloads/gpt2/token_data.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt::gpt2 {

namespace {
constexpr std::int64_t kHeaderInts = 256;
constexpr std::int64_t kHeaderBytes = kHeaderInts * 4;
const char* kFix = "pass an llm.c token file (uint16 tokens, magic 20240520, version 1), or omit --data for random tokens";
}  // namespace

std::vector<std::uint16_t> read_token_file(const std::string& path, int vocab, const std::string& flag) {
  const std::string where = flag + " " + path;
  std::error_code ec;
  // file_size of a device or a pipe fails with "Operation not supported": say what is wrong with it instead.
  if (const auto st = std::filesystem::status(path, ec); !ec && st.type() != std::filesystem::file_type::regular)
    throw InputError(where, "not a regular file (a directory, device or pipe)", "pass the path of a token file (.bin)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(where, "cannot read the file: " + ec.message(), "check the path and permissions");
  const auto bytes = static_cast<std::int64_t>(size);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(where, std::string("cannot open the file: ") + std::strerror(errno),
                            "check the path and permissions");
  if (bytes < kHeaderBytes)
    throw InputError(where, "truncated: " + std::to_string(bytes) + " bytes, shorter than the " +
                                std::to_string(kHeaderBytes) + "-byte header", kFix);
  std::int32_t h[kHeaderInts];
  in.read(reinterpret_cast<char*>(h), kHeaderBytes);
  if (!in) throw InputError(where, "cannot read the header", kFix);
  if (h[0] != kTokensMagic)
    throw InputError(where, "wrong magic " + std::to_string(h[0]) + " (expected " + std::to_string(kTokensMagic) +
                                "): not an llm.c token file" +
                                (h[0] == 20240326 ? " (this is a model checkpoint; pass it to --checkpoint)" : ""),
                     kFix);
  if (h[1] != kTokensVersion)
    throw InputError(where, "unsupported version " + std::to_string(h[1]) + " (expected 1)", kFix);
  const std::int64_t ntok = h[2];
  if (ntok <= 0) throw InputError(where, "header says it holds " + std::to_string(ntok) + " tokens", kFix);
  const std::int64_t want = kHeaderBytes + 2 * ntok;
  if (bytes != want)
    throw InputError(where, "file has " + std::to_string(bytes) + " bytes but its header (" + std::to_string(ntok) +
                                " tokens) implies " + std::to_string(want) +
                                (bytes < want ? " (truncated)" : " (trailing data)"), kFix);
  std::vector<std::uint16_t> tokens(static_cast<std::size_t>(ntok));
  in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(2 * ntok));
  if (!in) throw InputError(where, "read failed in the token block", kFix);
  for (std::int64_t i = 0; i < ntok; ++i) {
    if (tokens[i] >= vocab)
      throw InputError(where, "vocabulary mismatch: token " + std::to_string(tokens[i]) + " at index " +
                                  std::to_string(i) + " is not below the model's vocabulary V=" + std::to_string(vocab),
                       "tokenize with the model's tokenizer (GPT-2: 50257 tokens) or use a matching --checkpoint");
  }
  return tokens;
}

void write_token_file(const std::string& path, const std::vector<std::uint16_t>& tokens) {
  std::int32_t h[kHeaderInts] = {};
  h[0] = kTokensMagic;
  h[1] = kTokensVersion;
  h[2] = static_cast<std::int32_t>(tokens.size());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(h), kHeaderBytes);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * tokens.size()));
  if (!out) throw InputError(path, "cannot write the token file", "check that the directory is writable");
}

BatchLoader::BatchLoader(std::vector<std::uint16_t> tokens, int B, int T, const std::string& flag)
    : tokens_(std::move(tokens)), B_(B), T_(T) {
  const std::int64_t bt = std::int64_t(B) * T;
  if (static_cast<std::int64_t>(tokens_.size()) < bt + 1)
    throw InputError(flag, "holds " + std::to_string(tokens_.size()) + " tokens, fewer than B*T+1 = " +
                               std::to_string(bt + 1) + " needed for one batch",
                     "use a longer token file or a smaller --batch/--seq");
  // The last token of a window is only a target, so windows advance by B*T.
  batches_ = (static_cast<std::int64_t>(tokens_.size()) - 1) / bt;
}

void BatchLoader::next(std::vector<int>& inputs, std::vector<int>& targets) {
  const std::int64_t bt = std::int64_t(B_) * T_;
  if (index_ >= batches_) index_ = 0;
  const std::uint16_t* w = tokens_.data() + index_ * bt;
  inputs.resize(static_cast<std::size_t>(bt));
  targets.resize(static_cast<std::size_t>(bt));
  for (std::int64_t i = 0; i < bt; ++i) {
    inputs[i] = w[i];
    targets[i] = w[i + 1];
  }
  ++index_;
}

void random_batch(std::uint64_t seed, int step, int B, int T, int vocab, std::vector<int>& inputs,
                  std::vector<int>& targets) {
  // splitmix64: tiny, deterministic across compilers and standard libraries.
  std::uint64_t s = seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(step + 1));
  auto next = [&s] {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const std::int64_t bt = std::int64_t(B) * T;
  std::vector<int> window(static_cast<std::size_t>(bt + 1));
  for (auto& t : window) t = static_cast<int>(next() % static_cast<std::uint64_t>(vocab));
  inputs.assign(window.begin(), window.end() - 1);
  targets.assign(window.begin() + 1, window.end());
}

}  // namespace flopwatt::gpt2
