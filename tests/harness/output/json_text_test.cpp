// The document-free scans agree with a full parse: the top level's key and
// nothing nested or quoted, and minified text that parses to the same document.
#include "harness/output/json_text.h"

#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

namespace flopwatt {
namespace {

TEST(TopLevelString, FindsTheTopLevelKeyOnly) {
  auto id = [](const std::string& text) { return top_level_string(text, "run_id"); };
  EXPECT_EQ(id(R"({"run_id":"a"})"), "a");
  EXPECT_EQ(id("{\n  \"context\": {\"run_id\": \"nested\"},\n  \"run_id\" :\t\"top\"\n}\n"), "top");
  EXPECT_EQ(id(R"({"m":[{"run_id":"x"},["run_id"]],"note":"\"run_id\":\"fake\" {[","run_id":"r\"q\u00e9"})"),
            "r\"q\xc3\xa9");
  EXPECT_EQ(id(R"({"label":"run_id","run_id":"b"})"), "b");  // a value equal to the key is not the key
  EXPECT_EQ(id(R"({"context":{"run_id":"nested"}})"), std::nullopt);
  EXPECT_EQ(id(R"([{"run_id":"in an array"}])"), std::nullopt);
  EXPECT_EQ(id(R"({"run_id":7})"), std::nullopt);
  EXPECT_EQ(id(R"({"run_id":"cut)"), std::nullopt);
  EXPECT_EQ(id(R"({"run_id":"bad \x escape"})"), std::nullopt);
  EXPECT_EQ(id(""), std::nullopt);
  EXPECT_EQ(id("{\"run_id\":\"a\\"), std::nullopt);  // cut after an escape
  EXPECT_EQ(id(R"({"x":"\\","run_id":"after an escaped backslash"})"), "after an escaped backslash");
}

// Random documents with awkward strings (spaces, quotes, backslashes,
// brackets, newlines) pretty-printed: the minified text parses to the same
// document, holds no whitespace outside strings, and is what nlohmann's own
// compact dump is.
TEST(MinifiedJson, ParsesToTheSameDocument) {
  std::mt19937 g(11);
  const std::string pieces[] = {" ", "\"", "\\", "{", "]", "\n", "\t", "x", "\xc3\xa9", ":", ","};
  std::uniform_int_distribution<int> piece(0, 10), len(0, 12), kind(0, 3);
  auto text = [&] {
    std::string s;
    for (int i = len(g); i > 0; --i) s += pieces[piece(g)];
    return s;
  };
  for (int trial = 0; trial < 200; ++trial) {
    nlohmann::json doc = nlohmann::json::object();
    for (int k = len(g); k >= 0; --k) {
      switch (kind(g)) {
        case 0: doc[text()] = text(); break;
        case 1: doc[text()] = {{text(), 1.5}, {text(), nullptr}}; break;
        case 2: doc[text()] = {text(), -3, true, nlohmann::json::array()}; break;
        default: doc[text()] = trial * 1e-7; break;
      }
    }
    const std::string pretty = doc.dump(trial % 4);
    const std::string mini = minified_json(pretty);
    EXPECT_EQ(nlohmann::json::parse(mini), doc) << pretty;
    EXPECT_EQ(mini, doc.dump()) << pretty;
  }
  EXPECT_EQ(minified_json("{\"a\": \"cut"), "{\"a\": \"cut");  // left whole for the parser to refuse
  EXPECT_EQ(minified_json("{\"a\": \"cut\\"), "{\"a\": \"cut\\");  // an escape with nothing to escape
  EXPECT_EQ(minified_json(" [ \"\\\\\" , 1 ] "), "[\"\\\\\",1]");  // an escaped backslash ends no string early
}

}  // namespace
}  // namespace flopwatt
