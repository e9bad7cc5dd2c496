// Training tokens: llm.c's token files (256 int32 header: magic 20240520,
// version 1, token count; then uint16 tokens) served as sequential batches,
// or deterministic random tokens when no file is given.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flopwatt::gpt2 {

inline constexpr int kTokensMagic = 20240520;
inline constexpr int kTokensVersion = 1;

// Reads and validates the whole file (header, size, every token < vocab).
// Throws InputError naming `flag` and the file for every problem.
std::vector<std::uint16_t> read_token_file(const std::string& path, int vocab, const std::string& flag = "--data");
void write_token_file(const std::string& path, const std::vector<std::uint16_t>& tokens);

// Batch k takes tokens [k*B*T, k*B*T + B*T] (B*T+1 of them): inputs are the
// first B*T, targets the same window shifted by one. When the next window
// would run past the end, the loader wraps to the start. No shuffling.
class BatchLoader {
 public:
  // Throws InputError naming `flag` when the stream holds fewer than B*T+1 tokens.
  BatchLoader(std::vector<std::uint16_t> tokens, int B, int T, const std::string& flag = "--data");
  void next(std::vector<int>& inputs, std::vector<int>& targets);
  std::int64_t batches_per_epoch() const { return batches_; }

 private:
  std::vector<std::uint16_t> tokens_;
  int B_, T_;
  std::int64_t batches_ = 0, index_ = 0;
};

// Deterministic tokens in [0, vocab) for step `step` (same seed, same batch).
void random_batch(std::uint64_t seed, int step, int B, int T, int vocab, std::vector<int>& inputs,
                  std::vector<int>& targets);

}  // namespace flopwatt::gpt2
