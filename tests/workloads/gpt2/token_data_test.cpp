// llm.c token files and the sequential batch loader.
#include "workloads/gpt2/token_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "workloads/error.h"

namespace flopwatt::gpt2 {
namespace {

namespace fs = std::filesystem;

class TokenDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_tok_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  std::vector<char> bytes_of(const std::vector<std::uint16_t>& toks) {
    write_token_file(path("t.bin"), toks);
    std::ifstream in(path("t.bin"), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string write(const std::string& n, const std::vector<char>& b) {
    std::ofstream out(path(n), std::ios::binary);
    out.write(b.data(), std::streamsize(b.size()));
    return path(n);
  }
  static void expect_bad(const std::string& file, int vocab, const std::string& problem) {
    try {
      read_token_file(file, vocab);
      ADD_FAILURE() << "no error for " << file;
    } catch (const InputError& e) {
      EXPECT_NE(e.where().find(file), std::string::npos) << e.what();
      EXPECT_NE(e.where().find("--data"), std::string::npos) << e.what();
      EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
    }
  }
  fs::path dir_;
};

std::vector<std::uint16_t> iota_tokens(int n) {
  std::vector<std::uint16_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = std::uint16_t(i);
  return t;
}

TEST_F(TokenDataTest, RoundTripAndFixture) {
  auto t = iota_tokens(1000);
  write_token_file(path("a.bin"), t);
  EXPECT_EQ(read_token_file(path("a.bin"), 50257), t);
  EXPECT_EQ(read_token_file(std::string(FLOPWATT_TEST_FIXTURES) + "/gpt2/tiny_tokens.bin", 61).size(), 100u);
}

TEST_F(TokenDataTest, BadFiles) {
  auto good = bytes_of(iota_tokens(50));
  auto b = good;
  b[0] ^= 1;
  expect_bad(write("magic.bin", b), 100, "wrong magic");
  b = good;
  std::int32_t v = 2;
  std::memcpy(&b[4], &v, 4);
  expect_bad(write("version.bin", b), 100, "unsupported version");
  b = good;
  b.resize(b.size() - 1);
  expect_bad(write("trunc.bin", b), 100, "truncated");
  b = good;
  std::int32_t n = 60;
  std::memcpy(&b[8], &n, 4);
  expect_bad(write("count.bin", b), 100, "implies");
  b = good;
  b.resize(64);
  expect_bad(write("short.bin", b), 100, "shorter than");
  expect_bad(path("missing.bin"), 100, "cannot read");
}

TEST_F(TokenDataTest, CheckpointPassedAsDataSaysSo) {
  auto b = bytes_of(iota_tokens(10));
  std::int32_t m = 20240326;
  std::memcpy(&b[0], &m, 4);
  expect_bad(write("ckpt.bin", b), 100, "model checkpoint");
}

TEST_F(TokenDataTest, VocabularyMismatch) {
  write_token_file(path("v.bin"), iota_tokens(70));
  expect_bad(path("v.bin"), 61, "vocabulary mismatch");
  EXPECT_NO_THROW(read_token_file(path("v.bin"), 70));
}

TEST_F(TokenDataTest, SequentialBatchesShiftTargetsAndWrap) {
  // 2*3 = 6 tokens per batch; 20 tokens hold (20-1)/6 = 3 batches, then it wraps.
  BatchLoader l(iota_tokens(20), 2, 3);
  EXPECT_EQ(l.batches_per_epoch(), 3);
  std::vector<int> in, tg;
  for (int k = 0; k < 7; ++k) {
    l.next(in, tg);
    const int start = (k % 3) * 6;
    ASSERT_EQ(in.size(), 6u);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(in[i], start + i) << "batch " << k;
      EXPECT_EQ(tg[i], start + i + 1) << "batch " << k;
    }
  }
}

TEST_F(TokenDataTest, TooFewTokensForOneBatch) {
  EXPECT_THROW(BatchLoader(iota_tokens(6), 2, 3), InputError);  // needs B*T+1 = 7
  EXPECT_NO_THROW(BatchLoader(iota_tokens(7), 2, 3));
}

TEST(RandomBatch, DeterministicInRangeAndShifted) {
  std::vector<int> a, at, b, bt, c, ct;
  random_batch(3, 5, 4, 64, 50257, a, at);
  random_batch(3, 5, 4, 64, 50257, b, bt);
  random_batch(3, 6, 4, 64, 50257, c, ct);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a[i], 0);
    EXPECT_LT(a[i], 50257);
    if (i + 1 < a.size()) {
      EXPECT_EQ(at[i], a[i + 1]);
    }
  }
}

}  // namespace
}  // namespace flopwatt::gpt2
