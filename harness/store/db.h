// The two engines behind the results store, behind one small interface: SQL
// text with $1..$n placeholders (both SQLite and PostgreSQL accept them) and
// parameters sent apart from it, never spliced into the text.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flopwatt::store {

using Value = std::optional<std::string>;  // a parameter or a column: text, or NULL
using Row = std::vector<Value>;

// An engine's error, with what the engine said. `lost` is true when the
// connection itself went away (a server stopped, a network drop): the work in
// flight was rolled back and a later attempt may succeed.
class DbError : public std::runtime_error {
 public:
  DbError(const std::string& what, bool lost = false) : std::runtime_error(what), lost_(lost) {}
  bool lost() const { return lost_; }

 private:
  bool lost_;
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
std::unique_ptr<Db> open_sqlite(const std::string& path, bool create);
// A libpq connection string or postgresql:// URI (service and password files,
// sslmode: libpq's own). Throws DbError with libpq's message.
std::unique_ptr<Db> open_postgres(const std::string& conninfo);

}  // namespace flopwatt::store
