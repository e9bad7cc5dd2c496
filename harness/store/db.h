// The two engines behind the results store, behind one small interface: SQL
// text with $1..$n placeholders (both SQLite and PostgreSQL accept them) and
// parameters sent apart from it, never spliced into the text.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flopwatt::store {

using Value = std::optional<std::string>;  // a parameter or a column: text, or NULL
using Row = std::vector<Value>;

// What an engine's error means for the user, each with its own fix: the disk
// is full, the file or directory cannot be written or read, the file is
// damaged, a disk I/O error, the role lacks a privilege, another process holds the lock, the
// connection went away (`lost`: the work in flight was rolled back and a
// later attempt may succeed), or something else.
enum class DbErrorKind { kOther, kLost, kFull, kIo, kReadOnly, kPermission, kCorrupt, kPrivilege, kBusy };

class DbError : public std::runtime_error {
 public:
  DbError(const std::string& what, bool lost = false)
      : std::runtime_error(what), kind_(lost ? DbErrorKind::kLost : DbErrorKind::kOther) {}
  DbError(const std::string& what, DbErrorKind kind) : std::runtime_error(what), kind_(kind) {}
  bool lost() const { return kind_ == DbErrorKind::kLost; }
  DbErrorKind kind() const { return kind_; }

 private:
  DbErrorKind kind_;
};

class Db {
 public:
  virtual ~Db() = default;
  // One or more statements without parameters (schema, BEGIN, COMMIT).
  virtual void exec(const std::string& sql) = 0;
  // Calls `row` once per result row, one Row reused from call to call: a large
  // result is read without a copy of it all held at once.
  virtual void each(const std::string& sql, const std::vector<Value>& params,
                    const std::function<void(const Row&)>& row) = 0;
  std::vector<Row> query(const std::string& sql, const std::vector<Value>& params = {}) {
    std::vector<Row> rows;
    each(sql, params, [&rows](const Row& r) { rows.push_back(r); });
    return rows;
  }
  virtual bool sqlite() const = 0;
};

// Opens (creating when `create`) a SQLite file. Throws DbError; a file that is
// not a SQLite database throws on the first query, before anything is written.
// `read_only` opens it with mode=ro, and immutable=1 when its directory cannot
// be written (no -shm file can be made there, and so no one can be writing it).
std::unique_ptr<Db> open_sqlite(const std::string& path, bool create, bool read_only = false);
// A libpq connection string or postgresql:// URI (service and password files,
// sslmode: libpq's own). Throws DbError with libpq's message, its password
// removed. Never waits forever: connect_timeout defaults to 10 s (the string's
// own connect_timeout or PGCONNECT_TIMEOUT wins), a statement to about a
// minute; `stop` set (a signal) ends any wait within 100 ms.
std::unique_ptr<Db> open_postgres(const std::string& conninfo, const std::atomic<bool>* stop = nullptr);

}  // namespace flopwatt::store
