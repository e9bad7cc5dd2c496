#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <filesystem>

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
  ~SqliteDb() override { sqlite3_close_v2(db_); }

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
    sqlite3_stmt* st = nullptr;
    if (const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &st, nullptr); rc != SQLITE_OK)
      throw DbError(sqlite3_errmsg(db_), kind_of(rc));
    struct Finalize {
      sqlite3_stmt* s;
      ~Finalize() { sqlite3_finalize(s); }
    } fin{st};
    for (std::size_t i = 0; i < params.size(); ++i) {
      // "$1" is a named parameter to SQLite: look its slot up by name, so a
      // placeholder used twice or out of order binds the right value.
      const int slot = sqlite3_bind_parameter_index(st, std::string("$").append(std::to_string(i + 1)).c_str());
      if (slot == 0) continue;
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
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Db> open_sqlite(const std::string& path, bool create, bool read_only) {
  return std::make_unique<SqliteDb>(path, create, read_only);
}

}  // namespace flopwatt::store
