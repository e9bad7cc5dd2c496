// How the store keeps a run's run.json (runs.run_doc, schema 3 on): its JSON
// text as one Zstandard frame, about a seventh of the text, so a store of
// thousands of runs stays small while each run can be read back whole.
#pragma once
#include <string>

namespace flopwatt::store {

// `json` compressed: a Zstandard frame (RFC 8878) that records its size.
std::string pack_run_doc(const std::string& json);
// The JSON text back; throws std::runtime_error on bytes that are not one
// whole frame (a damaged row), never returns part of one.
std::string unpack_run_doc(const std::string& bytes);

// PostgreSQL's text form of a bytea ("\x" and two hex digits a byte), the
// form a text-mode parameter takes and a text-mode result gives.
std::string bytea_text(const std::string& bytes);
// The bytes of that text; throws std::runtime_error on any other text.
std::string bytea_bytes(const std::string& text);

}  // namespace flopwatt::store
