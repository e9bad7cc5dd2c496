// Checks flopwatt's JSON files against the published schemas in
// results/schema/ (tests/harness/validate_schema.py with Debian's
// python3-jsonschema): outside tools read these files by the schemas, so a
// test that produces a file also holds it to its schema.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace flopwatt::testing {

// "" when the file matches results/schema/<schema_name>; else the validator's
// lines ("path: message"), or why it could not run.
std::string schema_violations(const std::string& json_file, const std::string& schema_name);
// The same for a document in memory (a produced file, edited to break it).
std::string schema_violations(const nlohmann::json& doc, const std::string& schema_name);

}  // namespace flopwatt::testing
