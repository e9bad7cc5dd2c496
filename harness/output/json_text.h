// Scans of JSON text that build no document: a store import of thousands of
// run.json files (170 KB each) spent more time building and writing documents
// than storing them. Each follows only strings and nesting, and says nullopt
// (or leaves the text whole) where the text is not what it expects, so a
// caller can always fall back to a full parse.
#pragma once
#include <optional>
#include <string>

namespace flopwatt {

// The string value of the top-level object's key `key` (written without
// escapes); nullopt when there is none, it is not a string, or the text
// ends first.
std::optional<std::string> top_level_string(const std::string& text, const std::string& key);
// `text` without the whitespace between tokens (a pretty-printed run.json
// is a quarter spaces); strings are kept byte for byte.
std::string minified_json(const std::string& text);

}  // namespace flopwatt
