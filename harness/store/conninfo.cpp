#include "harness/store/conninfo.h"

#include <libpq-fe.h>

#include <cctype>
#include <memory>
#include <optional>
#include <vector>

namespace flopwatt::store {

namespace {

struct Option {
  std::string keyword, value;
};

struct Parsed {
  std::vector<Option> options;  // those the string gives (libpq's order)
  std::string error;            // libpq's, when it refused the string
  bool ok = false;
};

Parsed parse(const std::string& spec) {
  Parsed p;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(spec.c_str(), &err);
  if (!opts) {
    p.error = err ? err : "libpq could not parse it (out of memory)";
    PQfreemem(err);
    while (!p.error.empty() && (p.error.back() == '\n' || p.error.back() == ' ')) p.error.pop_back();
    return p;
  }
  for (const PQconninfoOption* o = opts; o->keyword; ++o)
    if (o->val) p.options.push_back({o->keyword, o->val});
  PQconninfoFree(opts);
  p.ok = true;
  return p;
}

// libpq's URI designators (libpq's fe-connect.c uri_prefix_length).
bool postgres_uri(const std::string& s) { return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0; }

// The scheme when `s` looks like a URL at all (anything before "://"): a
// mistyped scheme is refused rather than taken for a file name.
std::optional<std::string> url_scheme(const std::string& s) {
  const auto p = s.find("://");
  if (p == std::string::npos) return std::nullopt;
  return s.substr(0, p);
}

std::string percent_decoded(const std::string& s) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      o += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      o += s[i];
    }
  }
  return o;
}

// A URI without the password of its userinfo (scheme://user:pw@host: libpq
// ends the userinfo at the first '@' before a '/'; the last one is taken here,
// which removes at least as much) and without password query parameters,
// their keys compared percent-decoded as libpq decodes them.
std::string uri_without_password(const std::string& s) {
  const std::size_t auth = s.find("://") + 3;
  std::string out = s;
  const std::size_t slash = out.find('/', auth);
  const std::size_t at = out.rfind('@', slash == std::string::npos ? std::string::npos : slash);
  if (at != std::string::npos && at >= auth) {
    const std::size_t colon = out.find(':', auth);
    if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
  }
  const std::size_t q = out.find('?', auth);
  if (q == std::string::npos) return out;
  std::string query, rest = out.substr(q + 1);
  for (std::size_t b = 0; b <= rest.size();) {
    std::size_t e = rest.find('&', b);
    if (e == std::string::npos) e = rest.size();
    const std::string param = rest.substr(b, e - b);
    const std::string key = percent_decoded(param.substr(0, param.find('=')));
    if (key != "password" && !param.empty()) query += (query.empty() ? "" : "&") + param;
    b = e + 1;
  }
  return out.substr(0, q) + (query.empty() ? "" : "?" + query);
}

// libpq's keyword/value syntax: a value with a space, a quote or a backslash
// (or an empty one) in single quotes, quotes and backslashes escaped.
std::string keyword_value(const std::vector<Option>& options) {
  std::string s;
  for (const auto& o : options) {
    if (o.keyword == "password") continue;
    if (!s.empty()) s += ' ';
    s += o.keyword + '=';
    const bool quote = o.value.empty() || o.value.find_first_of(" \t\n\r\f\v'\\") != std::string::npos;
    if (!quote) {
      s += o.value;
      continue;
    }
    s += '\'';
    for (char c : o.value) {
      if (c == '\'' || c == '\\') s += '\\';
      s += c;
    }
    s += '\'';
  }
  return s;
}

std::string option(const Parsed& p, const std::string& keyword) {
  for (const auto& o : p.options)
    if (o.keyword == keyword) return o.value;
  return "";
}

}  // namespace

SpecClass classify_spec(const std::string& spec) {
  if (const auto scheme = url_scheme(spec)) {
    if (!postgres_uri(spec))
      return {SpecKind::kRefused, "is a URL with the scheme \"" + *scheme +
                                      "://\"; a store is a postgresql:// (or postgres://) URI, a libpq "
                                      "connection string or a SQLite file path"};
    const Parsed p = parse(spec);
    if (!p.ok) return {SpecKind::kRefused, "libpq refuses it: " + p.error};
    return {SpecKind::kPostgres, ""};
  }
  // libpq takes any string with '=' for keyword/value pairs; a path with '='
  // in a directory name stays a path when libpq refuses it and its first
  // "keyword" is not one (holds a '/', a '.' or a space).
  if (spec.find('=') == std::string::npos) return {SpecKind::kFile, ""};
  const Parsed p = parse(spec);
  if (p.ok) return {SpecKind::kPostgres, ""};
  std::string key = spec.substr(0, spec.find('='));
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  std::size_t b = 0;
  while (b < key.size() && std::isspace(static_cast<unsigned char>(key[b]))) ++b;
  key = key.substr(b);
  bool word = !key.empty();
  for (char c : key) word = word && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!word) return {SpecKind::kFile, ""};
  return {SpecKind::kRefused, "is neither a connection string libpq accepts (" + p.error +
                                  ") nor a file path (a file whose name holds '=' needs a directory, e.g. ./" + key +
                                  "=...)"};
}

std::string password_of(const std::string& spec) {
  if (url_scheme(spec) && !postgres_uri(spec)) return "";
  if (!postgres_uri(spec) && spec.find('=') == std::string::npos) return "";
  const Parsed p = parse(spec);
  return p.ok ? option(p, "password") : "";
}

std::string masked(const std::string& spec) {
  if (url_scheme(spec)) {
    std::string out = uri_without_password(spec);
    if (postgres_uri(spec) && !password_of(out).empty()) {
      // A form the URI rewrite missed: libpq's own parse, written back without it.
      const Parsed p = parse(spec);
      if (p.ok) return keyword_value(p.options);
    }
    return out;
  }
  if (spec.find('=') == std::string::npos) return spec;
  const Parsed p = parse(spec);
  if (p.ok) return option(p, "password").empty() ? spec : keyword_value(p.options);
  // Not a connection string libpq takes, so never one it connects with; it
  // may still be a mistyped one holding a password: shown up to its first "password".
  const auto pw = spec.find("password");
  return pw == std::string::npos ? spec : spec.substr(0, pw) + "password=***";
}

std::string scrub(std::string text, const std::string& password) {
  if (password.empty()) return text;
  for (std::size_t p = text.find(password); p != std::string::npos; p = text.find(password, p + 3))
    text.replace(p, password.size(), "***");
  return text;
}

}  // namespace flopwatt::store
