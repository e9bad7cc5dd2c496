// What a store spec (--store, FLOPWATT_STORE, a URL argument) is, decided by
// libpq's own parser (PQconninfoParse) and the URI scheme, never by matching
// text: a PostgreSQL URI or keyword/value string, a SQLite file path, or
// something refused (another scheme, a connection string libpq rejects). And
// the same spec with its password removed, for everything that prints or
// records it.
#pragma once
#include <string>

namespace flopwatt::store {

enum class SpecKind { kFile, kPostgres, kRefused };

struct SpecClass {
  SpecKind kind = SpecKind::kFile;
  std::string why;  // kRefused: what is wrong with it (no password in it)
};

SpecClass classify_spec(const std::string& spec);

// The password a PostgreSQL spec carries ("" when none, or not a PostgreSQL spec).
std::string password_of(const std::string& spec);

// The spec without its password, whatever form it took: `password = 'x'`,
// a percent-encoded `p%61ssword=` URI parameter, URI user:password@. A
// keyword/value string libpq parses is written back from libpq's own parse.
// Anything else is returned as it is, except that a URI's userinfo password
// and password parameters are dropped too.
std::string masked(const std::string& spec);

// `text` with every occurrence of `password` replaced by "***" (libpq's
// messages may quote the connection string).
std::string scrub(std::string text, const std::string& password);

}  // namespace flopwatt::store
