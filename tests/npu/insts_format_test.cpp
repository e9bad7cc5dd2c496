// Which form an instruction stream is in is decided by its bytes: builds at
// the mlir-aie revision scripts/build-npu-designs pins name the file
// insts_<suffix>.txt, and aiecc may have written binary words into it. Kept
// out of npu_xdna_test so it runs without the device backend's libraries.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "npu/xdna/insts.h"
#include "tests/npu/npu_test_support.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

const std::vector<std::uint32_t> kWords = {0x11, 0x22, 0x33, 0x01000500};

std::string binary_of(const std::vector<std::uint32_t>& w) {
  std::string s(w.size() * 4, '\0');
  std::memcpy(s.data(), w.data(), s.size());
  return s;
}

TEST(InstsFormat, BinaryWordsInATxtFileAreReadAsBinary) {
  test::TempDir t;
  EXPECT_EQ(load_insts(t.write("insts_256x768x2304_64x32x64_4c.txt", binary_of(kWords))).words, kWords);
}

TEST(InstsFormat, TextIsReadAsTextWhateverTheName) {
  test::TempDir t;
  const std::string text = "00000011\n00000022\r\n0x00000033\n01000500\n";
  EXPECT_EQ(load_insts(t.write("insts.txt", text)).words, kWords);
  EXPECT_EQ(load_insts(t.write("insts.bin", text)).words, kWords);
}

TEST(InstsFormat, Detection) {
  const std::string text = "0000000a\n";
  const std::string bin = binary_of(kWords);
  EXPECT_TRUE(looks_like_insts_text({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}));
  EXPECT_FALSE(looks_like_insts_text({reinterpret_cast<const std::uint8_t*>(bin.data()), bin.size()}));
  // Hex digits without a line break are four bytes of a binary word, not a line.
  const std::string word = "abcd";
  EXPECT_FALSE(looks_like_insts_text({reinterpret_cast<const std::uint8_t*>(word.data()), word.size()}));
  // A text file with a stray character is still refused by the text parser, naming the line.
  test::TempDir t;
  try {
    load_insts(t.write("insts.txt", "00000011\n0000002g\n"));
    ADD_FAILURE() << "accepted a malformed stream";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("insts.txt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flopwatt::npu::xdna
