#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>

#include "harness/store/db.h"

namespace flopwatt::store {

namespace {

DbErrorKind kind_of(int rc) {
  switch (rc & 0xff) {
    // A write past a quota or a file size limit is an I/O error to SQLite
    // (os_unix.c unixWrite: only ENOSPC is SQLITE_FULL), and no errno is kept
    // for it: the store looks at the filesystem to tell (store_error).
    case SQLITE_IOERR: return DbErrorKind::kIo;
    case SQLITE_FULL: return DbErrorKind::kFull;
    case SQLITE_READONLY: return DbErrorKind::kReadOnly;
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_CANTOPEN: return DbErrorKind::kPermission;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return DbErrorKind::kCorrupt;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return DbErrorKind::kBusy;
    default: return DbErrorKind::kOther;
  }
}

// The store writes PostgreSQL's placeholders, "$1". SQLite takes "$1" as a
// named parameter and finds it by a linear search of the statement's names,
// while parsing, while generating code and in sqlite3_bind_parameter_index;
// "?1" still takes that search in code generation. Only a bare "?" (the next
// slot) takes none: a run's measurements, 90 rows of 25 values in one
// INSERT, spent two thirds of an import's time in those searches. So
// placeholders that appear as $1, $2, .. $k in order become "?", and any
// other use (one repeated, or out of order) becomes "?N", the same slots.
// Quoted text and identifiers are left alone.
std::string sqlite_params(const std::string& sql) {
  struct At {
    std::size_t pos, len;
    long n;
  };
  std::vector<At> at;
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: still inside
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      std::size_t e = i + 1;
      while (e < sql.size() && std::isdigit(static_cast<unsigned char>(sql[e]))) ++e;
      at.push_back({i, e - i, std::strtol(sql.c_str() + i + 1, nullptr, 10)});
      i = e - 1;
    }
  }
  bool in_order = true;
  for (std::size_t k = 0; k < at.size(); ++k) in_order = in_order && at[k].n == long(k + 1);
  std::string out;
  out.reserve(sql.size());
  std::size_t from = 0;
  for (const At& a : at) {
    out.append(sql, from, a.pos - from);
    out += '?';
    if (!in_order) out.append(sql, a.pos + 1, a.len - 1);
    from = a.pos + a.len;
  }
  out.append(sql, from, std::string::npos);
  return out;
}

// A file: URI for the path (RFC 3986 escapes for what a URI reserves), so
// mode=ro and immutable=1 can be given to it.
std::string file_uri(const std::string& path, bool immutable) {
  std::string u = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-._~", c)) u += static_cast<char>(c);
    else u += fmt::format("%{:02X}", c);
  }
  return u + "?mode=ro" + (immutable ? "&immutable=1" : "");
}

class SqliteDb : public Db {
 public:
  SqliteDb(const std::string& path, bool create, bool read_only) {
    int flags = SQLITE_OPEN_NOMUTEX;
    std::string name = path;
    if (read_only) {
      const std::string dir = std::filesystem::path(path).parent_path().string();
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
      name = file_uri(path, ::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0);
    } else {
      flags |= SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    }
    const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw DbError(msg, kind_of(rc));
    }
    sqlite3_extended_result_codes(db_, 1);
  }
  ~SqliteDb() override {
    for (auto& [sql, st] : cache_) sqlite3_finalize(st);
    sqlite3_close_v2(db_);
  }

  void exec(const std::string& sql) override {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
      const std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw DbError(msg, kind_of(rc));
    }
  }

  void each(const std::string& sql, const std::vector<Value>& params,
            const std::function<void(const Row&)>& row) override {
    sqlite3_stmt* st = prepared(sql);
    struct Reset {  // the statement stays cached, ready for its next use
      sqlite3_stmt* s;
      ~Reset() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{st};
    // Slot N is the value of $N either way (sqlite_params); a value past the
    // highest placeholder has no slot.
    const std::size_t slots = static_cast<std::size_t>(sqlite3_bind_parameter_count(st));
    for (std::size_t i = 0; i < params.size() && i < slots; ++i) {
      const int slot = static_cast<int>(i + 1);
      const int rc = params[i] ? sqlite3_bind_text(st, slot, params[i]->data(), static_cast<int>(params[i]->size()),
                                                   SQLITE_TRANSIENT)
                               : sqlite3_bind_null(st, slot);
      if (rc != SQLITE_OK) throw DbError(sqlite3_errmsg(db_), kind_of(rc));
    }
    Row r(static_cast<std::size_t>(sqlite3_column_count(st)));
    for (;;) {
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw DbError(sqlite3_errmsg(db_), kind_of(rc));
      for (std::size_t c = 0; c < r.size(); ++c) {
        const int ci = static_cast<int>(c);
        const int type = sqlite3_column_type(st, ci);
        if (type == SQLITE_NULL) {
          r[c].reset();
          continue;
        }
        if (type == SQLITE_FLOAT) {
          // SQLite's own text of a REAL keeps 15 digits; the shortest form that reads back the same double keeps all.
          const std::string t = fmt::format("{}", sqlite3_column_double(st, ci));
          if (r[c]) r[c]->assign(t);
          else r[c].emplace(t);
          continue;
        }
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, ci));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(st, ci));
        if (r[c]) r[c]->assign(p, n);  // keeps the string's buffer from the last row
        else r[c].emplace(p, n);
      }
      row(r);
    }
  }

  bool sqlite() const override { return true; }

 private:
  // Statements are kept prepared by their text: preparing a run's
  // 90-row INSERT again for every run was a tenth of an import's time.
  // Bounded, as a program that makes new texts all the time would fill it.
  sqlite3_stmt* prepared(const std::string& sql) {
    if (auto it = cache_.find(sql); it != cache_.end()) return it->second;
    constexpr std::size_t kKept = 64;
    if (cache_.size() >= kKept) {
      for (auto& [text, st] : cache_) sqlite3_finalize(st);
      cache_.clear();
    }
    sqlite3_stmt* st = nullptr;
    const std::string numbered = sqlite_params(sql);
    if (const int rc = sqlite3_prepare_v3(db_, numbered.c_str(), static_cast<int>(numbered.size()),
                                          SQLITE_PREPARE_PERSISTENT, &st, nullptr);
        rc != SQLITE_OK)
      throw DbError(sqlite3_errmsg(db_), kind_of(rc));
    if (!st) throw DbError("an empty statement: " + sql, DbErrorKind::kOther);
    cache_.emplace(sql, st);
    return st;
  }
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace

std::unique_ptr<Db> open_sqlite(const std::string& path, bool create, bool read_only) {
  return std::make_unique<SqliteDb>(path, create, read_only);
}

}  // namespace flopwatt::store
