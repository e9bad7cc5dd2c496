// llm.c checkpoint I/O: round trip, the real-format fixture, and every kind of
// bad file giving InputError (the CLI's exit 2) that names the file and problem.
#include "workloads/gpt2/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "workloads/error.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gpt2 {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flopwatt_ckpt_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A valid tiny checkpoint, optionally corrupted by the caller.
  std::vector<char> valid_bytes() {
    Config c = preset("tiny");
    std::vector<float> p(std::size_t(num_parameters(c)));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = float(i % 97) * 0.01f;
    write_checkpoint(path("valid.bin"), c, p);
    std::ifstream in(path("valid.bin"), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string write(const std::string& name, const std::vector<char>& bytes) {
    std::ofstream out(path(name), std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    return path(name);
  }
  static void set_int(std::vector<char>& b, int index, std::int32_t v) { std::memcpy(&b[4 * index], &v, 4); }

  // Expects InputError whose message names the file and contains `problem`.
  static void expect_bad(const std::string& file, const std::string& problem) {
    try {
      read_checkpoint_config(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
      EXPECT_FALSE(e.fix().empty());
    }
  }

  fs::path dir_;
};

TEST_F(CheckpointTest, ParameterCountMatchesLlmc) {
  EXPECT_EQ(num_parameters(preset("d12")), 124475904);  // llm.c prints this for gpt2_124M.bin
}

TEST_F(CheckpointTest, RoundTripKeepsHeaderAndEveryParameter) {
  Config c = preset("tiny");
  std::vector<float> p(std::size_t(num_parameters(c)));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::sin(float(i));
  write_checkpoint(path("rt.bin"), c, p);
  EXPECT_EQ(fs::file_size(path("rt.bin")), 1024 + 4 * p.size());
  Config back;
  auto q = read_checkpoint(path("rt.bin"), back);
  EXPECT_EQ(back, c);
  EXPECT_EQ(q, p);
  EXPECT_FALSE(fs::exists(path("rt.bin.tmp")));
}

TEST_F(CheckpointTest, ReadsTheFixtureWrittenByPython) {
  Config c = read_checkpoint_config(std::string(FLOPWATT_TEST_FIXTURES) + "/gpt2/tiny_model.bin");
  EXPECT_EQ(c, preset("tiny"));
}

TEST_F(CheckpointTest, WrongMagic) {
  auto b = valid_bytes();
  set_int(b, 0, 20240520);
  expect_bad(write("magic.bin", b), "wrong magic");
}

TEST_F(CheckpointTest, UnsupportedVersion) {
  auto b = valid_bytes();
  set_int(b, 1, 5);
  expect_bad(write("version.bin", b), "unsupported version 5");
}

TEST_F(CheckpointTest, TruncatedParameters) {
  auto b = valid_bytes();
  b.resize(b.size() - 4);
  expect_bad(write("trunc.bin", b), "truncated");
}

TEST_F(CheckpointTest, ShorterThanTheHeader) {
  auto b = valid_bytes();
  b.resize(100);
  expect_bad(write("short.bin", b), "truncated");
}

TEST_F(CheckpointTest, HeaderSizesDoNotMatchTheFile) {
  auto b = valid_bytes();
  set_int(b, 6, 64);  // C doubled: the header implies a much larger file
  expect_bad(write("sizes.bin", b), "implies");
  b = valid_bytes();
  b.resize(b.size() + 8);
  expect_bad(write("trailing.bin", b), "trailing data");
}

TEST_F(CheckpointTest, ImpossibleConfig) {
  auto b = valid_bytes();
  set_int(b, 5, 3);  // C=32 not divisible by NH=3
  expect_bad(write("nh.bin", b), "divisible");
  b = valid_bytes();
  set_int(b, 7, 60);  // Vp < V
  expect_bad(write("vp.bin", b), "Vp");
  b = valid_bytes();
  set_int(b, 4, -1);
  expect_bad(write("neg.bin", b), "positive");
}

TEST_F(CheckpointTest, MissingFile) { expect_bad(path("nope.bin"), "cannot read"); }

TEST_F(CheckpointTest, ConfigMismatchOnLoadInto) {
  auto b = valid_bytes();
  Config other = preset("tiny");
  other.L = 3;
  std::vector<float> p(std::size_t(num_parameters(other)));
  EXPECT_THROW(read_checkpoint_into(write("ok.bin", b), other, p), InputError);
}

TEST_F(CheckpointTest, UnwritableSavePath) {
  Config c = preset("tiny");
  std::vector<float> p(std::size_t(num_parameters(c)));
  try {
    write_checkpoint(path("no/such/dir/x.bin"), c, p);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("--save"), std::string::npos);
  }
}

}  // namespace
}  // namespace flopwatt::gpt2
