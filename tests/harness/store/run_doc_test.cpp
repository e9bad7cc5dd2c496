// The store's compressed run documents: every text comes back byte for byte,
// a damaged frame is an error and never a partial document, and PostgreSQL's
// bytea text form round-trips any bytes.
#include "harness/store/run_doc.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>

namespace flopwatt::store {
namespace {

std::string random_bytes(std::mt19937& g, std::size_t n, int alphabet) {
  std::uniform_int_distribution<int> d(0, alphabet - 1);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(d(g));
  return s;
}

TEST(RunDoc, EveryTextComesBackWhole) {
  std::mt19937 g(7);
  for (const std::size_t n : {0u, 1u, 17u, 4096u, 65537u, 1000003u}) {
    for (const int alphabet : {4, 256}) {  // compressible and not
      const std::string text = random_bytes(g, n, alphabet);
      EXPECT_EQ(unpack_run_doc(pack_run_doc(text)), text) << n << " bytes of " << alphabet << " values";
    }
  }
}

TEST(RunDoc, AJsonDocumentShrinksSeveralFold) {
  std::string json = "[";
  std::mt19937 g(3);
  std::uniform_real_distribution<double> t(0.01, 0.02);
  for (int i = 0; i < 2000; ++i) json += (i ? "," : "") + std::string("{\"op\":\"qkv\",\"median_s\":") + std::to_string(t(g)) + "}";
  json += "]";
  EXPECT_LT(pack_run_doc(json).size() * 4, json.size());
}

TEST(RunDoc, ADamagedFrameIsAnErrorNeverAPart) {
  const std::string text(100000, 'x');
  const std::string z = pack_run_doc(text + "tail");
  EXPECT_THROW(unpack_run_doc(z.substr(0, z.size() - 3)), std::runtime_error);  // cut off
  EXPECT_THROW(unpack_run_doc(""), std::runtime_error);
  EXPECT_THROW(unpack_run_doc("{\"run_id\":\"a\"}"), std::runtime_error);  // run_json text, not a frame
  // Any byte changed, header, content or checksum: the frame's checksum
  // (or its structure) refuses it.
  for (std::size_t i = 0; i < z.size(); ++i) {
    std::string flipped = z;
    flipped[i] ^= 0x20;
    EXPECT_THROW(unpack_run_doc(flipped), std::runtime_error) << "byte " << i << " of " << z.size();
  }
}

TEST(RunDoc, ByteaTextRoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string hex = bytea_text(all);
  EXPECT_EQ(hex.substr(0, 6), "\\x0001");
  EXPECT_EQ(bytea_bytes(hex), all);
  EXPECT_EQ(bytea_bytes("\\xDEADbeef"), "\xde\xad\xbe\xef");
  EXPECT_THROW(bytea_bytes("\\x0"), std::runtime_error);
  EXPECT_THROW(bytea_bytes("\\xzz"), std::runtime_error);
  EXPECT_THROW(bytea_bytes("00"), std::runtime_error);
}

}  // namespace
}  // namespace flopwatt::store
