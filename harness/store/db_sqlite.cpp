#include <sqlite3.h>

#include "harness/store/db.h"

namespace flopwatt::store {

namespace {

class SqliteDb : public Db {
 public:
  SqliteDb(const std::string& path, bool create) {
    const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw DbError(msg);
    }
    sqlite3_extended_result_codes(db_, 1);
  }
  ~SqliteDb() override { sqlite3_close_v2(db_); }

  void exec(const std::string& sql) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw DbError(msg);
    }
  }

  void each(const std::string& sql, const std::vector<Value>& params,
            const std::function<void(const Row&)>& row) override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &st, nullptr) != SQLITE_OK)
      throw DbError(sqlite3_errmsg(db_));
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
      if (rc != SQLITE_OK) throw DbError(sqlite3_errmsg(db_));
    }
    Row r(static_cast<std::size_t>(sqlite3_column_count(st)));
    for (;;) {
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw DbError(sqlite3_errmsg(db_));
      for (std::size_t c = 0; c < r.size(); ++c) {
        const int ci = static_cast<int>(c);
        if (sqlite3_column_type(st, ci) == SQLITE_NULL) {
          r[c].reset();
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

std::unique_ptr<Db> open_sqlite(const std::string& path, bool create) {
  return std::make_unique<SqliteDb>(path, create);
}

}  // namespace flopwatt::store
